from __future__ import annotations

from ragd_client.langchain import RagdRetriever as LCRetriever
from ragd_client.llama_index import RagdRetriever as LIRetriever


def test_langchain_retriever(ragd):
    r = LCRetriever(base_url=ragd.url, api_key=ragd.query_key, k=2)
    docs = r.invoke("wing flutter")
    assert len(docs) == 2 and docs[0].id == "wing-1"
    m = docs[0].metadata
    assert m["id"] == "wing-1" and m["title"] == "Wing flutter" and m["rank"] == 1 and m["score"] > 0
    assert m["topic"] == "aero", "the document's own metadata is kept"
    assert m["partial"] is False and m["sources"]["keyword"]["status"] == "ok"
    assert "flutter of swept wings" in docs[0].page_content


async def test_langchain_retriever_async(ragd):
    r = LCRetriever(base_url=ragd.url, api_key=ragd.query_key, k=1)
    docs = await r.ainvoke("heat transfer")
    assert [d.id for d in docs] == ["heat-1"]


def test_llama_index_retriever(ragd):
    r = LIRetriever(base_url=ragd.url, api_key=ragd.query_key, k=2)
    nodes = r.retrieve("wing flutter")
    assert len(nodes) == 2 and nodes[0].node.node_id == "wing-1"
    assert nodes[0].score == nodes[0].node.metadata["score"] > 0
    assert nodes[0].node.metadata["sources"]["vector"]["status"] == "ok"


async def test_llama_index_retriever_async(ragd):
    r = LIRetriever(base_url=ragd.url, api_key=ragd.query_key, k=1)
    nodes = await r.aretrieve("heat transfer")
    assert [n.node.node_id for n in nodes] == ["heat-1"]


def test_retrievers_report_a_dead_backend(ragd):
    """A failing source: both retrievers still return documents, and their
    metadata says the answer is partial and which source failed."""
    ragd.fault("vector", fail=True)
    try:
        docs = LCRetriever(base_url=ragd.url, api_key=ragd.query_key, k=2).invoke("wing flutter")
        nodes = LIRetriever(base_url=ragd.url, api_key=ragd.query_key, k=2).retrieve("wing flutter")
    finally:
        ragd.fault("vector")
    assert docs and nodes
    for m in [docs[0].metadata, nodes[0].node.metadata]:
        assert m["partial"] is True
        assert m["sources"]["vector"]["status"] == "error" and m["sources"]["keyword"]["status"] == "ok"


def test_tenant_key_through_a_retriever(ragd):
    docs = LCRetriever(base_url=ragd.url, api_key=ragd.tenant_key, k=4).invoke("wing flutter")
    assert [d.id for d in docs] == ["acme-1"]
