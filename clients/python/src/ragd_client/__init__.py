"""ragd-client: the Python client of ragd, a hybrid retrieval service
with guarded backends.

    from ragd_client import Client
    with Client("http://127.0.0.1:8080", api_key=None) as c:
        res = c.query("wing flutter", limit=3, filter={"topic": "aero"})
        for hit in res.hits:
            print(hit.rank, hit.id, hit.score)
        if res.partial:
            print("left out:", res.dropped)

LangChain and LlamaIndex vector stores and retrievers live in
``ragd_client.langchain`` and ``ragd_client.llama_index`` (extras
``ragd-client[langchain]`` and ``ragd-client[llama-index]``). Every error
this package raises is a ``RagdError``.
"""

from ._client import AsyncClient, Client, RetryPolicy
from ._errors import (
    RagdAPIError,
    RagdConnectionError,
    RagdError,
    RagdFilterError,
    RagdTimeoutError,
    RagdWriteError,
)
from .models import BatchResult, Document, DocumentResult, Health, Hit, QueryResult, SourceStatus

__all__ = [
    "AsyncClient",
    "BatchResult",
    "Client",
    "Document",
    "DocumentResult",
    "Health",
    "Hit",
    "QueryResult",
    "RagdAPIError",
    "RagdConnectionError",
    "RagdError",
    "RagdFilterError",
    "RagdTimeoutError",
    "RagdWriteError",
    "RetryPolicy",
    "SourceStatus",
]
__version__ = "0.1.0"
