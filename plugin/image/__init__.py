"""The image stage: what FactSieve reads from an image (a post's, or a fact-check's).

One stage, run in-process for ``/v1/match`` and in the workers for posts and ingest:
sha256 (exact duplicates) → PDQ perceptual hash (+ quality; 8 orientations and bar-stripped
variants for queries) → OCR (Tesseract, PSM 6 over the image and two text masks, the most
confident pass kept; the language from the post or routed by script) → the share of the image
covered by text.

Modules: ``model`` (what the stage returns, pure), ``decode`` (bytes → a checked image: the
one place image bytes are trusted), ``pdq`` (hashes and their chunk terms, pure but for the
hashing), ``ocr`` (Tesseract, a pool of loaded APIs per model per process), ``stage`` (the composition),
``queries`` (the same-image query bodies, pure), ``fetch`` (an ``image_url`` through the guarded
outbound client). Heavy imports (PIL, pdqhash, tesserocr) are lazy.

No CLIP/SigLIP-type model ships its weights in a package reachable here, so images are matched
by their hash and their text only; ``model.ImageAnalysis`` leaves room for an embedding.
"""
