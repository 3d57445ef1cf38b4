"""What a ``Verifier`` is built from, loaded once per process: the verdict model, the blend
weight of the configured LLM, the few-shot pool, and a verifier for a configuration with the
parts it needs. ``Services.verification`` builds it; the lookup is handed in as a function of
the tenant (the one match path, ``plugin.service.matching.match_post``)."""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from plugin.errors import ModelMismatch, ModelUnavailable
from plugin.verify.config import Strategy, VerificationConfig, verification_config

if TYPE_CHECKING:
    from plugin.embedding import Embedder
    from plugin.evidence.store import EvidenceIndex
    from plugin.llm import LLMClient
    from plugin.search.request import MatchRequest
    from plugin.search.result import Match
    from plugin.settings import Settings
    from plugin.verify.verifier import Verifier

#: ``(retrieval configuration, tenant) -> (request -> Match)``: the lookup of a configuration
LookupFor = Callable[[str | None, str], Callable[["MatchRequest"], "Match"]]


class Verification:
    def __init__(self, settings: Settings, embedder: Embedder, llm: LLMClient, evidence: EvidenceIndex,
                 lookup_for: LookupFor) -> None:
        self.settings, self.embedder, self.llm, self.evidence = settings, embedder, llm, evidence
        self.lookup_for = lookup_for
        self._heads: dict[str, Any] = {}
        self._lock = threading.Lock()

    def config(self, name: str | None = None) -> VerificationConfig:
        """A named verification configuration (``FACTSIEVE_VERIFY_CONFIG`` when ``None``)."""
        return verification_config(name or self.settings.verify_config)

    def head(self) -> Any:
        """The configured verdict model (``FACTSIEVE_VERDICT_MODEL``): the head, or a fine-tuned
        cross-encoder as ``factsieve model build`` built it; loaded once."""
        name = self.settings.verdict_model
        with self._lock:
            if name not in self._heads:
                if name == "head":
                    from plugin.verify.head import VerdictHead

                    self._heads[name] = VerdictHead.load(self.settings.verdict_head_path, self.embedder)
                else:
                    from plugin.verify.verdict_model import load_verdict_model

                    self._heads[name] = load_verdict_model(self.settings, name)
            return self._heads[name]

    def fallback_head(self) -> Any:
        """The verdict head when it loads, else ``None``: an LLM configuration's verdict after
        invalid LLM output is then Not Enough Evidence, and the result says why."""
        try:
            return self.head()
        except (ModelUnavailable, ModelMismatch):
            return None

    def blend_weight(self) -> float:
        """The verdict model's weight in the LLM/model blend for the configured LLM
        (``FACTSIEVE_LLM_MODEL``), from ``plugin/verify/configs/blend.json``."""
        from plugin.verify.blend import blend_weight, load_table

        return blend_weight(self.settings.llm_model, load_table())

    def verifier(self, cfg: VerificationConfig, tenant: str) -> Verifier:
        """A ``Verifier`` with the parts ``cfg`` needs: the tenant's lookup, the evidence
        retriever, the LLM, the few-shot pool, the verdict head (required for the head or a blend
        the configuration sets; for an LLM configuration otherwise, when one loads, the blend
        with the weight recorded for the LLM and the fallback after invalid LLM output)."""
        from plugin.verify.fewshot import load_pool
        from plugin.verify.verifier import Verifier, looks_up

        uses_llm = cfg.strategy in (Strategy.QA_LOOP, Strategy.SINGLE_CALL)
        needs_head = cfg.strategy in (Strategy.HEAD, Strategy.CITED) or (uses_llm and (cfg.head_weight or 0) > 0)
        head = self.head() if needs_head else self.fallback_head() if uses_llm else None
        return Verifier(
            head_weight=self.blend_weight() if uses_llm else 0.0, llm=self.llm if uses_llm else None,
            evidence=self.evidence.retriever(cfg.per_url) if cfg.strategy is not Strategy.LOOKUP else None,
            lookup=self.lookup_for(cfg.retrieval, tenant) if looks_up(cfg) else None,
            pool=load_pool(str(self.settings.verify_fewshot) if self.settings.verify_fewshot else None),
            head=head)
