"""Commands that match posts against the corpus: ``match``, ``demo``, ``configs``."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from plugin.search.request import MatchRequest
from plugin.search.result import Match
from plugin.service.keys import DEFAULT_TENANT, check_tenant
from plugin.service.matching import match_post
from plugin.service.services import Services

from cli.common import dump, print_matches
from cli.common import add_fusion_flag, by_fusion


def cmd_match(args: argparse.Namespace, services: Services) -> int:
    """Match one post on the fusion path(s) ``--fusion`` asks for; with ``--rerank``, within the
    live budget (FACTSIEVE_RERANK_BUDGET_MS) as the API does. The JSON says which path fused
    (``fusion``: the one that did, which is client-side where a hybrid query does not fit)."""
    image = None
    if args.image is not None:
        from plugin.image.inputs import read_image_file
        from plugin.image.stage import analyse
        from plugin.search.request import check_lang

        image = analyse(read_image_file(args.image, services.settings.image_max_bytes),
                        services.settings, lang=check_lang(args.lang))
    req = MatchRequest.from_mapping(vars(args), image=image)
    cfg = services.config(args.config)
    results: list[Match] = []

    def run(settings: Any) -> dict[str, Any]:
        results.append(match_post(services.matching, req, check_tenant(args.tenant), config=cfg.name,
                                  server_fusion=settings.server_fusion))
        return results[-1].to_dict()

    out = by_fusion(args, services, {cfg.name: cfg}, run)
    for result, shown in zip(results, [out] if len(results) == 1 else out.values()):
        shown["fusion"] = result.fusion
    if args.json:
        dump(out)
        return 0
    for result in results:
        print_matches(result, header=f"fusion: {result.fusion}" if len(results) > 1 else None)
    return 0


def cmd_demo(args: argparse.Namespace, services: Services) -> int:
    from plugin.ingest import Format, read_records

    settings = services.settings
    services.factchecks.ensure()
    # the last file gives one fact-check its image (the viral post's screenshot, an image_path:
    # read here, as only the CLI reads local files)
    files = [args.samples / "multiclaim" / "factchecks.jsonl", args.samples / "clef2020" / "factchecks.jsonl",
             args.samples / "images" / "factchecks.jsonl"]
    report = services.factchecks.ingest(read_records(files, Format.jsonl), local_files=True)
    print(f"sample corpus: {report.indexed} new, {report.updated} updated, {report.rejected} rejected "
          f"(index alias {settings.index!r}, {services.store.count(settings.index)} fact-checks)")
    # the best configuration, reranking within a live request's budget (fused order, said in a
    # note, where its reranker is not built or the post's language is outside it)
    print(f"configuration: {services.config(args.config).name}")
    posts = [json.loads(line) for line in (args.samples / "demo_posts.jsonl").read_text(encoding="utf-8").splitlines()
             if line.strip()]

    def matcher(request: MatchRequest) -> Match:
        return match_post(services.matching, request, DEFAULT_TENANT, config=args.config)

    def request(text: str) -> MatchRequest:
        return MatchRequest(text=text, k=args.k, rerank=True)

    if posts:  # warm-up: loads the models and measures the reranker's cost per pair, as a live
        matcher(request(posts[0]["text"]))  # server's first request does
    for post in posts:
        result = matcher(request(post["text"]))
        print_matches(result, header=f"\n{post['note']}:\n  \"{' '.join(post['text'].split())}\"")
        found = [c.rank for c in result.candidates if c.id in set(post.get("expect", []))]
        print(f"  known fact-check: {'found at rank ' + str(found[0]) if found else 'not in the top ' + str(args.k)}")
    demo_image_post(services, args.samples, matcher, request(""))
    from cli.desk import demo_desk

    demo_desk(services, posts, "http://127.0.0.1:8000/desk/")
    if not args.no_verify:
        from cli.verify import demo_verification

        demo_verification(services, args.samples, args.verify_config)
    return 0


def demo_image_post(services: Services, samples: Path, matcher: Any, request: MatchRequest) -> None:
    """The demo's image post: a re-shared copy of a fact-checked post's screenshot (smaller, a
    JPEG), with no text of its own. Its text is read and matched, and its hash finds the
    fact-check that carries the original screenshot."""
    from dataclasses import replace

    from plugin.image.inputs import read_image_file
    from plugin.image.stage import analyse

    path = samples / "images" / "russian-flag-texas-capitol-reshared.jpg"
    image = analyse(read_image_file(path, services.settings.image_max_bytes), services.settings)
    result = matcher(replace(request, text="", image=image))
    print_matches(result, header=f"\nAn image post with no text of its own ({path.relative_to(samples.parent)}):")
    found = [c.rank for c in result.candidates if c.id == "clef-21"]
    print(f"  known fact-check: {'found at rank ' + str(found[0]) if found else 'not among the matches'}")


def cmd_configs(args: argparse.Namespace, services: Services) -> int:
    from plugin.search.retrieval import default_config_name, load_configs

    configs = load_configs(args.configs_file)
    dump({"default": default_config_name(args.configs_file),
          "configs": {n: c.model_dump(mode="json", exclude={"name"}) for n, c in configs.items()}})
    return 0


def register(sub: Any, add: Any) -> None:
    sp = add("match", cmd_match, "find the fact-checks that address a post or claim")
    sp.add_argument("text", nargs="?", help="the post or claim (with --image: its caption; optional)")
    sp.add_argument("--image", type=Path, metavar="PATH",
                    help="the post's image (JPEG, PNG, WebP, GIF, BMP): its text is read and matched, "
                         "and fact-checks with the same image come first")
    sp.add_argument("--lang", help="language of the post (ISO 639-1); detected when omitted")
    sp.add_argument("--date", help="post date YYYY-MM-DD: only fact-checks published on or before it")
    sp.add_argument("--within-days", type=int, help="with --date: only fact-checks from this many days before")
    sp.add_argument("--mode", default="auto",
                    help="mono (same language only), cross (any language) or auto (any, own language preferred)")
    sp.add_argument("--config", help="named retrieval configuration (see `factsieve configs`)")
    sp.add_argument("--rerank", action="store_true",
                    help="rerank with the configuration's cross-encoder within FACTSIEVE_RERANK_BUDGET_MS, "
                         "as the API's `rerank` does")
    sp.add_argument("-k", type=int, default=10, help="number of matches")
    sp.add_argument("--tenant", default=DEFAULT_TENANT,
                    help="the tenant whose desk's learning applies (memory, recalibrated confidence)")
    sp.add_argument("--allow", action="append", help="only this domain/publisher (repeatable)")
    sp.add_argument("--deny", action="append", help="never this domain/publisher (repeatable)")
    sp.add_argument("--json", action="store_true", help="print JSON (with `fusion`: the path that fused)")
    add_fusion_flag(sp)

    sp = add("demo", cmd_demo, "load the bundled sample corpus and print matches for sample posts")
    sp.add_argument("--samples", type=Path, default=Path("samples"))
    sp.add_argument("-k", type=int, default=5)
    sp.add_argument("--config", default="hybrid-rerank",
                    help="retrieval configuration (default: hybrid-rerank, the best measured)")
    sp.add_argument("--verify-config", metavar="NAME",
                    help="verification configuration for the sample claim (default: the demo's, "
                         "cli.verify.DEMO_CONFIG, the best measured with what make demo installs)")
    sp.add_argument("--no-verify", action="store_true", help="matching only (no sample verification)")

    sp = add("configs", cmd_configs, "list the named retrieval configurations (scores: records/retrieval.json)")
    sp.add_argument("--configs-file", type=Path)
