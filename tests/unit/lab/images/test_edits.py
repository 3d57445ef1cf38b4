import io

import numpy as np
from PIL import Image

from plugin.lab.images.edits import EDITS, brightness, caption_bar, crop, encode, flip, jpeg, resize
from plugin.lab.images.render import photo


def img():
    return photo(1, (200, 100))


def test_the_measured_edits():
    assert set(EDITS) == {"jpeg_q30", "resize_0.5", "crop_2pct", "crop_10pct", "caption_bar",
                          "brightness_+35pct", "flip_horizontal"}
    for name, edit in EDITS.items():
        out = edit(img())
        assert out.mode == "RGB", name
        assert edit(img()).tobytes() == out.tobytes(), name  # deterministic


def test_geometry():
    assert resize(img()).size == (100, 50)
    assert crop(img(), 0.10).size == (180, 90)
    assert crop(img(), 0.02).size == (196, 98)
    bar = caption_bar(img())
    assert bar.size == (200, 118)
    assert bar.getpixel((2, 2)) == (255, 255, 255)  # the bar is on top
    assert bar.crop((0, 18, 200, 118)).tobytes() == img().tobytes()
    assert caption_bar(img(), top=False).crop((0, 0, 200, 100)).tobytes() == img().tobytes()
    assert flip(img()).getpixel((0, 0)) == img().getpixel((199, 0))


def test_brightness_and_reencoding():
    before = np.asarray(img().convert("L"), dtype=float).mean()
    after = np.asarray(brightness(img()).convert("L"), dtype=float).mean()
    assert after > before * 1.2
    assert len(encode(img(), quality=30)) < len(encode(img(), quality=92))
    assert Image.open(io.BytesIO(encode(img()))).format == "JPEG"
    assert jpeg(img()).size == (200, 100)
