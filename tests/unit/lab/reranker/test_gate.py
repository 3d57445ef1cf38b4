"""The language gate's table: which posts it is measured on, and how rows are made."""
from plugin.lab.reranker.gate import MIN_POSTS, gate_queries, gate_table, head_kind_of


def test_the_gate_is_measured_on_held_out_training_and_spare_posts_only_capped_per_language():
    queries = [{"id": "1", "lang": "en", "split": "train"}, {"id": "2", "lang": "en", "split": "train"},
               {"id": "3", "lang": "en", "split": "dev"}, {"id": "4", "lang": "en", "split": "test"},
               {"id": "5", "lang": "fr", "split": "spare"}, {"id": "6", "lang": "fr", "split": "spare"},
               {"id": "7", "lang": "en", "split": "train"}, {"id": "8", "lang": "fr", "split": "spare"}]
    qrels = {str(i): {"f"} for i in range(1, 8)}
    got = gate_queries(queries, trained={"1"}, qrels=qrels, per_lang=1)
    # 1 trained on, 3 and 4 reported, 8 without qrels; one a language
    assert [q["id"] for q in got] == ["2", "5"]
    assert [q["id"] for q in gate_queries(queries, {"1"}, qrels, per_lang=5)] == ["2", "5", "6", "7"]


def test_a_row_reranks_where_the_reranker_beat_the_first_stage_and_thin_languages_pool():
    samples = ([("en", "own", 0.5, 1.0)] * MIN_POSTS + [("ar", "own", 1.0, 0.5)] * MIN_POSTS
               + [("sq", "own", 0.0, 1.0)] * (MIN_POSTS // 2) + [("ta", "own", 0.5, 0.5)] * (MIN_POSTS // 2)
               + [("ko", "cross", 1.0, 1.0)] * 3)
    table = gate_table(samples)
    rows = table["rows"]
    assert rows["en"]["own"] == {"n": MIN_POSTS, "first_stage": 0.5, "reranked": 1.0, "rerank": True}
    assert rows["ar"]["own"]["rerank"] is False
    assert rows["*"]["own"] == {"n": MIN_POSTS, "first_stage": 0.25, "reranked": 0.75, "rerank": True,
                                "languages": ["sq", "ta"]}
    assert "cross" not in rows["*"] and "ko" not in rows  # too few to say anything: not measured


def test_a_head_of_match_dicts_crosses_when_its_first_candidate_is_in_another_language():
    assert head_kind_of("en", [{"lang": "en"}, {"lang": None}]) == "own"
    assert head_kind_of("en", [{"lang": "en"}, {"lang": "ar"}]) == "own"
    assert head_kind_of("en", [{"lang": "ar"}, {"lang": "en"}]) == "cross"
    assert head_kind_of("en", []) == "own"


def test_the_cross_rule_is_the_lowest_probability_whose_candidates_are_right_often_enough():
    from plugin.lab.reranker.gate import cross_rule

    # 300 sure and right, 4 sure and wrong (0.99); 50 right and 30 wrong between 0.9 and 0.99
    cands = [(0.999, True)] * 300 + [(0.99, False)] * 4 + [(0.95, True)] * 50 + [(0.95, False)] * 30
    rule = cross_rule(cands, probabilities=(0.9, 0.99, 0.999))
    rows = {r["min_probability"]: r for r in rule["table"]}
    assert rows[0.9]["candidates"] == 384 and rows[0.9]["precision"] == round(350 / 384, 4)
    assert rows[0.99]["precision"] == round(300 / 304, 4) and rows[0.99]["precision_low"] < rows[0.99]["precision"]
    assert rule["min_probability"] == 0.99 and rule["min_precision"] == 0.95
    assert cross_rule([(0.99, True)] * 5)["min_probability"] is None  # five right say little
    assert cross_rule([])["min_probability"] is None
