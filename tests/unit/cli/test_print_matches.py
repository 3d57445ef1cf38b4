"""What ``factsieve match`` prints: the calibrated confidence where there is one, the fused
score (in brackets, said to be a score) where there is not."""
from cli.common import CONFIDENCE_LEGEND, SCORE_LEGEND, match_lines
from plugin.search.result import Match


def result(*matches, notes=()):
    return Match.from_dict({"lang": "en", "took_ms": 12.3, "matches": list(matches), "notes": list(notes)})


def match(rank, score, confidence, claim="5G spreads covid"):
    return {"id": f"fc{rank}", "rank": rank, "score": score, "confidence": confidence, "claim": claim,
            "lang": "en", "rating": "False", "url": "https://example.org/fc"}


def test_the_confidence_leads_each_match_and_the_legend_says_what_it_is():
    lines = match_lines(result(match(1, 0.0481, 0.9991), match(2, 0.0312, 0.0204, "Masks cause hypoxia")))
    assert lines == ["  language: en   (12 ms)", CONFIDENCE_LEGEND,
                     "   1. 0.999 5G spreads covid  (en, False, https://example.org/fc)",
                     "   2. 0.020 Masks cause hypoxia  (en, False, https://example.org/fc)"]
    assert "0.0481" not in "\n".join(lines)  # the fused score stays in the JSON


def test_without_a_confidence_model_the_score_is_shown_and_named():
    lines = match_lines(result(match(1, 0.0481, None), notes=["no reranker"]))
    assert lines[1] == SCORE_LEGEND and lines[2].startswith("   1. [0.0481] 5G spreads covid")
    assert lines[-1] == "  note: no reranker"


def test_no_matches_has_no_legend():
    assert match_lines(result()) == ["  language: en   (12 ms)", "  no matches"]
