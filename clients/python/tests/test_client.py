from __future__ import annotations

import httpx
import pytest

from ragd_client import AsyncClient, Client, Document, RagdConnectionError, RagdError, RetryPolicy


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
        with pytest.raises(RagdError) as e:
            c.get("tmp/1")
        assert e.value.status_code == 404 and e.value.code == "not_found" and e.value.request_id

        dele = c.delete(["never-was"])
        assert dele.not_found == 1 and dele.results[0].status == "not_found"


def test_per_document_results(ragd):
    with Client(ragd.url, api_key=ragd.admin_key) as c:
        res = c.upsert([{"id": "ok-1", "text": "fine"}, {"id": "other", "tenant": "x", "text": "fine"}])
        assert res.total == 2
        with Client(ragd.url, api_key=ragd.tenant_key) as t:
            with pytest.raises(RagdError) as e:
                t.upsert([{"id": "t-1", "text": "x"}])
            assert e.value.status_code == 403 and e.value.code == "forbidden"
        c.delete(["ok-1", "other"], wait=10)


def test_errors_carry_code_and_request_id(ragd):
    with Client(ragd.url, api_key="wrong") as c:
        with pytest.raises(RagdError) as e:
            c.query("x")
    assert e.value.status_code == 401 and e.value.code == "unauthorized" and e.value.request_id
    with Client(ragd.url, api_key=ragd.query_key) as c:
        with pytest.raises(RagdError) as e:
            c.query("x", limit=100000)
        assert e.value.status_code == 400 and e.value.code == "invalid_limit" and e.value.field == "limit"


def test_tenant_key_sees_its_tenant(ragd):
    with Client(ragd.url, api_key=ragd.tenant_key) as c:
        res = c.query("wing flutter", limit=5)
        assert [h.id for h in res.hits] == ["acme-1"]
        with pytest.raises(RagdError) as e:
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
        with pytest.raises(RagdError) as e:
            c.query("x")
        assert e.value.status_code == err and e.value.code == f"code_{err}" and e.value.request_id
    else:
        c.query("x")
    assert len(calls) == calls_want
    assert waits == waits_want


def test_connection_errors_retried_then_raised():
    def refuse(request):
        raise httpx.ConnectError("refused", request=request)

    c = Client("http://ragd.test", transport=httpx.MockTransport(refuse), retry=RetryPolicy(max_retries=2))
    waits = []
    c._sleep = waits.append
    with pytest.raises(RagdConnectionError):
        c.health()
    assert len(waits) == 2
