#!/usr/bin/env python
"""Re-render the sample image post under ``samples/images/`` (``make demo`` matches it).

  .venv/bin/python scripts/make_sample_images.py

The post is a CLEF-2020 tweet of the bundled sample (``samples/clef2020/queries.jsonl``, id
``clef-857``; its fact-check is in the sample corpus) drawn as a light tweet card by the image
lab's renderer (``plugin.lab.images.render``), without the tweet's signature and link: the author
shown is a made-up placeholder. Deterministic: the same fonts give the same bytes.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from plugin.lab.images.render import render, split_post  # noqa: E402

QUERY_ID = "clef-857"
OUT = ROOT / "samples" / "images" / "russian-flag-texas-capitol.png"
#: the same screenshot as it comes back re-shared: smaller, and re-encoded as a JPEG
RESHARED = ROOT / "samples" / "images" / "russian-flag-texas-capitol-reshared.jpg"


def main() -> int:
    queries = (ROOT / "samples" / "clef2020" / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    post = next(q for q in map(json.loads, queries) if q["id"] == QUERY_ID)
    body = re.sub(r"\s*https?://\S+", "", split_post(post["text"]).body)
    shot = render(body, "light", seed=QUERY_ID)
    OUT.write_bytes(shot.data)
    import io

    from PIL import Image

    with Image.open(io.BytesIO(shot.data)) as im:
        small = im.convert("RGB").resize((im.width * 3 // 4, im.height * 3 // 4), Image.LANCZOS)
        buf = io.BytesIO()
        small.save(buf, "JPEG", quality=60)
    RESHARED.write_bytes(buf.getvalue())
    print(json.dumps({"file": str(OUT.relative_to(ROOT)), "bytes": len(shot.data),
                      "size": [shot.width, shot.height], "text": shot.text}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
