"""Training on several datasets at once: weak pairs from a multilingual corpus, groups files
merged with each dataset's split kept, and an evaluation that leaves out what was trained on."""
import json
from pathlib import Path

import pytest

from plugin.errors import BadInput
from plugin.lab.evaluate.run import trained_queries_of
from plugin.lab.reranker.groups import merge_sources
from plugin.lab.reranker.weak_pairs import DEV_DIGITS, QUERY_PREFIX, pairs_of, usable, write_weak_pairs
from plugin.learn.train.groups import TrainingGroup, sha1_digit


def article(i, lang="fr", claim=None, title=None):
    return {"id": f"v{i}", "lang": lang, "claim": f"claim {i} words" if claim is None else claim,
            "title": f"Non, le titre {i}" if title is None else title, "url": None, "date": None}


def test_an_article_is_a_weak_pair_when_its_claim_and_title_are_two_wordings():
    assert usable("Vaccines contain chips", "No, vaccines do not contain microchips")
    assert not usable("Vaccines contain chips", "")
    assert not usable("Vaccines contain chips", "VACCINES CONTAIN CHIPS")
    assert not usable("chips", "Fact check: vaccines contain chips")  # one inside the other


def test_weak_pairs_query_the_claim_answer_with_the_title_and_split_by_sha1():
    arts = [article(i) for i in range(200)] + [article(999, claim="same", title="same")]
    queries, factchecks, qrels = pairs_of(arts, per_lang=50)
    assert len(queries) == len(factchecks) == len(qrels) == 200
    q0, f0 = queries[0], factchecks[0]
    assert q0["id"] == QUERY_PREFIX + f0["id"] and q0["text"] == "claim 0 words"
    assert f0 == {"id": "v0", "claim": "Non, le titre 0", "title": "", "url": None, "lang": "fr",
                  "date": None, "rating": None}
    for q in queries:  # dev by the digit alone; train capped per language; the rest spare
        assert (q["split"] == "dev") is (sha1_digit(q["id"]) in DEV_DIGITS)
    assert sum(q["split"] == "train" for q in queries) == 50
    assert pairs_of(arts, per_lang=50) == (queries, factchecks, qrels)  # deterministic


def test_the_weak_pairs_command_writes_a_dataset_and_refuses_a_corpus_without_pairs(tmp_path: Path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "factchecks.jsonl").write_text(
        "".join(json.dumps(article(i, lang)) + "\n" for i, lang in enumerate(["fr", "de", "de"])))
    report = write_weak_pairs(corpus, tmp_path / "out", per_lang=1)
    assert report["pairs"] == 3 and set(report["per_lang"]) == {"fr", "de"}
    from plugin.learn.train.datasets import load_dataset

    data = load_dataset(tmp_path / "out")
    assert len(data.queries) == 3 and data.qrels["all"]["wp-v0"] == {"v0"}
    (corpus / "factchecks.jsonl").write_text(json.dumps(article(1, claim="x", title="x")) + "\n")
    with pytest.raises(BadInput, match="no article"):
        write_weak_pairs(corpus, tmp_path / "out2")


def group(qid):
    return TrainingGroup(qid, "q", "p", ("n1", "n2"))


def test_groups_files_merge_into_one_set_that_keeps_each_dataset_s_split():
    a = ([group("1"), group("2")], {"dataset": "/d/a", "dataset_name": "a", "split_rule": "split == train",
                                    "first_stage": "factsieve", "training_query_ids": ["1", "2", "3"]})
    b = ([group("wp-9")], {"dataset": "/d/b", "dataset_name": "b", "split_rule": "split == train",
                           "first_stage": "factsieve", "training_query_ids": ["wp-9"]})
    assert merge_sources([a]) == a
    groups, meta = merge_sources([a, b])
    assert [g.query_id for g in groups] == ["1", "2", "wp-9"]
    assert meta["dataset_name"] == "a+b" and meta["first_stage"] == "factsieve"
    assert [s["dataset_name"] for s in meta["sources"]] == ["a", "b"]
    with pytest.raises(BadInput, match="both a and a"):
        merge_sources([a, a])


def test_an_evaluation_leaves_out_the_queries_of_its_own_dataset_that_a_model_trained_on():
    single = {"dataset_name": "clef2020_task2", "training_query_ids": ["1", "2"]}
    several = {"dataset_name": "clef2020_task2+clef2021_task2a_ar", "training_query_ids": ["1", "ar-1"],
               "sources": [{"dataset_name": "clef2020_task2", "training_query_ids": ["1"]},
                           {"dataset_name": "clef2021_task2a_ar", "training_query_ids": ["ar-1"]}]}
    assert trained_queries_of(single, "clef2020_task2") == {"1", "2"}
    assert trained_queries_of(single, "other") == set()
    assert trained_queries_of(several, "clef2020_task2") == {"1"}
    assert trained_queries_of(several, "clef2021_task2a_ar") == {"ar-1"}


def test_a_regional_tag_becomes_the_language_a_post_is_given_in():
    from plugin.lab.reranker.weak_pairs import primary_language

    assert primary_language("zh-tw") == "zh" and primary_language("EN") == "en"
    assert primary_language(None) is None and primary_language("") is None
    queries, factchecks, _ = pairs_of([article(1, lang="zh-tw")])
    assert queries[0]["lang"] == factchecks[0]["lang"] == "zh"
