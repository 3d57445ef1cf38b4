"""What the image stage returns (pure data): ``ImageAnalysis`` and its parts, with the one
shape they are stored in (``to_source``, a fact-check's ``image`` field) and shown in
(``to_dict``, the API's ``image`` and ``ocr``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from plugin.image.thumb import Thumbnail

#: PDQ hashes are 256 bits, written as 64 hex digits; stored also as 16 chunks of 16 bits
#: (``pdq_c0`` … ``pdq_c15``, four hex digits each) for candidate selection, and as four signed
#: 64-bit words (``pdq_w0`` … ``pdq_w3``) for exact Hamming scoring in OpenSearch.
PDQ_BITS = 256
PDQ_CHUNKS = 16


@dataclass(frozen=True)
class PdqHash:
    hex: str  # 64 lower-case hex digits
    quality: int  # 0..100, PDQ's own measure of how much structure the image has


@dataclass(frozen=True)
class OcrResult:
    text: str
    #: the Tesseract model(s) read with (``eng``, ``kor``, ``script/Latin``…)
    model: str
    #: the ISO 639-1 language the text was read as, when known (given or detected)
    lang: str | None
    #: mean word confidence of the kept pass, 0..100
    confidence: float
    #: which pass was kept: ``image``, ``white`` (white-text mask) or ``bright`` (bright-text mask)
    pass_name: str
    #: the share of the image covered by recognised words' boxes, 0..1
    text_share: float
    seconds: float = 0.0
    #: the reading stopped at its time budget: ``text`` is the best pass that finished (or none)
    budget_spent: bool = False


@dataclass(frozen=True)
class ImageAnalysis:
    sha256: str
    width: int
    height: int
    format: str  # PIL's format name: JPEG, PNG, WEBP, GIF, BMP
    #: the image's own hash; ``None`` when its quality is below ``pdq_min_quality``
    pdq: PdqHash | None
    #: the hashes a query compares (the image in 8 orientations, and with uniform top/bottom bars
    #: stripped when it has them); empty when ``pdq`` is ``None``
    query_hashes: tuple[str, ...] = ()
    ocr: OcrResult | None = None
    #: the text covers at least ``image_text_heavy_share`` of the image: a hash match needs the
    #: OCR texts to agree
    text_heavy: bool = False
    timings_ms: dict[str, float] = field(default_factory=dict)
    #: a small JPEG of the image for the desk (``plugin.image.thumb``), made for a post or a
    #: query (``analyse(query=True)``), never for a stored fact-check; not in ``to_dict``
    thumbnail: Thumbnail | None = field(default=None, repr=False, compare=False)

    def to_source(self) -> dict[str, Any]:
        """The stored ``image`` field of a fact-check (never the pixels, never EXIF)."""
        doc: dict[str, Any] = {"sha256": self.sha256, "width": self.width, "height": self.height,
                               "text_heavy": self.text_heavy}
        if self.pdq is not None:
            doc.update(pdq=self.pdq.hex, pdq_quality=self.pdq.quality, **pdq_fields(self.pdq.hex))
        if self.ocr is not None and self.ocr.text:
            doc.update(ocr_text=self.ocr.text, ocr_lang=self.ocr.lang)
        return doc

    def to_dict(self) -> dict[str, Any]:
        """The API's view: the image's identity and what was read from it."""
        return {"sha256": self.sha256, "width": self.width, "height": self.height,
                "format": self.format,
                "pdq": None if self.pdq is None else {"hash": self.pdq.hex, "quality": self.pdq.quality},
                "text_heavy": self.text_heavy,
                "ocr": None if self.ocr is None else {
                    "text": self.ocr.text, "lang": self.ocr.lang, "model": self.ocr.model,
                    "confidence": round(self.ocr.confidence, 1), "pass": self.ocr.pass_name,
                    "text_share": round(self.ocr.text_share, 3),
                    "budget_spent": self.ocr.budget_spent},
                "timings_ms": {k: round(v, 1) for k, v in self.timings_ms.items()}}


def pdq_fields(hex_hash: str) -> dict[str, Any]:
    """The chunk keywords and the signed 64-bit words of a hash, by stored field name."""
    chunks = {f"pdq_c{i}": hex_hash[4 * i:4 * i + 4] for i in range(PDQ_CHUNKS)}
    words = {f"pdq_w{i}": signed64(int(hex_hash[16 * i:16 * i + 16], 16)) for i in range(4)}
    return {**chunks, **words}


def signed64(value: int) -> int:
    """An unsigned 64-bit integer as the signed ``long`` OpenSearch stores."""
    return value - (1 << 64) if value >= 1 << 63 else value
