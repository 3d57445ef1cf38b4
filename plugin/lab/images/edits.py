"""The edits a shared image goes through on its way around social media (pure but for PIL):
re-encoding, resizing, cropping, a caption bar, brightness and a mirror flip. Each takes and
returns an RGB PIL image, deterministically; ``encode`` writes the bytes a post would carry."""
from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any


def encode(img: Any, *, quality: int = 92) -> bytes:
    """``img`` as the JPEG bytes a post carries (``quality`` as the sender's app chose)."""
    out = io.BytesIO()
    img.save(out, "JPEG", quality=quality)
    return out.getvalue()


def jpeg(img: Any, quality: int = 30) -> Any:
    """Re-encoded as a JPEG of ``quality`` (and decoded again)."""
    from PIL import Image

    return Image.open(io.BytesIO(encode(img, quality=quality))).convert("RGB")


def resize(img: Any, factor: float = 0.5) -> Any:
    from PIL import Image

    return img.resize((max(1, round(img.width * factor)), max(1, round(img.height * factor))), Image.BILINEAR)


def crop(img: Any, share: float) -> Any:
    """The centre kept: ``share`` of the width and of the height cut off, half on each side."""
    dx, dy = round(img.width * share / 2), round(img.height * share / 2)
    return img.crop((dx, dy, img.width - dx, img.height - dy))


def caption_bar(img: Any, *, text: str = "You won't believe what happened next", top: bool = True,
                share: float = 0.18) -> Any:
    """A solid white bar of ``share`` of the height added above (or below) the image, with black
    text in it: the caption a meme generator adds."""
    from PIL import Image, ImageDraw

    from plugin.lab.images.render import font

    bar = max(8, round(img.height * share))
    out = Image.new("RGB", (img.width, img.height + bar), (255, 255, 255))
    out.paste(img, (0, bar if top else 0))
    size = max(8, bar // 3)
    y = bar // 2 if top else img.height + bar // 2
    ImageDraw.Draw(out).text((img.width // 2, y), text, font=font("latin", size, bold=True),
                             fill=(0, 0, 0), anchor="mm")
    return out


def brightness(img: Any, factor: float = 1.35) -> Any:
    from PIL import ImageEnhance

    return ImageEnhance.Brightness(img).enhance(factor)


def flip(img: Any) -> Any:
    from PIL import ImageOps

    return ImageOps.mirror(img)


#: the edits the near-duplicate bench measures, by the name it reports them under
EDITS: dict[str, Callable[[Any], Any]] = {
    "jpeg_q30": jpeg,
    "resize_0.5": resize,
    "crop_2pct": lambda img: crop(img, 0.02),
    "crop_10pct": lambda img: crop(img, 0.10),
    "caption_bar": caption_bar,
    "brightness_+35pct": brightness,
    "flip_horizontal": flip,
}
