import pytest

from plugin.lab.images.cer import cer, levenshtein, normalise


@pytest.mark.parametrize("a, b, d", [
    ("", "", 0), ("abc", "", 3), ("", "abc", 3), ("kitten", "sitting", 3), ("flaw", "lawn", 2),
    ("abc", "abc", 0), ("abc", "acb", 2), ("한국어", "한국", 1),
])
def test_levenshtein_counts_insertions_deletions_and_substitutions(a, b, d):
    assert levenshtein(a, b) == d
    assert levenshtein(b, a) == d


def test_normalise_folds_layout_and_compatibility_forms():
    assert normalise("  one\ntwo\t three  ") == "one two three"
    assert normalise("𝙇𝙀𝙀 ﬁne") == "LEE fine"


@pytest.mark.parametrize("reading, reference, expected", [
    ("the cat", "the cat", 0.0),
    ("the\ncat", "the cat", 0.0),  # line breaks are layout
    ("the bat", "the cat", 1 / 7),
    ("", "abcd", 1.0),
    ("abcdefgh", "abcd", 1.0),  # added text counts
    ("xxxxxxxx", "ab", 4.0),  # and can exceed 1
    ("", "", 0.0),
    ("noise", "", 1.0),
])
def test_cer_is_edits_per_reference_character(reading, reference, expected):
    assert cer(reading, reference) == pytest.approx(expected)
