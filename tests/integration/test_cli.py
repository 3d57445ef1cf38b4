"""The factsieve CLI end to end: JSON outputs, error messages and exit codes."""
import json
import os
import re

import pytest

from plugin.errors import NotFound
from plugin.settings import Settings

from cli.common import CONFIDENCE_LEGEND
from cli.main import main
from tests.integration.conftest import LOCAL_LLM, wait_for
from tests.conftest import FIXTURES, ROOT, SAMPLES

pytestmark = pytest.mark.integration


@pytest.fixture
def cli_alias(make_alias, monkeypatch, store):
    """A fresh alias, with its own search template id: `init` must not replace the cluster's
    factsieve-match. What `init` hosts for it (ingest pipeline, template) goes with it."""
    alias = make_alias()
    monkeypatch.setenv("FACTSIEVE_INDEX", alias)
    monkeypatch.setenv("FACTSIEVE_SEARCH_TEMPLATE", f"{alias}-match")
    # init also makes the evidence and jobs aliases: the test's own, deleted with it
    monkeypatch.setenv("FACTSIEVE_EVIDENCE_INDEX", make_alias())
    monkeypatch.setenv("FACTSIEVE_JOBS_INDEX", make_alias())
    # the demo queues its posts for the desk: review items, jobs and a key, all the test's own
    monkeypatch.setenv("FACTSIEVE_REVIEW_INDEX", make_alias())
    monkeypatch.setenv("FACTSIEVE_DECISIONS_INDEX", make_alias())
    monkeypatch.setenv("FACTSIEVE_REDIS_PREFIX", alias)
    yield alias
    from plugin.kv import KV

    KV(Settings()).delete_namespace()
    for path in (f"/_scripts/{alias}-match", f"/_ingest/pipeline/{alias}-embed"):
        try:
            store.request("cleanup", "DELETE", path)
        except NotFound:
            pass


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_init_ingest_match_json(capsys, cli_alias, embedder):
    code, out, _ = run(capsys, "init")
    assert code == 0 and json.loads(out)["index"] == f"{cli_alias}-v1"
    if os.environ.get("FACTSIEVE_OS_NEURAL") != "0":  # `make up` installs neural-search
        assert json.loads(out)["search_pipelines"], "init installs the fusion pipelines"
    code, out, _ = run(capsys, "ingest", "-q", str(SAMPLES / "multiclaim" / "factchecks.jsonl"))
    assert code == 0
    assert json.loads(out) == {"indexed": 50, "updated": 0, "rejected": 0, "rejects": []}
    code, out, _ = run(capsys, "match", "The new Covid-19 vaccines will permanently alter the DNA of everyone who gets the shot",
                       "-k", "3", "--json")
    assert code == 0
    body = json.loads(out)
    assert body["lang"] == "en" and len(body["matches"]) == 3
    assert set(body["matches"][0]) >= {"id", "score", "rank", "claim", "title", "url", "lang",
                                       "published_at", "rating"}
    assert body["fusion"] == "client"  # FACTSIEVE_SERVER_FUSION is off: the path that fused
    # the text output leads each match with its calibrated confidence, as the JSON gives it
    code, text, _ = run(capsys, "match", "The new Covid-19 vaccines will permanently alter the DNA of everyone who gets the shot",
                        "-k", "3")
    assert code == 0 and CONFIDENCE_LEGEND in text
    first = body["matches"][0]
    assert f" 1. {first['confidence']:.3f} {first['claim']}" in text and f"{first['score']:.4f}" not in text
    # --fusion both: each path's matches, saying which path fused them (crosslingual
    # hybrid-rrf weighs both sub-queries alike, so it fits a hybrid query's RRF)
    if os.environ.get("FACTSIEVE_OS_NEURAL") != "0":
        code, out, _ = run(capsys, "match", "vaccines alter your DNA", "-k", "3", "--json",
                           "--config", "hybrid-rrf", "--mode", "cross", "--fusion", "both")
        both = json.loads(out)
        assert code == 0 and both["client"]["fusion"] == "client" and both["server"]["fusion"] == "server"
        assert len(both["server"]["matches"]) == len(both["client"]["matches"]) == 3


def test_ingest_claimreview_and_bad_records(capsys, cli_alias, embedder, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"claim": "ok claim"}\n{broken\n', encoding="utf-8")
    files = sorted((FIXTURES / "formats").glob("claimreview*.json*"))
    code, out, _ = run(capsys, "ingest", "-q", str(bad), *map(str, files))
    report = json.loads(out)
    assert code == 0
    assert report["indexed"] >= 2 and report["rejected"] >= 1
    assert any(r["record"] == "bad.jsonl:2" for r in report["rejects"])
    code, out, _ = run(capsys, "ingest", "-q", "--strict", str(bad))
    assert code == 1


def test_ingest_writes_as_its_tenant(capsys, cli_alias, embedder, tmp_path):
    """Issue 21: the CLI writes as ``--tenant`` (default ``default``) under the owner rule."""
    rows = tmp_path / "owned.jsonl"
    rows.write_text(json.dumps({"id": "cli-owned", "claim": "A tenant's own claim about dams"}) + "\n",
                    encoding="utf-8")
    assert run(capsys, "ingest", "-q", "--tenant", "a", str(rows))[0] == 0
    code, out, _ = run(capsys, "ingest", "-q", "--strict", str(rows))
    assert code == 1 and "cli-owned belongs to another tenant" in json.loads(out)["rejects"][0]["reason"]
    code, out, _ = run(capsys, "ingest", "-q", "--tenant", "a", str(rows))
    assert code == 0 and json.loads(out)["updated"] == 1
    code, _, err = run(capsys, "ingest", "-q", "--tenant", "Not A Tenant", str(rows))
    assert code == 2 and "invalid tenant" in err


@pytest.mark.parametrize("argv, code, message", [
    (["match", "   "], 2, "text is empty"),
    (["match", "x", "--mode", "both"], 2, "valid modes: mono, cross, auto"),
    (["match", "x", "--date", "yesterday"], 2, "YYYY-MM-DD"),
    (["match", "x", "-k", "0"], 2, "k must be"),
    (["ingest", "x.jsonl", "--format", "xml"], 2, "xml"),
])
def test_bad_input_gives_message_and_exit_code(capsys, cli_alias, embedder, argv, code, message):
    run(capsys, "init")
    got, _, err = run(capsys, *argv)
    assert got == code
    assert message in err and "Traceback" not in err


def test_unreachable_opensearch(capsys, monkeypatch, embedder):
    monkeypatch.setenv("FACTSIEVE_OPENSEARCH_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("FACTSIEVE_OPENSEARCH_TIMEOUT_S", "2")
    code, _, err = run(capsys, "match", "anything")
    assert code == 6
    assert "http://127.0.0.1:9" in err and "make up" in err


def test_status(capsys):
    code, out, _ = run(capsys, "status")
    status = json.loads(out)
    assert code == 0 and status["opensearch"] is True
    assert "opensearch-knn" in status["plugins"]
    if os.environ.get("FACTSIEVE_OS_NEURAL") != "0":
        assert "opensearch-neural-search" in status["plugins"]


@pytest.mark.skipif(os.environ.get("FACTSIEVE_OS_NEURAL") == "0", reason="started without neural-search")
def test_evaluate_runs_both_fusion_paths_side_by_side(capsys, embedder):
    code, out, _ = run(capsys, "evaluate", "--dataset", str(SAMPLES / "clef2020"), "--mode", "cross",
                       "--config", "factsieve,hybrid-rrf", "--fusion", "both")
    both = json.loads(out)
    assert code == 0 and set(both) == {"client", "server"}
    for path, result in both.items():
        assert result["fusion"] == path
        # 0.3/0.7 RRF at k = 20: no server plan on 2.19, so client-side on both paths
        assert result["configs"]["factsieve"]["cross"]["fusion"] == {"client": 60}
    assert both["client"]["configs"]["hybrid-rrf"]["cross"]["fusion"] == {"client": 60}
    assert both["server"]["configs"]["hybrid-rrf"]["cross"]["fusion"] == {"server": 60}  # 1:1, k = 60
    assert abs(both["server"]["configs"]["hybrid-rrf"]["cross"]["S@10"]
               - both["client"]["configs"]["hybrid-rrf"]["cross"]["S@10"]) <= 0.02  # ties may reorder


@pytest.fixture
def dataset_copy(tmp_path, store):
    """The MultiClaim sample under a unique name, so its evaluation index is this test's own."""
    import shutil
    import uuid

    path = tmp_path / f"mc-{uuid.uuid4().hex[:8]}"
    shutil.copytree(SAMPLES / "multiclaim", path)
    yield path
    store.delete_index(f"eval-{path.name}-*")


def test_evaluate_reports_every_config_per_mode(capsys, embedder, dataset_copy):
    code, out, _ = run(capsys, "evaluate", "--dataset", str(dataset_copy), "--config", "bm25,dense")
    assert code == 0
    result = json.loads(out)
    assert result["n_queries"] == 35 and result["modes"] == ["mono", "cross"]
    for name in ("bm25", "dense"):
        for mode in ("mono", "cross"):
            m = result["configs"][name][mode]
            assert set(m) >= {"S@1", "S@5", "S@10", "MAP@5", "MRR@10", "R@100", "latency_ms", "per_lang"}
            assert 0 <= m["S@10"] <= 1 and m["latency_ms"]["p50"] > 0
    # crosslingual pairs: dense matching must find most of them, BM25 cannot
    assert result["configs"]["dense"]["cross"]["S@10"] > result["configs"]["bm25"]["cross"]["S@10"]
    # one mode has the same shape as two; the table prints a row per (config, mode)
    code, out, _ = run(capsys, "evaluate", "--dataset", str(dataset_copy), "--config", "bm25",
                       "--mode", "mono")
    single = json.loads(out)
    assert code == 0 and single["modes"] == ["mono"] and list(single["configs"]["bm25"]) == ["mono"]
    assert single["split"] == "all" and single["skipped"] == {}
    code, out, _ = run(capsys, "evaluate", "--dataset", str(dataset_copy), "--config", "bm25,dense",
                       "--table")
    assert code == 0 and len([line for line in out.splitlines() if line.startswith(("bm25 ", "dense "))]) == 4


def test_evaluate_with_a_distractor_corpus_indexes_both_and_records_them_apart(capsys, embedder, dataset_copy,
                                                                               tmp_path, store):
    """``--extra-corpus``: the dataset's posts meet candidates in other languages, as in a
    newsroom's index; the records keep that run apart from the dataset's own."""
    extra = tmp_path / "distractors"
    extra.mkdir()
    rows = [{"id": f"d-{i}", "claim": claim, "lang": lang} for i, (claim, lang) in enumerate([
        ("Las vacunas contra el COVID-19 alteran el ADN humano de forma permanente", "es"),
        ("Les vaccins contre la COVID-19 modifient l'ADN de façon permanente", "fr"),
        ("Die Corona-Impfung verändert dauerhaft das menschliche Erbgut", "de")])]
    (extra / "factchecks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    records = tmp_path / "records.json"
    try:
        code, out, _ = run(capsys, "evaluate", "--dataset", str(dataset_copy), "--config", "bm25", "--mode", "auto",
                           "--extra-corpus", str(extra), "--record", "--records", str(records))
        result = json.loads(out)
        assert code == 0 and result["n_factchecks"] == 53 and result["extra_corpora"] == [str(extra / "factchecks.jsonl")]
        assert result["index"].startswith(f"eval-{dataset_copy.name}-distractors-") and store.count(result["index"]) == 53
        (scored,) = json.loads(records.read_text())["configs"]["bm25"]
        assert scored["dataset"] == f"{dataset_copy.name}+distractors" and scored["mode"] == "auto"
    finally:
        store.delete_index(f"eval-{dataset_copy.name}-distractors-*")


def test_tune_cross_validates_one_parameter(capsys, embedder, dataset_copy):
    code, out, _ = run(capsys, "tune", "--dataset", str(dataset_copy), "--config", "factsieve",
                       "--param", "language_centering", "--values", "0,0.5", "--mode", "auto,cross",
                       "--baseline", "dense", "--folds", "3", "--repeats", "2")
    assert code == 0
    result = json.loads(out)
    auto, cross = result["modes"]["auto"], result["modes"]["cross"]
    assert auto["n_queries"] == 35 and cross["n_queries"] == 15
    assert auto["held_out"]["n"] == 6 and sum(auto["chosen"].values()) == 6
    assert set(auto["all_queries"]) == {"0.0", "0.5"} and "dense" in auto["baselines"]
    # centring helps across languages on this sample (issue 12)
    assert cross["all_queries"]["0.5"] > cross["all_queries"]["0.0"]
    code, _, err = run(capsys, "tune", "--dataset", str(dataset_copy), "--config", "factsieve",
                       "--param", "retrievers", "--values", "1")
    assert code == 2 and "not a numeric configuration field" in err


def test_calibrate_fits_on_the_training_split_and_reports_held_out(capsys, embedder, tmp_path, store, monkeypatch):
    import shutil
    import uuid

    from plugin.embedding.query_tower import tower_dir
    from plugin.settings import Settings

    data = tmp_path / f"clef-{uuid.uuid4().hex[:8]}"
    shutil.copytree(SAMPLES / "clef2020", data)
    out = tmp_path / "factsieve.json"
    # factsieve's query tower trained on the training tweets: its confidence is fitted out of
    # fold, each tweet run through a tower trained without it (two small ones, trained here)
    code, _, err = run(capsys, "calibrate", "--dataset", str(data), "--out", str(out))
    assert code == 2 and "--cross-fit" in err
    adapters = tmp_path / "adapters"
    monkeypatch.setenv("FACTSIEVE_QUERY_ADAPTER_DIR", str(adapters))
    folds = [f"t{uuid.uuid4().hex[:8]}-{i}" for i in range(2)]
    try:
        for i, name in enumerate(folds):
            code, printed, err = run(capsys, "train-query-encoder", "--dataset", str(data), "--name", name,
                                     "--out", str(adapters), "--fold", f"{i}/2", "--epochs", "1",
                                     "--layers", "1", "--rank", "2")
            assert code == 0, err
            trained = json.loads(printed)
            assert trained["training_queries"] < 40 and trained["bytes"] < 100_000
            assert trained["history"][-1]["train"]["MAP@5"] > 0
        code, printed, err = run(capsys, "calibrate", "--dataset", str(data), "--out", str(out),
                                 "--cross-fit", ",".join(folds))
        assert code == 0, err
        report = json.loads(printed)
        model = json.loads(out.read_text())
        assert model["trained_on"]["split"] == "train" and model["trained_on"]["queries"] == report["train"]["queries"] == 40
        assert model["trained_on"]["cross_fit"] == folds
        held = report["held_out"][data.name]
        assert held["queries"] + report["train"]["queries"] == 60 and held["top1"]["matches"] == 2 * held["queries"]
        assert 0 <= held["top1"]["ECE"] <= 1 and "0.9" in held["top1"]["at"]
        code, _, err = run(capsys, "calibrate", "--dataset", str(SAMPLES / "multiclaim"), "--out", str(out))
        assert code == 2 and "no queries with split 'train'" in err
    finally:
        store.delete_index(f"eval-{data.name}-*")
        for name in folds:
            shutil.rmtree(tower_dir(Settings(), name), ignore_errors=True)


@pytest.mark.parametrize("command", ["evaluate", "bench"])
def test_unknown_config_is_refused(capsys, command):
    code, _, err = run(capsys, command, "--dataset", str(SAMPLES / "multiclaim"), "--config", "dense,nope")
    assert code == 2 and "unknown configuration" in err and "'nope'" in err


def test_evaluate_unknown_config_and_missing_dataset(capsys, tmp_path):
    code, _, err = run(capsys, "evaluate", "--dataset", str(SAMPLES / "multiclaim"), "--config", "nope")
    assert code == 2 and "unknown configuration" in err
    code, _, err = run(capsys, "evaluate", "--dataset", str(tmp_path))
    assert code == 2 and "factchecks.jsonl" in err


def test_init_hosts_the_model_and_bench_measures_the_hosted_path(capsys, cli_alias, embedder, dataset_copy):
    """On a cluster with ML Commons (`make up`), `init` hosts the model and stores the template;
    `bench --hosted` then times the template over plain HTTP and both ingest paths."""
    code, out, _ = run(capsys, "init")
    hosted = json.loads(out)["hosted_model"]
    if os.environ.get("FACTSIEVE_OS_ML") == "0":
        assert hosted is None
        return
    assert hosted["onnx_file"] == "model_int8.onnx" and hosted["search_template"]["id"] == f"{cli_alias}-match"
    code, out, _ = run(capsys, "bench", "--dataset", str(dataset_copy), "--config", "minmax", "--hosted",
                       "--queries", "5", "--seconds", "0.5", "--concurrency", "1")
    assert code == 0
    result = json.loads(out)
    corpus = next(iter(result["corpora"].values()))
    assert corpus["template"]["latency_ms"]["p50"] > 0 and corpus["template"]["latency_ms"]["mean_hits"] == 10
    paths = result["ingest_paths"]
    assert paths["client"]["rejected"] == 0 and paths["pipeline"]["rejected"] == 0
    assert paths["client"]["docs_per_s"] > 0 and paths["pipeline"]["docs_per_s"] > 0


def test_bench_shape_on_a_tiny_scaled_corpus(capsys, embedder, dataset_copy):
    code, out, _ = run(capsys, "bench", "--dataset", str(dataset_copy), "--config", "dense",
                       "--docs", "120", "--queries", "5", "--seconds", "0.5", "--concurrency", "2",
                       "--levers")
    assert code == 0
    result = json.loads(out)
    corpora = list(result["corpora"].values())
    assert len(corpora) == 2 and corpora[1]["docs"] == 120 and corpora[1]["build"]["synthetic"] is True
    build = corpora[1]["build"]
    assert build["segments_before_merge"] >= 1 and build["bulk_s"] > 0 and build["refresh_s"] >= 0
    for c in corpora:
        d = c["configs"]["dense"]
        assert d["latency_ms"]["p50"] > 0 and d["throughput"]["errors"] == 0
        # where the cost lies: segments, bytes on disk, the node's memory, and how exact kNN is
        assert c["segments"] == 1 and c["size_on_disk_mb"] > 0 and c["bytes_per_doc"] > 0
        assert c["node"]["heap_used_mb"] > 0 and c["node"]["rss_mb"] > 0
        assert c["knn_recall"]["queries"] == 5 and 0.9 <= c["knn_recall"]["recall"] <= 1.0
        # --levers: each BM25 body and each ef_search, measured on the same corpus
        bm25, knn = c["levers"]["bm25"], c["levers"]["knn"]
        assert {"as-served", "skip-blocks", "unsplit", "unsplit-skip-blocks", "prefix-16"} <= set(bm25)
        assert all(v["queries"] == 5 and v["wall_p50"] > 0 for v in bm25.values())
        assert set(knn) == {"ef_search=50", "ef_search=100", "ef_search=200", "ef_search=400"}
        assert all(0.0 <= v["recall"] <= 1.0 for v in knn.values())


def test_demo_finds_the_known_factchecks(capsys, cli_alias, embedder, store):
    code, out, _ = run(capsys, "demo", "--samples", str(SAMPLES), "-k", "10", "--no-verify")
    assert code == 0
    assert out.count("known fact-check: found at rank") == 4, out
    # the image post: its text read, and the fact-check found by the same image and by that text
    image = out[out.index("An image post with no text of its own"):]
    assert "text read from the image: 'Lab Account @lab_account Russian flag flies at Texas Capitol" in image
    assert re.search(r" 1\. (?:[01]\.\d{3}|\[[0-9.]+\]) A Russian flag was flown at the Texas State Capitol.*\n"
                     r"      found by: same image \(distance \d+\), ocr\n", image), image
    # and the sample posts wait in the desk's queue, with a key to sign in with
    assert "the desk: http://127.0.0.1:8000/desk/  (3 sample posts newly queued" in out, out
    key = re.search(r"sign in with the key (\S+)", out).group(1)
    from plugin.service.services import Services

    services = Services(Settings(), store=store, embedder=embedder)
    reviewer = services.keys.authenticate(key)
    assert reviewer.name == "demo reviewer" and reviewer.scope.value == "write"
    def queued():
        page = services.review.queue(reviewer.tenant)
        return page if len(page.items) == 3 else None

    queue = wait_for(queued, what="the demo's review items (searchable after a refresh)")
    assert {i.post_id for i in queue.items} == {"demo-1", "demo-2", "demo-3"}
    assert all(i.candidates for i in queue.items)


def demo_steps() -> list[list[str]]:
    """The ``factsieve`` commands ``make demo`` runs, in order: its recipe's ``$(FS) ...`` lines."""
    recipe = re.search(r"^demo:.*\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M)
    assert recipe, "the Makefile has a demo target"
    return [line.split()[1:] for line in recipe.group(1).splitlines() if line.strip().startswith("$(FS) ")]


def test_after_the_demos_set_up_the_stored_template_answers(capsys, cli_alias, embedder, store):
    """`make demo` runs `init` before `demo`, so that the README's *Query OpenSearch directly*
    request answers from the stored template on a fresh clone (before: 404, nothing stored)."""
    steps = demo_steps()
    assert [argv[0] for argv in steps] == ["init", "demo"]
    for argv in steps:
        extra = ["--samples", str(SAMPLES), "--no-verify"] if argv[0] == "demo" else []
        code, out, err = run(capsys, *argv, *extra)
        assert code == 0, out + err
    if os.environ.get("FACTSIEVE_OS_ML") == "0":  # no ML Commons: init stores no template
        return
    # the README's request, with this test's alias and template id
    resp = store.request("search template", "POST", f"/{cli_alias}/_search/template", body={
        "id": f"{cli_alias}-match",
        "params": {"query_text": "5G towers spread the coronavirus", "k": 10, "lang": "en", "mode": "auto",
                   "date_to": "2020-04-15", "within_days": 365}})
    hits = resp["hits"]["hits"]
    assert 0 < len(hits) <= 10 and all(h["_index"].startswith(f"{cli_alias}-v") for h in hits)
    # and it finds the demo's English post's fact-check, as `demo` itself did
    post = json.loads((SAMPLES / "demo_posts.jsonl").read_text(encoding="utf-8").splitlines()[0])
    resp = store.request("search template", "POST", f"/{cli_alias}/_search/template", body={
        "id": f"{cli_alias}-match", "params": {"query_text": post["text"], "k": 10, "lang": "en"}})
    assert set(post["expect"]) & {h["_id"] for h in resp["hits"]["hits"]}


def test_demo_verifies_the_sample_claim_with_the_demos_configuration(capsys, cli_alias, make_alias,
                                                                    monkeypatch, embedder):
    """As `make demo` runs it: the demo's configuration (``cli.verify.DEMO_CONFIG``), its
    printed verdict the highest of its printed ratings, and how to plug in a real LLM."""
    from cli.verify import DEMO_CONFIG, REAL_LLM_HINT

    monkeypatch.setenv("FACTSIEVE_EVIDENCE_INDEX", make_alias())
    monkeypatch.setenv("FACTSIEVE_LLM_URL", os.environ.get("FACTSIEVE_LLM_URL") or LOCAL_LLM)
    code, out, err = run(capsys, "demo", "--samples", str(SAMPLES))
    assert code == 0, out + err
    assert "sample evidence: 89 documents" in out
    assert f"verifying a sample claim with {DEMO_CONFIG!r} (the demo's: docs/verification.md" in out
    assert re.search(r"\n  \[1\] (Q:|supports|refutes|neither)", out) and "verdict:" in out, out
    # every statement of the justification cites a passage or pair the output lists with its page
    for line in out.splitlines():
        if line.startswith("  justification: "):
            cited = {int(n) for group in re.findall(r"\[([\d, ]+)\]", line) for n in group.split(",")}
            assert cited and all(f"  cites [{n}] http" in out for n in cited), out
    # no bluffing: the printed ratings support the printed verdict, and it says where it came from
    from plugin.verify.steps import ratings_problem

    verdict = next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("  verdict: "))
    ratings = next((line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("  ratings: ")), None)
    source = next(line for line in out.splitlines() if line.startswith("  verdict source: "))
    if ratings is None:  # nothing could decide: Not Enough Evidence, and why
        assert verdict == "Not Enough Evidence" and "verdict source: none" in source and "  why: " in out
    else:
        scores = {k: float(v) for k, v in (item.rsplit(" ", 1) for item in ratings.split(", "))}
        assert ratings_problem(scores, verdict) is None, out
        assert scores[verdict] == max(scores.values()) > 0, out  # the verdict is the top rating
    assert out.rstrip().endswith(REAL_LLM_HINT)
    assert "FACTSIEVE_LLM_URL" in REAL_LLM_HINT and "FACTSIEVE_LLM_MODEL" in REAL_LLM_HINT


def test_evaluate_verification_without_wordnet_says_how_to_get_it(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("FACTSIEVE_NLTK_DATA_DIR", str(tmp_path / "no-nltk-data"))
    (tmp_path / "claims.jsonl").write_text("", encoding="utf-8")
    code, _, err = run(capsys, "evaluate-verification", "--dataset", str(tmp_path), "--limit", "1")
    assert code == 2 and "make wordnet" in err and "WordNet not found" in err


def test_train_reranker_exports_groups_of_training_queries_only(capsys, embedder, dataset_copy, tmp_path):
    """Mining runs the real first stage over the dataset's index; no torch is needed for it."""
    from plugin.lab.reranker import load_groups, sha1_digit

    path = tmp_path / "groups.jsonl"
    code, out, _ = run(capsys, "train-reranker", "mine", "--dataset", str(dataset_copy), "--out", str(path))
    assert code == 0
    summary = json.loads(out)
    groups, meta = load_groups(path)
    assert summary["groups"] == len(groups) > 0 and meta["first_stage"] == "factsieve"
    assert all(sha1_digit(q).isdigit() for q in meta["training_query_ids"])  # no split field: sha1 rule
    assert {g.query_id for g in groups} <= set(meta["training_query_ids"])
    qrels = {}
    for line in (dataset_copy / "qrels.jsonl").read_text().splitlines():
        row = json.loads(line)
        qrels.setdefault(str(row["query_id"]), set()).add(str(row["factcheck_id"]))
    claims = {json.loads(line)["id"]: json.loads(line)["claim"]
              for line in (dataset_copy / "factchecks.jsonl").read_text().splitlines()}
    for g in groups:  # a relevant fact-check is never a negative of its own query
        assert not any(claims[d] in n for d in qrels[g.query_id] for n in g.negatives)
    code, _, err = run(capsys, "train-reranker", "fit", "--groups", str(tmp_path / "missing.jsonl"),
                       "--out", "x")
    assert code == 2 and "not found" in err


def test_evaluate_record_writes_the_records_file_not_the_configurations(capsys, embedder, dataset_copy,
                                                                       tmp_path, monkeypatch):
    from plugin.search.retrieval import packaged_configs_path

    packaged = packaged_configs_path().read_text()
    records = tmp_path / "elsewhere" / "records.json"
    code, _, _ = run(capsys, "evaluate", "--dataset", str(dataset_copy), "--config", "bm25",
                     "--record", "--records", str(records))
    assert code == 0
    scores = json.loads(records.read_text())["configs"]["bm25"]
    mine = [s for s in scores if s["dataset"] == dataset_copy.name]
    assert len(mine) == 2 and all(set(s["metrics"]) == {"S@1", "S@5", "S@10", "MAP@5", "MRR@10", "R@100"}
                                  for s in mine)
    # the default is records/retrieval.json under the current directory; the package is never written
    monkeypatch.chdir(tmp_path)
    code, _, _ = run(capsys, "evaluate", "--dataset", str(dataset_copy), "--config", "bm25",
                     "--mode", "mono", "--record")
    assert code == 0
    default = json.loads((tmp_path / "records" / "retrieval.json").read_text())["configs"]["bm25"]
    assert [s["mode"] for s in default if s["dataset"] == dataset_copy.name] == ["mono"]
    assert packaged_configs_path().read_text() == packaged


def test_evaluate_runs_the_committed_reranker_on_a_fresh_clone(capsys, embedder):
    """A fresh clone has the reranker `hybrid-rerank` names: `model build` (here the embedder
    fixture) merges the committed adapter, so nothing is skipped. `--split dev,test` leaves out
    the sample's 40 CLEF-2020 training tweets, which the reranker and the query tower saw (their
    manifests name the dataset `clef2020_task2`, so only that folder's runs drop them by
    themselves)."""
    code, out, _ = run(capsys, "evaluate", "--dataset", str(SAMPLES / "clef2020"),
                       "--config", "factsieve,hybrid-rerank", "--split", "dev,test")
    result = json.loads(out)
    assert code == 0 and result["skipped"] == {}
    assert result["n_queries"] == 20 and result["split"] == "dev+test"
    for name in ("factsieve", "hybrid-rerank"):
        assert result["configs"][name]["mono"]["S@10"] >= 0.9
