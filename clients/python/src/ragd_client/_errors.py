"""The errors this package raises, under one base class.

    RagdError                      every error below
    ├── RagdAPIError               the server answered with a non-2xx status
    ├── RagdConnectionError        no answer arrived (refused, broken, timed out)
    │   └── RagdTimeoutError       the call's deadline or an attempt's timeout ran out
    ├── RagdWriteError             documents of a write failed (the others were written)
    └── RagdFilterError            a filter that cannot be sent (also a ValueError)
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any, Sequence


class RagdError(Exception):
    """The base class of every error this package raises: ``except
    RagdError`` catches them all."""


class RagdAPIError(RagdError):
    """An answer from ragd with a non-2xx status, after any retries. Its
    text reads as the Go client's: ``server answered 404 Not Found:
    not_found: <message> [GET /v1/documents/x, request id <id>]``.

    ``code`` is the API's stable error code (``http_NNN`` when the answer
    was not ragd's error shape), ``request_id`` the id to quote in a
    report, ``body`` the decoded answer (a 503 ``not_enough_sources``
    carries every source's status), ``retry_after`` the server's
    ``Retry-After`` in seconds, if any.
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
        msg = f"server answered {status_code}"
        try:
            msg += " " + HTTPStatus(status_code).phrase
        except ValueError:
            pass
        msg += f": {self.code}"
        if self.message:
            msg += f": {self.message}"
        msg += f" [{method} {path}"
        if self.request_id:
            msg += f", request id {self.request_id}"
        super().__init__(msg + "]")


class RagdConnectionError(RagdError):
    """No answer arrived: ragd is not reachable, the connection broke, or
    the attempt timed out."""


class RagdTimeoutError(RagdConnectionError):
    """The call ran out of time: an attempt's ``timeout`` or the call's
    total ``deadline`` passed before an answer arrived."""


class RagdWriteError(RagdError):
    """Some documents of a write failed; the others were written.

    ``results`` holds every document's ``DocumentResult`` in input order
    (``failed`` the ones that failed, each with ``code`` and ``error``).
    Sending the same documents again is safe: written ones come back
    ``unchanged``.
    """

    def __init__(self, results: Sequence[Any]):
        self.results = list(results)
        self.failed = [r for r in self.results if not r.ok]
        first = self.failed[0] if self.failed else None
        msg = f"{len(self.failed)} of {len(self.results)} documents failed"
        if first is not None:
            msg += f"; first: {first.id}: {first.code}: {first.error}"
        super().__init__(msg)


class RagdFilterError(RagdError, ValueError):
    """A filter that cannot be sent to ragd (an unknown operator, a value
    of a type ragd does not store); ``field`` names the place, as ragd's
    own ``invalid_filter`` errors do (``filter.$or[1].page.$gte``)."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")
