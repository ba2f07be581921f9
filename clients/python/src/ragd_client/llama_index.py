"""A LlamaIndex retriever over ragd (extra ``ragd-client[llama-index]``).

    from ragd_client.llama_index import RagdRetriever
    retriever = RagdRetriever(base_url="http://127.0.0.1:8080", k=4)
    nodes = retriever.retrieve("wing flutter")
    nodes[0].node.metadata["partial"], nodes[0].score
"""

from __future__ import annotations

from typing import Any, Optional

from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from ._client import AsyncClient, Client
from ._metadata import hit_metadata, hit_text
from .models import QueryResult


class RagdRetriever(BaseRetriever):
    """Retrieves the top ``k`` nodes of a ragd hybrid query, with the same
    arguments as the LangChain retriever. Each node's metadata holds its
    document's metadata and ragd's ``id``, ``title``, ``score``, ``rank``,
    ``partial``, ``degraded`` and per-source ``sources`` statuses; the
    node's score is ragd's fused score."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8080",
        api_key: Optional[str] = None,
        k: int = 4,
        tenant: Optional[str] = None,
        filter: Optional[dict[str, list[str]]] = None,
        sources: Optional[dict[str, Any]] = None,
        timeout: float = 60.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.base_url, self.api_key, self.k, self.timeout = base_url, api_key, k, timeout
        self.tenant, self.filter, self.sources = tenant, filter, sources
        self._client: Optional[Client] = None

    def _nodes(self, res: QueryResult) -> list[NodeWithScore]:
        return [
            NodeWithScore(node=TextNode(id_=h.id, text=hit_text(h), metadata=hit_metadata(h, res)), score=h.score)
            for h in res.hits
        ]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if self._client is None:
            self._client = Client(self.base_url, self.api_key, timeout=self.timeout)
        res = self._client.query(query_bundle.query_str, limit=self.k, tenant=self.tenant, filter=self.filter, sources=self.sources)
        return self._nodes(res)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        async with AsyncClient(self.base_url, self.api_key, timeout=self.timeout) as c:
            res = await c.query(query_bundle.query_str, limit=self.k, tenant=self.tenant, filter=self.filter, sources=self.sources)
        return self._nodes(res)
