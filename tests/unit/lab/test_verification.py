"""evaluate-verification's pure parts: requests from dataset claims, predictions, the gold pool."""
from datetime import date

from plugin.lab.verification import ABSTAIN, prediction, request_for, table
from plugin.verify.averitec import gold_answer_documents, gold_qa_pairs
from plugin.verify.result import Outcome, Tokens, VerificationResult

CLAIM = {"id": "dev-1", "claim": "C", "date": "2020-10-02", "lang": "en", "label": "Refuted",
         "fact_checking_article": "https://fc.example/1",
         "questions": [{"question": "Q1", "answers": [
             {"answer": "Yes", "answer_type": "Boolean", "boolean_explanation": "It did.",
              "source_url": "https://a.example/1"},
             {"answer": "Two", "answer_type": "Extractive", "source_url": "Metadata"}]},
             {"question": "Q2", "answers": []}]}


def result(**outcome):
    """A verification result with ``outcome``'s fields over a gold-evidence Refuted."""
    found = {"verdict": "Refuted", "label_scores": {}, "statements": (), "qa_pairs": (), "citations": (),
             "stage": "gold-evidence", "stopped_because": "gold-evidence", "verdict_source": "llm", **outcome}
    return VerificationResult(claim="C", date=None, config="qa-loop", strategy="qa-loop", outcome=Outcome(**found),
                              timings_ms={"total": 1.0}, tokens=Tokens(prompt=1, completion=1), budget_s=60.0,
                              prompt_versions={})


def test_requests_exclude_the_fact_check_and_carry_gold_only_when_asked():
    req = request_for(CLAIM, "retrieved")
    assert req.exclude_urls == ("https://fc.example/1",) and req.date == date(2020, 10, 2)
    assert req.gold_qa is None and req.claim_id == "dev-1"
    assert [p["answer"] for p in request_for(CLAIM, "gold").gold_qa] == [
        "Yes. It did.", "Two", "No answer could be found."]


def test_a_failed_claim_is_an_abstention_with_no_evidence():
    assert prediction("dev-1", None) == {"id": "dev-1", "pred_label": ABSTAIN, "evidence": []}
    out = result(verdict="Supported", qa_pairs=({"question": "q", "answer": "a", "source_url": "u"},))
    assert prediction("dev-1", out)["evidence"] == [{"question": "q", "answer": "a", "url": "u"}]


def test_gold_pool_keeps_real_urls_dated_the_day_before():
    docs = list(gold_answer_documents([CLAIM]))
    assert [d["url"] for d in docs] == ["https://a.example/1"]  # "Metadata" and unanswered go
    assert docs[0]["published_at"] == "2020-10-01" and docs[0]["source"] == "gold-answers"
    assert len(gold_qa_pairs(CLAIM)) == 3


def test_table_names_skipped_configurations():
    text = table({"dataset": "d", "n_claims": 1, "evidence": "gold", "pool": None,
                  "configs": {"lookup": {"skipped": "the lookup reads published fact-checks"}}})
    assert "lookup        skipped" in text


def test_a_head_trained_on_the_dataset_is_flagged_in_sample(tmp_path):
    from types import SimpleNamespace

    from plugin.lab.verification import head_trained_on

    head = SimpleNamespace(manifest={"data": {"averitec": {"path": str(tmp_path / "averitec_dev")}}})
    assert "in-sample" in head_trained_on(head, str(tmp_path / "averitec_dev"))
    assert head_trained_on(head, str(tmp_path / "other")) is None and head_trained_on(None, "x") is None


def test_run_config_counts_verdict_sources_and_fallbacks():
    from plugin.lab.verification import run_config
    from plugin.verify.config import verification_config

    outs = iter([{"verdict_source": "llm"}, {"verdict_source": "head", "fallback_reason": "invalid"},
                 {"verdict_source": "none", "fallback_reason": "invalid; no head"}])

    class Fake:
        def verify(self, req, cfg):
            return result(**next(outs))

    _, cost = run_config(Fake(), verification_config("qa-loop"), [CLAIM, CLAIM, CLAIM], "gold")
    assert cost["verdict_sources"] == {"llm": 1, "head (fallback)": 1, "none (fallback)": 1}


def test_a_relative_training_path_is_read_from_the_repository_root_wherever_the_command_runs(tmp_path, monkeypatch):
    from types import SimpleNamespace

    import plugin
    from plugin.lab.verification import head_trained_on

    root = __import__("pathlib").Path(plugin.__file__).resolve().parents[1]
    head = SimpleNamespace(manifest={"data": {"averitec": {"path": "../shared/data/averitec_dev"}}})
    monkeypatch.chdir(tmp_path)   # not the repository's root: the relative path still resolves there
    assert "in-sample" in head_trained_on(head, str(root / "../shared/data/averitec_dev"))
