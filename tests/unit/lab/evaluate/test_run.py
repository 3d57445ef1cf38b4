"""Which queries an evaluation scored, named as its recorded scores are keyed."""
from pathlib import Path

import pytest

from plugin.learn.train.datasets import Dataset
from plugin.lab.evaluate.run import query_split

SPLIT = [{"id": "1", "split": "train"}, {"id": "2", "split": "dev"}, {"id": "3", "split": "test"}]
PLAIN = [{"id": "1"}, {"id": "2"}, {"id": "3"}]


@pytest.mark.parametrize("queries, scored, excluded, expected", [
    (SPLIT, ["2", "3"], {"1"}, "dev+test"),           # CLEF-2020 without the reranker's queries
    (SPLIT, ["3", "1", "2"], set(), "dev+test+train"),
    (SPLIT, ["2"], set(), "dev"),
    (PLAIN, ["1", "2", "3"], set(), "all"),
    (PLAIN, ["2", "3"], {"1"}, "all-but-training"),   # sha1 rule: no split field to name
    (SPLIT[:1] + PLAIN[1:], ["1", "2"], set(), "all"),
])
def test_query_split(queries, scored, excluded, expected):
    assert query_split(Dataset("d", Path("d"), queries), scored, excluded) == expected


def test_scored_modes_per_pair_kind_or_the_one_asked_for():
    from plugin.lab.evaluate.run import scored_modes
    from plugin.models import Mode

    qrels = {"all": {"1": {"a"}, "2": {"b"}}, "mono": {"1": {"a"}}, "cross": {"2": {"b"}}}
    crossling = Dataset("mc", Path("mc"), PLAIN, qrels=qrels)
    drop_2 = lambda q: {k: v for k, v in q.items() if k != "2"}  # noqa: E731
    assert scored_modes(crossling, None, drop_2) == [("mono", Mode.MONO, {"1": {"a"}}), ("cross", Mode.CROSS, {})]
    assert scored_modes(crossling, "cross", dict) == [("cross", Mode.CROSS, qrels["all"])]
    mono_only = Dataset("clef", Path("clef"), PLAIN, qrels={"all": qrels["all"], "mono": {}, "cross": {}})
    assert scored_modes(mono_only, None, dict) == [("mono", Mode.MONO, qrels["all"])]


def test_run_config_gives_each_match_the_live_budget_and_counts_what_was_reranked():
    from plugin.lab.evaluate.run import run_config
    from plugin.models import Mode
    from plugin.search.result import MatchResult

    class Recording:
        budgets: list = []

        def match(self, req, config):
            self.budgets.append(req.rerank_budget_ms)
            return MatchResult(lang="en", matches=[{"id": "a"}], took_ms=1.0, reranked=req.text == "q1")

    queries = [{"id": "1", "text": "q1"}, {"id": "2", "text": "q2"}, {"id": "3", "text": "no qrels"}]
    got = run_config(Recording(), None, queries, {"1": {"a"}, "2": {"b"}}, mode=Mode.AUTO, budget_ms=150.0)
    assert Recording.budgets == [150.0, 150.0] and got["reranked"] == 0.5 and got["n_queries"] == 2
    assert run_config(Recording(), None, queries[:1], {"1": {"a"}}, mode=Mode.AUTO)["reranked"] == 1.0
    assert Recording.budgets[-1] is None
