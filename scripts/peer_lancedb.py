#!/usr/bin/env python3
"""LanceDB on the corpus `scripts/bench.sh scale` gives ragd, for README's
"At 100,000 documents, beside LanceDB" table.

Usage: peer_lancedb.py --corpus SYNTH.jsonl --queries QUERIES.jsonl --dir DIR
                       [--phase 10] [--clients 8] [--json]

LanceDB is used in-process with its defaults: the documents written in
batches of 10,000 (id, title, text, vector), a native full-text index on
title and on text (the keyword and hybrid queries match both), the default
vector index (IVF_PQ, cosine), and hybrid search with its default RRF
reranker, each query asking for id, title and text of the top 10. The
queries carry the same random unit vectors ragd gets.

Prints one JSON object: the time to write and to build each index (so
"searchable" can be read as write + full-text index, with exact vector
search, or with the IVF_PQ index too), p50/p99 and CPU ms per query of
keyword-only, vector-only and hybrid queries with one client for --phase
seconds, hybrid queries/s with --clients threads, vector recall@10 against
an exact numpy scan (index on, and refine_factor 10), RSS (VmRSS, RssAnon,
VmHWM) of this process after the runs, and the table's size on disk. The
process's CPU time includes LanceDB's own threads. Needs lancedb, pyarrow
and numpy.
"""
import argparse
import json
import os
import resource
import shutil
import threading
import time

os.environ.setdefault("LANCEDB_LOG", "error")  # one warning per query otherwise

import lancedb  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
from lancedb.index import FTS, IvfPq  # noqa: E402
from lancedb.query import MultiMatchQuery  # noqa: E402


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def proc_status():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
                out[k] = int(v.split()[0]) // 1024  # MiB
    return out


def du(path):
    n = 0
    for root, _, files in os.walk(path):
        for f in files:
            n += os.path.getsize(os.path.join(root, f))
    return n


def read_batches(path, dim, size=10000):
    schema = pa.schema([("id", pa.string()), ("title", pa.string()), ("text", pa.string()),
                        ("vector", pa.list_(pa.float32(), dim))])
    rows = {"id": [], "title": [], "text": [], "vector": []}
    with open(path) as f:
        for line in f:
            d = json.loads(line)
            for k in ("id", "title", "text"):
                rows[k].append(d.get(k, ""))
            rows["vector"].append(d["vector"])
            if len(rows["id"]) == size:
                yield pa.Table.from_pydict(rows, schema=schema)
                rows = {k: [] for k in rows}
    if rows["id"]:
        yield pa.Table.from_pydict(rows, schema=schema)


def timed(fn, queries, seconds):
    """Runs fn over the queries in a loop for seconds; latencies in ms and
    CPU ms per query."""
    lat, i = [], 0
    c0, end = cpu_s(), time.monotonic() + seconds
    while time.monotonic() < end:
        q = queries[i % len(queries)]
        i += 1
        t = time.perf_counter()
        fn(q)
        lat.append((time.perf_counter() - t) * 1000)
    cpu = (cpu_s() - c0) * 1000 / len(lat)
    lat.sort()
    return {"n": len(lat), "p50_ms": round(lat[len(lat) // 2], 2),
            "p99_ms": round(lat[min(len(lat) - 1, int(len(lat) * 0.99))], 2), "cpu_ms": round(cpu, 2)}


def parallel(fn, queries, seconds, clients):
    stop = time.monotonic() + seconds
    counts = [0] * clients

    def worker(w):
        i = w
        while time.monotonic() < stop:
            fn(queries[i % len(queries)])
            i += clients
            counts[w] += 1

    c0, t0 = cpu_s(), time.monotonic()
    ths = [threading.Thread(target=worker, args=(w,)) for w in range(clients)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    n, wall = sum(counts), time.monotonic() - t0
    return {"n": n, "qps": round(n / wall, 1), "cpu_ms": round((cpu_s() - c0) * 1000 / n, 2)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--phase", type=float, default=10)
    ap.add_argument("--clients", type=int, default=8)
    a = ap.parse_args()

    queries = [json.loads(l) for l in open(a.queries)]
    dim = len(queries[0]["vector"])
    shutil.rmtree(a.dir, ignore_errors=True)
    db = lancedb.connect(a.dir)
    out = {"lancedb": lancedb.__version__}

    c0, t0 = cpu_s(), time.monotonic()
    tbl = None
    for b in read_batches(a.corpus, dim):
        if tbl is None:
            tbl = db.create_table("docs", data=b)
        else:
            tbl.add(b)
    t1 = time.monotonic()
    tbl.create_index("title", config=FTS())
    tbl.create_index("text", config=FTS())
    t2 = time.monotonic()
    tbl.create_index("vector", config=IvfPq(distance_type="cosine"))
    t3 = time.monotonic()
    n = tbl.count_rows()
    out.update({"documents": n, "write_s": round(t1 - t0, 1), "fts_index_s": round(t2 - t1, 1),
                "vector_index_s": round(t3 - t2, 1), "ingest_cpu_s": round(cpu_s() - c0, 1),
                "docs_per_s_fts": round(n / (t2 - t0)), "docs_per_s_all": round(n / (t3 - t0))})

    cols = ["id", "title", "text"]

    def kw(q):
        return tbl.search(MultiMatchQuery(q["text"], ["title", "text"]), query_type="fts").limit(10).select(cols).to_list()

    def vec(q):
        return tbl.search(q["vector"]).distance_type("cosine").limit(10).select(cols).to_list()

    def hyb(q):
        return (tbl.search(query_type="hybrid").vector(q["vector"]).text(MultiMatchQuery(q["text"], ["title", "text"]))
                .limit(10).select(cols).to_list())

    for fn in (kw, vec, hyb):  # warm up
        for q in queries[:20]:
            fn(q)
    out["keyword"] = timed(kw, queries, a.phase)
    out["vector"] = timed(vec, queries, a.phase)
    out["hybrid"] = timed(hyb, queries, a.phase)
    out["hybrid_parallel"] = parallel(hyb, queries, a.phase, a.clients)
    out["hybrid_parallel"]["clients"] = a.clients
    out["rss_mib"] = proc_status()
    out["disk_mib"] = round(du(a.dir) / 2**20)

    # Recall@10 of the default vector search against an exact scan.
    vecs = np.stack([np.asarray(r, dtype=np.float32) for r in
                     tbl.to_arrow().column("vector").to_numpy(zero_copy_only=False)])
    ids = tbl.to_arrow().column("id").to_pylist()
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    hits = {"default": 0, "refine_factor_10": 0}
    for q in queries:
        qv = np.asarray(q["vector"], dtype=np.float32)
        qv /= np.linalg.norm(qv)
        truth = {ids[i] for i in np.argsort(-(vecs @ qv), kind="stable")[:10]}
        got = {r["id"] for r in tbl.search(q["vector"]).distance_type("cosine").limit(10).select(["id"]).to_list()}
        hits["default"] += len(got & truth)
        got = {r["id"] for r in tbl.search(q["vector"]).distance_type("cosine").refine_factor(10).limit(10)
               .select(["id"]).to_list()}
        hits["refine_factor_10"] += len(got & truth)
    out["recall_at_10"] = {k: round(v / (10 * len(queries)), 3) for k, v in hits.items()}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
