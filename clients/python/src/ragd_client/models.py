"""Typed views of ragd's JSON answers.

Each class is built from the answer's JSON with ``from_json`` and keeps the
JSON it was built from in ``raw`` (not compared, not shown in ``repr``), so a
field this package does not model yet is still reachable. Metadata values are
typed: strings, ints, floats, bools, and times (``{"$time": ...}`` on the
wire) as aware ``datetime``s in UTC.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ._errors import RagdWriteError
from ._values import decode_metadata, encode_metadata


def _raw() -> Any:
    return field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class Document:
    """A stored document (without its vector). ``metadata`` values are
    strings, numbers, booleans, datetimes, or lists of those."""

    id: str
    title: str = ""
    text: str = ""
    tenant: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    entities: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    updated_at: str | None = None
    raw: Mapping[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Document":
        return cls(
            id=d["id"],
            title=d.get("title", ""),
            text=d.get("text", ""),
            tenant=d.get("tenant", ""),
            metadata=decode_metadata(d.get("metadata")),
            entities=list(d.get("entities") or []),
            links=list(d.get("links") or []),
            updated_at=d.get("updated_at"),
            raw=d,
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id}
        for k in ("title", "text", "tenant"):
            if getattr(self, k):
                out[k] = getattr(self, k)
        if self.metadata:
            out["metadata"] = encode_metadata(self.metadata, f"documents[{self.id}].metadata", _type_error)
        if self.entities:
            out["entities"] = list(self.entities)
        if self.links:
            out["links"] = list(self.links)
        if self.updated_at:
            out["updated_at"] = self.updated_at
        return out


def _type_error(where: str, why: str) -> Exception:
    return TypeError(f"{where}: {why}")


@dataclass(frozen=True)
class SourceStatus:
    """One retrieval source's part in an answer.

    ``status`` is ``ok``, or why the source was left out: ``shed`` (at its
    concurrency limit), ``circuit_open``, ``timeout``, ``caller_deadline``
    (the query's own deadline), ``error``, ``disabled`` or ``skipped``.
    """

    status: str
    took_ms: float = 0.0
    returned: int = 0
    error: str = ""
    retry_in_ms: int = 0
    raw: Mapping[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "SourceStatus":
        return cls(
            status=d.get("status", ""),
            took_ms=float(d.get("took_ms", 0.0)),
            returned=int(d.get("returned", 0)),
            error=d.get("error", ""),
            retry_in_ms=int(d.get("retry_in_ms", 0)),
            raw=d,
        )


@dataclass(frozen=True)
class Hit:
    """One ranked result. ``explain`` (when asked for) maps each source to
    its contribution."""

    id: str
    rank: int
    score: float
    document: Document | None
    explain: Mapping[str, Any] = field(default_factory=dict)
    raw: Mapping[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Hit":
        doc = d.get("document")
        return cls(
            id=d["id"],
            rank=int(d.get("rank", 0)),
            score=float(d.get("score", 0.0)),
            document=Document.from_json(doc) if doc else None,
            explain=dict(d.get("explain") or {}),
            raw=d,
        )


@dataclass(frozen=True)
class QueryResult:
    """The answer to a query. ``partial`` means a source was left out (see
    ``sources`` for which and why); ``degraded`` that one was left out
    because it is unhealthy."""

    hits: list[Hit]
    sources: Mapping[str, SourceStatus]
    partial: bool
    degraded: bool
    total: int
    took_ms: float
    raw: Mapping[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "QueryResult":
        return cls(
            hits=[Hit.from_json(h) for h in d.get("hits") or []],
            sources={k: SourceStatus.from_json(v) for k, v in (d.get("sources") or {}).items()},
            partial=bool(d.get("partial", False)),
            degraded=bool(d.get("degraded", False)),
            total=int(d.get("total", 0)),
            took_ms=float(d.get("took_ms", 0.0)),
            raw=d,
        )

    @property
    def dropped(self) -> dict[str, SourceStatus]:
        """The sources that were asked and did not answer."""
        return {k: v for k, v in self.sources.items() if v.status not in ("ok", "disabled", "skipped")}

    def status_metadata(self) -> dict[str, Any]:
        """The answer-wide status the framework documents carry: whether
        it was partial or degraded, and each source's status."""
        return {
            "partial": self.partial,
            "degraded": self.degraded,
            "sources": {
                name: {"status": s.status, "error": s.error, "took_ms": s.took_ms, "returned": s.returned}
                for name, s in self.sources.items()
            },
        }


@dataclass(frozen=True)
class DocumentResult:
    """One document's outcome in a batch write or delete.

    ``status`` is ``ok``, ``failed`` (``code`` and ``error`` say why) or,
    for deletes, ``not_found``. ``stores`` says which derived stores have
    not applied the write yet.
    """

    id: str
    status: str
    code: str = ""
    error: str = ""
    version: int = 0
    unchanged: bool = False
    stores: Mapping[str, str] = field(default_factory=dict)
    raw: Mapping[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "DocumentResult":
        return cls(
            id=d.get("id", ""),
            status=d.get("status", ""),
            code=d.get("code", ""),
            error=d.get("error", ""),
            version=int(d.get("version", 0)),
            unchanged=bool(d.get("unchanged", False)),
            stores=dict(d.get("stores") or {}),
            raw=d,
        )

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class BatchResult:
    """The answer to a batch upsert or delete: one result per input, in
    input order."""

    results: list[DocumentResult]
    total: int
    ok: int
    failed: int
    not_found: int = 0
    pending: int = 0
    raw: Mapping[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "BatchResult":
        return cls(
            results=[DocumentResult.from_json(r) for r in d.get("results") or []],
            total=int(d.get("total", 0)),
            ok=int(d.get("ok", 0)),
            failed=int(d.get("failed", 0)),
            not_found=int(d.get("not_found", 0)),
            pending=int(d.get("pending", 0)),
            raw=d,
        )

    def raise_for_failures(self) -> "BatchResult":
        """Raise RagdWriteError when a document failed; else self."""
        if self.failed:
            raise RagdWriteError(self.results)
        return self


@dataclass(frozen=True)
class Health:
    """The component health roll-up: ``status`` is ``up``, ``degraded`` or
    ``down``; ``components`` maps each component to its status and
    detail."""

    status: str
    usable: list[str]
    components: Mapping[str, Mapping[str, Any]]
    raw: Mapping[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Health":
        return cls(
            status=d.get("status", ""),
            usable=list(d.get("usable") or []),
            components=dict(d.get("components") or {}),
            raw=d,
        )
