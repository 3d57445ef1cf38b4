"""Verification commands: ``verify`` (one claim, the same result a job and the ``claim.verified``
webhook carry) and ``evaluate-verification`` (the AVeriTeC scorer over a dataset)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from plugin.errors import BadInput
from plugin.service.services import Services
from plugin.service.keys import DEFAULT_TENANT

from cli.common import DEFAULT_AVERITEC, dump, parse_date



def cmd_verify(args: argparse.Namespace, services: Services) -> int:
    from plugin.verify.verifier import VerifyRequest

    cfg = services.verification.config(args.config)
    req = VerifyRequest(claim=args.claim, date=parse_date(args.date), lang=args.lang,
                        exclude_urls=tuple(args.exclude_url or ()),
                        exclude_domains=tuple(args.exclude_domain or ()), budget_s=args.budget)

    def progress(stage: str, turn: int | None) -> None:
        if args.verbose_progress:
            print(f"  … {stage}" + (f" (turn {turn})" if turn else ""), file=sys.stderr)

    out = services.verification.verifier(cfg, DEFAULT_TENANT).verify(req, cfg, progress=progress).to_dict()
    if args.json:
        dump(out)
    else:
        print_verification(out)
    return 0


#: The configuration ``make demo`` verifies its sample claim with: the one that measures best
#: with what ``make demo`` installs (the local SmolLM2-135M and the packaged verdict models). The
#: measurements it rests on, and why: docs/verification.md#the-demos-configuration. This is the
#: one place to change it when they change (``factsieve demo --verify-config`` overrides it).
DEMO_CONFIG = "cited"


def demo_verification(services: Services, samples: Path, config: str | None = None) -> None:
    """The demo's second half: load the sample evidence and verify the sample claim with
    ``config`` (:data:`DEMO_CONFIG` when ``None``), print its ratings (the verdict is the
    highest), and say how to plug in a real LLM."""
    import json

    from plugin.evidence import ingest_evidence, read_evidence
    from plugin.verify.verifier import VerifyRequest

    services.evidence.ensure()
    report = ingest_evidence(read_evidence([samples / "evidence" / "averitec_gold_answers.jsonl"]),
                             store=services.store, embedder=services.embedder,
                             index=services.settings.evidence_index)
    print(f"\nsample evidence: {report.documents} documents, {report.indexed} passages new, "
          f"{report.updated} updated, {report.rejected} rejected (alias {services.settings.evidence_index!r})")
    cfg = services.verification.config(config or DEMO_CONFIG)
    why = " (the demo's: docs/verification.md#the-demos-configuration)" if config is None else ""
    for line in (samples / "demo_claims.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        claim = json.loads(line)
        print(f"\nverifying a sample claim with {cfg.name!r}{why} (its published label: {claim['label']}):")
        out = services.verification.verifier(cfg, DEFAULT_TENANT).verify(VerifyRequest(
            claim=claim["claim"], date=parse_date(claim.get("date")), claim_id=claim.get("id"),
            exclude_urls=tuple(claim.get("exclude_urls") or ())), cfg).to_dict()
        print_verification(out)
    print(f"\n{REAL_LLM_HINT}")


#: The demo's last line: how to plug in a real LLM (the local 135M model is a floor for
#: structure, not for verdicts).
REAL_LLM_HINT = ("for verdicts from a real LLM, set FACTSIEVE_LLM_URL to an OpenAI-compatible "
                 "server's /v1 URL and FACTSIEVE_LLM_MODEL to its model (vLLM, Ollama, llama.cpp), "
                 "then `factsieve verify CLAIM --config qa-loop` (docs/verification.md)")

#: What each ``verdict_source`` is called in the printed result.
SOURCE_NAMES = {"llm": "the LLM's ratings", "llm+head": "the LLM's ratings blended with the verdict model's",
                "head": "the verdict model (FACTSIEVE_VERDICT_MODEL)", "fact-check": "a published fact-check",
                "none": "nothing could decide"}


def print_verification(out: dict[str, Any]) -> None:
    print(f"  claim: {out['claim']}" + (f"  ({out['date']})" if out.get("date") else ""))
    print(f"  configuration: {out['config']}   stage: {out['stage']}   stopped: {out['stopped_because']}")
    for i, p in enumerate(out["qa_pairs"], start=1):
        if p.get("answer_kind") == "passage":  # the cited strategy: passages, each with its stance
            print(f"  [{i}] {p['stance']} ({p['stance_strength']:.2f}): {p['answer'][:300]}")
        else:
            print(f"  [{i}] Q: {p['question']}\n      A: {p['answer']}")
        if p.get("source_url"):
            print(f"      source: {p['source_url']}")
    print(f"  verdict: {out['verdict']}")
    if out.get("label_scores"):
        print("  ratings: " + ", ".join(f"{k} {v:.2f}" for k, v in out["label_scores"].items()))
    source = out.get("verdict_source")
    if source:
        fallback = " (fallback)" if out.get("fallback_reason") else ""
        print(f"  verdict source: {source}: {SOURCE_NAMES.get(source, source)}{fallback}")
    if out.get("fallback_reason"):
        print(f"  why: {out['fallback_reason']}")
    if out.get("justification"):
        print(f"  justification: {out['justification']}")
    for c in out.get("citations", []):
        print(f"  cites [{c['n']}] {c.get('url') or '(no url)'}")
    print(f"  {out['timings_ms']['total'] / 1000:.1f} s, {out['tokens']['prompt']} prompt + "
          f"{out['tokens']['completion']} completion tokens")


def cmd_evaluate_verification(args: argparse.Namespace, services: Services) -> int:
    from plugin.lab.verification import evaluate_verification, table
    from plugin.verify.averitec import read_claims
    from plugin.verify.config import load_configs, parse_overrides, verification_config, with_overrides
    from plugin.verify.wordnet import ensure_wordnet

    dataset = args.dataset or DEFAULT_AVERITEC
    if not dataset.exists():
        raise BadInput(f"dataset folder {str(dataset)!r} not found: pass --dataset DIR (claims.jsonl)")
    if args.limit is not None and args.limit < 1:
        raise BadInput("--limit must be at least 1")
    ensure_wordnet(services.settings.nltk_data_dir)
    names = args.config or list(load_configs())
    configs = {n: verification_config(n) for n in names}
    if args.budget:
        configs = {n: c.model_copy(update={"budget_s": args.budget}) for n, c in configs.items()}
    changes = parse_overrides(args.set or [])
    if changes:
        configs = {n: with_overrides(c, changes) for n, c in configs.items()}

    def on_claim(config: str, i: int) -> None:
        if args.verbose_progress:
            print(f"  {config}: claim {i + 1}", file=sys.stderr)

    result = evaluate_verification(services, str(dataset), read_claims(dataset), configs,
                                   evidence=args.evidence, limit=args.limit, on_claim=on_claim)
    if changes:
        result["overrides"] = changes
    if args.table:
        print(table(result))
    else:
        dump(result)
    return 0


def register(sub: Any, add: Any) -> None:
    sp = add("verify", cmd_verify, "verify a claim: evidence, question-answer pairs, verdict, cited justification")
    sp.add_argument("claim")
    sp.add_argument("--date", help="claim date YYYY-MM-DD: only evidence published before it")
    sp.add_argument("--lang", help="language of the claim (ISO 639-1); detected when omitted")
    sp.add_argument("--config", help="verification configuration: lookup, qa-loop, single-call, head or cited")
    sp.add_argument("--exclude-url", action="append", help="never use this page as evidence (repeatable)")
    sp.add_argument("--exclude-domain", action="append", help="never use this site as evidence (repeatable)")
    sp.add_argument("--budget", type=float, help="seconds for the evidence loop (the configuration's by default)")
    sp.add_argument("--json", action="store_true", help="print the result as JSON")
    sp.add_argument("--progress", dest="verbose_progress", action="store_true", help="print each step to stderr")

    sp = add("evaluate-verification", cmd_evaluate_verification,
             "score verification configurations on an AVeriTeC-shaped dataset (label metrics, Q-only, Q+A, AVeriTeC score)")
    sp.add_argument("--dataset", type=Path, help=f"folder with claims.jsonl (default {DEFAULT_AVERITEC} when present)")
    sp.add_argument("--config", action="extend", nargs="+", metavar="NAME",
                    help="configuration names (--config a b, or repeated; default: all)")
    sp.add_argument("--limit", type=int, help="only the first N claims")
    sp.add_argument("--evidence", default="retrieved", choices=["retrieved", "gold"],
                    help="retrieved: search the gold-answers pool; gold: the gold QA pairs go to the verdict step")
    sp.add_argument("--budget", type=float, help="override every configuration's time budget (s)")
    sp.add_argument("--set", action="append", metavar="KEY=VALUE",
                    help="override a field of every configuration, VALUE as JSON (e.g. --set mmr_lambda=0.5; repeatable)")
    sp.add_argument("--table", action="store_true", help="print a table instead of JSON")
    sp.add_argument("--progress", dest="verbose_progress", action="store_true", help="print each claim to stderr")
