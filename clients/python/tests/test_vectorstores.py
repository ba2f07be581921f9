"""The LangChain and LlamaIndex vector stores against a live ragd.

The documents live in their own tenants and use words no other test
searches for, and are deleted at the end, so the other tests' rankings do
not move."""

from __future__ import annotations

import datetime as dt

import pydantic
import pytest
from langchain_core.documents import Document as LCDocument
from llama_index.core import Document as LIDocument
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import MetadataMode
from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters

from ragd_client import Client, RagdAPIError, RagdError, RagdWriteError, RetryPolicy
from ragd_client.langchain import RagdRetriever as LCRetriever
from ragd_client.langchain import RagdVectorStore as LCStore
from ragd_client.langchain import mmr_select
from ragd_client.llama_index import RagdRetriever as LIRetriever
from ragd_client.llama_index import RagdVectorStore as LIStore
from ragd_client.llama_index import ServerSideEmbedding

LC_TENANT = "vs-lc"
LI_TENANT = "vs-li"


def _skip_without_typed_metadata(e: Exception) -> None:
    """Skips the test when ragd refused typed metadata because it stores
    strings only: every document failed invalid_metadata (issue 29 item 6:
    per document), or, before that, the batch was a 400 invalid_documents."""
    if isinstance(e, RagdWriteError):
        if e.failed and len(e.failed) == len(e.results) and all(r.code == "invalid_metadata" for r in e.failed):
            pytest.skip(f"this ragd stores string metadata only: {e.failed[0].error}")
    elif e.code == "invalid_documents" and ".metadata." in e.message:
        pytest.skip(f"this ragd stores string metadata only: {e.message}")

LC_DOCS = [
    LCDocument(id="lc-b1", page_content="invoice dispute over a late payment fee", metadata={"dept": "billing", "kind": "ticket"}),
    LCDocument(id="lc-b2", page_content="invoice dispute about a refund for a cancelled order", metadata={"dept": "billing", "kind": "note"}),
    LCDocument(id="lc-b3", page_content="invoice dispute: customer charged twice this month", metadata={"dept": "billing", "kind": "ticket"}),
    LCDocument(id="lc-s1", page_content="invoice dispute escalated by the support desk", metadata={"dept": "support", "kind": "ticket"}),
    LCDocument(id="lc-s2", page_content="password reset does not arrive by mail", metadata={"dept": "support", "kind": "ticket"}),
]


@pytest.fixture(scope="module")
def lc_store(ragd):
    store = LCStore.from_documents(LC_DOCS, base_url=ragd.url, api_key=ragd.admin_key, tenant=LC_TENANT)
    yield store
    store.delete([d.id for d in LC_DOCS] + ["lc-dup", "lc-a1", "lc-a2", "lc-typed-1", "lc-typed-2", "lc-typed-3"])
    store.close()


def test_langchain_from_documents_and_retriever(lc_store):
    r = lc_store.as_retriever(search_kwargs={"k": 2, "filter": {"dept": "billing"}})
    docs = r.invoke("invoice dispute")
    assert len(docs) == 2 and {d.id for d in docs} <= {"lc-b1", "lc-b2", "lc-b3"}
    for d in docs:
        assert d.metadata["dept"] == "billing", "the document's own metadata comes back"
        st = d.metadata["ragd"]
        assert st["partial"] is False and st["sources"]["vector"]["status"] == "ok" and st["rank"] >= 1

    assert len(r.invoke("invoice dispute", k=1)) == 1, "per-call k"
    got = r.invoke("invoice dispute", filter={"dept": "support"})
    assert [d.id for d in got][0] == "lc-s1" and {d.metadata["dept"] for d in got} == {"support"}, "per-call filter"
    got = lc_store.as_retriever(search_kwargs={"k": 5, "filter": {"$and": [{"dept": "billing"}, {"kind": "note"}]}}).invoke("invoice")
    assert [d.id for d in got] == ["lc-b2"]
    got = lc_store.similarity_search("invoice dispute", k=5, filter={"dept": {"$in": ["support", "nobody"]}})
    assert sorted(d.id for d in got) == ["lc-s1", "lc-s2"]


def test_langchain_scores_and_ids(lc_store):
    pairs = lc_store.similarity_search_with_score("invoice dispute", k=4)
    scores = [s for _, s in pairs]
    assert len(pairs) == 4 and scores == sorted(scores, reverse=True) and scores[-1] > 0
    assert all(d.metadata["ragd"]["score"] == s for d, s in pairs)

    got = {d.id: d for d in lc_store.get_by_ids(["lc-b2", "nope", "lc-s2"])}
    assert set(got) == {"lc-b2", "lc-s2"}
    assert got["lc-b2"] == LC_DOCS[1], "stored text and metadata, exactly"


def test_langchain_score_threshold(lc_store):
    """Relevance is the fused score as a fraction of the best a hit could
    have (first in every list that returned candidates): a query equal to
    a document's text ranks that document first in every list, well above
    the others (this ragd fuses with dbsf, keyword weight 1, vector 0.1)."""
    pairs = lc_store.similarity_search_with_relevance_scores(LC_DOCS[4].page_content, k=5)
    assert pairs[0][0].id == "lc-s2" and pairs[0][1] > 0.3 and all(s < 0.1 for _, s in pairs[1:])
    r = lc_store.as_retriever(search_type="similarity_score_threshold",
                              search_kwargs={"k": 5, "score_threshold": 0.3})
    assert [d.id for d in r.invoke(LC_DOCS[4].page_content)] == ["lc-s2"]
    rel = lc_store.similarity_search_with_relevance_scores("invoice dispute", k=5)
    assert rel and all(0.0 <= s <= 1.0 for _, s in rel)
    st = rel[0][0].metadata["ragd"]
    assert abs(rel[0][1] * 1.1 - st["score"]) < 1e-9, "dbsf: the fused score over the sum of the weights"


def test_langchain_score_threshold_keeps_keyword_only_hits(lc_store):
    """A hit only the keyword source found has a relevance on the same
    scale as the others (it was 0 when relevance was the vector
    similarity, so any threshold dropped it), and relevance keeps ragd's
    order."""
    one_vector = {"vector": {"k": 1}}
    pairs = lc_store.similarity_search_with_relevance_scores("invoice dispute", k=5, sources=one_vector)
    rel = [s for _, s in pairs]
    assert len(pairs) >= 3 and rel == sorted(rel, reverse=True) and 0 < rel[-1] <= rel[0] <= 1
    keyword_only = [d.id for d, _ in pairs if d.metadata["ragd"]["rank"] > 1]
    assert keyword_only, "the vector source returned one candidate: the rest are the keyword source's"
    r = lc_store.as_retriever(search_type="similarity_score_threshold",
                              search_kwargs={"k": 5, "score_threshold": rel[-1], "sources": one_vector})
    assert [d.id for d in r.invoke("invoice dispute")] == [d.id for d, _ in pairs]


def test_langchain_mmr(lc_store):
    lc_store.add_documents([LCDocument(id="lc-dup", page_content=LC_DOCS[0].page_content, metadata={"dept": "billing"})])
    top = lc_store.similarity_search(LC_DOCS[0].page_content, k=2, filter={"dept": "billing"})
    assert {d.id for d in top} == {"lc-b1", "lc-dup"}, "plain similarity returns the duplicate"
    r = lc_store.as_retriever(search_type="mmr", search_kwargs={"k": 2, "fetch_k": 10, "lambda_mult": 0.3,
                                                                  "filter": {"dept": "billing"}})
    ids = [d.id for d in r.invoke(LC_DOCS[0].page_content)]
    assert len(ids) == 2 and len({"lc-b1", "lc-dup"} & set(ids)) == 1, f"MMR keeps one of two equal texts: {ids}"


def test_mmr_select():
    texts = ["a b c", "a b c", "x y z", "a b d"]
    assert mmr_select([1.0, 1.0, 0.5, 0.9], texts, 2, 1.0) == [0, 1], "lambda 1: relevance only"
    assert mmr_select([1.0, 1.0, 0.5, 0.9], texts, 2, 0.3) == [0, 2], "low lambda: the different text"
    assert mmr_select([1.0, 0.9], texts[:2], 5, 0.5) == [0, 1]
    assert mmr_select([], [], 3, 0.5) == []


async def test_langchain_async(ragd, lc_store):
    store = await LCStore.afrom_texts(["async note on invoice dispute", "async reminder on password reset"],
                                      metadatas=[{"dept": "billing"}, {"dept": "support"}], ids=["lc-a1", "lc-a2"],
                                      base_url=ragd.url, api_key=ragd.admin_key, tenant=LC_TENANT)
    docs = await store.as_retriever(search_kwargs={"k": 2, "filter": {"dept": "support"}}).ainvoke("async reminder")
    assert docs and all(d.metadata["dept"] == "support" for d in docs) and docs[0].id == "lc-a2"
    pairs = await store.asimilarity_search_with_score("async note", k=1, filter={"dept": "billing"})
    assert [d.id for d, _ in pairs] == ["lc-a1"]
    mmr = await store.amax_marginal_relevance_search("async", k=1, filter={"dept": "billing"})
    assert [d.id for d in mmr] == ["lc-a1"]
    assert [d.id for d in await store.aget_by_ids(["lc-a1"])] == ["lc-a1"]
    # One pooled async client per event loop, reused by every call.
    assert store._conn.aio() is store._conn.aio()
    assert await store.adelete(["lc-a1", "lc-a2"]) is True
    assert await store.aget_by_ids(["lc-a1", "lc-a2"]) == []
    pooled = store._conn.aio()
    await store.aclose()
    assert pooled._http.is_closed and store._conn.aio() is not pooled, "closed, and a new one at the next use"
    await store.aclose()
    store.close()


def test_langchain_store_refuses(ragd, lc_store):
    with pytest.raises(ValueError):
        LCStore.from_texts(["x"], embedding=object(), base_url=ragd.url)
    with pytest.raises(ValueError):
        lc_store.delete(None)
    with pytest.raises(TypeError):
        lc_store.similarity_search("x", k=1, filtr={"dept": "billing"})
    with pytest.raises(RagdWriteError) as e:
        lc_store.add_texts(["a fine text", ""], ids=["lc-a1", "lc-bad"])
    assert [r.id for r in e.value.failed] == ["lc-bad"] and e.value.failed[0].code == "empty_document"
    assert [d.id for d in lc_store.get_by_ids(["lc-a1"])] == ["lc-a1"], "the batch's other documents are written"


def test_langchain_typed_metadata_and_range_filter(ragd, lc_store):
    """issue 30's "done when": ints and dates in metadata, a range filter.
    It needs a ragd with typed metadata (issue 30 item 1); one that stores
    strings only refuses the documents, and the test says so."""
    docs = [
        LCDocument(id="lc-typed-1", page_content="typed report on turbine blades", metadata={"page": 2, "published": dt.date(2023, 3, 1)}),
        LCDocument(id="lc-typed-2", page_content="typed report on turbine blades, part two", metadata={"page": 5, "published": dt.date(2024, 6, 1)}),
        LCDocument(id="lc-typed-3", page_content="typed report on turbine blades, part three", metadata={"page": 9, "published": dt.date(2024, 9, 1)}),
    ]
    try:
        lc_store.add_documents(docs)
    except (RagdAPIError, RagdWriteError) as e:
        _skip_without_typed_metadata(e)
        raise
    r = lc_store.as_retriever(search_kwargs={"k": 2, "filter": {"page": {"$gte": 3}}})
    got = r.invoke("typed report turbine blades")
    assert {d.id for d in got} == {"lc-typed-2", "lc-typed-3"}
    assert all(isinstance(d.metadata["page"], int) and isinstance(d.metadata["published"], dt.datetime) for d in got)
    got = lc_store.similarity_search("typed report", k=3, filter={"published": {"$lt": dt.date(2024, 1, 1)}})
    assert [d.id for d in got] == ["lc-typed-1"]


def test_retrievers_refuse_unknown_arguments(ragd):
    with pytest.raises(pydantic.ValidationError):
        LCRetriever(url=ragd.url)
    with pytest.raises(TypeError):
        LIRetriever(url=ragd.url)
    r = LCRetriever(base_url=ragd.url, api_key=ragd.query_key, k=3)
    assert len(r.invoke("wing flutter", k=1)) == 1, "per-call k (returned 3 before)"
    with pytest.raises(TypeError):
        r.invoke("wing flutter", bogus=1)


def test_retriever_knobs_when_every_source_is_down(ragd):
    """retry= and deadline= are accepted; with every source failing the
    call ends with ragd's not_enough_sources instead of waiting."""
    with Client(ragd.url, api_key=ragd.query_key) as c:
        names = [n for n, s in c.query("wing flutter").sources.items() if s.status == "ok"]
    for n in names:
        ragd.fault(n, fail=True)
    try:
        r = LCRetriever(base_url=ragd.url, api_key=ragd.query_key, retry=RetryPolicy(max_retries=0), deadline=5.0)
        with pytest.raises(RagdAPIError) as e:
            r.invoke("wing flutter")
        li = LIRetriever(base_url=ragd.url, api_key=ragd.query_key, retry=RetryPolicy(max_retries=0), timeout=5.0)
        with pytest.raises(RagdAPIError) as e2:
            li.retrieve("wing flutter")
    finally:
        for n in names:
            ragd.fault(n)
    assert e.value.status_code == 503 and e.value.code == "not_enough_sources"
    assert e2.value.code == "not_enough_sources"


def test_llama_index_retriever_keeps_status_out_of_prompts(ragd):
    aero = MetadataFilters(filters=[MetadataFilter(key="topic", value="aero")])
    nodes = LIRetriever(base_url=ragd.url, api_key=ragd.query_key, k=1, filter=aero).retrieve("wing flutter")
    node = nodes[0].node
    assert node.metadata["sources"]["vector"]["status"] == "ok" and node.metadata["topic"] == "aero"
    for mode in (MetadataMode.LLM, MetadataMode.EMBED):
        seen = node.get_content(metadata_mode=mode)
        assert "topic: aero" in seen and "title: Wing flutter" in seen, "the document's own metadata stays"
        for key in ("sources", "partial", "degraded", "score", "rank"):
            assert f"{key}:" not in seen, f"{key} reaches {mode}: {seen!r}"


LI_DOCS = [
    LIDocument(doc_id="li-d1", text="Invoice dispute over a late fee. The customer asks for a credit.", metadata={"dept": "billing"}),
    LIDocument(doc_id="li-d2", text="Invoice dispute about a double charge. Refund issued by finance.", metadata={"dept": "billing"}),
    LIDocument(doc_id="li-d3", text="Invoice dispute forwarded to the support desk.", metadata={"dept": "support"}),
]


def test_llama_index_vector_store_index(ragd):
    store = LIStore(base_url=ragd.url, api_key=ragd.admin_key, tenant=LI_TENANT)
    try:
        index = VectorStoreIndex.from_documents(
            LI_DOCS, storage_context=StorageContext.from_defaults(vector_store=store), embed_model=ServerSideEmbedding(),
            transformations=[SentenceSplitter(chunk_size=64, chunk_overlap=0, tokenizer=str.split)])
        billing = MetadataFilters(filters=[MetadataFilter(key="dept", value="billing")])
        nodes = index.as_retriever(similarity_top_k=2, filters=billing).retrieve("invoice dispute")
        assert len(nodes) == 2 and {n.node.ref_doc_id for n in nodes} == {"li-d1", "li-d2"}
        for n in nodes:
            assert n.node.metadata["dept"] == "billing" and n.score == n.node.metadata["ragd"]["score"] > 0
            assert "ragd" not in n.node.get_content(metadata_mode=MetadataMode.LLM)
        one = index.as_retriever(similarity_top_k=1, filters=billing).retrieve("invoice dispute")
        assert len(one) == 1

        either = MetadataFilters(filters=[MetadataFilter(key="dept", operator=FilterOperator.IN, value=["support"])])
        nodes = index.as_retriever(similarity_top_k=5, filters=either).retrieve("invoice dispute")
        assert [n.node.ref_doc_id for n in nodes] == ["li-d3"]

        # delete(ref_doc_id) removes every node of the document.
        ids = [n.node.node_id for n in index.as_retriever(similarity_top_k=5, filters=billing).retrieve("invoice")
               if n.node.ref_doc_id == "li-d1"]
        assert ids and len(store.get_nodes(node_ids=ids)) == len(ids)
        index.delete_ref_doc("li-d1")
        assert store.get_nodes(node_ids=ids) == []
        left = index.as_retriever(similarity_top_k=5, filters=billing).retrieve("invoice dispute")
        assert {n.node.ref_doc_id for n in left} == {"li-d2"}
        # Nodes by filter alone: every billing node left, with its document.
        by_filter = store.get_nodes(filters=billing)
        assert by_filter and {n.ref_doc_id for n in by_filter} == {"li-d2"}
        assert all(n.metadata == {"dept": "billing"} for n in by_filter), "ref_doc_id is a relationship, not metadata"
        store.delete_nodes(filters=MetadataFilters(filters=[MetadataFilter(key="dept", value="support")]))
        assert index.as_retriever(similarity_top_k=5, filters=either).retrieve("invoice dispute") == []
    finally:
        for d in LI_DOCS:
            store.delete(d.doc_id)
        store.close()


async def test_llama_index_async(ragd):
    store = LIStore(base_url=ragd.url, api_key=ragd.admin_key, tenant=LI_TENANT)
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

    nodes = [TextNode(id_="li-n1", text="async invoice dispute note", metadata={"dept": "billing"},
                      relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id="li-async")})]
    index = VectorStoreIndex(nodes, storage_context=StorageContext.from_defaults(vector_store=store),
                             embed_model=ServerSideEmbedding(), use_async=True)
    got = await index.as_retriever(similarity_top_k=2, filters=MetadataFilters(
        filters=[MetadataFilter(key="dept", value="billing")])).aretrieve("async invoice dispute")
    assert [n.node.node_id for n in got] == ["li-n1"] and got[0].node.ref_doc_id == "li-async"
    await store.adelete("li-async")
    assert await store.aget_nodes(node_ids=["li-n1"]) == []
    with pytest.raises(pydantic.ValidationError):
        LIStore(url=ragd.url)


def test_langchain_indexing_api(ragd):
    """LangChain's indexing API drives the store: it adds with ids and a
    batch size, skips unchanged documents, and deletes what left the source."""
    from langchain_core.indexing import InMemoryRecordManager, index

    store = LCStore(base_url=ragd.url, api_key=ragd.admin_key, tenant=LC_TENANT)
    rm = InMemoryRecordManager("ragd/test")
    rm.create_schema()
    docs = [LCDocument(page_content="indexing api page one about gearbox wear", metadata={"source": "g.md"}),
            LCDocument(page_content="indexing api page two about gearbox oil", metadata={"source": "g.md"})]
    try:
        r = index(docs, rm, store, cleanup="full", source_id_key="source", key_encoder="sha256")
        assert (r["num_added"], r["num_skipped"], r["num_deleted"]) == (2, 0, 0)
        r = index(docs[:1], rm, store, cleanup="full", source_id_key="source", key_encoder="sha256")
        assert (r["num_added"], r["num_skipped"], r["num_deleted"]) == (0, 1, 1)
        got = store.similarity_search("gearbox", k=5, filter={"source": "g.md"})
        assert [d.page_content for d in got] == [docs[0].page_content]
    finally:
        index([], rm, store, cleanup="full", source_id_key="source", key_encoder="sha256")
    assert store.similarity_search("gearbox", k=5, filter={"source": "g.md"}) == []


def test_llama_index_typed_metadata_and_range_filter(ragd):
    """A VectorStoreIndex over numbers and times with range MetadataFilters;
    needs typed metadata (issue 30 item 1), skipped with the reason otherwise."""
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

    store = LIStore(base_url=ragd.url, api_key=ragd.admin_key, tenant=LI_TENANT)
    nodes = [TextNode(id_=f"li-typed-{p}", text=f"typed manual on bearing wear, page {p}",
                      metadata={"page": p, "published": dt.datetime(2024, p, 1, tzinfo=dt.timezone.utc)},
                      relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id="li-typed")})
             for p in (2, 5, 7)]
    try:
        index = VectorStoreIndex(nodes, storage_context=StorageContext.from_defaults(vector_store=store),
                                 embed_model=ServerSideEmbedding())
    except (RagdAPIError, RagdWriteError) as e:
        _skip_without_typed_metadata(e)
        raise
    try:
        f = MetadataFilters(filters=[MetadataFilter(key="page", operator=FilterOperator.GTE, value=3),
                                     MetadataFilter(key="page", operator=FilterOperator.LT, value=7)])
        got = index.as_retriever(similarity_top_k=3, filters=f).retrieve("typed manual bearing wear")
        assert [n.node.node_id for n in got] == ["li-typed-5"] and got[0].node.metadata["page"] == 5
        # A string range operand is a time: published before May.
        f = MetadataFilters(filters=[MetadataFilter(key="published", operator=FilterOperator.LT,
                                                    value="2024-05-01T00:00:00Z")])
        got = index.as_retriever(similarity_top_k=3, filters=f).retrieve("typed manual bearing wear")
        assert [n.node.node_id for n in got] == ["li-typed-2"]
        assert got[0].node.metadata["published"] == dt.datetime(2024, 2, 1, tzinfo=dt.timezone.utc)
    finally:
        store.delete("li-typed")


@pytest.mark.parametrize("use_async", [False, True])
async def test_llama_index_by_filter_past_one_search(ragd, use_async):
    """delete_nodes by filter deletes every node it selects, also more than
    one search can show (ragd has no listing endpoint: a search pages
    through one fused window of at most 1,000): here 1,125 of 1,250.
    get_nodes by filter reads every node across pages (125 here), and
    refuses, rather than cuts short, a selection larger than a window."""
    from llama_index.core.schema import TextNode

    tenant = f"{LI_TENANT}-bulk-{int(use_async)}"
    store = LIStore(base_url=ragd.url, api_key=ragd.admin_key, tenant=tenant, wait=60)
    n = 1250
    bulk = MetadataFilters(filters=[MetadataFilter(key="batch", value="bulk")])
    other = MetadataFilters(filters=[MetadataFilter(key="batch", value="other")])
    nodes = [TextNode(id_=f"bulk-{i:04d}", text=f"bulk node {i} about item {i % 37}",
                      metadata={"batch": "bulk" if i % 10 else "other"}) for i in range(n)]
    others = {nd.node_id for nd in nodes if nd.metadata["batch"] == "other"}

    async def call(name, *args, **kwargs):
        if use_async:
            return await getattr(store, "a" + name)(*args, **kwargs)
        return getattr(store, name)(*args, **kwargs)

    try:
        if use_async:
            await store.async_add(nodes)
        else:
            store.add(nodes)
        assert {nd.node_id for nd in await call("get_nodes", filters=other)} == others
        with pytest.raises(RagdError, match="1000 or more nodes match"):
            await call("get_nodes", filters=bulk)
        await call("delete_nodes", filters=bulk)
        left = await call("get_nodes", node_ids=[nd.node_id for nd in nodes])
        assert {nd.node_id for nd in left} == others
        assert {nd.node_id for nd in await call("get_nodes", filters=other)} == others
    finally:
        with Client(ragd.url, api_key=ragd.admin_key) as c:
            for i in range(0, n, 500):
                c.delete([nd.node_id for nd in nodes[i:i + 500]], wait=60)
        store.close()


async def test_deletes_by_id_past_one_request(lc_store, ragd):
    """A delete of more ids than one request may carry (1,000) is sent in
    batches; no ids is no request."""
    from llama_index.core.schema import TextNode

    ids = ["lc-many-0", "lc-many-1"] + [f"lc-missing-{i}" for i in range(1200)]
    lc_store.add_documents([LCDocument(id=i, page_content=f"many deletes {i}") for i in ids[:2]])
    assert len(lc_store.get_by_ids(ids[:2])) == 2
    assert lc_store.delete(ids) is True
    assert lc_store.get_by_ids(ids[:2]) == []
    assert await lc_store.adelete(ids) is True and lc_store.delete([]) is True

    li = LIStore(base_url=ragd.url, api_key=ragd.admin_key, tenant=LI_TENANT, batch_size=5000)
    try:
        li.add([TextNode(id_="li-many-0", text="many deletes")])
        li.delete_nodes(node_ids=["li-many-0"] + [f"li-missing-{i}" for i in range(1200)])
        assert li.get_nodes(node_ids=["li-many-0"]) == []
        await li.adelete_nodes(node_ids=[f"li-missing-{i}" for i in range(1200)])
    finally:
        li.close()


def test_llama_index_by_filter_on_a_smaller_window(ragd):
    """A server whose max_window is below the window the store asks for
    (here: the store asks for more than this server's 1,000) answers
    invalid_window; the store then searches with the server's default."""
    from llama_index.core.schema import TextNode

    store = LIStore(base_url=ragd.url, api_key=ragd.admin_key, tenant=LI_TENANT + "-win")
    store._window = 5000  # above this server's max_window
    try:
        store.add([TextNode(id_=f"win-{i}", text=f"window node {i}", metadata={"w": "yes"}) for i in range(3)])
        got = store.get_nodes(filters=MetadataFilters(filters=[MetadataFilter(key="w", value="yes")]))
        assert sorted(n.node_id for n in got) == ["win-0", "win-1", "win-2"] and store._window is None
    finally:
        store.delete_nodes(node_ids=[f"win-{i}" for i in range(3)])
        store.close()
