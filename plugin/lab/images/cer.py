"""The character error rate of an OCR reading (pure): Levenshtein distance over characters,
divided by the reference's length, both texts normalised the same way first."""
from __future__ import annotations

import unicodedata


def normalise(text: str) -> str:
    """NFKC, every run of whitespace (line breaks included) one space, trimmed: how a reading and
    its reference are compared (line breaks depend on the layout, not on the reading)."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


def levenshtein(a: str, b: str) -> int:
    """Insertions, deletions and substitutions turning ``a`` into ``b`` (two rows, O(len a · len b))."""
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def cer(reading: str, reference: str) -> float:
    """Edits from the normalised reference to the normalised reading, per reference character
    (can exceed 1 when the reading adds text); 0.0 for two empty texts, 1.0 for a reading of an
    empty reference that is not empty."""
    hyp, ref = normalise(reading), normalise(reference)
    if not ref:
        return 0.0 if not hyp else 1.0
    return levenshtein(hyp, ref) / len(ref)
