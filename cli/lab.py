"""The lab's command-line wiring: evaluation, benchmarks, calibration, training. Tools, not the
service; the commands themselves live in ``cli.measure`` and ``cli.train``."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from plugin.artefacts import CALIBRATION, written_dir

from cli.common import DEFAULT_AVERITEC, DEFAULT_DATASET, add_fusion_flag
from cli.lab_train import register_training
from cli.measure import (cmd_bench, cmd_bench_evidence, cmd_calibrate, cmd_evaluate, cmd_image_dup_bench, cmd_image_posts,
                         cmd_lookup_threshold, cmd_tune)


def register(sub: Any, add: Any) -> None:
    from plugin.lab.evaluate.records import DEFAULT_RECORDS

    sp = add("evaluate", cmd_evaluate, "run named retrieval configurations over a dataset and print metrics")
    add_fusion_flag(sp)
    sp.add_argument("--dataset", type=Path, help=f"dataset folder (default {DEFAULT_DATASET} when present)")
    sp.add_argument("--config", help="NAME[,NAME...] (default: every configuration)")
    sp.add_argument("--configs-file", type=Path, help="a retrieval configuration file (default: the packaged one)")
    sp.add_argument("--mode", help="mono|cross|auto|both (default: both for datasets with crosslingual pairs, else mono)")
    sp.add_argument("--dates", action="store_true", help="only fact-checks published on or before each query's date")
    sp.add_argument("--split", help="SPLIT[,SPLIT...]: score only these query splits (CLEF-2020: dev,test)")
    sp.add_argument("--rebuild", action="store_true", help="re-index the dataset even if an index exists")
    sp.add_argument("--extra-corpus", type=Path, action="append", metavar="DIR",
                    help="a corpus without queries (a folder with factchecks.jsonl) indexed beside the "
                         "dataset's fact-checks, as distractors (repeatable; e.g. vclaims_multilingual)")
    sp.add_argument("--record", action="store_true",
                    help="record the scores in the records file (per configuration, dataset, query split and mode)")
    sp.add_argument("--records", type=Path, default=DEFAULT_RECORDS, metavar="FILE",
                    help="the records file --record writes (default: records/retrieval.json in the current directory)")
    sp.add_argument("--table", action="store_true", help="print a table instead of JSON")
    sp.add_argument("--live", action="store_true",
                    help="score each configuration as the live path serves it: every match within "
                         "FACTSIEVE_RERANK_BUDGET_MS (a head the first stage is sure of is not reranked, a head "
                         "is cut to what the budget fits); modes are recorded as MODE-live")

    sp = add("image-posts", cmd_image_posts,
             "a dataset's posts rendered as images (tweet cards, memes), read by the image stage and "
             "matched by their OCR text beside the text-only run: CER, MAP@5, S@1, S@10 per template")
    sp.add_argument("--dataset", type=Path, help=f"dataset folder (default {DEFAULT_DATASET} when present)")
    sp.add_argument("--split", help="SPLIT[,SPLIT...]: only these query splits (CLEF-2020: dev,test)")
    sp.add_argument("--templates", default="light,dark,meme", help="light, dark, meme (comma-separated)")
    sp.add_argument("--config", default="hybrid-rerank", metavar="NAME", help="one retrieval configuration")
    sp.add_argument("--configs-file", type=Path, help="a retrieval configuration file (default: the packaged one)")
    sp.add_argument("--mode", help="mono|cross|auto|both (default as `evaluate`)")
    sp.add_argument("--unknown-lang", action="store_true",
                    help="read and match the images without their language (script routing)")
    sp.add_argument("--limit", metavar="N", help="only the first N scored queries")
    sp.add_argument("--work-dir", type=Path, default=Path(".cache/lab/image-posts"), metavar="DIR",
                    help="renderings and cached readings (default .cache/lab/image-posts)")
    sp.add_argument("--fresh", action="store_true", help="read every image again (ignore cached readings)")
    sp.add_argument("--caption", choices=("none", "half"), default="none",
                    help="none: the image shows the whole post (default); half: the caption carries the first "
                         "half of its words and the image the rest, matched together, beside the caption alone")
    sp.add_argument("--ocr-weights", metavar="W[,W...]",
                    help="with --caption half: match once per OCR weight, e.g. 0.5,1,2 (default: the "
                         "configuration's ocr_weight); the images are read once")

    sp = add("image-dup-bench", cmd_image_dup_bench,
             "near-duplicate images: recall per edit at the served PDQ distance, false matches over "
             "every pair of different images, same-image query latency through OpenSearch")
    sp.add_argument("--images", default="1000", metavar="N", help="synthetic photo-like originals")
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--stored", metavar="N[,N...]",
                    help="stored-hash counts for the latency run, e.g. 10000,100000 (a throwaway index; "
                         "the originals plus random hashes); without it no OpenSearch is used")
    sp.add_argument("--queries", default="200", metavar="N", help="same-image queries per stored count")

    sp = add("tune", cmd_tune, "one configuration parameter over a grid, cross-validated on a dataset's queries")
    sp.add_argument("--dataset", type=Path, help=f"dataset folder (default {DEFAULT_DATASET} when present)")
    sp.add_argument("--config", required=True, metavar="NAME", help="the configuration to vary")
    sp.add_argument("--configs-file", type=Path, help="a retrieval configuration file (default: the packaged one)")
    sp.add_argument("--param", required=True, help="a numeric configuration field, e.g. language_centering")
    sp.add_argument("--values", required=True, help="V[,V...]: the grid")
    sp.add_argument("--mode", default="auto", help="auto,cross,mono (comma-separated; default auto)")
    sp.add_argument("--baseline", metavar="NAME[,NAME...]", help="configurations scored on the same queries")
    sp.add_argument("--folds", type=int, default=5)
    sp.add_argument("--repeats", type=int, default=10, help="shuffles of the folds")
    sp.add_argument("--split", help="SPLIT[,SPLIT...]: tune on these query splits only (e.g. train)")
    sp.add_argument("--extra-corpus", type=Path, action="append", metavar="DIR",
                    help="a corpus without queries indexed beside the dataset's fact-checks (repeatable)")

    sp = add("calibrate", cmd_calibrate, "fit a configuration's confidence model on a dataset's training queries")
    sp.add_argument("--dataset", type=Path, help=f"dataset folder with a train split (default {DEFAULT_DATASET} when present)")
    sp.add_argument("--config", default="factsieve", metavar="NAME")
    sp.add_argument("--configs-file", type=Path, help="a retrieval configuration file (default: the packaged one)")
    sp.add_argument("--mode", default="auto", help="the matching mode the model is fitted in (default auto, as served)")
    sp.add_argument("--add-languages", action="store_true",
                    help="keep the packaged model and add an isotonic map for each language of --dataset's "
                         "(and every --check's) training queries, measured on their other queries")
    sp.add_argument("--check", type=Path, action="append", metavar="DIR",
                    help="another dataset to measure the fit on (repeatable)")
    sp.add_argument("--out", type=Path, default=written_dir(CALIBRATION), metavar="PATH",
                    help=f"a .json file, or a folder to write NAME.json to (default {written_dir(CALIBRATION)}/)")
    sp.add_argument("--cross-fit", metavar="NAME[,NAME...]",
                    help="fold adapters (train-query-encoder --fold) to run the training queries with, "
                         "for a configuration whose query encoder saw them")

    sp = add("lookup-threshold", cmd_lookup_threshold,
             "measure the verification lookup's threshold: the best match's similarity above which a "
             "published rating answers a claim (lookup_min_score)")
    sp.add_argument("--clef", type=Path, default=DEFAULT_DATASET,
                    help="CLEF-2020 task 2 dataset folder (factchecks/queries/qrels.jsonl)")
    sp.add_argument("--averitec", type=Path, default=DEFAULT_AVERITEC,
                    help="folder with the AVeriTeC dev claims.jsonl")
    sp.add_argument("--retrieval", default="factsieve", help="retrieval configuration")
    sp.add_argument("--min-precision", type=float, default=0.95)
    sp.add_argument("--fixture", type=Path, default=None,
                    help="also match --fixture-claim against this JSON Lines corpus")
    sp.add_argument("--fixture-claim", action="append", default=[],
                    help="a claim to match against --fixture (repeatable)")

    sp = add("bench", cmd_bench, "latency, throughput, ingest rate and memory per configuration and corpus size")
    add_fusion_flag(sp)
    sp.add_argument("--dataset", type=Path, help=f"dataset folder (default {DEFAULT_DATASET} when present)")
    sp.add_argument("--config", help="NAME[,NAME...] (default: every configuration; a reranking one within the live "
                         "rerank budget, FACTSIEVE_RERANK_BUDGET_MS)")
    sp.add_argument("--configs-file", type=Path, help="a retrieval configuration file (default: the packaged one)")
    sp.add_argument("--docs", help="scaled synthetic corpus sizes, e.g. 100000,1000000")
    sp.add_argument("--concurrency", type=int, default=2)
    sp.add_argument("--queries", type=int, default=200, help="queries for the latency run")
    sp.add_argument("--split", help="SPLIT[,SPLIT...]: time only these query splits (CLEF-2020: dev,test, the "
                         "tweets no model of ours trained on, which the first stage is less often sure of)")
    sp.add_argument("--seconds", type=float, default=20.0, help="duration of the throughput run")
    sp.add_argument("--mode", default="auto")
    sp.add_argument("--hosted", action="store_true",
                    help="also the stored template factsieve-match over plain HTTP, and ingest docs/s "
                         "embedded here vs by the hosted model's ingest pipeline (needs `factsieve init`)")
    sp.add_argument("--levers", action="store_true",
                    help="also, per corpus, what each query-time lever buys: BM25 bodies (count-all, "
                         "bounded prefix, analysed fields only) and kNN recall/latency per ef_search")

    sp = add("bench-evidence", cmd_bench_evidence,
             "the evidence index's disk, memory, kNN recall, build and search latency per corpus size, "
             "projected to a target size")
    sp.add_argument("--dataset", type=Path,
                    help=f"AVeriTeC claims folder: its evaluation pool is the real corpus, its claims the "
                         f"queries (default {DEFAULT_AVERITEC})")
    sp.add_argument("--docs", help="synthetic corpus sizes in passages, e.g. 10000,100000")
    sp.add_argument("--queries", type=int, default=200, help="claims searched for the latency run")
    sp.add_argument("--project", type=int, default=10_000_000, help="passages to project the costs to")
    sp.add_argument("--drop", action="store_true",
                    help="delete the synthetic corpora afterwards (else kept and reused by the next run)")

    register_training(sub, add)
