from __future__ import annotations

import httpx
import pytest

from ragd_client import (
    AsyncClient,
    Client,
    Document,
    RagdAPIError,
    RagdConnectionError,
    RagdError,
    RagdTimeoutError,
    RetryPolicy,
)


def test_query_upsert_get_delete(ragd):
    with Client(ragd.url, api_key=ragd.admin_key) as c:
        res = c.query("wing flutter", limit=3)
        assert res.hits and res.hits[0].id == "wing-1"
        assert not res.partial and res.sources["keyword"].status == "ok"
        assert res.hits[0].document is not None and res.hits[0].document.title == "Wing flutter"

        up = c.upsert([Document(id="tmp/1", title="Temporary", text="a temporary note about flutter")], wait=10)
        assert up.ok == 1 and up.results[0].ok and up.results[0].id == "tmp/1"
        assert c.get("tmp/1").text == "a temporary note about flutter"  # "/" in an id, escaped once
        assert c.delete_one("tmp/1", wait=10).status == "ok"
        with pytest.raises(RagdAPIError) as e:
            c.get("tmp/1")
        assert e.value.status_code == 404 and e.value.code == "not_found" and e.value.request_id

        dele = c.delete(["never-was"])
        assert dele.not_found == 1 and dele.results[0].status == "not_found"


def test_per_document_results(ragd):
    with Client(ragd.url, api_key=ragd.admin_key) as c:
        res = c.upsert([{"id": "ok-1", "text": "fine"}, {"id": "other", "tenant": "x", "text": "fine"}])
        assert res.total == 2
        with Client(ragd.url, api_key=ragd.tenant_key) as t:
            with pytest.raises(RagdAPIError) as e:
                t.upsert([{"id": "t-1", "text": "x"}])
            assert e.value.status_code == 403 and e.value.code == "forbidden"
        c.delete(["ok-1", "other"], wait=10)


def test_errors_carry_code_and_request_id(ragd):
    with Client(ragd.url, api_key="wrong") as c:
        with pytest.raises(RagdAPIError) as e:
            c.query("x")
    assert e.value.status_code == 401 and e.value.code == "unauthorized" and e.value.request_id
    # Worded as the Go client words it, the request named once at the end.
    assert str(e.value).startswith("server answered 401 Unauthorized: unauthorized: ")
    assert str(e.value).endswith(f"[POST /v1/query, request id {e.value.request_id}]")
    with Client(ragd.url, api_key=ragd.query_key) as c:
        with pytest.raises(RagdAPIError) as e:
            c.query("x", limit=100000)
        assert e.value.status_code == 400 and e.value.code == "invalid_limit" and e.value.field == "limit"


def test_tenant_key_sees_its_tenant(ragd):
    with Client(ragd.url, api_key=ragd.tenant_key) as c:
        res = c.query("wing flutter", limit=5)
        assert [h.id for h in res.hits] == ["acme-1"]
        with pytest.raises(RagdAPIError) as e:
            c.query("wing", tenant="other")
        assert e.value.code == "tenant_forbidden"


def test_health(ragd):
    with Client(ragd.url, api_key=ragd.query_key) as c:
        h = c.health()
        assert h.status in ("up", "degraded") and "keyword" in h.components
        assert c.breakers()


async def test_async_client(ragd):
    async with AsyncClient(ragd.url, api_key=ragd.query_key) as c:
        res = await c.query("heat transfer", limit=2)
        assert res.hits[0].id == "heat-1"
        d = await c.get("wing-2")
        assert d.title == "Flutter of panels"


def test_dead_backend_gives_a_partial_answer(ragd):
    ragd.fault("keyword", fail=True)
    try:
        with Client(ragd.url, api_key=ragd.query_key) as c:
            res = c.query("wing flutter", limit=3)
        assert res.hits, "the healthy sources still answer"
        assert res.partial and res.sources["keyword"].status == "error"
        assert "keyword" in res.dropped
    finally:
        ragd.fault("keyword")


def _scripted(statuses, retry_after=None):
    calls = []

    def handler(request):
        i = len(calls)
        calls.append(request)
        st = statuses[min(i, len(statuses) - 1)]
        headers = {}
        if retry_after and i < len(retry_after) and retry_after[i]:
            headers["Retry-After"] = retry_after[i]
        if st >= 400:
            return httpx.Response(st, headers=headers, json={"error": {"code": f"code_{st}", "message": "scripted", "request_id": f"rid-{i}"}})
        return httpx.Response(200, json={"hits": [], "sources": {}, "partial": False, "degraded": False, "total": 0, "took_ms": 1})

    return httpx.MockTransport(handler), calls


@pytest.mark.parametrize(
    "statuses,retry_after,calls_want,waits_want,err",
    [
        ([503, 200], ["2"], 2, [2.0], None),
        ([429, 429, 200], None, 3, [0.1875, 0.375], None),
        ([400, 200], None, 1, [], 400),
        ([500, 200], None, 1, [], 500),
        ([503, 200], ["120"], 1, [], 503),
        ([503], None, 4, [0.1875, 0.375, 0.75], 503),
    ],
)
def test_retry_policy(statuses, retry_after, calls_want, waits_want, err):
    transport, calls = _scripted(statuses, retry_after)
    c = Client("http://ragd.test", transport=transport)
    waits = []
    c._sleep = waits.append
    c._random = lambda: 0.5
    if err:
        with pytest.raises(RagdAPIError) as e:
            c.query("x")
        assert e.value.status_code == err and e.value.code == f"code_{err}" and e.value.request_id
    else:
        c.query("x")
    assert len(calls) == calls_want
    assert waits == waits_want


class _Clock:
    """Time for the retry loop: sleeping moves it on, nothing else does."""

    def __init__(self):
        self.t = 0.0
        self.waits = []

    def now(self):
        return self.t

    def sleep(self, s):
        self.waits.append(s)
        self.t += s


def _timed(c, clock):
    c._now, c._sleep, c._random = clock.now, clock.sleep, (lambda: 0.5)
    return c


def test_deadline_bounds_retry_after_waits():
    """Every source down: each answer is a 503 with Retry-After 28. The
    default 30 s deadline takes one wait (it ends at 28 s) and not the
    next (it would end at 56 s); before, three such waits blocked 86 s."""
    transport, calls = _scripted([503], ["28"] * 10)
    clock = _Clock()
    c = _timed(Client("http://ragd.test", transport=transport), clock)
    with pytest.raises(RagdAPIError) as e:
        c.query("x")
    assert e.value.status_code == 503 and e.value.retry_after == 28.0
    assert len(calls) == 2 and clock.waits == [28.0]

    transport, calls = _scripted([503], ["28"] * 10)
    c = _timed(Client("http://ragd.test", transport=transport, deadline=5), _Clock())
    with pytest.raises(RagdAPIError):
        c.query("x")
    assert len(calls) == 1, "a wait past the deadline is not taken"


def test_deadline_bounds_each_attempts_timeout():
    timeouts = []
    clock = _Clock()

    def handler(request):
        timeouts.append(request.extensions["timeout"]["read"])
        return httpx.Response(503, json={"error": {"code": "unavailable"}})

    c = _timed(Client("http://ragd.test", transport=httpx.MockTransport(handler), timeout=10, deadline=15,
                      retry=RetryPolicy(min_backoff=8, max_backoff=8)), clock)
    with pytest.raises(RagdAPIError):
        c.query("x")
    # Waits of 6 s (equal jitter at 0.5 of 8 s): attempts at 0, 6 and 12 s.
    assert clock.waits == [6.0, 6.0] and timeouts == [10, 9, 3]


def test_timeouts_raise_ragd_timeout_error():
    def slow(request):
        raise httpx.ReadTimeout("slow", request=request)

    clock = _Clock()
    c = _timed(Client("http://ragd.test", transport=httpx.MockTransport(slow), retry=RetryPolicy(max_retries=1)), clock)
    with pytest.raises(RagdTimeoutError) as e:
        c.query("x")
    assert isinstance(e.value, RagdConnectionError) and isinstance(e.value, RagdError)
    assert len(clock.waits) == 1


def test_no_deadline_and_no_retries():
    transport, calls = _scripted([503], ["28"] * 10)
    clock = _Clock()
    c = _timed(Client("http://ragd.test", transport=transport, deadline=None), clock)
    with pytest.raises(RagdAPIError):
        c.query("x")
    assert len(calls) == 4 and clock.waits == [28.0] * 3, "no deadline: the retry policy alone decides"
    transport, calls = _scripted([503], ["1"])
    c = _timed(Client("http://ragd.test", transport=transport, retry=RetryPolicy(max_retries=0)), _Clock())
    with pytest.raises(RagdAPIError):
        c.query("x")
    assert len(calls) == 1
    with pytest.raises(ValueError):
        Client("http://ragd.test", deadline=0)


async def test_async_deadline():
    transport, calls = _scripted([503], ["28"] * 10)
    clock = _Clock()
    c = AsyncClient("http://ragd.test", transport=httpx.MockTransport(transport.handler))

    async def sleep(s):
        clock.sleep(s)

    c._now, c._sleep = clock.now, sleep
    with pytest.raises(RagdAPIError):
        await c.query("x")
    assert len(calls) == 2 and clock.waits == [28.0]
    await c.aclose()


def test_answers_keep_their_raw_json(ragd):
    """docs/client.md: every answer keeps the JSON it was built from."""
    with Client(ragd.url, api_key=ragd.admin_key) as c:
        res = c.query("wing flutter", limit=1)
        assert res.raw["hits"][0]["id"] == res.hits[0].id == res.hits[0].raw["id"]
        assert res.sources["keyword"].raw["status"] == "ok"
        doc = c.get("wing-1")
        assert doc.raw["metadata"] == {"topic": "aero"} and doc.metadata == {"topic": "aero"}
        up = c.upsert([Document(id="raw-1", text="raw json")], wait=10)
        assert up.raw["results"][0]["id"] == "raw-1" and up.results[0].raw["status"] == "ok"
        assert c.health().raw["status"] == c.health().status
        c.delete(["raw-1"], wait=10)


def test_upsert_takes_langchain_documents(ragd):
    from langchain_core.documents import Document as LCDocument

    with Client(ragd.url, api_key=ragd.admin_key) as c:
        res = c.upsert([LCDocument(page_content="a langchain note on rotor icing", metadata={"src": "lc"}, id="lc-up-1")],
                       wait=10)
        assert res.ok == 1 and res.results[0].id == "lc-up-1"
        d = c.get("lc-up-1")
        assert d.text == "a langchain note on rotor icing" and d.metadata == {"src": "lc"}
        c.delete(["lc-up-1"], wait=10)


def test_connection_errors_retried_then_raised():
    def refuse(request):
        raise httpx.ConnectError("refused", request=request)

    c = Client("http://ragd.test", transport=httpx.MockTransport(refuse), retry=RetryPolicy(max_retries=2))
    waits = []
    c._sleep = waits.append
    with pytest.raises(RagdConnectionError):
        c.health()
    assert len(waits) == 2


def test_connections_one_async_client_per_event_loop():
    """The stores' pool: one AsyncClient per event loop, reused within it
    (httpx connections belong to the loop that opened them)."""
    import asyncio

    from ragd_client._client import Connections

    conn = Connections("http://ragd.test", None, timeout=5)

    async def get():
        return conn.aio(), conn.aio()

    a1, a2 = asyncio.run(get())
    b1, _ = asyncio.run(get())
    assert a1 is a2 and a1 is not b1 and a1.timeout == 5
    given = AsyncClient("http://ragd.test")
    shared = Connections("http://ragd.test", None, async_client=given, client=conn.sync())
    assert asyncio.run(_aio(shared)) is given
    shared.close()
    assert not conn.sync()._http.is_closed, "a client passed in is not closed by the pool"
    conn.close()
    assert conn.sync()._http.is_closed


async def _aio(conn):
    return conn.aio()
