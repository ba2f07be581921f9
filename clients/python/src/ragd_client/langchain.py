"""A LangChain retriever over ragd (extra ``ragd-client[langchain]``).

    from ragd_client.langchain import RagdRetriever
    retriever = RagdRetriever(base_url="http://127.0.0.1:8080", k=4)
    docs = retriever.invoke("wing flutter")
    docs[0].metadata["partial"], docs[0].metadata["sources"]
"""

from __future__ import annotations

from typing import Any, Optional

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LCDocument
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, PrivateAttr

from ._client import AsyncClient, Client
from ._metadata import hit_metadata, hit_text
from .models import QueryResult


class RagdRetriever(BaseRetriever):
    """Retrieves the top ``k`` documents of a ragd hybrid query.

    Each document's metadata holds its own metadata and ragd's ``id``,
    ``title``, ``score``, ``rank``, ``partial``, ``degraded`` and per-source
    ``sources`` statuses: a partial answer still returns the documents the
    healthy sources found, and says so.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    base_url: str = "http://127.0.0.1:8080"
    api_key: Optional[str] = None
    k: int = 4
    tenant: Optional[str] = None
    filter: Optional[dict[str, list[str]]] = None
    sources: Optional[dict[str, Any]] = None
    timeout: float = 60.0

    _client: Optional[Client] = PrivateAttr(default=None)

    def _sync(self) -> Client:
        if self._client is None:
            self._client = Client(self.base_url, self.api_key, timeout=self.timeout)
        return self._client

    def _documents(self, res: QueryResult) -> list[LCDocument]:
        return [LCDocument(page_content=hit_text(h), metadata=hit_metadata(h, res), id=h.id) for h in res.hits]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[LCDocument]:
        res = self._sync().query(query, limit=self.k, tenant=self.tenant, filter=self.filter, sources=self.sources)
        return self._documents(res)

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun) -> list[LCDocument]:
        async with AsyncClient(self.base_url, self.api_key, timeout=self.timeout) as c:
            res = await c.query(query, limit=self.k, tenant=self.tenant, filter=self.filter, sources=self.sources)
        return self._documents(res)
