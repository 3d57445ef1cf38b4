"""A post's text rendered as an image, as it travels on social media: a screenshot of a light or a
dark tweet card, or meme text over a photo. Deterministic (the same text and template give the
same bytes), Debian's fonts only (DejaVu; Noto CJK for Hangul and Han, Noto for Devanagari and
Arabic), text wrapped by its measured width.

What is drawn is returned with the image (``Rendered.text``, in reading order): the reference a
reading of the image is scored against. Emoji and other pictographs are not drawn (they are
pictures in a screenshot, not text), nor ``pic.twitter.com`` links (a screenshot shows the
picture). Arabic needs Pillow's raqm layout (shaping and bidi); without it ``render`` refuses
Arabic text rather than draw it unjoined.
"""
from __future__ import annotations

import hashlib
import io
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from plugin.errors import BadInput

TEMPLATES = ("light", "dark", "meme")
#: bump when the drawing changes, so that cached renderings and readings are redone
RENDER_VERSION = 1
WIDTH = 1080

_DEJAVU = Path("/usr/share/fonts/truetype/dejavu")
_NOTO = Path("/usr/share/fonts/truetype/noto")
_CJK = Path("/usr/share/fonts/opentype/noto")
#: script → (regular, bold) font files and the face index inside a collection (Noto CJK's KR face)
FONTS: dict[str, tuple[Path, Path, int]] = {
    "latin": (_DEJAVU / "DejaVuSans.ttf", _DEJAVU / "DejaVuSans-Bold.ttf", 0),
    "hangul": (_CJK / "NotoSansCJK-Regular.ttc", _CJK / "NotoSansCJK-Bold.ttc", 1),
    "devanagari": (_NOTO / "NotoSansDevanagari-Regular.ttf", _NOTO / "NotoSansDevanagari-Bold.ttf", 0),
    "arabic": (_NOTO / "NotoSansArabic-Regular.ttf", _NOTO / "NotoSansArabic-Bold.ttf", 0),
}

_PIC_LINK = re.compile(r"\s*pic\.twitter\.com/\w+")
#: the signature of an embedded tweet, as CLEF-2020 keeps it: "— Name (@handle) Month D, YYYY"
_SIGNATURE = re.compile(r"\s*[—–-]+\s*(?P<name>[^\n]{1,60}?)\s*\(@(?P<handle>\w{1,30})\)\s*"
                        r"(?P<date>[A-Z][a-z]+ \d{1,2}, \d{4})\s*$")
#: made-up authors for posts without a signature (placeholders, not anyone's name)
_NAMES = ("Sample Account", "Example Poster", "Demo User", "Placeholder Page", "Lab Account", "Test Poster")


@dataclass(frozen=True)
class Rendered:
    data: bytes  # the encoded image: PNG for the cards (screenshots), JPEG for memes
    format: str  # PNG or JPEG
    width: int
    height: int
    #: the text drawn, in reading order, lines joined by newlines
    text: str


@dataclass(frozen=True)
class Post:
    """The parts of a post a card shows."""
    body: str
    name: str
    handle: str
    date: str | None


def drawable(text: str) -> str:
    """``text`` as a screenshot shows it: NFKC (styled letters become plain ones), no emoji or
    other pictographs, no joiners or variation selectors, no ``pic.twitter.com`` links, spaces
    collapsed within lines, empty lines dropped."""
    text = _PIC_LINK.sub("", unicodedata.normalize("NFKC", text))
    kept = "".join(c for c in text if not _pictograph(c))
    lines = (" ".join(line.split()) for line in kept.splitlines())
    return "\n".join(line for line in lines if line)


def _pictograph(c: str) -> bool:
    cat = unicodedata.category(c)
    return (cat in ("So", "Cs", "Co", "Cn") or (cat == "Cf" and c not in "\u200c")
            or 0xFE00 <= ord(c) <= 0xFE0F or ord(c) >= 0x1F000)


def body_end(text: str) -> int:
    """Where a post's own words end: the start of its embedded tweet's signature (``— Name
    (@handle) Month D, YYYY``, drawn as the card's author and date), else its length."""
    m = _SIGNATURE.search(text)
    return m.start() if m else len(text)


def split_post(text: str, *, seed: str = "") -> Post:
    """The body, author and date of a post's text: from an embedded tweet's signature when it
    has one, else a name and handle chosen by ``seed`` and no date."""
    m = _SIGNATURE.search(text)
    if m:
        name = drawable(m["name"]) or m["handle"]
        return Post(drawable(text[:m.start()]), name, m["handle"], m["date"])
    name = _NAMES[int(hashlib.sha1(seed.encode()).hexdigest(), 16) % len(_NAMES)]
    return Post(drawable(text), name, name.lower().replace(" ", "_"), None)


def script_of(text: str) -> str:
    """The script a font is chosen for: the one most letters of ``text`` are in (Latin when none)."""
    counts = {"hangul": 0, "devanagari": 0, "arabic": 0, "latin": 0}
    for c in text:
        if not c.isalpha():
            continue
        o = ord(c)
        if 0xAC00 <= o <= 0xD7AF or 0x1100 <= o <= 0x11FF or 0x3130 <= o <= 0x318F or 0x4E00 <= o <= 0x9FFF:
            counts["hangul"] += 1
        elif 0x0900 <= o <= 0x097F:
            counts["devanagari"] += 1
        elif 0x0600 <= o <= 0x06FF or 0x0750 <= o <= 0x077F:
            counts["arabic"] += 1
        else:
            counts["latin"] += 1
    best = max(counts, key=lambda k: counts[k])
    return best if counts[best] else "latin"


def raqm_available() -> bool:
    from PIL import features

    return bool(features.check("raqm"))


@lru_cache(maxsize=64)
def font(script: str, size: int, *, bold: bool = False) -> Any:
    from PIL import ImageFont

    regular, heavy, index = FONTS[script]
    path = heavy if bold else regular
    if not path.is_file():
        raise BadInput(f"font {str(path)!r} is not installed (Debian: fonts-dejavu-core, fonts-noto-cjk, "
                       "fonts-noto-core)")
    return ImageFont.truetype(str(path), size, index=index)


def wrap(text: str, fnt: Any, max_width: int) -> list[str]:
    """Lines of ``text`` (its own line breaks kept) no wider than ``max_width`` pixels in ``fnt``:
    words are added while they fit; a word wider than a line is broken between characters."""
    lines: list[str] = []
    for paragraph in text.splitlines():
        line = ""
        for word in paragraph.split():
            candidate = f"{line} {word}" if line else word
            if fnt.getlength(candidate) <= max_width:
                line = candidate
                continue
            if line:
                lines.append(line)
            line = ""
            for ch in word:  # the word alone does not fit: break it
                if line and fnt.getlength(line + ch) > max_width:
                    lines.append(line)
                    line = ""
                line += ch
        if line:
            lines.append(line)
    return lines


def _seed(*parts: str) -> int:
    return int(hashlib.sha1("\x1f".join(parts).encode()).hexdigest()[:8], 16)


def render(text: str, template: str, *, seed: str = "") -> Rendered:
    """``text`` (a post's) drawn in ``template`` (``light``, ``dark``: a tweet card; ``meme``: bold
    outlined text over a photo). ``seed`` picks the made-up author and the photo; the same
    arguments always give the same bytes."""
    if template not in TEMPLATES:
        raise BadInput(f"unknown template {template!r}; known: {', '.join(TEMPLATES)}")
    post = split_post(text, seed=seed)
    if not post.body:
        raise BadInput("nothing to draw: the text has no drawable characters")
    script = script_of(post.body)
    if script == "arabic" and not raqm_available():
        raise BadInput("Arabic text needs Pillow built with libraqm (shaping and right-to-left layout)")
    if template == "meme":
        return _meme(post, script, _seed(seed, text))
    return _card(post, script, dark=template == "dark", seed=_seed(seed, text))


_THEMES = {False: {"bg": (255, 255, 255), "fg": (15, 20, 25), "dim": (83, 100, 113), "rule": (239, 243, 244)},
           True: {"bg": (0, 0, 0), "fg": (231, 233, 234), "dim": (113, 118, 123), "rule": (47, 51, 54)}}


def _card(post: Post, script: str, *, dark: bool, seed: int) -> Rendered:
    from PIL import Image, ImageDraw

    theme = _THEMES[dark]
    pad, avatar, body_size = 48, 96, 44
    body_font = font(script, body_size)
    name_font = font(script_of(post.name), 38, bold=True)
    handle_font = font("latin", 34)
    date_font = font("latin", 32)
    rtl = script == "arabic"
    lines = wrap(post.body, body_font, WIDTH - 2 * pad)
    line_h = int(body_size * 1.4)
    body_top = pad + avatar + 36
    height = body_top + line_h * len(lines) + (28 + 44 if post.date else 0) + pad
    img = Image.new("RGB", (WIDTH, height), theme["bg"])
    draw = ImageDraw.Draw(img)
    hue = [(29, 155, 240), (249, 24, 128), (0, 186, 124), (255, 122, 0), (120, 86, 255)][seed % 5]
    draw.ellipse((pad, pad, pad + avatar, pad + avatar), fill=hue)
    x = pad + avatar + 24
    draw.text((x, pad + 4), post.name, font=name_font, fill=theme["fg"])
    handle = f"@{post.handle}"
    draw.text((x, pad + 52), handle, font=handle_font, fill=theme["dim"])
    drawn = [post.name, handle]
    y = body_top
    for line in lines:
        if rtl:
            draw.text((WIDTH - pad, y), line, font=body_font, fill=theme["fg"], anchor="ra", direction="rtl")
        else:
            draw.text((pad, y), line, font=body_font, fill=theme["fg"])
        y += line_h
    drawn += lines
    if post.date:
        y += 28
        draw.text((pad, y), post.date, font=date_font, fill=theme["dim"])
        drawn.append(post.date)
    draw.line((0, height - 2, WIDTH, height - 2), fill=theme["rule"], width=2)
    out = io.BytesIO()
    img.save(out, "PNG", optimize=True)
    return Rendered(out.getvalue(), "PNG", WIDTH, height, "\n".join(drawn))


def _meme(post: Post, script: str, seed: int) -> Rendered:
    from PIL import ImageDraw

    pad, size = 72, 60
    fnt = font(script, size, bold=True)
    lines = wrap(post.body, fnt, WIDTH - 2 * pad)
    line_h = int(size * 1.3)
    block = line_h * len(lines)
    height = max(WIDTH * 3 // 4, block + 2 * pad)
    img = photo(seed, (WIDTH, height))
    draw = ImageDraw.Draw(img)
    y = (height - block) // 2
    for line in lines:
        draw.text((WIDTH // 2, y), line, font=fnt, fill=(255, 255, 255), anchor="ma",
                  stroke_width=4, stroke_fill=(0, 0, 0),
                  **({"direction": "rtl"} if script == "arabic" else {}))
        y += line_h
    out = io.BytesIO()
    img.save(out, "JPEG", quality=90)
    return Rendered(out.getvalue(), "JPEG", WIDTH, height, "\n".join(lines))


def photo(seed: int, size: tuple[int, int]) -> Any:
    """A photo-like RGB image (deterministic in ``seed``): smooth colour fields, soft shapes, a
    mid-scale texture and fine grain, so that it has the structure a perceptual hash needs."""
    import numpy as np
    from PIL import Image, ImageDraw, ImageFilter

    rng = np.random.default_rng(seed)
    w, h = size
    base = rng.integers(30, 226, size=3)
    grid = base + rng.normal(0, 60, size=(int(rng.integers(2, 6)), int(rng.integers(2, 6)), 3))
    img = Image.fromarray(np.clip(grid, 0, 255).astype(np.uint8), "RGB").resize((w, h), Image.BICUBIC)
    layer = Image.new("RGB", (w, h))
    mask = Image.new("L", (w, h), 0)
    draw, mdraw = ImageDraw.Draw(layer), ImageDraw.Draw(mask)
    for _ in range(int(rng.integers(4, 12))):
        x0, y0 = int(rng.integers(-w // 4, w)), int(rng.integers(-h // 4, h))
        x1, y1 = x0 + int(rng.integers(w // 10, w // 2)), y0 + int(rng.integers(h // 10, h // 2))
        colour = tuple(int(v) for v in rng.integers(0, 256, 3))
        alpha = int(rng.integers(120, 256))
        kind = int(rng.integers(0, 3))
        if kind == 0:
            draw.ellipse((x0, y0, x1, y1), fill=colour)
            mdraw.ellipse((x0, y0, x1, y1), fill=alpha)
        elif kind == 1:
            draw.rectangle((x0, y0, x1, y1), fill=colour)
            mdraw.rectangle((x0, y0, x1, y1), fill=alpha)
        else:
            pts = [(int(rng.integers(x0, x1)), int(rng.integers(y0, y1))) for _ in range(3)]
            draw.polygon(pts, fill=colour)
            mdraw.polygon(pts, fill=alpha)
    img = Image.composite(layer, img, mask.filter(ImageFilter.GaussianBlur(float(rng.uniform(0.5, 6)))))
    arr = np.asarray(img, dtype=np.float32)
    for scale, amplitude in ((48, rng.uniform(8, 24)), (12, rng.uniform(2, 8))):
        texture = rng.normal(0, 1, size=(max(2, h // scale), max(2, w // scale))).astype(np.float32)
        tex = np.asarray(Image.fromarray(texture, "F").resize((w, h), Image.BICUBIC))
        arr += tex[..., None] * float(amplitude)
    arr += rng.normal(0, 3, size=arr.shape)
    return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8), "RGB")
