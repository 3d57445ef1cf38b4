"""Near-duplicates: the matcher's collapse and the lab's duplicate sets share one test."""
from plugin.search.duplicates import claim_words, duplicates_of, same_claim, words

CLAIMS = {"a": "Vaccines alter your DNA, experts say", "b": "vaccines alter your DNA experts say!",
          "c": "5G spreads the virus", "d": ""}


def test_words_are_lower_cased_word_sets():
    assert words("Vaccines, vaccines ALTER dna!") == {"vaccines", "alter", "dna"}


def test_duplicate_sets_agree_with_same_claim():
    sets = claim_words(CLAIMS)
    for x in CLAIMS:
        for y in CLAIMS:
            if x != y:
                assert (y in duplicates_of({x}, sets, threshold=0.8)) == same_claim(CLAIMS[x], CLAIMS[y], 0.8)
    assert duplicates_of({"a"}, sets) == {"a", "b"} and duplicates_of({"d"}, sets) == {"d"}
