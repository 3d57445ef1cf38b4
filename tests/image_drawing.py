"""Images for the image stage's tests, drawn with Pillow and Debian's fonts (DejaVu, Noto):
photo-like pictures, text cards, meme text over a busy background, caption bars. Seeded, so
every run draws the same pixels."""
from __future__ import annotations

import io
import textwrap
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from plugin.lab.images.cer import cer  # noqa: F401 (the tests read OCR with the lab's measure)

FONTS = {
    "sans": "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "bold": "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
    "hangul": "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "devanagari": "/usr/share/fonts/truetype/noto/NotoSansDevanagari-Regular.ttf",
    "arabic": "/usr/share/fonts/truetype/noto/NotoSansArabic-Regular.ttf",
}


def font(name: str, size: int) -> ImageFont.FreeTypeFont:
    path = FONTS[name]
    if not Path(path).exists():
        raise FileNotFoundError(f"{path}: install Debian's fonts-dejavu-core / fonts-noto")
    return ImageFont.truetype(path, size)


def photo(seed: int, size: tuple[int, int] = (800, 600)) -> Image.Image:
    """A photo-like picture: smooth colour fields, discs and grain."""
    rng = np.random.default_rng(seed)
    w, h = size
    small = (rng.random((6, 8, 3)) * 255).astype(np.uint8)
    im = Image.fromarray(small).resize((w, h), Image.Resampling.BICUBIC)
    draw = ImageDraw.Draw(im)
    for _ in range(12):
        x, y, r = int(rng.integers(0, w)), int(rng.integers(0, h)), int(rng.integers(20, 120))
        draw.ellipse((x - r, y - r, x + r, y + r), fill=tuple(int(v) for v in rng.integers(0, 256, 3)))
    grain = np.asarray(im).astype(np.int16) + rng.integers(-12, 13, (h, w, 3))
    return Image.fromarray(np.clip(grain, 0, 255).astype(np.uint8))


def noisy(seed: int, size: tuple[int, int] = (800, 600)) -> Image.Image:
    """A busy, colourful background (no white in it) for meme text."""
    rng = np.random.default_rng(seed)
    w, h = size
    small = (rng.random((h // 8, w // 8, 3)) * 200).astype(np.uint8)
    im = Image.fromarray(small).resize((w, h), Image.Resampling.BILINEAR)
    grain = np.asarray(im).astype(np.int16) + rng.integers(-30, 31, (h, w, 3))
    return Image.fromarray(np.clip(grain, 0, 220).astype(np.uint8))


def card(text: str, *, script: str = "sans", size: tuple[int, int] = (800, 600), pt: int = 34,
         background: str = "white", ink: str = "#14171a", width: int = 36) -> Image.Image:
    """A light text card (a screenshot of a post): dark text wrapped on a plain background."""
    im = Image.new("RGB", size, background)
    draw = ImageDraw.Draw(im)
    f = font(script, pt)
    lines = textwrap.wrap(text, width) if script in ("sans", "bold") else [text]
    y = 60
    for line in lines:
        if script == "arabic":
            draw.text((size[0] - 40, y), line, font=f, fill=ink, anchor="ra", direction="rtl")
        else:
            draw.text((40, y), line, font=f, fill=ink)
        y += int(pt * 1.5)
    return im


def meme(text: str, seed: int, *, size: tuple[int, int] = (800, 600), pt: int = 46) -> Image.Image:
    """White bold text with a thin dark outline over a busy background (a meme)."""
    im = noisy(seed, size)
    draw = ImageDraw.Draw(im)
    f = font("bold", pt)
    y = 40
    for line in textwrap.wrap(text.upper(), 22):
        draw.text((30, y), line, font=f, fill="white", stroke_width=2, stroke_fill="#202020")
        y += int(pt * 1.3)
    return im


def with_caption(im: Image.Image, text: str, *, bar: int = 130, colour: str = "white",
                 ink: str = "black") -> Image.Image:
    """``im`` under a solid caption bar with text in it (a caption added to a picture)."""
    w, h = im.size
    out = Image.new("RGB", (w, h + bar), colour)
    out.paste(im, (0, bar))
    draw = ImageDraw.Draw(out)
    f = font("bold", 44)
    for i, line in enumerate(textwrap.wrap(text, 30)[:2]):
        draw.text((20, 14 + i * 54), line, font=f, fill=ink)
    return out


def encode(im: Image.Image, fmt: str = "PNG", **kw) -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt, **kw)
    return buf.getvalue()


def dense_text(side: int = 2000, pt: int = 11, seed: int = 7) -> Image.Image:
    """A page of small dense text edge to edge (issue 35's OCR probe: a 2000×2000 PNG of about
    400 KB, within every size and pixel limit, that Tesseract reads for over a minute)."""
    rng = np.random.default_rng(seed)
    words = ("the of and to in is was for on that with as by at from claim vaccine election "
             "water cure study shows report minister says").split()
    im = Image.new("L", (side, side), 255)
    draw = ImageDraw.Draw(im)
    f = font("sans", pt)
    for y in range(2, side - pt, pt + 2):
        line = " ".join(f"{words[int(rng.integers(len(words)))]}{int(rng.integers(100))}"
                        for _ in range(side // (pt * 3)))
        draw.text((2, y), line, font=f, fill=0)
    return im


def png_header(width: int, height: int) -> bytes:
    """A PNG that declares ``width``×``height`` in its header and holds no pixel data: what a
    decompression bomb's header says, for the checks made before any pixel is decoded."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IEND", b""))
