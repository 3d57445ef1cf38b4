"""The parts one process needs, built lazily from the settings, once: a container that wires and
does not do.

The API (``api.create_app``) and the worker (``workers.app.create_celery``) each hold one
``Services``; the CLI builds one per command. Nothing is built at import or construction time: a
gunicorn or Celery prefork parent never loads the model or opens connections, each child does so
on first use. Tests pass ready-made parts (``embedder=``) to share them. Each property hands out
one stage's object, built from the parts that stage uses (never this container): the work is
theirs — matching (``plugin.service.matching``), the fact-check and evidence indexes
(``plugin.ingest.factchecks``, ``plugin.evidence.store``), verification (``plugin.verify.parts``),
the cluster set-up (``plugin.service.deployment``), the desk (``plugin.review.desk``) and learning
(``plugin.learn``).
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from plugin.errors import BackendUnavailable
from plugin.index.store import Store
from plugin.kv import KV
from plugin.search.matcher import Matcher
from plugin.search.retrieval import RetrievalConfig, retrieval_config
from plugin.service.jobs import JobStore
from plugin.service.keys import KeyStore
from plugin.service.matching import MatchParts
from plugin.service.webhooks import WebhookStore
from plugin.settings import Settings

if TYPE_CHECKING:
    from plugin.embedding import Embedder
    from plugin.evidence.store import EvidenceIndex
    from plugin.ingest.factchecks import FactCheckIndex
    from plugin.learn.calibration_store import Recalibrations
    from plugin.claims.store import ClaimStore
    from plugin.channels.store import ChannelStore
    from plugin.learn.memory_store import PostMemory
    from plugin.learn.reranker_store import Champions
    from plugin.learn.steps import Learning
    from plugin.llm import LLMClient
    from plugin.review.desk import ReviewDesk
    from plugin.review.rules import Rules
    from plugin.search.generated import LLMVariants
    from plugin.search.rerank import Reranker
    from plugin.service.deployment import Deployment
    from plugin.verify.parts import Verification

T = TypeVar("T")


class Services:
    def __init__(self, settings: Settings, *, store: Store | None = None,
                 embedder: Embedder | None = None, kv: KV | None = None) -> None:
        self.settings = settings
        self._parts: dict[str, Any] = {"store": store, "embedder": embedder, "kv": kv}
        self._lock = threading.RLock()
        #: hands a job to its Celery task (``workers.app.create_celery`` sets it): how the job
        #: store sends a waiting job once its tenant has a free dispatch slot
        self.send_job: Callable[[dict[str, Any], int], Any] | None = None
        #: sends a planned webhook delivery to its Celery task (``create_celery`` sets it too):
        #: how the review desk's decision events leave the API process
        self.send_delivery: Callable[[str], Any] | None = None
        #: sends a planned tipline message, and a claim's answer to its askers, to their Celery
        #: tasks (``create_celery`` sets them)
        self.send_channel: Callable[[str], Any] | None = None
        self.send_answers: Callable[[str, str, dict[str, Any]], Any] | None = None

    def _get(self, name: str, build: Callable[[], T]) -> T:
        part = self._parts.get(name)
        if part is None:
            with self._lock:
                part = self._parts.get(name)
                if part is None:
                    part = self._parts[name] = build()
        return part  # type: ignore[no-any-return]

    # -- engines -----------------------------------------------------------------------------------
    @property
    def store(self) -> Store:
        return self._get("store", lambda: Store(self.settings))

    @property
    def kv(self) -> KV:
        return self._get("kv", lambda: KV(self.settings))

    @property
    def embedder(self) -> Embedder:
        from plugin.embedding import load_embedder

        return self._get("embedder", lambda: load_embedder(self.settings))

    @property
    def llm(self) -> LLMClient:
        """The OpenAI-compatible LLM client (it raises ``LLMNotConfigured`` on use when no
        ``FACTSIEVE_LLM_URL`` is set)."""
        from plugin.llm import LLMClient

        return self._get("llm", lambda: LLMClient(self.settings))

    def admin(self) -> Services:
        """These services with OpenSearch's admin identity (``FACTSIEVE_OPENSEARCH_ADMIN_USER``),
        sharing the embedder and Redis: what ``factsieve init`` and the index commands run with.
        Itself when no admin identity is configured (an unsecured cluster needs none)."""
        settings = self.settings.as_opensearch_admin()
        if settings is self.settings:
            return self
        return self._get("admin", lambda: Services(settings, embedder=self._parts["embedder"],
                                                   kv=self._parts["kv"]))

    # -- the API's and the workers' stores ---------------------------------------------------------
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
    def channels(self) -> ChannelStore:
        """The tipline's channels, users, asks and outbox (``plugin.channels.store``)."""
        from plugin.channels.store import ChannelStore

        return self._get("channels", lambda: ChannelStore(self.kv))

    def queue_message(self, message_id: str) -> Any:
        if self.send_channel is None:
            raise BackendUnavailable("this process has no queue to send tipline messages to")
        return self.send_channel(message_id)

    def queue_answers(self, tenant: str, claim_id: str, factcheck: dict[str, Any]) -> Any:
        if self.send_answers is None:
            raise BackendUnavailable("this process has no queue to send the desk's answers to")
        return self.send_answers(tenant, claim_id, factcheck)

    def _send_delivery(self, delivery_id: str) -> Any:
        if self.send_delivery is None:
            raise BackendUnavailable("this process has no queue to send webhook deliveries to")
        return self.send_delivery(delivery_id)

    # -- stages ------------------------------------------------------------------------------------
    @property
    def factchecks(self) -> FactCheckIndex:
        """The fact-check index: made ready, ingested into, deleted from."""
        from plugin.ingest.factchecks import FactCheckIndex

        return self._get("factchecks", lambda: FactCheckIndex(self.store, self.settings, self.embedder))

    @property
    def evidence(self) -> EvidenceIndex:
        """The evidence index: made ready, ingested into, searched."""
        from plugin.evidence.store import EvidenceIndex

        return self._get("evidence", lambda: EvidenceIndex(self.store, self.settings, self.embedder))

    @property
    def deployment(self) -> Deployment:
        """What ``factsieve init`` sets up (use ``admin().deployment`` on a secured cluster)."""
        from plugin.service.deployment import Deployment

        return self._get("deployment", lambda: Deployment(
            store=self.store, settings=self.settings, embedder=self.embedder, factchecks=self.factchecks,
            evidence=self.evidence, jobs=self.jobs, posts=self.posts, config=self.config))

    @property
    def review(self) -> ReviewDesk:
        """The review queue and decision log: manual searches go through the one match path;
        decisions send their webhooks through ``send_delivery`` and the desk's answers to the
        tipline's askers through ``send_channel``; items are made as the tenant's
        ``review_rules`` say (the file is read when the first item is recorded)."""
        from plugin.review.desk import ReviewDesk
        from plugin.review.events import notifier
        from plugin.service.matching import match_post
        from plugin.service.desk_answers import desk_notifier

        hooks = notifier(self.webhooks, self._send_delivery)
        tipline = desk_notifier(self, self.queue_answers)

        def notify(*args: Any, **kwargs: Any) -> list[str]:  # webhooks, then the tipline's askers
            planned = hooks(*args, **kwargs)
            tipline(*args, **kwargs)
            return planned

        return self._get("review", lambda: ReviewDesk(
            self.store, self.settings, search=lambda tenant, req: match_post(self.matching, req, tenant),
            notify=notify,
            rules=lambda tenant: self.review_rules.for_tenant(tenant)))

    @property
    def review_rules(self) -> Rules:
        """The tenants' review rules (``plugin.review.rules``), read once from their file."""
        from plugin.review.rules import load_rules

        return self._get("review_rules", lambda: load_rules(self.settings.review_rules_path))

    @property
    def posts(self) -> PostMemory:
        """The matched posts with their embeddings (``plugin.learn.memory_store.PostMemory``)."""
        from plugin.learn.memory_store import PostMemory

        return self._get("posts", lambda: PostMemory(self.store, self.settings, self.embedder))

    @property
    def claims(self) -> ClaimStore:
        """The claims the tenants' posts make (``plugin.claims.store.ClaimStore``)."""
        from plugin.claims.recent import RecentPosts
        from plugin.claims.store import ClaimStore

        return self._get("claims", lambda: ClaimStore(self.store, self.settings, vector=self.posts.vector,
                                                      recent=RecentPosts(self.kv)))

    @property
    def learning(self) -> Learning:
        """What the tenant's desk taught, applied to matches (``plugin.learn.steps``): memory
        first (``plugin.learn.memory``), then the tenant's recalibrated confidence
        (``plugin.learn.calibration_step``), which leaves the desk's own confirmations alone,
        then the answer the desk gave the post's claim (``plugin.learn.claim_step``)."""
        from plugin.learn.calibration_step import Recalibration
        from plugin.learn.claim_step import ClaimAnswer
        from plugin.learn.memory import Memory
        from plugin.learn.steps import Learning

        return self._get("learning", lambda: Learning(steps=(
            Memory(self.posts, min_similarity=self.settings.memory_min_similarity,
                   neighbours=self.settings.memory_neighbours),
            Recalibration(self.recalibrations), ClaimAnswer(self.claims, self.posts))))

    @property
    def recalibrations(self) -> Recalibrations:
        """The tenants' recalibrated confidences (``plugin.learn.calibration_store``)."""
        from plugin.learn.calibration_store import Recalibrations

        return self._get("recalibrations", lambda: Recalibrations(self.kv, self.settings))

    @property
    def champions(self) -> Champions:
        """The tenants' champion rerankers (``plugin.learn.reranker_store``)."""
        from plugin.learn.reranker_store import Champions

        return self._get("champions", lambda: Champions(self.kv, self.settings))

    @property
    def verification(self) -> Verification:
        """Verifiers and their parts (``plugin.verify.parts``); the lookup is the one match path."""
        from plugin.service.matching import match_post
        from plugin.verify.parts import Verification

        def lookup_for(config: str | None, tenant: str) -> Callable[..., Any]:
            return lambda req: match_post(self.matching, req, tenant, config=config, explained=True)

        return self._get("verification", lambda: Verification(self.settings, self.embedder, self.llm,
                                                               self.evidence, lookup_for))

    # -- matching ----------------------------------------------------------------------------------
    @property
    def matching(self) -> MatchParts:
        """What the one match path (``plugin.service.matching.match_post``) needs."""
        from plugin.search.retrieval import load_configs

        return self._get("matching", lambda: MatchParts(
            settings=self.settings, matcher=self.matcher, learning=self.learning,
            configs=frozenset(load_configs())))

    def config(self, name: str | None = None) -> RetrievalConfig:
        """A named retrieval configuration (the settings' default when ``None``), read once."""
        key = f"config:{name or self.settings.retrieval_config or ''}"
        return self._get(key, lambda: retrieval_config(name or self.settings.retrieval_config))

    def matcher(self, config: str | None = None, *, rerank: bool | None = False,
                explained: bool = False, server_fusion: bool | None = None,
                tenant: str | None = None) -> Matcher:
        """A matcher for a configuration, holding its reranker when the caller may rerank
        (``rerank`` not ``False``) and one loads; whether a match is reranked, and how far, is
        the matcher's ``RerankGate``'s decision. ``explained``: see ``Matcher.explained``; the
        verification lookup reads the kNN score from there. ``server_fusion``: try a hybrid
        query first (``None``: as the settings say). ``tenant``: its champion reranker
        (``Champions.serving``) instead of the configuration's, where it has one. Callers of a
        match go through ``match_post``, which asks for its matcher here."""
        cfg = self.config(config)
        reranker: Reranker | None = None
        learned = None
        if rerank is not False and cfg.rerank is not None:
            reranker = self._get(f"reranker:{cfg.name}", lambda: self._load_reranker(cfg) or False) or None
            learned = self.champions.serving(cfg, tenant) if reranker and tenant else None
            if learned is not None:
                reranker = self._get(f"reranker:{learned}", lambda: self._load_learned(learned))
        fusion = self.settings.server_fusion if server_fusion is None else server_fusion
        return self._get(f"matcher:{cfg.name}:{bool(reranker)}:{explained}:{fusion}:{learned}",
                         lambda: Matcher(self.store, self.embedder, self.settings, config=cfg,
                                         reranker=reranker, generate=self._variant_writer(cfg),
                                         explained=explained, server_fusion=fusion))

    def _load_reranker(self, cfg: RetrievalConfig) -> Reranker | None:
        from plugin.search.rerank import load_rerankers

        return load_rerankers({cfg.name: cfg}, self.settings).get(cfg.name)

    def _load_learned(self, folder: str) -> Reranker:
        from plugin.search.rerank import load_reranker

        return load_reranker(folder, self.settings)

    def _variant_writer(self, cfg: RetrievalConfig) -> LLMVariants | None:
        """The LLM variant writer when ``cfg`` has LLM query variants and an LLM is configured."""
        from plugin.search.generated import GENERATED, LLMVariants

        if self.settings.llm_url and any(r.query in GENERATED for r in cfg.retrievers):
            return LLMVariants(self.llm)
        return None
