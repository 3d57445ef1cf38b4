"""Near-duplicates: the matcher's collapse and the lab's duplicate sets share one test
(``tests/unit/test_lookup_threshold.py`` checks that the two agree)."""
from plugin.search.duplicates import claim_words, duplicates_of, words

CLAIMS = {"a": "Vaccines alter your DNA, experts say", "b": "vaccines alter your DNA experts say!",
          "c": "5G spreads the virus", "d": ""}


def test_words_are_lower_cased_word_sets():
    assert words("Vaccines, vaccines ALTER dna!") == {"vaccines", "alter", "dna"}


def test_a_duplicate_set_holds_the_near_duplicates_and_an_empty_claim_alone():
    sets = claim_words(CLAIMS)
    assert duplicates_of({"a"}, sets) == {"a", "b"} and duplicates_of({"c"}, sets) == {"c"}
    assert duplicates_of({"d"}, sets) == {"d"}
