"""Passage splitting as hand-checkable tables."""
import re

import pytest

from plugin.evidence.passages import (_SENTENCE_END, embedding_text, passages, size, split_document,
                                      split_sentences)


def words(n: int, tag: str = "w") -> str:
    """A sentence of ``n`` words ending with a full stop."""
    return " ".join(f"{tag}{i}" for i in range(n)) + "."


@pytest.mark.parametrize("text, expected", [
    ("One. Two! Three? Four", ["One.", "Two!", "Three?", "Four"]),
    ("Line one\nLine two\n\n  Line three  ", ["Line one", "Line two", "Line three"]),
    ("e.g. this stays", ["e.g. this stays"]),
    ("中文句子。第二句！", ["中文句子。", "第二句！"]),
    ("  ", []),
])
def test_split_sentences(text, expected):
    assert split_sentences(text) == expected


@pytest.mark.parametrize("sizes, max_words, overlap, expected", [
    # 4 sentences of 40 words, budget 120: [0,1,2], then back one sentence: [2,3]
    ([40, 40, 40, 40], 120, 1, [[0, 1, 2], [2, 3]]),
    ([40, 40, 40, 40], 120, 0, [[0, 1, 2], [3]]),
    ([40, 40, 40, 40], 80, 1, [[0, 1], [1, 2], [2, 3]]),
    # two sentences of overlap, but a passage always starts after the previous start
    ([60, 60, 60], 120, 2, [[0, 1], [1, 2]]),
    ([10], 120, 1, [[0]]),
    ([], 120, 1, []),
])
def test_passages_windows(sizes, max_words, overlap, expected):
    sentences = [words(n, f"s{i}_") for i, n in enumerate(sizes)]
    got = passages(sentences, max_words=max_words, overlap=overlap)
    assert got == [" ".join(sentences[i] for i in idx) for idx in expected]


def test_every_passage_within_budget_and_every_sentence_covered():
    sentences = [words(n, f"s{i}_") for i, n in enumerate([12, 30, 7, 55, 21, 9, 40, 3, 18])]
    got = passages(sentences, max_words=60, overlap=1)
    assert all(size(p) <= 60 for p in got)
    assert all(any(s in p for p in got) for s in sentences)
    assert len(got) == len(set(got))


def test_overlong_sentence_is_cut_into_word_windows():
    got = passages([words(250)], max_words=100, overlap=1)
    assert [len(p.split()) for p in got] == [100, 100, 50]
    assert got[0].split()[0] == "w0" and got[1].split()[0] == "w100"


def test_text_without_spaces_is_cut_by_characters():
    text = "字" * 1500  # 1,500 characters, no spaces: 250 "words" at 6 characters each
    got = passages([text], max_words=100, overlap=0)
    assert [len(p) for p in got] == [600, 600, 300]


def test_sentences_list_is_used_as_given_and_blank_ones_dropped():
    assert split_document(["First  sentence", "", "  ", "Second\tone"]) == ["First sentence Second one"]


def test_text_is_split_into_sentences():
    text = " ".join(words(50, f"s{i}_") for i in range(3))
    assert len(split_document(text, max_words=120)) == 2


@pytest.mark.parametrize("kwargs", [{"max_words": 0}, {"overlap": -1}])
def test_bad_parameters(kwargs):
    with pytest.raises(ValueError):
        passages(["a."], **kwargs)


@pytest.mark.parametrize("title, expected", [
    ("Scooter ban", "Scooter ban\nThe passage."),
    (None, "The passage."),
    ("  ", "The passage."),
    (" ".join(f"t{i}" for i in range(40)), " ".join(f"t{i}" for i in range(24)) + "\nThe passage."),
])
def test_embedding_text_puts_the_title_first(title, expected):
    assert embedding_text(title, "The passage.") == expected


#: The sentence-end pattern before issue 21; it rescanned a long run of spaces from each one.
OLD_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+(?=[^a-z\s])|(?<=[。！？])\s*|\s*\n\s*")


@pytest.mark.parametrize("text", [
    "One. Two! Three? Four", "Line one\nLine two\n\n  Line three  ", "e.g. this stays",
    "中文句子。第二句！", "  ", "end.  \n  next", "a \t \n\t b\r\nc", "x…  Y", "no end",
    "trailing \n", "\n leading",
])
def test_sentence_end_splits_as_before(text):
    assert _SENTENCE_END.split(text) == OLD_SENTENCE_END.split(text)


def test_a_line_break_match_starts_where_its_white_space_starts():
    """Not from inside a run: tried from every space of a run without a line break, the old
    ``\\s*\\n\\s*`` rescanned the rest of the run each time (quadratic)."""
    text = "a" + " " * 10 + "\nb"
    assert _SENTENCE_END.search(text, 3) is None
    assert _SENTENCE_END.search(text).span() == (1, 12)


@pytest.mark.parametrize("text, expected", [
    (" " * 20000, []),
    ("a" + "\t" * 20000 + "b", ["a b"]),
    ("a" + " " * 20000 + "\nb", ["a", "b"]),
    (". " * 10000, ["."] * 10000),
])
def test_long_white_space_runs(text, expected):
    assert split_sentences(text) == expected
