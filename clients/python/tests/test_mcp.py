"""The MCP endpoint, driven by the Python `mcp` package's own client."""

from __future__ import annotations

import pytest
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def _call(ragd, key, name, args):
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
    async with http:
        async with streamable_http_client(ragd.url + "/mcp", http_client=http) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = await session.list_tools()
                assert sorted(t.name for t in tools.tools) == ["get_document", "search"]
                return await session.call_tool(name, args)


async def test_mcp_search_and_get(ragd):
    res = await _call(ragd, ragd.query_key, "search", {"text": "wing flutter", "limit": 2})
    assert not res.is_error
    out = res.structured_content
    assert [h["id"] for h in out["hits"]][0] == "wing-1" and len(out["hits"]) == 2
    assert out["partial"] is False and out["sources"]["keyword"]["status"] == "ok"

    res = await _call(ragd, ragd.query_key, "get_document", {"id": "heat-1"})
    assert not res.is_error and res.structured_content["title"] == "Heat transfer"


async def test_mcp_partial_answer(ragd):
    ragd.fault("keyword", fail=True)
    try:
        res = await _call(ragd, ragd.query_key, "search", {"text": "wing flutter"})
    finally:
        ragd.fault("keyword")
    out = res.structured_content
    assert out["hits"] and out["partial"] is True and out["sources"]["keyword"]["status"] == "error"


async def test_mcp_tenant_binding(ragd):
    res = await _call(ragd, ragd.tenant_key, "search", {"text": "wing flutter"})
    assert [h["id"] for h in res.structured_content["hits"]] == ["acme-1"]
    res = await _call(ragd, ragd.tenant_key, "get_document", {"id": "wing-1"})
    assert res.is_error and res.content[0].text.startswith("not_found")


def _find(exc: BaseException, cls: type) -> BaseException | None:
    """exc, or the exception of type cls inside its exception groups."""
    if isinstance(exc, cls):
        return exc
    for sub in getattr(exc, "exceptions", ()):
        found = _find(sub, cls)
        if found is not None:
            return found
    return None


async def test_mcp_needs_a_key(ragd):
    """A wrong key: the MCP client reports ragd's reason, not "-32603
    Server returned an error response"."""
    with pytest.raises(BaseException) as e:
        await _call(ragd, "wrong-key", "search", {"text": "x"})
    err = _find(e.value, MCPError)
    assert err is not None, f"no MCPError in {e.value!r}"
    assert err.code == -32001 and err.message.startswith("unauthorized: invalid API key")
    assert err.data["code"] == "unauthorized" and err.data["request_id"] in err.message


async def test_mcp_hits_carry_metadata_and_schema_names_statuses(ragd):
    res = await _call(ragd, ragd.query_key, "search", {"text": "heat transfer", "limit": 1})
    assert res.structured_content["hits"][0]["metadata"] == {"topic": "heat"}
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {ragd.query_key}"})
    async with http:
        async with streamable_http_client(ragd.url + "/mcp", http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                (search,) = [t for t in (await session.list_tools()).tools if t.name == "search"]
    schema = str(search.output_schema)
    for status in ("disabled", "skipped", "caller_deadline", "circuit_open", "shed", "timeout"):
        assert status in schema, f"the output schema does not name {status}"
