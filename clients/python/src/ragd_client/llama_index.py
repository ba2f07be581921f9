"""LlamaIndex over ragd (extra ``ragd-client[llama-index]``): a vector
store and a retriever.

    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.vector_stores import MetadataFilter, MetadataFilters
    from ragd_client.llama_index import RagdVectorStore, ServerSideEmbedding

    store = RagdVectorStore(base_url="http://127.0.0.1:8080", api_key=key)
    index = VectorStoreIndex.from_documents(
        docs, storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=ServerSideEmbedding())
    nodes = index.as_retriever(similarity_top_k=2, filters=MetadataFilters(
        filters=[MetadataFilter(key="page", operator=">=", value=3)])).retrieve("wing flutter")

ragd embeds nodes and queries itself, on the server, so LlamaIndex need not:
``ServerSideEmbedding`` tells it there is nothing to compute, and the store
asks LlamaIndex for no query embedding (``is_embedding_query`` is False).
"""

from __future__ import annotations

from typing import Any, Iterable, List, Optional, Sequence

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks import CallbackManager
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import BaseNode, MetadataMode, NodeRelationship, NodeWithScore, QueryBundle, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)
from pydantic import ConfigDict, Field, PrivateAttr

from ._client import (DEFAULT_BASE_URL, DEFAULT_DEADLINE, DEFAULT_TIMEOUT, AsyncClient, Client, Connections, RetryPolicy,
                      id_batches)
from ._errors import RagdAPIError, RagdError, RagdFilterError
from ._metadata import RAGD_KEY, STATUS_KEYS, hit_metadata, hit_status, hit_text
from .models import Document, QueryResult

__all__ = ["RagdRetriever", "RagdVectorStore", "ServerSideEmbedding", "filters_to_wire"]

# The metadata key that holds a node's source document (its ref_doc_id),
# so that delete(ref_doc_id) finds every node of a document.
REF_DOC_KEY = "ref_doc_id"

# The page size of the searches that find nodes by filter (ragd's largest
# limit as shipped is 100), and the fused window they ask for (ragd's
# largest max_window as shipped): ragd has no listing endpoint, so one
# search (pages of one fused window) is all get_nodes can read.
_PAGE = 100
_WINDOW = 1000
# How long a delete by filter waits for each round to be applied when the
# store's own wait is off: the next round's search must not find it again.
_ROUND_WAIT = 10.0

_RANGE = {
    FilterOperator.GT: "$gt",
    FilterOperator.GTE: "$gte",
    FilterOperator.LT: "$lt",
    FilterOperator.LTE: "$lte",
}


def _one(f: MetadataFilter, where: str) -> dict[str, Any]:
    op, key, v = f.operator, f.key, f.value
    at = f"{where}.{key}"
    if op == FilterOperator.EQ:
        return {key: {"$eq": v}}
    if op == FilterOperator.NE:
        return {key: {"$ne": v}}
    if op in _RANGE:
        return {key: {_RANGE[op]: v}}
    if op in (FilterOperator.IN, FilterOperator.ANY):
        return {key: {"$in": list(v) if isinstance(v, list) else [v]}}
    if op == FilterOperator.NIN:
        return {key: {"$nin": list(v) if isinstance(v, list) else [v]}}
    if op == FilterOperator.ALL:
        vals = list(v) if isinstance(v, list) else [v]
        return {"$and": [{key: {"$eq": x}} for x in vals]}
    if op == FilterOperator.CONTAINS:
        return {key: {"$eq": v}}  # a list-valued key matches when any item does
    raise RagdFilterError(at, f"operator {op.value!r} has no equivalent in ragd's filter language")


def filters_to_wire(filters: Optional[MetadataFilters], where: str = "filters") -> Optional[dict[str, Any]]:
    """LlamaIndex ``MetadataFilters`` in ragd's filter language (the client
    then writes string equalities in the form every ragd release reads):
    ``==``, ``!=``, ``>``, ``>=``, ``<``, ``<=``, ``in``, ``nin``,
    ``any`` (``$in``), ``all`` (``$and`` of ``$eq``), ``contains`` (``$eq``:
    a list-valued key matches when any item does); conditions ``and``,
    ``or`` and ``not`` (none of the filters holds). ``text_match`` and
    ``is_empty`` are refused. A range operand that is a string is read
    by ragd as an RFC 3339 time."""
    if filters is None or not filters.filters:
        return None
    parts = []
    for i, f in enumerate(filters.filters):
        at = f"{where}[{i}]"
        if isinstance(f, MetadataFilters):
            sub = filters_to_wire(f, at)
            if sub:
                parts.append(sub)
        else:
            parts.append(_one(f, at))
    cond = filters.condition or FilterCondition.AND
    if cond == FilterCondition.AND:
        return parts[0] if len(parts) == 1 else {"$and": parts}
    if cond == FilterCondition.OR:
        return parts[0] if len(parts) == 1 else {"$or": parts}
    return {"$not": parts[0] if len(parts) == 1 else {"$or": parts}}


class ServerSideEmbedding(BaseEmbedding):
    """The embedding model of an index on ``RagdVectorStore``: ragd embeds
    text on the server, so there is nothing to compute here. It returns an
    empty vector, which the store never sends."""

    model_name: str = "ragd-server-side"

    def _get_query_embedding(self, query: str) -> List[float]:
        return []

    async def _aget_query_embedding(self, query: str) -> List[float]:
        return []

    def _get_text_embedding(self, text: str) -> List[float]:
        return []


def _status_excluded() -> dict[str, Any]:
    return {"excluded_llm_metadata_keys": list(STATUS_KEYS), "excluded_embed_metadata_keys": list(STATUS_KEYS)}


class RagdVectorStore(BasePydanticVectorStore):
    """A LlamaIndex vector store on a ragd server.

    ``add`` writes each node as a ragd document: its id, its text, its
    metadata (strings, numbers, booleans, dates, datetimes, or lists of
    those) and its source document's id under ``ref_doc_id``, then waits
    up to ``wait`` seconds until every derived store has applied it. A node
    that fails raises ``RagdWriteError``. ``query`` runs ragd's hybrid search
    with the query's text, ``similarity_top_k`` and ``filters``
    (``filters_to_wire``); ``doc_ids`` become a ``ref_doc_id`` filter,
    ``node_ids`` narrow the hits after the search, and ``mode``/``alpha``
    choose the sources (``_sources``). Found nodes carry ragd's
    status under ``metadata["ragd"]`` (score, rank, partial, degraded,
    sources), kept out of what the LLM and the embedder see.

    ``delete`` and ``delete_nodes(filters=...)`` delete every node they
    select, however many, in rounds of one search page; ``get_nodes(filters=...)``
    reads the pages of one search and raises ``RagdError`` when more nodes
    match than its window holds (ragd has no listing endpoint).

    ``send_embeddings=True`` sends node and query embeddings to ragd as
    vectors; only for an embedding model that is ragd's own.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    stores_text: bool = True
    is_embedding_query: bool = False
    flat_metadata: bool = False

    base_url: str = DEFAULT_BASE_URL
    api_key: Optional[str] = Field(default=None, exclude=True, repr=False)
    tenant: Optional[str] = None
    sources: Optional[dict[str, Any]] = None
    wait: Optional[float] = 10.0
    batch_size: int = Field(default=256, gt=0)
    timeout: float = DEFAULT_TIMEOUT
    deadline: Optional[float] = DEFAULT_DEADLINE
    retry: Optional[RetryPolicy] = None
    send_embeddings: bool = False

    _conn: Connections = PrivateAttr()
    _window: Optional[int] = PrivateAttr(default=_WINDOW)

    def __init__(self, *, client: Optional[Client] = None, async_client: Optional[AsyncClient] = None,
                 **data: Any) -> None:
        super().__init__(**data)
        self._conn = Connections(self.base_url, self.api_key, client=client, async_client=async_client,
                                 timeout=self.timeout, deadline=self.deadline, retry=self.retry)

    @classmethod
    def class_name(cls) -> str:
        return "RagdVectorStore"

    @property
    def client(self) -> Client:
        return self._conn.sync()

    # ---- writing ----------------------------------------------------

    def _doc(self, node: BaseNode) -> dict[str, Any]:
        d: dict[str, Any] = {"id": node.node_id, "text": node.get_content(metadata_mode=MetadataMode.NONE)}
        meta = dict(node.metadata)
        if node.ref_doc_id:
            meta[REF_DOC_KEY] = node.ref_doc_id
        if meta:
            d["metadata"] = meta
        if self.tenant:
            d["tenant"] = self.tenant
        if self.send_embeddings and node.embedding:
            d["vector"] = list(node.embedding)
        return d

    def _batches(self, nodes: Sequence[BaseNode]) -> Iterable[list[dict[str, Any]]]:
        docs = [self._doc(n) for n in nodes]
        for i in range(0, len(docs), self.batch_size):
            yield docs[i:i + self.batch_size]

    def add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> List[str]:
        for batch in self._batches(nodes):
            self._conn.sync().upsert(batch, wait=self.wait).raise_for_failures()
        return [n.node_id for n in nodes]

    async def async_add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> List[str]:
        for batch in self._batches(nodes):
            (await self._conn.aio().upsert(batch, wait=self.wait)).raise_for_failures()
        return [n.node_id for n in nodes]

    def _page(self, wire: dict[str, Any], q: str, offset: int) -> dict[str, Any]:
        extra = {"window": self._window} if self._window else None
        return {"text": q, "limit": _PAGE, "offset": offset, "filter": wire, "tenant": self.tenant, "extra": extra}

    def _narrower(self, e: RagdAPIError) -> bool:
        """Whether ``e`` refuses the window (a server whose max_window is
        below _WINDOW): the store then asks for the server's default."""
        if e.code == "invalid_window" and self._window:
            self._window = None
            return True
        return False

    def _search(self, wire: dict[str, Any], q: str, offset: int) -> QueryResult:
        while True:
            try:
                return self._conn.sync().query(**self._page(wire, q, offset))
            except RagdAPIError as e:
                if not self._narrower(e):
                    raise

    async def _asearch(self, wire: dict[str, Any], q: str, offset: int) -> QueryResult:
        while True:
            try:
                return await self._conn.aio().query(**self._page(wire, q, offset))
            except RagdAPIError as e:
                if not self._narrower(e):
                    raise

    def _matching(self, wire: dict[str, Any], q: str) -> list[str]:
        """The ids of every node ``wire`` selects: the pages of one search
        (see ``_listed``)."""
        ids: list[str] = []
        while True:
            res = self._search(wire, q, len(ids))
            if _listed(res, ids):
                return ids

    async def _amatching(self, wire: dict[str, Any], q: str) -> list[str]:
        ids: list[str] = []
        while True:
            res = await self._asearch(wire, q, len(ids))
            if _listed(res, ids):
                return ids

    def _delete_matching(self, wire: dict[str, Any], q: str) -> None:
        """Delete every node ``wire`` selects, however many: in rounds of
        one page, each deleted and applied before the next search, until a
        search finds none (see ``_deleting``)."""
        gone: set[str] = set()
        while True:
            res = self._search(wire, q, 0)
            ids = _deleting(res, gone)
            if not ids:
                return
            self._conn.sync().delete(ids, wait=self.wait or _ROUND_WAIT).raise_for_failures()

    async def _adelete_matching(self, wire: dict[str, Any], q: str) -> None:
        gone: set[str] = set()
        while True:
            res = await self._asearch(wire, q, 0)
            ids = _deleting(res, gone)
            if not ids:
                return
            (await self._conn.aio().delete(ids, wait=self.wait or _ROUND_WAIT)).raise_for_failures()

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Delete every node of the document ``ref_doc_id``."""
        self._delete_matching({REF_DOC_KEY: ref_doc_id}, ref_doc_id)

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        await self._adelete_matching({REF_DOC_KEY: ref_doc_id}, ref_doc_id)

    def delete_nodes(self, node_ids: Optional[List[str]] = None, filters: Optional[MetadataFilters] = None,
                     **delete_kwargs: Any) -> None:
        """Delete nodes by id, or (with ``filters`` alone) every node they
        select, however many."""
        wire = _selection(node_ids, filters)
        if wire is not None:
            self._delete_matching(wire, "*")
            return
        for batch in id_batches(list(node_ids or []), self.batch_size):
            self._conn.sync().delete(batch, wait=self.wait)

    async def adelete_nodes(self, node_ids: Optional[List[str]] = None, filters: Optional[MetadataFilters] = None,
                            **delete_kwargs: Any) -> None:
        wire = _selection(node_ids, filters)
        if wire is not None:
            await self._adelete_matching(wire, "*")
            return
        for batch in id_batches(list(node_ids or []), self.batch_size):
            await self._conn.aio().delete(batch, wait=self.wait)

    def _select(self, node_ids: Optional[List[str]], filters: Optional[MetadataFilters]) -> list[str]:
        wire = _selection(node_ids, filters)
        return list(node_ids or []) if wire is None else self._matching(wire, "*")

    async def _aselect(self, node_ids: Optional[List[str]], filters: Optional[MetadataFilters]) -> list[str]:
        wire = _selection(node_ids, filters)
        return list(node_ids or []) if wire is None else await self._amatching(wire, "*")

    # ---- reading ----------------------------------------------------

    @staticmethod
    def _stored(d: Document) -> TextNode:
        meta = dict(d.metadata)
        ref = meta.pop(REF_DOC_KEY, None)
        rel = {NodeRelationship.SOURCE: RelatedNodeInfo(node_id=ref)} if isinstance(ref, str) else {}
        return TextNode(id_=d.id, text=d.text or d.title, metadata=meta, relationships=rel)

    def get_nodes(self, node_ids: Optional[List[str]] = None,
                  filters: Optional[MetadataFilters] = None) -> List[BaseNode]:
        """Nodes by id (missing ids are left out), or every node ``filters`` select."""
        return [self._stored(d) for d in self._conn.found(self._select(node_ids, filters))]

    async def aget_nodes(self, node_ids: Optional[List[str]] = None,
                         filters: Optional[MetadataFilters] = None) -> List[BaseNode]:
        return [self._stored(d) for d in await self._conn.afound(await self._aselect(node_ids, filters))]

    # ---- searching --------------------------------------------------

    def _sources(self, query: VectorStoreQuery) -> Optional[dict[str, Any]]:
        """The query's mode and alpha as ragd's per-source options:
        ``text_search``/``sparse`` leave the vector source out, ``alpha``
        (0 keyword only, 1 vector only) weighs the two; ``default``,
        ``hybrid`` and ``semantic_hybrid`` are ragd's hybrid search. Other
        modes (``mmr``, ``svm``, ...) are refused, not ignored."""
        mode = query.mode or VectorStoreQueryMode.DEFAULT
        sources: dict[str, Any] = {k: dict(v) for k, v in (self.sources or {}).items()}
        if mode in (VectorStoreQueryMode.TEXT_SEARCH, VectorStoreQueryMode.SPARSE):
            sources.setdefault("vector", {})["enabled"] = False
        elif mode not in (VectorStoreQueryMode.DEFAULT, VectorStoreQueryMode.HYBRID,
                          VectorStoreQueryMode.SEMANTIC_HYBRID):
            raise ValueError(f"RagdVectorStore: query mode {mode.value!r} is not supported; "
                             "ragd searches in default/hybrid mode, or text_search/sparse (keyword only)")
        if query.alpha is not None:
            if not 0.0 <= query.alpha <= 1.0:
                raise ValueError(f"alpha {query.alpha} is not between 0 and 1")
            sources.setdefault("vector", {})["weight"] = query.alpha
            sources.setdefault("keyword", {})["weight"] = 1.0 - query.alpha
        return sources or None

    def _query_args(self, query: VectorStoreQuery) -> dict[str, Any]:
        wire = filters_to_wire(query.filters)
        if query.doc_ids:
            by_doc = {REF_DOC_KEY: {"$in": list(query.doc_ids)}}
            wire = {"$and": [wire, by_doc]} if wire else by_doc
        vector = query.query_embedding if self.send_embeddings and query.query_embedding else None
        if query.query_str is None and vector is None:
            raise ValueError("RagdVectorStore searches by text: the query has no query_str")
        return {"text": query.query_str, "vector": vector, "limit": query.similarity_top_k, "filter": wire,
                "tenant": self.tenant, "sources": self._sources(query)}

    def _result(self, res: QueryResult, query: VectorStoreQuery) -> VectorStoreQueryResult:
        keep = set(query.node_ids) if query.node_ids else None
        nodes, scores, ids = [], [], []
        for h in res.hits:
            if keep is not None and h.id not in keep:
                continue
            node = self._stored(h.document) if h.document else TextNode(id_=h.id)
            node.text = hit_text(h)
            node.metadata[RAGD_KEY] = hit_status(h, res)
            node.excluded_llm_metadata_keys = [RAGD_KEY]
            node.excluded_embed_metadata_keys = [RAGD_KEY]
            nodes.append(node)
            scores.append(h.score)
            ids.append(h.id)
        return VectorStoreQueryResult(nodes=nodes, similarities=scores, ids=ids)

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        return self._result(self._conn.sync().query(**self._query_args(query)), query)

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        return self._result(await self._conn.aio().query(**self._query_args(query)), query)

    def clear(self) -> None:
        raise NotImplementedError("ragd has no 'delete everything': delete by ref_doc_id, node ids or filters")

    def close(self) -> None:
        """Close the sync client this store made."""
        self._conn.close()

    async def aclose(self) -> None:
        """Close the async client this store made for the running event loop."""
        await self._conn.aclose()


def _selection(node_ids: Optional[List[str]], filters: Optional[MetadataFilters]) -> Optional[dict[str, Any]]:
    """The filter that selects nodes, or None when ``node_ids`` name them."""
    if node_ids is not None:
        if filters is not None and filters.filters:
            raise ValueError("pass node_ids or filters, not both")
        return None
    wire = filters_to_wire(filters)
    if not wire:
        raise ValueError("ragd selects nodes by id or by filter; neither was given")
    return wire


def _complete(res: QueryResult) -> None:
    """A search that selects nodes to delete or read must not miss any: a
    partial answer (a source left out) is an error here."""
    if res.partial:
        raise RagdError(f"ragd's answer was partial ({', '.join(sorted(res.dropped))} left out): "
                        "cannot be sure every matching node was found; try again")


def _cut(res: QueryResult) -> bool:
    """Whether a source returned as many candidates as the fused window
    holds, so that more nodes may match than the search could show."""
    window = (res.raw.get("fusion") or {}).get("window") or _WINDOW
    return any(s.status == "ok" and s.returned >= window for s in res.sources.values())


def _listed(res: QueryResult, ids: list[str]) -> bool:
    """Adds a page's ids to ``ids``; True once the search has no more.
    ragd has no listing endpoint: when more nodes match than one search's
    window holds, reading them all is refused rather than cut short."""
    _complete(res)
    ids.extend(h.id for h in res.hits)
    if len(res.hits) == _PAGE and len(ids) < res.total:
        return False
    if _cut(res):
        raise RagdError(f"{len(ids)} or more nodes match the filters, as many as one ragd search can list "
                        "(ragd has no listing endpoint), so some may be left out: narrow the filters, "
                        "or select nodes by id")
    return True


def _deleting(res: QueryResult, gone: set[str]) -> list[str]:
    """The ids of a delete round's page, noted in ``gone``; a node found
    again after its delete was applied is an error, not a loop."""
    _complete(res)
    ids = [h.id for h in res.hits]
    again = gone.intersection(ids)
    if again:
        raise RagdError(f"{len(again)} deleted nodes are still found (e.g. {min(again)!r}): "
                        "their deletes were not applied; try again")
    gone.update(ids)
    return ids


class RagdRetriever(BaseRetriever):
    """Retrieves the top ``k`` nodes of a ragd hybrid query, with the same
    arguments as the LangChain retriever. Each node's metadata holds its
    document's metadata and ragd's ``id``, ``title``, ``score``, ``rank``,
    ``partial``, ``degraded`` and per-source ``sources`` statuses, which
    are listed in the node's ``excluded_llm_metadata_keys`` and
    ``excluded_embed_metadata_keys`` so they stay out of prompts; the
    node's score is ragd's fused score. ``filter`` is ragd's filter
    language (a dict) or LlamaIndex ``MetadataFilters``."""

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        api_key: Optional[str] = None,
        k: int = 4,
        tenant: Optional[str] = None,
        filter: Optional[dict[str, Any] | MetadataFilters] = None,
        sources: Optional[dict[str, Any]] = None,
        timeout: float = DEFAULT_TIMEOUT,
        deadline: Optional[float] = DEFAULT_DEADLINE,
        retry: Optional[RetryPolicy] = None,
        *,
        callback_manager: Optional[CallbackManager] = None,
        verbose: bool = False,
    ) -> None:
        super().__init__(callback_manager=callback_manager, verbose=verbose)
        self.k, self.tenant, self.sources = k, tenant, sources
        self.filter = filters_to_wire(filter) if isinstance(filter, MetadataFilters) else filter
        self._conn = Connections(base_url, api_key, timeout=timeout, deadline=deadline, retry=retry)

    def _nodes(self, res: QueryResult) -> list[NodeWithScore]:
        return [
            NodeWithScore(node=TextNode(id_=h.id, text=hit_text(h), metadata=hit_metadata(h, res), **_status_excluded()),
                          score=h.score)
            for h in res.hits
        ]

    def _args(self) -> dict[str, Any]:
        return {"limit": self.k, "tenant": self.tenant, "filter": self.filter, "sources": self.sources}

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._nodes(self._conn.sync().query(query_bundle.query_str, **self._args()))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._nodes(await self._conn.aio().query(query_bundle.query_str, **self._args()))
