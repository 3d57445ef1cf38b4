"""Split a document into overlapping passages (pure).

A passage is a run of whole sentences of about ``max_words`` words (120 by default); the next
passage starts ``overlap`` sentences (1 by default) before the previous one ended. Why these
numbers: 120 English words are about 160 tokens, so a passage with its title and the e5
``passage:`` prefix stays inside the embedder's 256-token window (``max_seq_length``) and nothing
is silently cut off its embedding; it is also the size retrieval for fact verification settled
on (DPR's 100-word passages; AVeriTeC systems rank a few sentences at a time). One sentence of
overlap keeps a statement and the sentence that qualifies it together in at least one passage;
it cost 6 % more passages on a 2,742-document sample (CLIMATE-FEVER's Wikipedia sentences by
article, LIAR-PLUS justifications: 3,540 → 3,753, 67 words on average), and about a fifth more
on long pages of 20-word sentences.

Sentence splitting is a rule, not a model: end punctuation followed by white space and not by
a lower-case letter, full-width end punctuation, and line breaks. It mis-splits "Dr. Smith", which costs nothing here: the split only decides where a
passage may end, and the overlap repairs a cut. A "sentence" longer than the budget (a scraped
paragraph, a menu, text without spaces in Chinese or Thai) is cut into word or character windows.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

#: Passage budget in words, and sentences shared by consecutive passages.
MAX_WORDS = 120
OVERLAP_SENTENCES = 1
#: A text without spaces (Chinese, Japanese, Thai) counts as one word per this many characters,
#: so that it is cut too; ~6 characters is an English word with its space.
CHARS_PER_WORD = 6
#: Words of the title the embedding sees before each passage (a headline, not a second passage).
TITLE_WORDS = 24

#: End punctuation and white space before anything but a lower-case ASCII letter ("e.g. this"
#: stays whole), full-width end punctuation (CJK runs on without a space), or a line break.
#: A line break's white space is matched from the start of its run only (``(?<!\s)``): tried
#: from every space of a long run without one, ``\s*\n`` rescanned the rest of it (quadratic).
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+(?=[^a-z\s])|(?<=[。！？])\s*|(?<!\s)\s*\n\s*")


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (end punctuation + white space, or a line break), white space
    collapsed, empty ones dropped."""
    return clean_sentences(_SENTENCE_END.split(text))


def clean_sentences(sentences: Iterable[str]) -> list[str]:
    """Sentences as given (AVeriTeC's ``url2text``), white space collapsed, empty ones dropped."""
    return [s for s in (" ".join(str(x).split()) for x in sentences) if s]


def size(sentence: str) -> int:
    """A sentence's length in words, counting unspaced text by its characters."""
    return max(len(sentence.split()), -(-len(sentence) // CHARS_PER_WORD) if sentence else 0)


def _windows(sentence: str, max_words: int) -> list[str]:
    """``sentence`` cut into pieces of at most ``max_words`` (by words, or by characters when
    it has too few spaces for that)."""
    words = sentence.split()
    if len(words) > max_words:
        return [" ".join(words[i:i + max_words]) for i in range(0, len(words), max_words)]
    chars = max_words * CHARS_PER_WORD
    if len(sentence) > chars:
        return [sentence[i:i + chars].strip() for i in range(0, len(sentence), chars)]
    return [sentence]


def passages(sentences: Sequence[str], *, max_words: int = MAX_WORDS,
             overlap: int = OVERLAP_SENTENCES) -> list[str]:
    """Overlapping passages of whole sentences, each at most ``max_words`` (a single sentence
    longer than that is cut first), consecutive ones sharing ``overlap`` sentences.

    Every sentence is in at least one passage; a passage is never wholly inside the one before
    (the last passage ends at the last sentence and each starts after the previous start).
    """
    if max_words < 1 or overlap < 0:
        raise ValueError("max_words must be >= 1 and overlap >= 0")
    units = [piece for s in clean_sentences(sentences) for piece in _windows(s, max_words)]
    sizes = [size(u) for u in units]
    out: list[str] = []
    start = 0
    while start < len(units):
        end, words = start + 1, sizes[start]
        while end < len(units) and words + sizes[end] <= max_words:
            words += sizes[end]
            end += 1
        out.append(" ".join(units[start:end]))
        if end == len(units):
            break
        start = max(start + 1, end - overlap)
    return out


def split_document(content: str | Sequence[str], *, max_words: int = MAX_WORDS,
                   overlap: int = OVERLAP_SENTENCES) -> list[str]:
    """Passages of a document given as text (split into sentences here) or as a list of
    sentences (used as they are)."""
    sentences = split_sentences(content) if isinstance(content, str) else content
    return passages(sentences, max_words=max_words, overlap=overlap)


def embedding_text(title: str | None, passage: str) -> str:
    """What a passage's embedding sees: its document's title (first ``TITLE_WORDS`` words) as
    context, then the passage. A passage alone often lacks its subject ("He said it was…");
    the title names it. The stored ``text`` stays the passage alone."""
    head = " ".join((title or "").split()[:TITLE_WORDS])
    return f"{head}\n{passage}" if head else passage
