"""The metadata a framework document gets from a ragd hit: one home for
the LangChain and LlamaIndex retrievers."""

from __future__ import annotations

from typing import Any

from .models import Hit, QueryResult


def hit_metadata(hit: Hit, res: QueryResult) -> dict[str, Any]:
    """The document's own metadata, then ragd's: ``id``, ``title``,
    ``score``, ``rank``, and the answer's ``partial``, ``degraded`` and
    per-source ``sources`` (status, error, took_ms, returned), so a caller
    sees that an answer was partial and which source was left out."""
    meta: dict[str, Any] = dict(hit.document.metadata) if hit.document else {}
    meta.update(
        id=hit.id,
        title=hit.document.title if hit.document else "",
        score=hit.score,
        rank=hit.rank,
        partial=res.partial,
        degraded=res.degraded,
        sources={
            name: {"status": s.status, "error": s.error, "took_ms": s.took_ms, "returned": s.returned}
            for name, s in res.sources.items()
        },
    )
    if hit.explain:
        meta["explain"] = dict(hit.explain)
    return meta


def hit_text(hit: Hit) -> str:
    """The text a framework document carries: the hit's text (its title
    when the document has no text)."""
    if hit.document is None:
        return ""
    return hit.document.text or hit.document.title
