"""Sync and async clients of ragd's HTTP API, on httpx."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence
from urllib.parse import quote

import httpx

from .models import BatchResult, Document, DocumentResult, Health, QueryResult

DEFAULT_BASE_URL = "http://127.0.0.1:8080"
RETRY_STATUSES = frozenset({429, 502, 503, 504})


class RagdError(Exception):
    """An answer from ragd with a non-2xx status, after any retries.

    ``code`` is the API's stable error code (``http_NNN`` when the answer
    was not ragd's error shape), ``request_id`` the id to quote in a
    report, ``body`` the decoded answer (a 503 ``not_enough_sources``
    carries every source's status).
    """

    def __init__(self, method: str, path: str, status_code: int, body: Any, retry_after: float | None):
        err = body.get("error") if isinstance(body, dict) else None
        err = err if isinstance(err, dict) else {}
        self.method = method
        self.path = path
        self.status_code = status_code
        self.code: str = err.get("code") or f"http_{status_code}"
        self.message: str = err.get("message") or ""
        self.request_id: str = err.get("request_id") or ""
        self.field: str = err.get("field") or ""
        self.body = body
        self.retry_after = retry_after
        msg = f"ragd answered {status_code}: {self.code}"
        if self.message:
            msg += f": {self.message}"
        msg += f" [{method} {path}"
        if self.request_id:
            msg += f", request id {self.request_id}"
        super().__init__(msg + "]")


class RagdConnectionError(Exception):
    """No answer arrived: ragd is not reachable, the connection broke, or
    the attempt timed out."""


@dataclass(frozen=True)
class RetryPolicy:
    """Retries of 429, 502, 503, 504 and of requests that got no answer.

    Every ragd call is idempotent (a query reads; an upsert or delete of
    the same ids leaves the same state), so a retry after a lost answer is
    safe. Other 4xx answers are never retried. The wait is the server's
    ``Retry-After`` when it sends one (a longer one than
    ``max_retry_after`` fails at once), else ``min_backoff`` doubling up to
    ``max_backoff`` with equal jitter (a random point between half and all
    of it).
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


def _doc_json(d: Document | Mapping[str, Any]) -> Mapping[str, Any]:
    return d.to_json() if isinstance(d, Document) else d


def _query_body(
    text: str | None,
    *,
    vector: Sequence[float] | None,
    limit: int | None,
    offset: int | None,
    filter: Mapping[str, Sequence[str]] | None,
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
    if filter:
        body["filter"] = {k: list(v) for k, v in filter.items()}
    if tenant:
        body["tenant"] = tenant
    if sources:
        body["sources"] = dict(sources)
    if explain:
        body["explain"] = True
    if extra:
        body.update(extra)
    return body


def _wait_param(wait: float | None) -> dict[str, str]:
    return {"wait": f"{wait}s"} if wait else {}


class _Base:
    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        user_agent: str = "ragd-client-python/0.1.0",
    ) -> None:
        if "://" not in base_url:
            base_url = "http://" + base_url
        self.base_url = base_url.rstrip("/")
        self.retry = retry or RetryPolicy()
        self._headers = {"Accept": "application/json", "User-Agent": user_agent}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._timeout = timeout
        self._random: Callable[[], float] = random.random

    def _outcome(self, method: str, path: str, resp: httpx.Response, keep: Iterable[int]) -> tuple[Any, float | None, bool]:
        """(body, wait before a retry or None, is_error) of one attempt."""
        if 200 <= resp.status_code < 300 or resp.status_code in keep:
            return _decode(resp), None, False
        return _decode(resp), _retry_after(resp.headers.get("Retry-After")), True


class Client(_Base):
    """A synchronous ragd client. Use it as a context manager, or call
    ``close``. Safe to share between threads (httpx.Client is)."""

    def __init__(self, base_url: str = DEFAULT_BASE_URL, api_key: str | None = None, **kw: Any) -> None:
        transport = kw.pop("transport", None)
        super().__init__(base_url, api_key, **kw)
        self._http = httpx.Client(base_url=self.base_url, headers=self._headers, timeout=self._timeout, transport=transport)
        self._sleep: Callable[[float], None] = time.sleep

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, path: str, *, json: Any = None, params: Mapping[str, str] | None = None, keep: Iterable[int] = ()) -> Any:
        attempt = 0
        while True:
            attempt += 1
            try:
                resp = self._http.request(method, path, json=json, params=params)
            except httpx.TransportError as e:
                wait = self.retry.wait(attempt, None, self._random)
                if wait is None:
                    raise RagdConnectionError(f"cannot reach ragd at {self.base_url}: {method} {path}: {e}") from e
                self._sleep(wait)
                continue
            body, retry_after, failed = self._outcome(method, path, resp, keep)
            if not failed:
                return body
            wait = self.retry.wait(attempt, retry_after, self._random) if resp.status_code in RETRY_STATUSES else None
            if wait is None:
                raise RagdError(method, path, resp.status_code, body, retry_after)
            self._sleep(wait)

    def query(
        self,
        text: str | None = None,
        *,
        vector: Sequence[float] | None = None,
        limit: int | None = None,
        offset: int | None = None,
        filter: Mapping[str, Sequence[str]] | None = None,
        tenant: str | None = None,
        sources: Mapping[str, Any] | None = None,
        explain: bool = False,
        extra: Mapping[str, Any] | None = None,
    ) -> QueryResult:
        """Run a hybrid query (POST /v1/query). A partial answer is a
        result, not an error: see ``QueryResult.partial`` and ``sources``."""
        body = _query_body(text, vector=vector, limit=limit, offset=offset, filter=filter, tenant=tenant,
                           sources=sources, explain=explain, extra=extra)
        return QueryResult.from_json(self._call("POST", "/v1/query", json=body))

    def upsert(self, documents: Sequence[Document | Mapping[str, Any]], *, wait: float | None = None) -> BatchResult:
        """Write documents (POST /v1/documents); each one's outcome is in
        the result, in input order. ``wait`` (seconds) waits until every
        derived store has applied them."""
        body = {"documents": [_doc_json(d) for d in documents]}
        return BatchResult.from_json(self._call("POST", "/v1/documents", json=body, params=_wait_param(wait)))

    def delete(self, ids: Sequence[str], *, wait: float | None = None) -> BatchResult:
        """Delete documents by id (POST /v1/documents/delete); missing ids
        are ``not_found`` in their results."""
        return BatchResult.from_json(self._call("POST", "/v1/documents/delete", json={"ids": list(ids)}, params=_wait_param(wait)))

    def get(self, id: str) -> Document:
        """Read one document (GET /v1/documents/{id}); a missing id raises
        RagdError with code ``not_found``."""
        return Document.from_json(self._call("GET", "/v1/documents/" + quote(id, safe="")))

    def delete_one(self, id: str, *, wait: float | None = None) -> DocumentResult:
        """Delete one document (DELETE /v1/documents/{id})."""
        return DocumentResult.from_json(self._call("DELETE", "/v1/documents/" + quote(id, safe=""), params=_wait_param(wait)))

    def health(self) -> Health:
        """The component health roll-up; an unhealthy server's 503 is a
        report, not an error."""
        return Health.from_json(self._call("GET", "/v1/status/health", keep=(503,)))

    def breakers(self) -> list[dict[str, Any]]:
        return list(self._call("GET", "/v1/status/breakers").get("breakers") or [])


class AsyncClient(_Base):
    """The asyncio twin of Client, on httpx.AsyncClient."""

    def __init__(self, base_url: str = DEFAULT_BASE_URL, api_key: str | None = None, **kw: Any) -> None:
        transport = kw.pop("transport", None)
        super().__init__(base_url, api_key, **kw)
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=self._headers, timeout=self._timeout, transport=transport)
        self._sleep: Callable[[float], Any] = asyncio.sleep

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _call(self, method: str, path: str, *, json: Any = None, params: Mapping[str, str] | None = None, keep: Iterable[int] = ()) -> Any:
        attempt = 0
        while True:
            attempt += 1
            try:
                resp = await self._http.request(method, path, json=json, params=params)
            except httpx.TransportError as e:
                wait = self.retry.wait(attempt, None, self._random)
                if wait is None:
                    raise RagdConnectionError(f"cannot reach ragd at {self.base_url}: {method} {path}: {e}") from e
                await self._sleep(wait)
                continue
            body, retry_after, failed = self._outcome(method, path, resp, keep)
            if not failed:
                return body
            wait = self.retry.wait(attempt, retry_after, self._random) if resp.status_code in RETRY_STATUSES else None
            if wait is None:
                raise RagdError(method, path, resp.status_code, body, retry_after)
            await self._sleep(wait)

    async def query(
        self,
        text: str | None = None,
        *,
        vector: Sequence[float] | None = None,
        limit: int | None = None,
        offset: int | None = None,
        filter: Mapping[str, Sequence[str]] | None = None,
        tenant: str | None = None,
        sources: Mapping[str, Any] | None = None,
        explain: bool = False,
        extra: Mapping[str, Any] | None = None,
    ) -> QueryResult:
        body = _query_body(text, vector=vector, limit=limit, offset=offset, filter=filter, tenant=tenant,
                           sources=sources, explain=explain, extra=extra)
        return QueryResult.from_json(await self._call("POST", "/v1/query", json=body))

    async def upsert(self, documents: Sequence[Document | Mapping[str, Any]], *, wait: float | None = None) -> BatchResult:
        body = {"documents": [_doc_json(d) for d in documents]}
        return BatchResult.from_json(await self._call("POST", "/v1/documents", json=body, params=_wait_param(wait)))

    async def delete(self, ids: Sequence[str], *, wait: float | None = None) -> BatchResult:
        return BatchResult.from_json(await self._call("POST", "/v1/documents/delete", json={"ids": list(ids)}, params=_wait_param(wait)))

    async def get(self, id: str) -> Document:
        return Document.from_json(await self._call("GET", "/v1/documents/" + quote(id, safe="")))

    async def delete_one(self, id: str, *, wait: float | None = None) -> DocumentResult:
        return DocumentResult.from_json(await self._call("DELETE", "/v1/documents/" + quote(id, safe=""), params=_wait_param(wait)))

    async def health(self) -> Health:
        return Health.from_json(await self._call("GET", "/v1/status/health", keep=(503,)))

    async def breakers(self) -> list[dict[str, Any]]:
        return list((await self._call("GET", "/v1/status/breakers")).get("breakers") or [])
