"""Retrieval datasets for the lab: read from disk, and their fact-checks indexed once.

Layout (as in ``../shared/data``): ``factchecks.jsonl``, ``queries.jsonl`` (``id, text, lang,
date``), ``qrels.jsonl`` (``query_id, factcheck_id`` and, for MultiClaim, ``crosslingual``). The
fact-checks are indexed once per dataset and model under the alias ``eval-<dataset>-<model hash>``
and reused while the count and the model match. ``with_extra_corpus`` indexes a corpus without
queries beside them (``vclaims_multilingual``: fact-checks in 30 languages), so that posts meet
candidates in other languages as they do in a newsroom's index; the alias then names both.
"""
from __future__ import annotations

import hashlib
import json
import re
import time
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from plugin.embedding import Embedder
from plugin.errors import BadInput, FactSieveError
from plugin.index.store import Store
from plugin.index.templates import IndexSpec, current_index, ensure_index, index_model
from plugin.ingest import Format, ingest, read_records
from plugin.settings import Settings


@dataclass
class Dataset:
    name: str
    path: Path
    queries: list[dict[str, Any]]
    #: query id → relevant fact-check ids, per pair kind ("all", "mono", "cross")
    qrels: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    n_factchecks: int = 0
    #: more fact-checks indexed beside the dataset's own (``factchecks.jsonl`` files with no
    #: queries or qrels of their own: distractors), in the order given
    extra: tuple[Path, ...] = ()

    @property
    def has_pair_kinds(self) -> bool:
        return bool(self.qrels.get("cross"))

    @property
    def corpus_files(self) -> list[Path]:
        """Every ``factchecks.jsonl`` the evaluation index holds: the dataset's, then the extras."""
        return [self.path / "factchecks.jsonl", *self.extra]


def _ids(path: Path) -> list[str]:
    with open(path, encoding="utf-8") as fh:
        return [str(json.loads(line)["id"]) for line in fh if line.strip()]


def with_extra_corpus(dataset: Dataset, corpus: Path | str) -> Dataset:
    """``dataset`` with ``corpus`` (a folder with ``factchecks.jsonl``, or the file) indexed beside
    its fact-checks: its name (and so its index alias) names both. A fact-check id the two share
    is refused by name: a distractor must never stand in for an answer."""
    corpus = Path(corpus)
    file = corpus / "factchecks.jsonl" if corpus.is_dir() else corpus
    if not file.is_file():
        raise BadInput(f"extra corpus {str(corpus)!r} has no factchecks.jsonl")
    extra_ids = _ids(file)
    shared = set(extra_ids) & {i for f in dataset.corpus_files for i in _ids(f)}
    if shared:
        raise BadInput(f"extra corpus {str(corpus)!r} shares {len(shared)} fact-check id(s) with "
                       f"{dataset.name!r}, e.g. {sorted(shared)[0]!r}")
    name = (file.parent if file.name == "factchecks.jsonl" else file).name
    return replace(dataset, name=f"{dataset.name}+{name}", extra=(*dataset.extra, file),
                   n_factchecks=dataset.n_factchecks + len(extra_ids))


def _rows(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_dataset(path: Path | str) -> Dataset:
    path = Path(path)
    for name in ("factchecks.jsonl", "queries.jsonl", "qrels.jsonl"):
        if not (path / name).is_file():
            raise BadInput(f"dataset {str(path)!r} has no {name}: expected factchecks.jsonl, "
                           "queries.jsonl and qrels.jsonl")
    queries = _rows(path / "queries.jsonl")
    qrels: dict[str, dict[str, set[str]]] = {"all": defaultdict(set), "mono": defaultdict(set),
                                             "cross": defaultdict(set)}
    for r in _rows(path / "qrels.jsonl"):
        q, d = str(r["query_id"]), str(r["factcheck_id"])
        qrels["all"][q].add(d)
        if "crosslingual" in r:
            qrels["cross" if r["crosslingual"] else "mono"][q].add(d)
    with open(path / "factchecks.jsonl", encoding="utf-8") as fh:
        n = sum(1 for line in fh if line.strip())
    return Dataset(name=path.name, path=path, queries=queries,
                   qrels={k: dict(v) for k, v in qrels.items()}, n_factchecks=n)


def dataset_alias(dataset: Dataset, model: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", dataset.name.lower()).strip("-")[:60]
    return f"eval-{slug}-{hashlib.sha1(model.encode()).hexdigest()[:8]}"


def ensure_dataset_index(store: Store, embedder: Embedder, dataset: Dataset,
                         settings: Settings, *, rebuild: bool = False) -> tuple[str, dict[str, Any] | None]:
    """Index the dataset's fact-checks unless an up-to-date index exists, then force-merge it to
    one segment; returns the alias and the ingest statistics (None when reused)."""
    alias = dataset_alias(dataset, embedder.name)
    spec = IndexSpec(alias=alias, model=embedder.name, dimension=embedder.dim,
                     replicas=settings.index_replicas)
    if not rebuild and current_index(store, alias) is not None:
        try:
            meta = index_model(store, alias)
            if meta.get("embedding_model") == embedder.name and store.count(alias) == dataset.n_factchecks:
                return alias, None
        except FactSieveError:
            pass
    if current_index(store, alias) is not None:
        store.delete_index(f"{alias}-v*")  # an evaluation index is ours to rebuild
    ensure_index(store, spec)
    t0 = time.perf_counter()
    report = ingest(read_records(dataset.corpus_files, Format.jsonl), store=store,
                    embedder=embedder, index=alias, batch_size=settings.embedding_batch_size)
    secs = time.perf_counter() - t0
    # the corpus is only read from now on: one segment is what a long-lived production index
    # converges to, and evaluate/bench numbers should not depend on how the bulk load split it
    # (below ~1000 documents the retained _recovery_source costs nothing measurable, and waiting
    # for the retention lease to pass it — up to its 30 s sync interval — would dominate the build)
    merge_s = store.force_merge(alias, lease_timeout_s=90.0 if dataset.n_factchecks >= 1000 else 0.0)
    stats = {"docs": report.indexed + report.updated, "rejected": report.rejected,
             "seconds": round(secs, 2), "docs_per_s": round((report.indexed + report.updated) / secs, 1),
             "force_merge_s": round(merge_s, 1), "segments": store.segment_count(alias)}
    return alias, stats
