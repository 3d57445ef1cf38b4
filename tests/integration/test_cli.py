"""The factsieve CLI end to end: JSON outputs, error messages and exit codes."""
import json
import os

import pytest

from cli.main import main
from tests.integration.conftest import LOCAL_LLM
from tests.conftest import FIXTURES, SAMPLES

pytestmark = pytest.mark.integration


@pytest.fixture
def cli_alias(make_alias, monkeypatch):
    alias = make_alias()
    monkeypatch.setenv("FACTSIEVE_INDEX", alias)
    return alias


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
