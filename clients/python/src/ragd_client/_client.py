"""Sync and async clients of ragd's HTTP API, on httpx."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
import uuid
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence
from urllib.parse import quote

import httpx

from ._errors import RagdAPIError, RagdConnectionError, RagdTimeoutError
from ._filter import to_wire
from ._values import encode_metadata
from .models import BatchResult, Document, DocumentResult, Health, QueryResult

DEFAULT_BASE_URL = "http://127.0.0.1:8080"
DEFAULT_TIMEOUT = 30.0
DEFAULT_DEADLINE = 30.0
RETRY_STATUSES = frozenset({429, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    """Retries of 429, 502, 503, 504 and of requests that got no answer.

    Every ragd call is idempotent (a query reads; an upsert or delete of
    the same ids leaves the same state), so a retry after a lost answer is
    safe. Other 4xx answers are never retried. The wait is the server's
    ``Retry-After`` when it sends one (a longer one than
    ``max_retry_after`` fails at once), else ``min_backoff`` doubling up to
    ``max_backoff`` with equal jitter (a random point between half and all
    of it). A wait that would end after the call's deadline is not taken:
    the call fails at once with what it has. ``RetryPolicy(max_retries=0)``
    never retries.
    """

    max_retries: int = 3
    min_backoff: float = 0.25
    max_backoff: float = 8.0
    max_retry_after: float = 30.0

    def wait(self, attempt: int, retry_after: float | None, rnd: Callable[[], float]) -> float | None:
        """Seconds to wait before retry number ``attempt`` (1-based), or
        None to give up."""
        if attempt > self.max_retries:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_retry_after else None
        d = min(self.min_backoff * (2 ** (attempt - 1)), self.max_backoff)
        return d / 2 + rnd() * (d / 2)


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _decode(resp: httpx.Response) -> Any:
    try:
        return resp.json()
    except ValueError:
        return resp.text[:200]


def _doc_json(d: Any, i: int) -> Mapping[str, Any]:
    """One document of a batch as JSON: a ``Document``, a mapping in the
    API's shape, or a LangChain ``Document`` (``page_content`` becomes the
    text, ``metadata`` the metadata, ``id`` the id, a new UUID when it has
    none)."""
    where = f"documents[{i}].metadata"
    if isinstance(d, Document):
        return d.to_json()
    if isinstance(d, Mapping):
        out = dict(d)
        if isinstance(out.get("metadata"), Mapping):
            out["metadata"] = encode_metadata(out["metadata"], where, _metadata_error)
        return out
    text = getattr(d, "page_content", None)
    if isinstance(text, str):
        out = {"id": getattr(d, "id", None) or str(uuid.uuid4()), "text": text}
        meta = encode_metadata(getattr(d, "metadata", None) or {}, where, _metadata_error)
        if meta:
            out["metadata"] = meta
        return out
    raise TypeError(f"documents[{i}]: a {type(d).__name__} is not a document: pass a ragd_client.Document, "
                    "a mapping in the API's shape, or a LangChain Document")


def _metadata_error(where: str, why: str) -> Exception:
    return TypeError(f"{where}: {why}")


def _query_body(
    text: str | None,
    *,
    vector: Sequence[float] | None,
    limit: int | None,
    offset: int | None,
    filter: Mapping[str, Any] | None,
    tenant: str | None,
    sources: Mapping[str, Any] | None,
    explain: bool,
    extra: Mapping[str, Any] | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if text is not None:
        body["text"] = text
    if vector is not None:
        body["vector"] = list(vector)
    if limit is not None:
        body["limit"] = limit
    if offset:
        body["offset"] = offset
    wire = to_wire(filter)
    if wire:
        body["filter"] = wire
    if tenant:
        body["tenant"] = tenant
    if sources:
        body["sources"] = dict(sources)
    if explain:
        body["explain"] = True
    if extra:
        body.update(extra)
    return body


# The most ids one delete request may carry: the server's default
# ingest.max_ids_per_request (a store's batch_size goes lower).
MAX_DELETE_IDS = 1000


def id_batches(ids: Sequence[str], size: int) -> Iterable[list[str]]:
    """``ids`` in batches of ``size``, at most MAX_DELETE_IDS each; none for
    no ids."""
    size = max(1, min(size, MAX_DELETE_IDS))
    for i in range(0, len(ids), size):
        yield list(ids[i:i + size])


def _wait_param(wait: float | None) -> dict[str, str]:
    return {"wait": f"{wait}s"} if wait else {}


class _Attempts:
    """The retry loop of one call, shared by the sync and async clients:
    how long the next attempt may take, and after each outcome whether to
    wait (and how long) or fail. The call's deadline bounds everything:
    attempts and waits together."""

    def __init__(self, c: "_Base", method: str, path: str, extra_time: float) -> None:
        self.c, self.method, self.path = c, method, path
        self.attempt = 0
        self.extra = extra_time
        self.end = c._now() + c.deadline + extra_time if c.deadline is not None else None

    def timeout(self) -> float:
        """The next attempt's timeout; raises RagdTimeoutError when the
        deadline has passed."""
        self.attempt += 1
        t = self.c.timeout + self.extra
        if self.end is not None:
            left = self.end - self.c._now()
            if left <= 0:
                raise RagdTimeoutError(f"ragd at {self.c.base_url}: {self.method} {self.path}: deadline of {self.c.deadline}s passed")
            t = min(t, left)
        return t

    def _fits(self, wait: float | None) -> bool:
        return wait is not None and (self.end is None or self.c._now() + wait < self.end)

    def no_answer(self, e: httpx.TransportError) -> float:
        """The wait before the next attempt after ``e``, or raises."""
        wait = self.c.retry.wait(self.attempt, None, self.c._random)
        if self._fits(wait):
            return wait  # type: ignore[return-value]
        cls = RagdTimeoutError if isinstance(e, httpx.TimeoutException) else RagdConnectionError
        raise cls(f"cannot reach ragd at {self.c.base_url}: {self.method} {self.path}: {type(e).__name__}: {e}") from e

    def answered(self, resp: httpx.Response, keep: Iterable[int]) -> tuple[bool, Any]:
        """(True, body) when the call is done, (False, wait) to retry;
        raises RagdAPIError otherwise."""
        body = _decode(resp)
        if 200 <= resp.status_code < 300 or resp.status_code in keep:
            return True, body
        retry_after = _retry_after(resp.headers.get("Retry-After"))
        if resp.status_code in RETRY_STATUSES:
            wait = self.c.retry.wait(self.attempt, retry_after, self.c._random)
            if self._fits(wait):
                return False, wait
        raise RagdAPIError(self.method, self.path, resp.status_code, body, retry_after)


class _Base:
    """What the sync and async clients share.

    ``timeout`` bounds one attempt (seconds; ragd's own request timeout is
    30 s), ``deadline`` the whole call: every attempt and every wait
    between them (None: no bound but the retry policy's). A write with
    ``wait=`` gets that much more of both. ``retry`` is the RetryPolicy.
    """

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        deadline: float | None = DEFAULT_DEADLINE,
        retry: RetryPolicy | None = None,
        user_agent: str = "ragd-client-python/0.1.0",
    ) -> None:
        if "://" not in base_url:
            base_url = "http://" + base_url
        if timeout <= 0 or (deadline is not None and deadline <= 0):
            raise ValueError("timeout and deadline must be positive")
        self.base_url = base_url.rstrip("/")
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self.deadline = deadline
        self._headers = {"Accept": "application/json", "User-Agent": user_agent}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._random: Callable[[], float] = random.random
        self._now: Callable[[], float] = time.monotonic


class Client(_Base):
    """A synchronous ragd client. Use it as a context manager, or call
    ``close``. Safe to share between threads (httpx.Client is)."""

    def __init__(self, base_url: str = DEFAULT_BASE_URL, api_key: str | None = None, *,
                 transport: httpx.BaseTransport | None = None, **kw: Any) -> None:
        super().__init__(base_url, api_key, **kw)
        self._http = httpx.Client(base_url=self.base_url, headers=self._headers, transport=transport)
        self._sleep: Callable[[float], None] = time.sleep

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, path: str, *, json: Any = None, params: Mapping[str, str] | None = None,
              keep: Iterable[int] = (), extra_time: float = 0.0) -> Any:
        a = _Attempts(self, method, path, extra_time)
        while True:
            timeout = a.timeout()
            try:
                resp = self._http.request(method, path, json=json, params=params, timeout=timeout)
            except httpx.TransportError as e:
                self._sleep(a.no_answer(e))
                continue
            done, out = a.answered(resp, keep)
            if done:
                return out
            self._sleep(out)

    def query(
        self,
        text: str | None = None,
        *,
        vector: Sequence[float] | None = None,
        limit: int | None = None,
        offset: int | None = None,
        filter: Mapping[str, Any] | None = None,
        tenant: str | None = None,
        sources: Mapping[str, Any] | None = None,
        explain: bool = False,
        extra: Mapping[str, Any] | None = None,
    ) -> QueryResult:
        """Run a hybrid query (POST /v1/query). A partial answer is a
        result, not an error: see ``QueryResult.partial`` and ``sources``.
        ``filter`` is in ragd's filter language (see ``ragd_client._filter``
        and docs/api.md); a bare string value is one value, never a list
        of characters."""
        body = _query_body(text, vector=vector, limit=limit, offset=offset, filter=filter, tenant=tenant,
                           sources=sources, explain=explain, extra=extra)
        return QueryResult.from_json(self._call("POST", "/v1/query", json=body))

    def upsert(self, documents: Sequence[Any], *, wait: float | None = None) -> BatchResult:
        """Write documents (POST /v1/documents); each one's outcome is in
        the result, in input order. A document is a ``Document``, a mapping
        in the API's shape or a LangChain ``Document``. ``wait`` (seconds)
        waits until every derived store has applied them."""
        body = {"documents": [_doc_json(d, i) for i, d in enumerate(documents)]}
        return BatchResult.from_json(self._call("POST", "/v1/documents", json=body, params=_wait_param(wait),
                                                extra_time=wait or 0.0))

    def delete(self, ids: Sequence[str], *, wait: float | None = None) -> BatchResult:
        """Delete documents by id (POST /v1/documents/delete); missing ids
        are ``not_found`` in their results."""
        return BatchResult.from_json(self._call("POST", "/v1/documents/delete", json={"ids": list(ids)},
                                                params=_wait_param(wait), extra_time=wait or 0.0))

    def get(self, id: str) -> Document:
        """Read one document (GET /v1/documents/{id}); a missing id raises
        RagdAPIError with code ``not_found``."""
        return Document.from_json(self._call("GET", "/v1/documents/" + quote(id, safe="")))

    def delete_one(self, id: str, *, wait: float | None = None) -> DocumentResult:
        """Delete one document (DELETE /v1/documents/{id})."""
        return DocumentResult.from_json(self._call("DELETE", "/v1/documents/" + quote(id, safe=""),
                                                   params=_wait_param(wait), extra_time=wait or 0.0))

    def health(self) -> Health:
        """The component health roll-up; an unhealthy server's 503 is a
        report, not an error."""
        return Health.from_json(self._call("GET", "/v1/status/health", keep=(503,)))

    def breakers(self) -> list[dict[str, Any]]:
        return list(self._call("GET", "/v1/status/breakers").get("breakers") or [])


class AsyncClient(_Base):
    """The asyncio twin of Client, on httpx.AsyncClient. Its connections
    belong to the event loop that first uses it."""

    def __init__(self, base_url: str = DEFAULT_BASE_URL, api_key: str | None = None, *,
                 transport: httpx.AsyncBaseTransport | None = None, **kw: Any) -> None:
        super().__init__(base_url, api_key, **kw)
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=self._headers, transport=transport)
        self._sleep: Callable[[float], Any] = asyncio.sleep

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _call(self, method: str, path: str, *, json: Any = None, params: Mapping[str, str] | None = None,
                    keep: Iterable[int] = (), extra_time: float = 0.0) -> Any:
        a = _Attempts(self, method, path, extra_time)
        while True:
            timeout = a.timeout()
            try:
                resp = await self._http.request(method, path, json=json, params=params, timeout=timeout)
            except httpx.TransportError as e:
                await self._sleep(a.no_answer(e))
                continue
            done, out = a.answered(resp, keep)
            if done:
                return out
            await self._sleep(out)

    async def query(
        self,
        text: str | None = None,
        *,
        vector: Sequence[float] | None = None,
        limit: int | None = None,
        offset: int | None = None,
        filter: Mapping[str, Any] | None = None,
        tenant: str | None = None,
        sources: Mapping[str, Any] | None = None,
        explain: bool = False,
        extra: Mapping[str, Any] | None = None,
    ) -> QueryResult:
        body = _query_body(text, vector=vector, limit=limit, offset=offset, filter=filter, tenant=tenant,
                           sources=sources, explain=explain, extra=extra)
        return QueryResult.from_json(await self._call("POST", "/v1/query", json=body))

    async def upsert(self, documents: Sequence[Any], *, wait: float | None = None) -> BatchResult:
        body = {"documents": [_doc_json(d, i) for i, d in enumerate(documents)]}
        return BatchResult.from_json(await self._call("POST", "/v1/documents", json=body, params=_wait_param(wait),
                                                      extra_time=wait or 0.0))

    async def delete(self, ids: Sequence[str], *, wait: float | None = None) -> BatchResult:
        return BatchResult.from_json(await self._call("POST", "/v1/documents/delete", json={"ids": list(ids)},
                                                      params=_wait_param(wait), extra_time=wait or 0.0))

    async def get(self, id: str) -> Document:
        return Document.from_json(await self._call("GET", "/v1/documents/" + quote(id, safe="")))

    async def delete_one(self, id: str, *, wait: float | None = None) -> DocumentResult:
        return DocumentResult.from_json(await self._call("DELETE", "/v1/documents/" + quote(id, safe=""),
                                                         params=_wait_param(wait), extra_time=wait or 0.0))

    async def health(self) -> Health:
        return Health.from_json(await self._call("GET", "/v1/status/health", keep=(503,)))

    async def breakers(self) -> list[dict[str, Any]]:
        return list((await self._call("GET", "/v1/status/breakers")).get("breakers") or [])


class Connections:
    """The clients of one vector store or retriever: one ``Client``, and
    one ``AsyncClient`` per event loop, each created at first use and then
    shared by every call, so calls reuse pooled connections instead of
    opening new ones. Pass ``client=`` / ``async_client=`` to share yours
    between several stores."""

    def __init__(self, base_url: str, api_key: str | None, *, client: Client | None = None,
                 async_client: AsyncClient | None = None, **options: Any) -> None:
        self._args = (base_url, api_key)
        self._options = options
        self._client = client
        self._given_async = async_client
        self._async: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncClient]" = weakref.WeakKeyDictionary()
        self._owned = client is None
        if client is None:  # fail at construction on a bad option, not at the first call
            self._client = Client(*self._args, **self._options)

    def sync(self) -> Client:
        assert self._client is not None
        return self._client

    def aio(self) -> AsyncClient:
        if self._given_async is not None:
            return self._given_async
        loop = asyncio.get_running_loop()
        c = self._async.get(loop)
        if c is None:
            c = self._async[loop] = AsyncClient(*self._args, **self._options)
        return c

    def found(self, ids: Iterable[str]) -> list[Document]:
        """The stored documents of ``ids``, each id once, in order; ids
        that do not exist are left out."""
        out = []
        for id_ in dict.fromkeys(ids):
            try:
                out.append(self.sync().get(id_))
            except RagdAPIError as e:
                if e.code != "not_found":
                    raise
        return out

    async def afound(self, ids: Iterable[str]) -> list[Document]:
        out = []
        for id_ in dict.fromkeys(ids):
            try:
                out.append(await self.aio().get(id_))
            except RagdAPIError as e:
                if e.code != "not_found":
                    raise
        return out

    def close(self) -> None:
        """Close the clients this object made (not the ones passed in)."""
        if self._owned and self._client is not None:
            self._client.close()

    async def aclose(self) -> None:
        try:
            c = self._async.pop(asyncio.get_running_loop(), None)
        except RuntimeError:
            c = None
        if c is not None:
            await c.aclose()



