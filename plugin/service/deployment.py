"""What ``factsieve init`` sets up on the cluster, idempotently, with OpenSearch's admin identity:
the index templates and every alias with its first index, the fusion pipelines, and the hosted
embedding model with its ingest pipeline and the stored search template. After it the runtime
identity only reads and writes documents; the query path never installs anything.
``Services.admin().deployment`` builds it."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plugin.embedding import Embedder
    from plugin.evidence.store import EvidenceIndex
    from plugin.index.store import Store
    from plugin.ingest.factchecks import FactCheckIndex
    from plugin.learn.memory_store import PostMemory
    from plugin.search.retrieval import RetrievalConfig
    from plugin.service.jobs import JobStore
    from plugin.settings import Settings


@dataclass(frozen=True)
class Deployment:
    store: Store
    settings: Settings
    embedder: Embedder
    factchecks: FactCheckIndex
    evidence: EvidenceIndex
    jobs: JobStore
    posts: PostMemory
    #: a retrieval configuration by name (``Services.config``)
    config: Callable[[str | None], RetrievalConfig]

    def install(self) -> dict[str, Any]:
        """The index templates and the fact-check, evidence, jobs, review queue, decision log,
        posts and claims aliases with their first indexes, the fusion pipelines, and the hosted model with
        its ingest pipeline and search template."""
        from plugin.evidence import evidence_spec
        from plugin.index import rolling
        from plugin.index.templates import install_index, install_plain_index, template_bodies

        spec = self.factchecks.spec()
        index = install_index(self.store, spec)
        self.factchecks.installed(index)
        evidence = install_index(self.store, evidence_spec(self.settings, self.embedder))
        self.jobs.install()
        s = self.settings
        review = [install_plain_index(self.store, kind, alias, s.index_replicas, values)
                  for kind, alias, values in (("review", s.review_index, None),
                                              ("decisions", s.decisions_index, None),
                                              ("posts", s.posts_index, self.posts.template_values()),
                                              ("claims", s.claims_index, None))]
        rolled = rolling.ensure_rolling(self.store, s.posts_index, s.posts_retention_days)
        return {"alias": spec.alias, "index": index, "embedding_model": spec.model,
                "embedding_dim": spec.dimension, "templates": list(template_bodies(spec)),
                "evidence_index": evidence, "jobs_index": s.jobs_index,
                "review_index": review[0], "decisions_index": review[1], "posts_index": review[2], "claims_index": review[3],
                "posts_rolling": rolled,
                "search_pipelines": self.search_pipelines(), "hosted_model": self.host_model()}

    def search_pipelines(self, configs: Iterable[RetrievalConfig] | None = None) -> list[str]:
        """The fusion pipelines of the retrieval configurations (all packaged ones by default)
        on a cluster with neural-search, by idempotent PUTs; none elsewhere."""
        from plugin.search.hybrid import NEURAL_PLUGIN, config_pipelines
        from plugin.search.retrieval import load_configs

        if NEURAL_PLUGIN not in self.store.plugins():
            return []
        wanted = config_pipelines(list(configs) if configs is not None else load_configs().values())
        for name, body in wanted.items():
            self.store.put_search_pipeline(name, body)
        return sorted(wanted)

    def host_model(self) -> dict[str, Any] | None:
        """What tools that talk to OpenSearch directly need: the embedding model registered in ML
        Commons, deployed and answering; the fact-check index's default ingest pipeline, which
        embeds documents written without a vector as FactSieve's own ingest would; the model
        recorded in the index ``_meta``; the stored search template (``FACTSIEVE_SEARCH_TEMPLATE``,
        default ``factsieve-match``). Idempotent. ``None`` (nothing done) when the cluster has no
        ML Commons or ``FACTSIEVE_HOST_MODEL`` is false; ``search_pipelines`` first."""
        from plugin.index.hosted import HostedModels, embed_pipeline_body, local_bundle
        from plugin.search.template import MONO_MAPPING, match_template

        models = HostedModels(self.store)
        if not self.settings.host_model or not models.available():
            return None
        index = self.factchecks.ensure()
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
        meta.setdefault("factsieve", {})["hosted_model"] = {**hosted.to_dict(), "ingest_pipeline": pipeline}
        self.store.put_mapping(index, {"_meta": meta})
        config = self.config(self.settings.template_config)
        self.store.put_search_template(self.settings.search_template, match_template(
            config, model_id=hosted.model_id, query_prefix=self.settings.query_prefix))
        return {**hosted.to_dict(), "index": index, "ingest_pipeline": pipeline,
                "search_template": {"id": self.settings.search_template, "config": config.name}}
