"""LangChain over ragd (extra ``ragd-client[langchain]``): a vector store
and a retriever.

    from ragd_client.langchain import RagdVectorStore
    store = RagdVectorStore.from_documents(docs, base_url="http://127.0.0.1:8080", api_key=key)
    retriever = store.as_retriever(search_kwargs={"k": 2, "filter": {"page": {"$gte": 3}}})
    docs = retriever.invoke("wing flutter")
    docs[0].metadata["ragd"]["partial"], docs[0].metadata["ragd"]["sources"]

ragd embeds documents and queries itself, on the server: the store takes
no ``Embeddings`` (``embedding`` must be None). Searches are ragd's hybrid
search (vector, keyword and graph, fused); a partial answer (a source
left out) still returns what the other sources found, and says so in each
document's ``metadata["ragd"]``.
"""

from __future__ import annotations

import math
import re
import uuid
from collections import Counter
from typing import Any, Iterable, Optional, Sequence

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LCDocument
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, PrivateAttr

from ._client import (DEFAULT_BASE_URL, DEFAULT_DEADLINE, DEFAULT_TIMEOUT, AsyncClient, Client, Connections, RetryPolicy,
                      id_batches)
from ._metadata import RAGD_KEY, hit_metadata, hit_status, hit_text
from .models import Document, QueryResult

__all__ = ["RagdRetriever", "RagdVectorStore"]

# How many documents one POST /v1/documents carries (the server's
# ingest.max_docs_per_request is 1000 as shipped).
DEFAULT_BATCH_SIZE = 256

_WORD = re.compile(r"\w+")


def _no_embedding(embedding: Any) -> None:
    if embedding is not None:
        raise ValueError("ragd embeds documents and queries on the server with its own model: "
                         "pass embedding=None (a client-side Embeddings would not match ragd's vectors)")


def _search_options(kwargs: dict[str, Any], where: str) -> dict[str, Any]:
    """The per-call options a search takes besides ``k`` and ``filter``:
    ``tenant``, ``sources``. Anything else is refused, so a misspelt
    option is not silently ignored."""
    allowed = {"tenant", "sources"}
    unknown = set(kwargs) - allowed
    if unknown:
        raise TypeError(f"{where}: unknown argument(s) {', '.join(sorted(unknown))}; "
                        f"ragd takes k, filter, {', '.join(sorted(allowed))}")
    return kwargs


def _relevance(score: float, res: QueryResult) -> float:
    """A hit's relevance in [0, 1], what ``similarity_score_threshold``
    compares: its fused score as a fraction of the highest fused score a
    hit of this answer could have, first in every list that returned
    candidates (RRF: the sum of those lists' weights over k + 1; score and
    dbsf fusion: the sum of their weights). Every hit has one on the same
    scale, whichever sources found it (a keyword-only hit too), and it
    keeps ragd's order; a hit first in every list has 1.0."""
    fusion = res.raw.get("fusion") if isinstance(res.raw.get("fusion"), dict) else {}
    weights = fusion.get("weights") if isinstance(fusion.get("weights"), dict) else {}
    best = sum(float(w) for name, w in weights.items()
               if isinstance(w, (int, float)) and w > 0 and name in res.sources and res.sources[name].returned > 0)
    if fusion.get("mode", "rrf") == "rrf":
        best /= (fusion.get("k") or 60) + 1
    if best <= 0 or not math.isfinite(score):
        return 0.0
    return min(1.0, max(0.0, score / best))


def _words(text: str) -> Counter[str]:
    return Counter(w.lower() for w in _WORD.findall(text))


def _cosine(a: Counter[str], b: Counter[str]) -> float:
    if not a or not b:
        return 0.0
    dot = sum(n * b[w] for w, n in a.items() if w in b)
    return dot / (math.sqrt(sum(n * n for n in a.values())) * math.sqrt(sum(n * n for n in b.values())))


def mmr_select(scores: Sequence[float], texts: Sequence[str], k: int, lambda_mult: float) -> list[int]:
    """Maximal marginal relevance over ragd's candidates, without their
    vectors (ragd does not return them): relevance is ragd's fused score
    scaled to [0, 1] by the best one, similarity between two candidates
    the cosine of their word counts. Returns the chosen indexes, best
    first."""
    if k <= 0 or not scores:
        return []
    top = max(scores)
    rel = [s / top if top > 0 else 0.0 for s in scores]
    bags = [_words(t) for t in texts]
    chosen: list[int] = []
    left = list(range(len(scores)))
    while left and len(chosen) < k:
        best, best_val = left[0], -math.inf
        for i in left:
            red = max((_cosine(bags[i], bags[j]) for j in chosen), default=0.0)
            val = lambda_mult * rel[i] - (1 - lambda_mult) * red
            if val > best_val:
                best, best_val = i, val
        chosen.append(best)
        left.remove(best)
    return chosen


class RagdVectorStore(VectorStore):
    """A LangChain ``VectorStore`` on a ragd server.

    Writes go to ``POST /v1/documents`` (a document's ``page_content`` is
    its text, its ``metadata`` its metadata: strings, numbers, booleans,
    dates and datetimes, or lists of those; ``None`` values are left out),
    and wait up to ``wait`` seconds until every derived store has applied
    them, so a search right after finds them. A document that fails raises
    ``RagdWriteError`` (the others are written). Searches are ragd's hybrid
    search; ``filter`` is ragd's filter language (``{"dept": "billing"}``,
    ``{"page": {"$gte": 3}}``, ``$and``/``$or``/``$not``, ...).

    Documents found by a search carry their own metadata and, under
    ``"ragd"``, the hit's ``score``, ``rank`` and ``title`` and the answer's
    ``partial``, ``degraded`` and per-source ``sources``.

    ``timeout`` bounds one HTTP attempt, ``deadline`` a whole call with its
    retries (seconds; None: unbounded), ``retry`` is a ``RetryPolicy``.
    ``client``/``async_client`` share existing clients instead.
    """

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        api_key: Optional[str] = None,
        *,
        tenant: Optional[str] = None,
        sources: Optional[dict[str, Any]] = None,
        wait: Optional[float] = 10.0,
        batch_size: int = DEFAULT_BATCH_SIZE,
        timeout: float = DEFAULT_TIMEOUT,
        deadline: Optional[float] = DEFAULT_DEADLINE,
        retry: Optional[RetryPolicy] = None,
        client: Optional[Client] = None,
        async_client: Optional[AsyncClient] = None,
        embedding: None = None,
    ) -> None:
        _no_embedding(embedding)
        if batch_size <= 0:
            raise ValueError("batch_size must be positive")
        self.tenant, self.sources, self.wait, self.batch_size = tenant, sources, wait, batch_size
        self._conn = Connections(base_url, api_key, client=client, async_client=async_client,
                                 timeout=timeout, deadline=deadline, retry=retry)

    # ---- building ---------------------------------------------------

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Optional[Embeddings] = None,
        metadatas: Optional[list[dict[str, Any]]] = None,
        *,
        ids: Optional[list[str]] = None,
        **kwargs: Any,
    ) -> "RagdVectorStore":
        """A store on the server ``kwargs`` name (``base_url``, ``api_key``,
        ...), with ``texts`` written to it."""
        _no_embedding(embedding)
        store = cls(**kwargs)
        store.add_texts(texts, metadatas, ids=ids)
        return store

    @classmethod
    def from_documents(cls, documents: list[LCDocument], embedding: Optional[Embeddings] = None,
                       **kwargs: Any) -> "RagdVectorStore":
        _no_embedding(embedding)
        store = cls(**kwargs)
        store.add_documents(documents)
        return store

    @classmethod
    async def afrom_texts(
        cls,
        texts: list[str],
        embedding: Optional[Embeddings] = None,
        metadatas: Optional[list[dict[str, Any]]] = None,
        *,
        ids: Optional[list[str]] = None,
        **kwargs: Any,
    ) -> "RagdVectorStore":
        _no_embedding(embedding)
        store = cls(**kwargs)
        await store.aadd_texts(texts, metadatas, ids=ids)
        return store

    @classmethod
    async def afrom_documents(cls, documents: list[LCDocument], embedding: Optional[Embeddings] = None,
                              **kwargs: Any) -> "RagdVectorStore":
        _no_embedding(embedding)
        store = cls(**kwargs)
        await store.aadd_documents(documents)
        return store

    # ---- writing ----------------------------------------------------

    def _docs(self, texts: Iterable[str], metadatas: Optional[list[dict[str, Any]]],
              ids: Optional[Sequence[Optional[str]]]) -> list[dict[str, Any]]:
        texts = list(texts)
        if metadatas is not None and len(metadatas) != len(texts):
            raise ValueError(f"{len(metadatas)} metadatas for {len(texts)} texts")
        if ids is not None and len(ids) != len(texts):
            raise ValueError(f"{len(ids)} ids for {len(texts)} texts")
        out = []
        for i, text in enumerate(texts):
            d: dict[str, Any] = {"id": (ids[i] if ids else None) or str(uuid.uuid4()), "text": text}
            if metadatas and metadatas[i]:
                d["metadata"] = metadatas[i]
            if self.tenant:
                d["tenant"] = self.tenant
            out.append(d)
        return out

    def _batches(self, docs: list[dict[str, Any]], size: Optional[int]) -> Iterable[list[dict[str, Any]]]:
        size = size or self.batch_size
        for i in range(0, len(docs), size):
            yield docs[i:i + size]

    def add_texts(self, texts: Iterable[str], metadatas: Optional[list[dict[str, Any]]] = None, *,
                  ids: Optional[list[str]] = None, batch_size: Optional[int] = None, **kwargs: Any) -> list[str]:
        """Write texts (new UUIDs as ids unless ``ids`` are given); returns
        the ids. Raises RagdWriteError when a document failed (the batches
        before it, and the batch's other documents, are written).
        ``batch_size`` overrides the store's for this call (LangChain's
        indexing API passes it)."""
        if kwargs:
            raise TypeError(f"add_texts: unknown argument(s) {', '.join(sorted(kwargs))}")
        docs = self._docs(texts, metadatas, ids)
        for batch in self._batches(docs, batch_size):
            self._conn.sync().upsert(batch, wait=self.wait).raise_for_failures()
        return [d["id"] for d in docs]

    async def aadd_texts(self, texts: Iterable[str], metadatas: Optional[list[dict[str, Any]]] = None, *,
                         ids: Optional[list[str]] = None, batch_size: Optional[int] = None,
                         **kwargs: Any) -> list[str]:
        if kwargs:
            raise TypeError(f"aadd_texts: unknown argument(s) {', '.join(sorted(kwargs))}")
        docs = self._docs(texts, metadatas, ids)
        for batch in self._batches(docs, batch_size):
            (await self._conn.aio().upsert(batch, wait=self.wait)).raise_for_failures()
        return [d["id"] for d in docs]

    def add_documents(self, documents: list[LCDocument], **kwargs: Any) -> list[str]:
        """Write LangChain documents; a document's ``id`` is its ragd id
        (``ids=`` overrides them, a new UUID when neither is set)."""
        ids = kwargs.pop("ids", None) or [d.id for d in documents]
        return self.add_texts([d.page_content for d in documents], [d.metadata for d in documents], ids=ids, **kwargs)

    async def aadd_documents(self, documents: list[LCDocument], **kwargs: Any) -> list[str]:
        ids = kwargs.pop("ids", None) or [d.id for d in documents]
        return await self.aadd_texts([d.page_content for d in documents], [d.metadata for d in documents], ids=ids,
                                     **kwargs)

    def delete(self, ids: Optional[list[str]] = None, **kwargs: Any) -> Optional[bool]:
        """Delete documents by id; ids that do not exist count as deleted.
        ragd has no "delete everything": ``ids=None`` is refused."""
        ok = True
        for batch in id_batches(self._delete_ids(ids, kwargs), self.batch_size):
            res = self._conn.sync().delete(batch, wait=self.wait)
            ok = ok and all(r.status in ("ok", "not_found") for r in res.results)
        return ok

    async def adelete(self, ids: Optional[list[str]] = None, **kwargs: Any) -> Optional[bool]:
        ok = True
        for batch in id_batches(self._delete_ids(ids, kwargs), self.batch_size):
            res = await self._conn.aio().delete(batch, wait=self.wait)
            ok = ok and all(r.status in ("ok", "not_found") for r in res.results)
        return ok

    @staticmethod
    def _delete_ids(ids: Optional[list[str]], kwargs: dict[str, Any]) -> list[str]:
        if kwargs:
            raise TypeError(f"delete: unknown argument(s) {', '.join(sorted(kwargs))}")
        if ids is None:
            raise ValueError("delete: ragd deletes by id; ids=None (delete everything) is not supported")
        return list(ids)

    # ---- reading ----------------------------------------------------

    @staticmethod
    def _stored(d: Document) -> LCDocument:
        return LCDocument(page_content=d.text or d.title, metadata=dict(d.metadata), id=d.id)

    def get_by_ids(self, ids: Sequence[str], /) -> list[LCDocument]:
        """The stored documents of ``ids`` with exactly their own metadata;
        missing ids are left out."""
        return [self._stored(d) for d in self._conn.found(ids)]

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[LCDocument]:
        return [self._stored(d) for d in await self._conn.afound(ids)]

    # ---- searching --------------------------------------------------

    def _query_args(self, k: int, filter: Optional[dict[str, Any]], kwargs: dict[str, Any], where: str,
                    explain: bool = False) -> dict[str, Any]:
        opts = _search_options(kwargs, where)
        return {"limit": k, "filter": filter, "tenant": opts.get("tenant", self.tenant),
                "sources": opts.get("sources", self.sources), "explain": explain}

    @staticmethod
    def _found(res: QueryResult) -> list[tuple[LCDocument, float]]:
        out = []
        for h in res.hits:
            meta = dict(h.document.metadata) if h.document else {}
            meta[RAGD_KEY] = hit_status(h, res)
            out.append((LCDocument(page_content=hit_text(h), metadata=meta, id=h.id), h.score))
        return out

    def similarity_search_with_score(self, query: str, k: int = 4, filter: Optional[dict[str, Any]] = None,
                                     **kwargs: Any) -> list[tuple[LCDocument, float]]:
        """The top ``k`` documents with ragd's fused score (higher is
        better; its scale depends on the fusion mode)."""
        args = self._query_args(k, filter, kwargs, "similarity_search_with_score")
        return self._found(self._conn.sync().query(query, **args))

    async def asimilarity_search_with_score(self, query: str, k: int = 4, filter: Optional[dict[str, Any]] = None,
                                            **kwargs: Any) -> list[tuple[LCDocument, float]]:
        args = self._query_args(k, filter, kwargs, "asimilarity_search_with_score")
        return self._found(await self._conn.aio().query(query, **args))

    def similarity_search(self, query: str, k: int = 4, filter: Optional[dict[str, Any]] = None,
                          **kwargs: Any) -> list[LCDocument]:
        return [d for d, _ in self.similarity_search_with_score(query, k, filter, **kwargs)]

    async def asimilarity_search(self, query: str, k: int = 4, filter: Optional[dict[str, Any]] = None,
                                 **kwargs: Any) -> list[LCDocument]:
        return [d for d, _ in await self.asimilarity_search_with_score(query, k, filter, **kwargs)]

    def similarity_search_by_vector(self, embedding: list[float], k: int = 4,
                                    filter: Optional[dict[str, Any]] = None, **kwargs: Any) -> list[LCDocument]:
        """Search by a vector of ragd's embedding model (its dimension)."""
        args = self._query_args(k, filter, kwargs, "similarity_search_by_vector")
        return [d for d, _ in self._found(self._conn.sync().query(vector=embedding, **args))]

    async def asimilarity_search_by_vector(self, embedding: list[float], k: int = 4,
                                           filter: Optional[dict[str, Any]] = None, **kwargs: Any) -> list[LCDocument]:
        args = self._query_args(k, filter, kwargs, "asimilarity_search_by_vector")
        return [d for d, _ in self._found(await self._conn.aio().query(vector=embedding, **args))]

    @classmethod
    def _relevant(cls, res: QueryResult) -> list[tuple[LCDocument, float]]:
        return [(d, _relevance(score, res)) for d, score in cls._found(res)]

    def _similarity_search_with_relevance_scores(self, query: str, k: int = 4, **kwargs: Any
                                                 ) -> list[tuple[LCDocument, float]]:
        """Relevance in [0, 1] for ``similarity_score_threshold``: each
        hit's fused score over the best a hit of the answer could have
        (see ``_relevance``), so hits any source found compare alike."""
        filter = kwargs.pop("filter", None)
        args = self._query_args(k, filter, kwargs, "similarity_search_with_relevance_scores")
        return self._relevant(self._conn.sync().query(query, **args))

    async def _asimilarity_search_with_relevance_scores(self, query: str, k: int = 4, **kwargs: Any
                                                        ) -> list[tuple[LCDocument, float]]:
        filter = kwargs.pop("filter", None)
        args = self._query_args(k, filter, kwargs, "asimilarity_search_with_relevance_scores")
        return self._relevant(await self._conn.aio().query(query, **args))

    @classmethod
    def _mmr(cls, res: QueryResult, k: int, lambda_mult: float) -> list[LCDocument]:
        found = cls._found(res)
        pick = mmr_select([s for _, s in found], [d.page_content for d, _ in found], k, lambda_mult)
        return [found[i][0] for i in pick]

    def max_marginal_relevance_search(self, query: str, k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5,
                                      filter: Optional[dict[str, Any]] = None, **kwargs: Any) -> list[LCDocument]:
        """``k`` of ragd's top ``fetch_k`` hits, chosen for relevance and
        diversity (``mmr_select``: ragd returns no vectors, so diversity
        is measured on the documents' words)."""
        args = self._query_args(max(k, fetch_k), filter, kwargs, "max_marginal_relevance_search")
        return self._mmr(self._conn.sync().query(query, **args), k, lambda_mult)

    async def amax_marginal_relevance_search(self, query: str, k: int = 4, fetch_k: int = 20,
                                             lambda_mult: float = 0.5, filter: Optional[dict[str, Any]] = None,
                                             **kwargs: Any) -> list[LCDocument]:
        args = self._query_args(max(k, fetch_k), filter, kwargs, "amax_marginal_relevance_search")
        return self._mmr(await self._conn.aio().query(query, **args), k, lambda_mult)

    def close(self) -> None:
        """Close the sync client this store made."""
        self._conn.close()

    async def aclose(self) -> None:
        """Close the async client this store made for the running event loop."""
        await self._conn.aclose()


class RagdRetriever(BaseRetriever):
    """Retrieves the top ``k`` documents of a ragd hybrid query.

    Each document's metadata holds its own metadata and ragd's ``id``,
    ``title``, ``score``, ``rank``, ``partial``, ``degraded`` and per-source
    ``sources`` statuses: a partial answer still returns the documents the
    healthy sources found, and says so. ``invoke(query, k=..., filter=...,
    tenant=..., sources=...)`` overrides the retriever's settings for one
    call. Unknown arguments are refused.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    base_url: str = DEFAULT_BASE_URL
    api_key: Optional[str] = None
    k: int = 4
    tenant: Optional[str] = None
    filter: Optional[dict[str, Any]] = None
    sources: Optional[dict[str, Any]] = None
    timeout: float = DEFAULT_TIMEOUT
    deadline: Optional[float] = DEFAULT_DEADLINE
    retry: Optional[RetryPolicy] = None

    _conn: Optional[Connections] = PrivateAttr(default=None)

    def _connections(self) -> Connections:
        if self._conn is None:
            self._conn = Connections(self.base_url, self.api_key, timeout=self.timeout, deadline=self.deadline,
                                     retry=self.retry)
        return self._conn

    def _args(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        unknown = set(kwargs) - {"k", "filter", "tenant", "sources"}
        if unknown:
            raise TypeError(f"RagdRetriever: unknown argument(s) {', '.join(sorted(unknown))}")
        return {"limit": kwargs.get("k", self.k), "filter": kwargs.get("filter", self.filter),
                "tenant": kwargs.get("tenant", self.tenant), "sources": kwargs.get("sources", self.sources)}

    @staticmethod
    def _documents(res: QueryResult) -> list[LCDocument]:
        return [LCDocument(page_content=hit_text(h), metadata=hit_metadata(h, res), id=h.id) for h in res.hits]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> list[LCDocument]:
        return self._documents(self._connections().sync().query(query, **self._args(kwargs)))

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       **kwargs: Any) -> list[LCDocument]:
        return self._documents(await self._connections().aio().query(query, **self._args(kwargs)))
