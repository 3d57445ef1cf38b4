"""A dataset with a distractor corpus beside it: what is indexed, under which name, and the ids
the two may not share."""
import json

import pytest

from plugin.errors import BadInput
from plugin.learn.train.datasets import dataset_alias, load_dataset, with_extra_corpus


def write(folder, name, rows):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture
def dataset(tmp_path):
    d = tmp_path / "clef"
    write(d, "factchecks.jsonl", [{"id": "1", "claim": "a"}, {"id": "2", "claim": "b"}])
    write(d, "queries.jsonl", [{"id": "q1", "text": "a?"}])
    write(d, "qrels.jsonl", [{"query_id": "q1", "factcheck_id": "1"}])
    return load_dataset(d)


def test_an_extra_corpus_is_indexed_beside_the_dataset_under_a_name_of_both(dataset, tmp_path):
    write(tmp_path / "vclaims", "factchecks.jsonl", [{"id": "v1", "claim": "x", "lang": "es"}] * 1
          + [{"id": "v2", "claim": "y", "lang": "ar"}])
    mixed = with_extra_corpus(dataset, tmp_path / "vclaims")
    assert mixed.name == "clef+vclaims" and mixed.n_factchecks == 4
    assert mixed.corpus_files == [dataset.path / "factchecks.jsonl", tmp_path / "vclaims" / "factchecks.jsonl"]
    assert mixed.queries == dataset.queries and mixed.qrels == dataset.qrels  # no queries of its own
    assert dataset_alias(mixed, "m") != dataset_alias(dataset, "m")
    assert dataset.corpus_files == [dataset.path / "factchecks.jsonl"]  # the dataset itself unchanged


def test_a_shared_id_or_a_missing_corpus_is_refused_by_name(dataset, tmp_path):
    write(tmp_path / "dup", "factchecks.jsonl", [{"id": "2", "claim": "z"}])
    with pytest.raises(BadInput, match="shares 1 fact-check id.*'2'"):
        with_extra_corpus(dataset, tmp_path / "dup")
    with pytest.raises(BadInput, match="no factchecks.jsonl"):
        with_extra_corpus(dataset, tmp_path / "nowhere")
