"""The filter language and typed metadata on the client side: what is sent
for each LangChain dict filter and LlamaIndex MetadataFilters, and what is
refused before anything is sent. The richer forms are checked here against
docs/api.md ("Filters"); the live tests run the forms today's server reads."""

from __future__ import annotations

import datetime as dt
import json

import httpx
import pytest
from llama_index.core.vector_stores import FilterCondition, FilterOperator, MetadataFilter, MetadataFilters

from ragd_client import Client, Document, RagdError, RagdFilterError
from ragd_client._filter import to_wire
from ragd_client._values import decode_metadata, encode_metadata
from ragd_client.llama_index import filters_to_wire

UTC = dt.timezone.utc


@pytest.mark.parametrize(
    "given,want",
    [
        # The forms every release reads: string equalities as lists.
        ({"dept": "billing"}, {"dept": ["billing"]}),
        ({"dept": ["billing", "support"]}, {"dept": ["billing", "support"]}),
        ({"dept": ("billing",)}, {"dept": ["billing"]}),
        ({"dept": {"$eq": "billing"}}, {"dept": ["billing"]}),
        ({"dept": {"$in": ["a", "b"]}}, {"dept": ["a", "b"]}),
        ({"$and": [{"dept": "billing"}, {"lang": {"$in": ["en", "de"]}}]}, {"dept": ["billing"], "lang": ["en", "de"]}),
        # The operator form for everything else.
        ({"page": 3}, {"page": 3}),
        ({"public": True}, {"public": True}),
        ({"page": {"$gte": 3, "$lt": 10}}, {"page": {"$gte": 3, "$lt": 10}}),
        ({"score": {"$gt": 0.5}}, {"score": {"$gt": 0.5}}),
        ({"page": {"$in": [1, 2]}}, {"page": {"$in": [1, 2]}}),
        ({"dept": {"$ne": "billing"}}, {"dept": {"$ne": "billing"}}),
        ({"dept": {"$nin": ["a"]}}, {"dept": {"$nin": ["a"]}}),
        ({"dept": {"$eq": "a", "$exists": True}}, {"dept": {"$eq": "a", "$exists": True}}),
        ({"draft": {"$exists": False}}, {"draft": {"$exists": False}}),
        ({"page": {"$not": {"$gt": 5}}}, {"page": {"$not": {"$gt": 5}}}),
        ({"$not": {"dept": "billing"}}, {"$not": {"dept": ["billing"]}}),
        ({"$or": [{"dept": "a"}, {"page": {"$lte": 2}}]}, {"$or": [{"dept": ["a"]}, {"page": {"$lte": 2}}]}),
        # $and on one key twice stays an $and.
        ({"$and": [{"page": {"$gte": 1}}, {"page": {"$lte": 2}}]}, {"$and": [{"page": {"$gte": 1}}, {"page": {"$lte": 2}}]}),
        ({"dept": "a", "$and": [{"dept": "b"}]}, {"dept": ["a"], "$and": [{"dept": ["b"]}]}),
        # Times: datetimes and dates as {"$time": ...}, a naive datetime as UTC.
        ({"published": {"$gte": dt.datetime(2024, 5, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=2)))}},
         {"published": {"$gte": {"$time": "2024-05-01T12:00:00+02:00"}}}),
        ({"published": dt.datetime(2024, 5, 1)}, {"published": {"$time": "2024-05-01T00:00:00+00:00"}}),
        ({"day": {"$lt": dt.date(2024, 5, 2)}}, {"day": {"$lt": {"$time": "2024-05-02T00:00:00+00:00"}}}),
        ({"published": {"$gte": "2024-01-01T00:00:00Z"}}, {"published": {"$gte": "2024-01-01T00:00:00Z"}}),
        # LangChain PGVector's $between.
        ({"page": {"$between": [3, 5]}}, {"page": {"$gte": 3, "$lte": 5}}),
        (None, None),
        ({}, None),
    ],
)
def test_to_wire(given, want):
    assert to_wire(given) == want


@pytest.mark.parametrize(
    "given,field",
    [
        ({"a": {"$like": "x%"}}, "filter.a.$like"),
        ({"$nor": [{"a": "b"}]}, "filter.$nor"),
        ({"a": None}, "filter.a"),
        ({"a": {"$in": []}}, "filter.a.$in"),
        ({"a": {"$in": "abc"}}, "filter.a.$in"),
        ({"a": {"$gte": True}}, "filter.a.$gte"),
        ({"a": {"$gte": [1]}}, "filter.a.$gte"),
        ({"a": {"$exists": "yes"}}, "filter.a.$exists"),
        ({"a": {}}, "filter.a"),
        ({"a": [{"x": 1}]}, "filter.a[0]"),
        ({"a": float("nan")}, "filter.a"),
        ({"$or": []}, "filter.$or"),
        ({"$or": [{"a": "b"}, {"c": {"$regex": "."}}]}, "filter.$or[1].c.$regex"),
        ({"a": {"$between": [1]}}, "filter.a.$between"),
        ({"name": {"$gt": "b"}}, "filter.name.$gt"),
        ({"day": {"$gte": "2024-05-01"}}, "filter.day.$gte"),
        ({"day": {"$gte": "2024-05-01T00:00:00"}}, "filter.day.$gte"),
        ({"a": object()}, "filter.a"),
    ],
)
def test_to_wire_refuses(given, field):
    with pytest.raises(RagdFilterError) as e:
        to_wire(given)
    assert e.value.field == field
    assert isinstance(e.value, ValueError) and isinstance(e.value, RagdError)


def _mf(key, value, op=FilterOperator.EQ):
    return MetadataFilter(key=key, value=value, operator=op)


@pytest.mark.parametrize(
    "given,want",
    [
        (MetadataFilters(filters=[_mf("dept", "aero")]), {"dept": ["aero"]}),
        (MetadataFilters(filters=[_mf("dept", "aero"), _mf("lang", ["en", "de"], FilterOperator.IN)]),
         {"dept": ["aero"], "lang": ["en", "de"]}),
        (MetadataFilters(filters=[_mf("page", 3, FilterOperator.GTE), _mf("page", 9, FilterOperator.LT)]),
         {"$and": [{"page": {"$gte": 3}}, {"page": {"$lt": 9}}]}),
        (MetadataFilters(filters=[_mf("page", 3)]), {"page": {"$eq": 3}}),
        (MetadataFilters(filters=[_mf("dept", "a", FilterOperator.NE)]), {"dept": {"$ne": "a"}}),
        (MetadataFilters(filters=[_mf("page", 1, FilterOperator.GT), _mf("page", 2, FilterOperator.LTE)],
                         condition=FilterCondition.OR),
         {"$or": [{"page": {"$gt": 1}}, {"page": {"$lte": 2}}]}),
        (MetadataFilters(filters=[_mf("dept", ["a"], FilterOperator.NIN)]), {"dept": {"$nin": ["a"]}}),
        (MetadataFilters(filters=[_mf("tags", ["a", "b"], FilterOperator.ANY)]), {"tags": ["a", "b"]}),
        (MetadataFilters(filters=[_mf("tags", ["a", "b"], FilterOperator.ALL)]), {"$and": [{"tags": ["a"]}, {"tags": ["b"]}]}),
        (MetadataFilters(filters=[_mf("tags", "a", FilterOperator.CONTAINS)]), {"tags": ["a"]}),
        (MetadataFilters(filters=[_mf("dept", "a"), _mf("lang", "en")], condition=FilterCondition.NOT),
         {"$not": {"$or": [{"dept": ["a"]}, {"lang": ["en"]}]}}),
        (MetadataFilters(filters=[_mf("dept", "a"),
                                  MetadataFilters(filters=[_mf("page", 1), _mf("page", 2)], condition=FilterCondition.OR)]),
         {"dept": ["a"], "$or": [{"page": {"$eq": 1}}, {"page": {"$eq": 2}}]}),
        (MetadataFilters(filters=[]), None),
    ],
)
def test_llama_index_filters(given, want):
    assert to_wire(filters_to_wire(given)) == want


@pytest.mark.parametrize("op", [FilterOperator.TEXT_MATCH, FilterOperator.TEXT_MATCH_INSENSITIVE, FilterOperator.IS_EMPTY])
def test_llama_index_filters_refused(op):
    with pytest.raises(RagdFilterError) as e:
        filters_to_wire(MetadataFilters(filters=[_mf("dept", "a", op)]))
    assert e.value.field == "filters[0].dept"


def test_metadata_round_trip():
    when = dt.datetime(2024, 5, 1, 10, 0, 0, 250000, tzinfo=UTC)
    meta = {"page": 3, "score": 0.5, "draft": False, "lang": "en", "when": when, "day": dt.date(2024, 5, 2),
            "tags": ["a", 2], "gone": None}
    wire = encode_metadata(meta, "metadata", ValueError)
    assert wire == {"page": 3, "score": 0.5, "draft": False, "lang": "en", "when": {"$time": "2024-05-01T10:00:00.250000+00:00"},
                    "day": {"$time": "2024-05-02T00:00:00+00:00"}, "tags": ["a", 2]}
    # What ragd answers: the same instant in UTC, any number of fraction digits.
    back = decode_metadata({**wire, "when": {"$time": "2024-05-01T10:00:00.25Z"}, "day": {"$time": "2024-05-02T00:00:00Z"}})
    assert back["when"] == when and back["day"] == dt.datetime(2024, 5, 2, tzinfo=UTC)
    assert back["tags"] == ["a", 2] and back["page"] == 3 and "gone" not in back
    with pytest.raises(ValueError):
        encode_metadata({"nested": {"a": 1}}, "metadata", ValueError)


def _capture():
    sent = []

    def handler(request):
        sent.append(json.loads(request.content))
        if request.url.path == "/v1/query":
            return httpx.Response(200, json={"hits": [], "sources": {}, "partial": False, "degraded": False, "total": 0, "took_ms": 1})
        return httpx.Response(200, json={"results": [{"id": "x", "status": "ok"}], "total": 1, "ok": 1, "failed": 0})

    return Client("http://ragd.test", transport=httpx.MockTransport(handler)), sent


def test_a_string_filter_value_is_one_value():
    """filter={"dept": "billing"} was sent as ["b","i","l","l","i","n","g"]."""
    c, sent = _capture()
    c.query("x", filter={"dept": "billing"})
    assert sent[-1]["filter"] == {"dept": ["billing"]}


def test_upsert_encodes_documents():
    from langchain_core.documents import Document as LCDocument

    c, sent = _capture()
    c.upsert([
        Document(id="d1", text="t", metadata={"when": dt.date(2024, 1, 2), "page": 3}),
        {"id": "d2", "text": "t", "metadata": {"when": dt.datetime(2024, 1, 2, tzinfo=UTC)}},
        LCDocument(page_content="lc text", metadata={"source": "a.pdf", "page": 1, "author": None}, id="lc-1"),
        LCDocument(page_content="no id"),
    ])
    docs = sent[-1]["documents"]
    assert docs[0] == {"id": "d1", "text": "t", "metadata": {"when": {"$time": "2024-01-02T00:00:00+00:00"}, "page": 3}}
    assert docs[1]["metadata"] == {"when": {"$time": "2024-01-02T00:00:00+00:00"}}
    assert docs[2] == {"id": "lc-1", "text": "lc text", "metadata": {"source": "a.pdf", "page": 1}}
    assert docs[3]["text"] == "no id" and len(docs[3]["id"]) == 36 and "metadata" not in docs[3]
    with pytest.raises(TypeError):
        c.upsert([42])


def test_llama_index_query_modes():
    from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode

    from ragd_client.llama_index import RagdVectorStore

    sent = []

    def handler(request):
        sent.append(json.loads(request.content))
        return httpx.Response(200, json={"hits": [], "sources": {}, "partial": False, "degraded": False, "total": 0, "took_ms": 1})

    store = RagdVectorStore(base_url="http://ragd.test", client=Client("http://ragd.test", transport=httpx.MockTransport(handler)),
                            sources={"graph": {"enabled": False}})
    store.query(VectorStoreQuery(query_str="q", similarity_top_k=3, mode=VectorStoreQueryMode.HYBRID, alpha=0.25,
                                 filters=MetadataFilters(filters=[_mf("dept", "a")]), doc_ids=["d1"]))
    assert sent[-1] == {"text": "q", "limit": 3, "filter": {"dept": ["a"], "ref_doc_id": ["d1"]},
                        "sources": {"graph": {"enabled": False}, "vector": {"weight": 0.25}, "keyword": {"weight": 0.75}}}
    store.query(VectorStoreQuery(query_str="q", mode=VectorStoreQueryMode.TEXT_SEARCH))
    assert sent[-1]["sources"] == {"graph": {"enabled": False}, "vector": {"enabled": False}}
    assert store.sources == {"graph": {"enabled": False}}, "a query does not change the store's options"
    for bad in (VectorStoreQuery(query_str="q", mode=VectorStoreQueryMode.MMR), VectorStoreQuery(query_str="q", alpha=2.0),
                VectorStoreQuery(query_embedding=[0.1])):
        with pytest.raises(ValueError):
            store.query(bad)
