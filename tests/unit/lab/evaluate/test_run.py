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
