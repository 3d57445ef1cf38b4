"""The one match path: ``match_post``, which every caller of a match goes through.

The HTTP route (``POST /v1/match``), the post job (and so webhooks and the desk's items), the
rerank job, the verification lookup, the desk's manual search, the simulator and the CLI all ask
``match_post`` with a ``MatchRequest`` and a tenant, and get a typed ``Match``. What differs
between them is decided here, once, from the request, the occasion and the settings:

- **the configuration**: the request's, else ``FACTSIEVE_RETRIEVAL_CONFIG`` for a live answer
  and ``FACTSIEVE_JOB_RETRIEVAL_CONFIG`` for a job (workers have time: ``hybrid-rerank``, the
  best ranking, by default; ``factsieve`` when a deployment lacks it);
- **reranking**: where the configuration has a reranker, unless the request says ``rerank:
  false`` (the API's ``rerank`` defaults to false: a caller opts in to the live cost);
- **the budget**: the request's, else ``FACTSIEVE_RERANK_BUDGET_MS`` live and
  ``FACTSIEVE_JOB_RERANK_BUDGET_MS`` in a job (none by default: every pair of the head);
- **the reranker**: the tenant's champion (``plugin.learn.reranker_store``) where it has one;
- **learning**: the tenant's memory and recalibrated confidence (``plugin.learn.steps``), always.

So the same post, tenant and budget give the same answer on every path
(``tests/integration/test_match_paths.py`` runs them all and compares).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import Enum
from typing import TYPE_CHECKING, Any

from plugin.search.image_query import post_text
from plugin.search.request import MatchRequest
from plugin.search.result import Match
from plugin.search.versions import versions_of

if TYPE_CHECKING:
    from plugin.learn.steps import Learning
    from plugin.search.matcher import Matcher
    from plugin.settings import Settings


class Occasion(Enum):
    """Who waits for the answer: a person (``live``: the API, the CLI, the desk's search, the
    verification lookup, within the live budgets) or nobody (``job``: posts, rerank jobs)."""
    LIVE = "live"
    JOB = "job"


#: ``(config, rerank, tenant, explained, server_fusion) -> Matcher``: ``Services.matcher``
MatcherFor = Callable[..., "Matcher"]


@dataclass(frozen=True)
class MatchParts:
    """What a match needs, handed in (``Services.matching`` builds it)."""
    settings: Settings
    matcher: MatcherFor
    learning: Learning
    #: the configuration names this deployment has (``retrieval.load_configs``)
    configs: frozenset[str]


def config_for(settings: Settings, configs: frozenset[str], requested: str | None,
               occasion: Occasion) -> str | None:
    """The configuration a match runs (``None``: the packaged default): the requested one, else
    the occasion's setting when this deployment has that configuration."""
    if requested:
        return requested
    wanted = settings.job_retrieval_config if occasion is Occasion.JOB else settings.retrieval_config
    return wanted if wanted in configs else None


def budget_for(settings: Settings, request: MatchRequest, occasion: Occasion) -> float | None:
    """The cross-encoder's budget: the request's, else the occasion's setting."""
    if request.rerank_budget_ms is not None:
        return request.rerank_budget_ms
    return settings.rerank_budget_ms if occasion is Occasion.LIVE else settings.job_rerank_budget_ms


def match_post(parts: MatchParts, request: MatchRequest, tenant: str, *, config: str | None = None,
               occasion: Occasion = Occasion.LIVE, post: Mapping[str, Any] | None = None,
               explained: bool = False, server_fusion: bool | None = None) -> Match:
    """The fact-checks that address ``request``'s post, for ``tenant``: first stage, reranking
    where the configuration and the request allow (the tenant's champion reranker where it has
    one, within the occasion's budget), then the tenant's learning. ``post``: the post's own
    fields (its ``id`` lets memory tell a re-post from the post itself); ``explained``: keep the
    sub-queries' scores (the verification lookup reads the kNN score); ``server_fusion``: try
    the hybrid query first (``None``: as the settings say)."""
    name = config_for(parts.settings, parts.configs, config, occasion)
    request = replace(request, rerank_budget_ms=budget_for(parts.settings, request, occasion))
    matcher = parts.matcher(name, rerank=request.rerank is not False, tenant=tenant, explained=explained,
                            server_fusion=server_fusion)
    result = matcher.match(request)
    seen = {**(post or {}), "text": post_text(request.text, request.image)}
    return parts.learning.adjust(tenant, seen, Match.of(result, versions_of(matcher, result)))
