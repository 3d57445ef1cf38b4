"""The heavy objects one process needs, built lazily from the settings, once.

The API (``api.create_app``) and the worker (``workers.app.create_celery``) each hold one
``Services``. Nothing is built at import or construction time: a gunicorn or Celery prefork
parent never loads the model or opens connections, each child does so on first use. Tests pass
ready-made parts (``embedder=``) to share them.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from plugin.embedding import Embedder
from plugin import owners
from plugin.errors import BackendUnavailable, BadInput, NotFound
from plugin.owners import Writer
from plugin.service.jobs import JobStore
from plugin.service.keys import KeyStore
from plugin.kv import KV
from plugin.service.matching import MatchParts
from plugin.search.matcher import Matcher
from plugin.search.retrieval import RetrievalConfig, retrieval_config
from plugin.settings import Settings
from plugin.index.store import Store
from plugin.index.templates import IndexSpec
from plugin.service.webhooks import WebhookStore


class Services:
    def __init__(self, settings: Settings, *, store: Store | None = None,
                 embedder: Embedder | None = None, kv: KV | None = None) -> None:
        self.settings = settings
        self._parts: dict[str, Any] = {"store": store, "embedder": embedder, "kv": kv}
        self._lock = threading.RLock()
        self._index: str | None = None
        #: hands a job to its Celery task (``workers.app.create_celery`` sets it): how the job
        #: store sends a waiting job once its tenant has a free dispatch slot
        self.send_job: Callable[[dict[str, Any], int], Any] | None = None
        #: sends a planned webhook delivery to its Celery task (``create_celery`` sets it too):
        #: how the review desk's decision events leave the API process
        self.send_delivery: Callable[[str], Any] | None = None

    def _get(self, name: str, build: Any) -> Any:
        part = self._parts.get(name)
        if part is None:
            with self._lock:
                part = self._parts.get(name)
                if part is None:
                    part = self._parts[name] = build()
        return part

    @property
    def store(self) -> Store:
        return self._get("store", lambda: Store(self.settings))

    def admin(self) -> Services:
        """These services with OpenSearch's admin identity (``FACTSIEVE_OPENSEARCH_ADMIN_USER``),
        sharing the embedder and Redis: what ``factsieve init`` and the index commands run with.
        Itself when no admin identity is configured (an unsecured cluster needs none)."""
        settings = self.settings.as_opensearch_admin()
        if settings is self.settings:
            return self
        return self._get("admin", lambda: Services(settings, embedder=self._parts["embedder"],
                                                   kv=self._parts["kv"]))

    def install(self) -> dict[str, Any]:
        """What ``factsieve init`` sets up, idempotently, with the admin identity: the index
        templates and the fact-check, evidence, jobs, review queue, decision log and posts aliases with
        their first indexes, the fusion pipelines, and the hosted model with its ingest pipeline
        and search template. After it the runtime identity only reads and writes documents."""
        from plugin.evidence import evidence_spec
        from plugin.index.templates import install_index, install_plain_index, template_bodies

        svc = self.admin()
        spec = svc.index_spec()
        index = svc._index = install_index(svc.store, spec)
        evidence = install_index(svc.store, evidence_spec(svc.settings, svc.embedder))
        svc.jobs.install()
        review = [install_plain_index(svc.store, kind, alias, svc.settings.index_replicas, values)
                  for kind, alias, values in (("review", svc.settings.review_index, None),
                                              ("decisions", svc.settings.decisions_index, None),
                                              ("posts", svc.settings.posts_index,
                                               svc.posts.template_values()))]
        return {"alias": spec.alias, "index": index, "embedding_model": spec.model,
                "embedding_dim": spec.dimension, "templates": list(template_bodies(spec)),
                "evidence_index": evidence, "jobs_index": svc.settings.jobs_index,
                "review_index": review[0], "decisions_index": review[1], "posts_index": review[2],
                "search_pipelines": svc.install_search_pipelines(),
                "hosted_model": svc.host_model()}

    @property
    def kv(self) -> KV:
        return self._get("kv", lambda: KV(self.settings))

    @property
    def embedder(self) -> Embedder:
        from plugin.embedding import load_embedder

        return self._get("embedder", lambda: load_embedder(self.settings))

    @property
    def keys(self) -> KeyStore:
        return self._get("keys", lambda: KeyStore(self.kv, self.settings))

    @property
    def jobs(self) -> JobStore:
        return self._get("jobs", lambda: JobStore(self.kv, self.store, self.settings, send=self._send_job))

    def _send_job(self, job: dict[str, Any], priority: int) -> Any:
        if self.send_job is None:
            raise BackendUnavailable("this process has no job queue to send jobs to")
        return self.send_job(job, priority)

    @property
    def webhooks(self) -> WebhookStore:
        return self._get("webhooks", lambda: WebhookStore(self.kv, self.settings))

    @property
    def review(self) -> Any:
        """The review queue and decision log (``plugin.review.desk.ReviewDesk``): manual
        searches use the default matcher; decisions send their webhooks through
        ``send_delivery``; items are made as the tenant's ``review_rules`` say (the file is
        read when the first item is recorded)."""
        from plugin.review.desk import ReviewDesk
        from plugin.review.events import notifier

        from plugin.service.matching import match_post

        return self._get("review", lambda: ReviewDesk(
            self.store, self.settings, search=lambda tenant, req: match_post(self.matching, req, tenant),
            notify=notifier(self.webhooks, self._send_delivery),
            rules=lambda tenant: self.review_rules.for_tenant(tenant)))

    @property
    def review_rules(self) -> Any:
        """The tenants' review rules (``plugin.review.rules``), read once from their file."""
        from plugin.review.rules import load_rules

        return self._get("review_rules", lambda: load_rules(self.settings.review_rules_path))

    @property
    def posts(self) -> Any:
        """The matched posts with their embeddings (``plugin.learn.memory_store.PostMemory``)."""
        from plugin.learn.memory_store import PostMemory

        return self._get("posts", lambda: PostMemory(self.store, self.settings, self.embedder))

    @property
    def learning(self) -> Any:
        """What the tenant's desk taught, applied to match results (``plugin.learn.steps``):
        memory first (``plugin.learn.memory``), then the tenant's recalibrated confidence
        (``plugin.learn.calibration_step``), which leaves the desk's own confirmations alone."""
        from plugin.learn.calibration_step import Recalibration
        from plugin.learn.memory import Memory
        from plugin.learn.steps import Learning

        return self._get("learning", lambda: Learning(steps=(
            Memory(self.posts, min_similarity=self.settings.memory_min_similarity,
                   neighbours=self.settings.memory_neighbours),
            Recalibration(self.recalibrations))))

    @property
    def recalibrations(self) -> Any:
        """The tenants' recalibrated confidences (``plugin.learn.calibration_store``)."""
        from plugin.learn.calibration_store import Recalibrations

        return self._get("recalibrations", lambda: Recalibrations(self.kv, self.settings))

    def _send_delivery(self, delivery_id: str) -> Any:
        if self.send_delivery is None:
            raise BackendUnavailable("this process has no queue to send webhook deliveries to")
        return self.send_delivery(delivery_id)

    def config(self, name: str | None = None) -> RetrievalConfig:
        """A named retrieval configuration (the settings' default when ``None``), read once."""
        key = f"config:{name or self.settings.retrieval_config or ''}"
        return self._get(key, lambda: retrieval_config(name or self.settings.retrieval_config))

    @property
    def matching(self) -> MatchParts:
        """What the one match path (``plugin.service.matching.match_post``) needs."""
        from plugin.search.retrieval import load_configs

        return self._get("matching", lambda: MatchParts(
            settings=self.settings, matcher=self.matcher, learning=self.learning,
            configs=frozenset(load_configs())))

    def matcher(self, config: str | None = None, *, rerank: bool | None = False,
                explained: bool = False, server_fusion: bool | None = None,
                tenant: str | None = None) -> Matcher:
        """A matcher for a configuration, holding its reranker when the caller may rerank
        (``rerank`` not ``False``) and one loads; whether a match is reranked, and how far, is
        the matcher's ``RerankGate``'s decision. ``explained``: see ``Matcher.explained``; the
        verification lookup reads the kNN score from there. ``server_fusion``: try a hybrid
        query first (``None``: as the settings say). ``tenant``: its champion reranker
        (``learned_reranker``) instead of the configuration's, where it has one."""
        cfg = self.config(config)
        reranker, learned = None, None
        if rerank is not False and cfg.rerank is not None:
            reranker = self._get(f"reranker:{cfg.name}", lambda: self._load_reranker(cfg) or False)
            learned = self.learned_reranker(cfg, tenant) if reranker and tenant else None
            if learned is not None:
                reranker = self._get(f"reranker:{learned}", lambda: self._load_learned(learned))
        fusion = self.settings.server_fusion if server_fusion is None else server_fusion
        return self._get(f"matcher:{cfg.name}:{bool(reranker)}:{explained}:{fusion}:{learned}",
                         lambda: Matcher(self.store, self.embedder, self.settings, config=cfg,
                                         reranker=reranker or None, generate=self.query_generator(cfg),
                                         explained=explained, server_fusion=fusion))

    @property
    def champions(self) -> Any:
        """The tenants' champion rerankers (``plugin.learn.reranker_store``)."""
        from plugin.learn.reranker_store import Champions

        return self._get("champions", lambda: Champions(self.kv, self.settings))

    def learned_reranker(self, cfg: RetrievalConfig, tenant: str) -> str | None:
        """The folder of the tenant's champion reranker when ``cfg`` reranks with the packaged
        adapter it was fine-tuned from (the same file: a retrained adapter's champion is not
        served), else ``None``: the configuration's own reranker serves."""
        from pathlib import Path

        from plugin.embedding.query_tower import adapter_digest
        from plugin.search.lora_reranker import packaged_rerankers, reranker_adapter_dir

        record = self.champions.get(tenant)
        name = Path(cfg.rerank.model).name if record and cfg.rerank else None
        if name is None or name != record["start"]["name"] or name not in packaged_rerankers():
            return None
        digest = self._get(f"adapter-digest:{name}", lambda: adapter_digest(name, reranker_adapter_dir()))
        return str(self.champions.folder(record)) if digest == record["start"]["sha256"] else None

    def _load_learned(self, folder: str) -> Any:
        from plugin.search.rerank import load_reranker

        return load_reranker(folder, self.settings)

    def query_generator(self, cfg: RetrievalConfig) -> Any:
        """The LLM variant writer when ``cfg`` has LLM query variants and an LLM is configured."""
        from plugin.search.generated import GENERATED, LLMVariants

        if self.settings.llm_url and any(r.query in GENERATED for r in cfg.retrievers):
            return LLMVariants(self.llm)
        return None

    def _load_reranker(self, cfg: RetrievalConfig) -> Any:
        from plugin.search.rerank import load_rerankers

        return load_rerankers({cfg.name: cfg}, self.settings).get(cfg.name)

    def index_spec(self) -> IndexSpec:
        """The fact-check index the settings and the configured embedding model describe."""
        return IndexSpec(alias=self.settings.index, model=self.embedder.name,
                         dimension=self.embedder.dim, replicas=self.settings.index_replicas)

    # -- verification ----------------------------------------------------------------------------
    @property
    def llm(self) -> Any:
        """The OpenAI-compatible LLM client (it raises ``LLMNotConfigured`` on use when no
        ``FACTSIEVE_LLM_URL`` is set)."""
        from plugin.llm import LLMClient

        return self._get("llm", lambda: LLMClient(self.settings))

    def ensure_evidence_index(self) -> str:
        """Templates installed and the evidence alias present (once per process)."""
        from plugin.evidence import ensure_evidence_index

        return self._get("evidence_index", lambda: ensure_evidence_index(
            self.store, self.settings, self.embedder))

    def plan_evidence(self, data: bytes, claim_id: str | None = None) -> Any:
        """What a JSON Lines evidence body would make, under the passage caps; refuses it (413,
        422, 400) before anything is written (``plugin.evidence.caps.plan_evidence``)."""
        import io

        from plugin.evidence import parse
        from plugin.evidence.caps import plan_evidence

        return plan_evidence(parse(io.BytesIO(data), "body", claim_id=claim_id),
                             per_document=self.settings.max_passages_per_document,
                             per_request=self.settings.max_passages_per_request)

    def ingest_evidence_body(self, data: bytes, claim_id: str | None = None,
                             progress: Any = None, *, writer: Any = None) -> Any:
        """Ingest a JSON Lines evidence body (the API's synchronous path and the evidence job
        both come here): the caps are checked on the whole body first, so a refused body writes
        nothing; then its documents are embedded and indexed, each over the per-document cap
        rejected in the report. ``writer`` (``plugin.owners.Writer``; the default tenant when
        ``None``) owns what is written: a document another tenant owns is rejected."""
        import io

        from plugin.evidence import ingest_evidence, parse
        from plugin.owners import Writer

        self.plan_evidence(data, claim_id)
        self.ensure_evidence_index()
        return ingest_evidence(parse(io.BytesIO(data), "body", claim_id=claim_id), store=self.store,
                               embedder=self.embedder, index=self.settings.evidence_index,
                               batch_size=self.settings.embedding_batch_size, progress=progress,
                               max_passages_per_document=self.settings.max_passages_per_document,
                               writer=writer or Writer())

    def evidence_retriever(self, max_per_url: int | None = None) -> Any:
        """Hybrid evidence search over the evidence alias, at most ``max_per_url`` passages of
        one page (the retriever's default when ``None``)."""
        from plugin.evidence.retrieve import MAX_PER_URL, EvidenceRetriever

        n = max_per_url or MAX_PER_URL
        return self._get(f"evidence:{n}", lambda: EvidenceRetriever(
            self.store, self.embedder, self.settings, max_per_url=n))

    def verdict_head(self) -> Any:
        """The configured verdict model (``FACTSIEVE_VERDICT_MODEL``): the head, or a fine-tuned
        cross-encoder as ``factsieve model build`` built it."""
        name = self.settings.verdict_model
        if name == "head":
            from plugin.verify.head import VerdictHead

            return self._get("verdict_head", lambda: VerdictHead.load(self.settings.verdict_head_path,
                                                                       self.embedder))
        from plugin.verify.verdict_model import load_verdict_model

        return self._get(f"verdict_model:{name}", lambda: load_verdict_model(self.settings, name))

    def fallback_head(self) -> Any:
        """The verdict head when it loads, else ``None``: an LLM configuration's verdict after
        invalid LLM output is then Not Enough Evidence, and the result says why."""
        from plugin.errors import ModelMismatch, ModelUnavailable

        try:
            return self.verdict_head()
        except (ModelUnavailable, ModelMismatch):
            return None

    def verification_config(self, name: str | None = None) -> Any:
        from plugin.verify.config import verification_config as get_verification_config

        return get_verification_config(name or self.settings.verify_config)

    def blend_weight(self) -> float:
        """The verdict model's weight in the LLM/model blend for the configured LLM
        (``FACTSIEVE_LLM_MODEL``), from ``plugin/verify/configs/blend.json``."""
        from plugin.verify.blend import blend_weight, load_table

        return blend_weight(self.settings.llm_model, load_table())

    def verifier(self, cfg: Any) -> Any:
        """A ``Verifier`` with the parts ``cfg`` needs: the matcher of its lookup, the evidence
        retriever, the LLM, the few-shot pool, the verdict head (required for the head or a
        blend the configuration sets; for an LLM configuration otherwise, when one loads, the
        blend with the weight recorded for the LLM and the fallback after invalid LLM output)."""
        from plugin.verify.config import Strategy
        from plugin.verify.fewshot import load_pool
        from plugin.verify.verifier import Verifier, looks_up

        uses_llm = cfg.strategy in (Strategy.QA_LOOP, Strategy.SINGLE_CALL)
        needs_head = cfg.strategy in (Strategy.HEAD, Strategy.CITED) or (uses_llm and (cfg.head_weight or 0) > 0)
        head = self.verdict_head() if needs_head else self.fallback_head() if uses_llm else None
        return Verifier(head_weight=self.blend_weight() if uses_llm else 0.0,
            llm=self.llm if uses_llm else None,
            evidence=self.evidence_retriever(cfg.per_url) if cfg.strategy is not Strategy.LOOKUP else None,
            matcher=(self.matcher(cfg.retrieval, rerank=True, explained=True)
                     if looks_up(cfg) else None),
            pool=load_pool(str(self.settings.verify_fewshot) if self.settings.verify_fewshot else None),
            head=head)

    def install_search_pipelines(self, configs: list[RetrievalConfig] | None = None) -> list[str]:
        """The fusion pipelines of the retrieval configurations (all packaged ones by default)
        on a cluster with neural-search, by idempotent PUTs; none elsewhere. ``factsieve init``
        and the lab call this; the query path never writes a pipeline."""
        from plugin.search.hybrid import NEURAL_PLUGIN, config_pipelines
        from plugin.search.retrieval import load_configs

        if NEURAL_PLUGIN not in self.store.plugins():
            return []
        wanted = config_pipelines(configs if configs is not None else load_configs().values())
        for name, body in wanted.items():
            self.store.put_search_pipeline(name, body)
        return sorted(wanted)

    def ingest_embeds_here(self) -> bool:
        """Where FactSieve's own ingest computes vectors (``FACTSIEVE_INGEST_EMBEDDING``):
        ``client`` here; ``hosted`` in the index's default ingest pipeline, which
        ``factsieve init`` set up with the hosted model; ``auto`` (the default) hosted when the
        index records a hosted model of the configured embedder's graph, else here. Measured
        (README, "Query OpenSearch directly"): the pipeline ingested CLEF-2020 faster here, with
        the same evaluation scores within noise."""
        from plugin.index.hosted import bundle_name
        from plugin.index.templates import index_model

        mode = self.settings.ingest_embedding
        if mode == "client":
            return True
        hosted = index_model(self.store, self.settings.index).get("hosted_model") or {}
        path = getattr(self.embedder, "model_path", None)
        ours = path is not None and hosted.get("name") == bundle_name(self.embedder.name, path.name)
        if mode == "hosted" and not ours:
            raise BadInput(f"FACTSIEVE_INGEST_EMBEDDING=hosted, but index {self.settings.index!r} "
                           "has no hosted model of the configured embedder: run `factsieve init` "
                           "on a cluster with ML Commons")
        return not ours

    def ingest_factchecks(self, records: Any, *, batch_size: int | None = None,
                          progress: Any = None, writer: Writer = Writer(),
                          local_files: bool = False) -> Any:
        """Fact-check records into the alias as ``writer`` (``plugin.owners``: another tenant's
        ids are rejected), with vectors computed where ``ingest_embeds_here`` says, and their
        images read (``local_files``: an ``image_path`` too, for the CLI only). The CLI, the
        API and the ingest job all come here."""
        from plugin.ingest import ingest
        from plugin.ingest.images import image_step

        self.ensure_factcheck_index()
        return ingest(records, store=self.store, embedder=self.embedder, index=self.settings.index,
                      batch_size=batch_size or self.settings.embedding_batch_size,
                      progress=progress, embed_here=self.ingest_embeds_here(), writer=writer,
                      images=image_step(self.settings, local_files=local_files))

    def delete_factcheck(self, doc_id: str, writer: Writer) -> None:
        """Delete one fact-check: its owner's or an admin's to delete (``owners.check_delete``),
        and only the version whose owner was checked."""
        index = self.settings.index
        try:
            found = self.store.mget(index, [doc_id], source=[owners.FIELD])
        except NotFound:  # no index behind the alias yet: no such fact-check either
            found = {}
        have = owners.check_delete("fact-check", doc_id, owners.existing(found).get(doc_id), writer)
        self.store.delete(index, doc_id, noun="fact-check", if_seq_no=have.seq_no,
                          if_primary_term=have.primary_term)

    def host_model(self) -> dict[str, Any] | None:
        """What tools that talk to OpenSearch directly need, set up by ``factsieve init``: the
        embedding model registered in ML Commons, deployed and answering; the fact-check index's
        default ingest pipeline, which embeds documents written without a vector as FactSieve's
        own ingest would; the model recorded in the index ``_meta``; the stored search template
        (``FACTSIEVE_SEARCH_TEMPLATE``, default ``factsieve-match``). Idempotent. ``None`` (nothing done) when the cluster has no ML
        Commons or ``FACTSIEVE_HOST_MODEL`` is false; call ``install_search_pipelines`` first."""
        from plugin.index.hosted import HostedModels, embed_pipeline_body, local_bundle
        from plugin.search.template import MONO_MAPPING, match_template

        models = HostedModels(self.store)
        if not self.settings.host_model or not models.available():
            return None
        index = self.ensure_factcheck_index()
        embedder = self.embedder
        bundle, onnx_file = local_bundle(embedder, self.settings.cache_dir)
        hosted = models.ensure(bundle, dimension=embedder.dim, onnx_file=onnx_file,
                               timeout_s=self.settings.host_model_timeout_s,
                               description=f"FactSieve embedding model {embedder.name} ({onnx_file})")
        alias = self.settings.index
        pipeline = f"{alias}-embed"
        self.store.put_ingest_pipeline(pipeline, embed_pipeline_body(
            hosted.model_id, passage_prefix=self.settings.passage_prefix,
            description=f"FactSieve: embeds fact-checks written to {alias} without a vector, with "
                        f"hosted model {hosted.model_id} ({embedder.name}, {onnx_file})"))
        self.store.put_index_settings(index, {"default_pipeline": pipeline})
        self.store.put_mapping(index, {"properties": MONO_MAPPING})  # indexes made before it
        meta = self.store.mapping_meta(index)
        meta.setdefault("factsieve", {})["hosted_model"] = {**hosted.to_dict(),
                                                            "ingest_pipeline": pipeline}
        self.store.put_mapping(index, {"_meta": meta})
        config = self.config(self.settings.template_config)
        self.store.put_search_template(self.settings.search_template, match_template(
            config, model_id=hosted.model_id, query_prefix=self.settings.query_prefix))
        return {**hosted.to_dict(), "index": index, "ingest_pipeline": pipeline,
                "search_template": {"id": self.settings.search_template, "config": config.name}}

    def ensure_factcheck_index(self) -> str:
        """Templates installed and the fact-check alias present (once per process)."""
        from plugin.index.templates import ensure_index

        if self._index is None:
            self._index = ensure_index(self.store, self.index_spec())
        return self._index
