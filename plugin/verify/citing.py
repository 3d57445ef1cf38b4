"""How a verification result's statements cite its evidence, for every strategy (the LLM's
statements, the cited strategy's quotes): the one place a statement's sources are checked and
the cited evidence items are listed (the result writes its justification from the statements:
``plugin.verify.result.justification``)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from plugin.verify.result import EvidenceCitation, Statement


def cited_statements(statements: Sequence[Any], n_evidence: int) -> tuple[list[Statement], int]:
    """The statements whose sources name real evidence items (numbers out of range dropped);
    a statement left citing nothing is dropped, and counted: every statement shown cites."""
    kept, dropped = [], 0
    for st in statements:
        sources = tuple(sorted({s for s in st.sources if 1 <= s <= n_evidence}))
        if sources and st.text.strip():
            kept.append(Statement(text=st.text.strip(), sources=sources))
        else:
            dropped += 1
    return kept, dropped


def citations(pairs: Sequence[Mapping[str, Any]], statements: Sequence[Statement]) -> tuple[EvidenceCitation, ...]:
    """Evidence items the justification cites (every answered pair when nothing is cited)."""
    cited = sorted({n for s in statements for n in s.sources}) or [
        i for i, p in enumerate(pairs, start=1) if p.get("source_url")]
    return tuple(EvidenceCitation(n=n, url=pairs[n - 1].get("source_url"), passage_id=pairs[n - 1].get("passage_id"),
                                  question=pairs[n - 1]["question"]) for n in cited if n <= len(pairs))
