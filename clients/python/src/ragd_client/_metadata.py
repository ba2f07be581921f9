"""The metadata a framework document gets from a ragd hit: one home for
the LangChain and LlamaIndex retrievers and vector stores."""

from __future__ import annotations

from typing import Any

from .models import Hit, QueryResult

# The keys the retrievers add to a document's own metadata that describe
# the answer, not the document (everything but ``title``): the LlamaIndex
# retriever keeps them out of what the LLM and the embedder see.
STATUS_KEYS = ("id", "score", "rank", "partial", "degraded", "sources", "explain")

# The key under which the vector stores put ragd's status, so that a
# document's own metadata comes back exactly as it was stored.
RAGD_KEY = "ragd"


def hit_metadata(hit: Hit, res: QueryResult) -> dict[str, Any]:
    """The document's own metadata, then ragd's: ``id``, ``title``,
    ``score``, ``rank``, and the answer's ``partial``, ``degraded`` and
    per-source ``sources`` (status, error, took_ms, returned), so a caller
    sees that an answer was partial and which source was left out."""
    meta: dict[str, Any] = dict(hit.document.metadata) if hit.document else {}
    meta.update(id=hit.id, title=hit.document.title if hit.document else "", score=hit.score, rank=hit.rank)
    meta.update(res.status_metadata())
    if hit.explain:
        meta["explain"] = dict(hit.explain)
    return meta


def hit_status(hit: Hit, res: QueryResult) -> dict[str, Any]:
    """ragd's part of a vector store's document, under ``RAGD_KEY``: the
    hit's ``score``, ``rank`` and ``title``, and the answer's status."""
    out: dict[str, Any] = {"score": hit.score, "rank": hit.rank}
    if hit.document is not None and hit.document.title:
        out["title"] = hit.document.title
    out.update(res.status_metadata())
    return out


def hit_text(hit: Hit) -> str:
    """The text a framework document carries: the hit's text (its title
    when the document has no text)."""
    if hit.document is None:
        return ""
    return hit.document.text or hit.document.title
