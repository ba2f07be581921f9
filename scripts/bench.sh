#!/usr/bin/env bash
# Load benchmarks over loopback, bounded in time: the evidence for README's
# figures (CI runs correctness tests only).
#
#   scripts/bench.sh load embedded   ragd with its embedded stores: healthy,
#                                    then the graph store hung and the keyword
#                                    index slowed by fault injection
#   scripts/bench.sh load servers    ragd on PostgreSQL + Neo4j servers of its own
#                                    (scripts/services.sh in a scratch state
#                                    directory, ports BENCH_PORT+1..): healthy,
#                                    Neo4j SIGSTOPped, PostgreSQL SIGSTOPped,
#                                    Neo4j restarted
#   scripts/bench.sh load hung       ragd with its embedded stores, open loop:
#                                    BENCH_RATE (200) queries a second from up to
#                                    BENCH_CLIENTS (64) clients, more than the
#                                    vector store's concurrency limit, healthy,
#                                    then the vector store hung until its breaker
#                                    opens, one phase open (probes under way),
#                                    healed; then the guards' shed and timeout
#                                    counters and the probe trials from the log
#   scripts/bench.sh load semantic   ragd with its embedded stores and the built-in
#                                    model, query-vector LRU off (every query is
#                                    embedded, as with real traffic), per variant
#                                    of BENCH_VARIANTS ("int8 fp32 hashing": the
#                                    model in each precision, then the hashing
#                                    embedder as the comparison row), each on a
#                                    fresh ragd: Cranfield ingested (documents/s
#                                    and ragd's CPU ms per document), hybrid
#                                    queries closed loop at BENCH_CLIENT_LIST
#                                    ("1 2 8 32") clients, then open loop at
#                                    80 % of the best closed-loop rate; per row
#                                    req/s, p50/p99, CPU ms per query, the share
#                                    of answers with vectors (vector ok) and the
#                                    embedder's own took_ms p50 / p99
#
# Each prints one markdown table (req/s, p50/p99, CPU ms per query, each
# source's share of ok answers, breaker transitions per phase) and a summary
# of the goals under it. Paste both into README's "Under load" section with
# the machine they ran on (nproc, CPU model) and the date.
#
#   scripts/bench.sh scale N         ragd with its embedded stores on N synthetic
#                                    documents (Cranfield and copies with words
#                                    swapped, made by ../shared/tools/synth_corpus.py,
#                                    with vectors mixed from real embeddings by
#                                    cmd/ragd-vectors; each query's exact top 10
#                                    computed once): ingest rate
#                                    and ragd's CPU time per document, the
#                                    background work after it (waited for:
#                                    the query rows are queries alone), keyword-only,
#                                    vector-only and hybrid (shipped defaults)
#                                    latency with 1 client, hybrid req/s and partial
#                                    answers with 8, RSS and size on disk; then the
#                                    graph (dormant with the shipped defaults) asked
#                                    for, the time until it answers, hybrid with the
#                                    graph source and expansion switched on, each
#                                    source's time inside the answers, RSS and disk
#                                    with the graph, the vector source's recall@10
#                                    against the exact top 10 (through the API) and
#                                    the vectors' structure. One table for README's "At
#                                    100,000 documents" section. Needs python3 and
#                                    jq. BENCH_LANCEDB=PYTHON also runs
#                                    scripts/peer_lancedb.py on the same files with
#                                    that Python (which has lancedb) and prints its
#                                    JSON line.
#   scripts/bench.sh scale N servers the same on PostgreSQL + pgvector + Neo4j of the
#                                    benchmark's own (deploy/rag.servers.yaml), the
#                                    documents spread over BENCH_TENANTS tenants and
#                                    written by BENCH_WRITERS concurrent `ragd ingest`;
#                                    adds the time until the HNSW index holds every
#                                    row, RSS of PostgreSQL and Neo4j, their disk,
#                                    pgvector recall@10 against exact search per
#                                    ef_search and for one tenant (ragd-bench
#                                    -pg-recall), and a second replica joining: how
#                                    long until its keyword index is current and
#                                    what /readyz says meanwhile.
#   scripts/bench.sh scale N servers --keyword opensearch
#                                    the same with the keyword index on an
#                                    OpenSearch node of the benchmark's own
#                                    (deploy/rag.opensearch.yaml; heap
#                                    BENCH_OPENSEARCH_HEAP, default 1g); adds its
#                                    RSS and disk. --keyword bleve is the default.
#                                    With BENCH_PG_DSN (a PostgreSQL of your own
#                                    holding the corpus already, loaded with
#                                    `ragd-bench -pg-load`, for sizes whose
#                                    ingest through the API takes too long) the
#                                    bench starts no PostgreSQL or Neo4j, runs
#                                    with the graph off (it loads the corpus
#                                    itself first when the table is empty),
#                                    writes nothing through ragd, and its
#                                    ingest row is the keyword store applying the
#                                    record's change log from empty (what a new
#                                    replica does; so no second replica is run).
#
#   scripts/bench.sh replicas        two ragd replicas on PostgreSQL + pgvector + Neo4j
#                                    of the benchmark's own (deploy/rag.servers.yaml,
#                                    shipped defaults): Cranfield ingested through A
#                                    (or BENCH_DOCS synthetic documents, as scale
#                                    makes them), every store current, then B
#                                    started with an empty data_dir and waited for;
#                                    BENCH_CLIENTS hybrid query clients split over
#                                    A and B for BENCH_PHASE without writes, then
#                                    the same while ragd-bench upserts the corpus
#                                    (each pass with changed texts) through A at
#                                    BENCH_WRITE_RATE documents a second in batches
#                                    of BENCH_WRITE_BATCH, then again without; each
#                                    replica's apply lag read from GET
#                                    /v1/status/health every second, the CPU
#                                    seconds of A, B, PostgreSQL and Neo4j per phase.
#                                    One table (per replica and phase: req/s,
#                                    p50/p99, partial answers, lag in log entries
#                                    and seconds, max / p50; the writes achieved
#                                    and how long until both replicas were current
#                                    after them) for README's "Replicas" section.
#
#   scripts/bench.sh embed           the built-in embedder beside ONNX Runtime
#                                    (Python, 2 threads) on the same model and
#                                    texts, for each precision of
#                                    BENCH_PRECISIONS ("int8 fp32"; ONNX
#                                    Runtime's int8 is its quantize_dynamic):
#                                    documents/s and CPU per document on
#                                    BENCH_DOCS (128) Cranfield documents, one
#                                    query's p50/p99 latency and CPU, in
#                                    interleaved rounds (BENCH_ROUNDS, 2; best of
#                                    each); then query embedding under load: 1,
#                                    2, 8 and 32 closed-loop clients and (built-in)
#                                    open loop at 80 % of the best rate,
#                                    BENCH_LOAD_QUERIES (1500) queries a row
#                                    (ONNX Runtime BENCH_ORT_SECONDS, 8, a row).
#                                    Two tables for docs/embedders.md and README.
#                                    Needs RAG_TEST_MODEL_DIR (the model
#                                    directory) and a Python with onnxruntime,
#                                    onnx, tokenizers and numpy (BENCH_PYTHON,
#                                    default python3); the ONNX graph is
#                                    BENCH_ONNX, else the one
#                                    embedder/builtin/testdata/gen_reference.py
#                                    fetches. RAGD_KERNEL=avx2 (or go) measures
#                                    the built-in's slower kernels on this CPU.
#
# Settings (environment): RAG_CRANFIELD_DIR (default ../shared/data/cranfield),
# BENCH_CLIENTS (8; 64 for hung), BENCH_PHASE (10s; 12s for hung, longer
# than the cooldown; 30s for replicas), BENCH_PORT (18090), BENCH_RESET_S (10), BENCH_RATE
# (hung only; 200), BENCH_EMBEDDER (load, scale and replicas: builtin, the
# shipped model, which must be in the model cache (scripts/model.sh) or the
# run stops rather than measure the hashing stand-in; hashing measures the
# stores alone, the labelled second row), BENCH_PRECISION (builtin: the
# encoder's precision; default the CPU's), BENCH_QUERY_CACHE (0: the
# query-vector LRU off, since the benchmark's queries repeat and real ones
# mostly do not), BENCH_WARMUP (load: 3s, 30s with servers; then every
# breaker must have closed), servers: BENCH_NEO4J_JAVA_OPTS (Neo4j's JVM flags; scale
# and replicas: -XX:+UseParallelGC, the full JIT of a long-running server; load: the test
# servers' C1-only flags, which start faster, as its restart phase needs).
# scale only: BENCH_LOCK (a file: the timed query and recall phases run
# one at a time under an exclusive flock on it, at niceness 0; the ingest
# and the waits for the stores do not), BENCH_CACHE (a directory keeping the generated corpora between
# runs, the pool of real vectors, the queries and their exact answers;
# default a temporary one), BENCH_VECTORS (mixed: documents carry vectors
# mixed from all-MiniLM-L6-v2 vectors of real sentences, queries their own
# real vectors, internal/vecgen; making the pool needs the built-in model,
# scripts/model.sh; none: the embedder embeds texts), BENCH_RECALL_QUERIES
# (200: queries of the recall measures), BENCH_CATCHUP_S (3600: the longest wait after the
# ingest for the derived stores to apply the change log), BENCH_BATCH (256:
# documents per ingest request). scale servers only: BENCH_WRITERS (8),
# BENCH_TENANTS (3), BENCH_PG_SHARED_BUFFERS (2GB), BENCH_NEO4J_HEAP (1g),
# BENCH_NEO4J_PAGECACHE (2g), BENCH_INDEX_MEM_MB (2048: memory
# for a bulk build of the HNSW index). scale only: BENCH_WRITES_ONLY (set:
# stop after the ingest row, for the write rate alone), BENCH_WRITES_PASSES (1; with
# BENCH_WRITES_ONLY: write the corpus that many times, each later pass under
# new ids on the warm servers, a row each), BENCH_PROFILE_DIR
# (a directory: keep ragd's heap profile taken after the query runs,
# heap-N-MODE.pprof), BENCH_KEEP_DATA (a path that does not exist: move
# ragd's data directory there at the end, with the bench's rag.yaml,
# instead of deleting it; delete it by hand).
# replicas only: BENCH_DOCS (0: Cranfield; else synthetic documents, with
# scale's BENCH_CACHE, BENCH_VECTORS, BENCH_TENANTS), BENCH_WRITE_RATE (200),
# BENCH_WRITE_BATCH (100), BENCH_WARMUP (10s, both replicas), BENCH_DRAIN_S
# (120: the longest wait after the writes for both replicas to be current);
# the ingest and the waits for it take scale's BENCH_WRITERS (8),
# BENCH_BATCH and BENCH_CATCHUP_S.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//' >&2; exit 2; }
case "${1:-}" in
  load)
    mode=${2:-embedded}
    case "$mode" in embedded|servers|hung|semantic) ;; *) usage ;; esac ;;
  embed) mode=embed ;;
  replicas) mode=servers ;;
  scale)
    docs=${2:-}
    mode=${3:-embedded}
    [[ "$docs" =~ ^[0-9]+$ ]] || usage
    case "$mode" in embedded|servers) ;; *) usage ;; esac
    if [ "${4:-}" = --keyword ]; then keyword=${5:-}; fi
    case "${keyword:=bleve}" in bleve) ;; opensearch) [ "$mode" = servers ] || usage ;; *) usage ;; esac ;;
  *) usage ;;
esac

data=${RAG_CRANFIELD_DIR:-../shared/data/cranfield}
[ -f "$data/corpus.jsonl" ] || { echo "bench: no corpus at $data (set RAG_CRANFIELD_DIR)" >&2; exit 1; }
data=$(cd "$data" && pwd)
embedder=${BENCH_EMBEDDER:-builtin}

# embed: the built-in embedder's Go benchmarks and scripts/embed_ort.py on
# the same texts, for each precision; the documents and single-query part
# alternating BENCH_ROUNDS times (the best figure of each), then the query
# load once.
embed_bench() {
  local model=${RAG_TEST_MODEL_DIR:-} py=${BENCH_PYTHON:-python3} rounds=${BENCH_ROUNDS:-2} ndocs=${BENCH_DOCS:-128}
  [ -n "$model" ] && [ -f "$model/model.safetensors" ] || { echo "bench: set RAG_TEST_MODEL_DIR to the model directory (ragd model import/pull)" >&2; exit 1; }
  embed_tmp=$(mktemp -d); trap 'rm -rf "$embed_tmp"' EXIT
  local tmp=$embed_tmp
  go test -c -o "$tmp/builtin.test" ./embedder/builtin/ >&2
  local onnx=(); [ -n "${BENCH_ONNX:-}" ] && onnx=(--onnx "$BENCH_ONNX")
  local precs=${BENCH_PRECISIONS:-int8 fp32} p r out ort kern qkern ortv="" tokens=""
  declare -A best=()
  # keep NAME VALUE HI: best[NAME] becomes VALUE when larger (HI=1) or smaller.
  keep() { best[$1]=$(awk -v a="${best[$1]:-}" -v b="$2" -v hi="$3" 'BEGIN { if (a == "" || (hi && b > a) || (!hi && b < a)) print b; else print a }'); }
  # metric LINE-PATTERN UNIT: the figure before UNIT on the benchmark line.
  metric() { echo "$out" | awk -v pat="$1" -v u="$2" '$0 ~ pat { for (i = 1; i < NF; i++) if ($(i+1) == u) { print $i; exit } }'; }
  for r in $(seq "$rounds"); do
    echo "== round $r/$rounds (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    out=$(cd embedder/builtin && RAG_TEST_MODEL_DIR="$model" BENCH_DOCS="$ndocs" RAG_BENCH_CORPUS="$data/corpus.jsonl" \
      RAG_BENCH_QUERIES="$data/queries.jsonl" "$tmp/builtin.test" -test.run '^$' -test.v \
      -test.bench 'Precision$' -test.benchtime 2s 2>&1)
    echo "$out" | grep -E '^Benchmark' >&2
    for p in $precs; do
      keep "go-$p-docs" "$(metric "Precision/$p/documents" docs/s)" 1
      keep "go-$p-cpudoc" "$(metric "Precision/$p/documents" cpu-ms/doc)" 0
      keep "go-$p-q1cpu" "$(metric "Precision/$p/queries1-" cpu-ms/query)" 0
      keep "go-$p-q16cpu" "$(metric "Precision/$p/queries16" cpu-ms/query)" 0
      keep "go-$p-p50" "$(metric "Precision/$p/queries1-" p50-ms)" 0
      keep "go-$p-p99" "$(metric "Precision/$p/queries1-" p99-ms)" 0
      local q=()
      [ "$p" = int8 ] && q=(--quantize)
      # ort: not out, which the next precision's Go figures are read from.
      ort=$("$py" scripts/embed_ort.py "${onnx[@]}" "${q[@]}" --tokenizer "$model/tokenizer.json" --corpus "$data/corpus.jsonl" \
        --queries "$data/queries.jsonl" --docs "$ndocs" --rounds 1 --threads 2 2>/dev/null)
      echo "$ort" >&2
      keep "ort-$p-docs" "$(echo "$ort" | jq .docs_per_s)" 1
      keep "ort-$p-cpudoc" "$(echo "$ort" | jq .cpu_ms_per_doc)" 0
      keep "ort-$p-p50" "$(echo "$ort" | jq .query_p50_ms)" 0
      keep "ort-$p-p99" "$(echo "$ort" | jq .query_p99_ms)" 0
      ortv=$(echo "$ort" | jq -r .onnxruntime)
      tokens=$(echo "$ort" | jq .mean_tokens)
    done
    out=
  done
  echo "== query load (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  local loadout
  loadout=$(cd embedder/builtin && RAG_TEST_MODEL_DIR="$model" RAG_BENCH_QUERIES="$data/queries.jsonl" RAG_BENCH_CORPUS="$data/corpus.jsonl" RAG_BENCH_PRECISIONS="$precs" \
    "$tmp/builtin.test" -test.run '^$' -test.bench 'QueryLoad$' -test.benchtime "${BENCH_LOAD_QUERIES:-1500}x" 2>&1)
  echo "$loadout" | grep -E '^Benchmark' >&2
  declare -A ortload=()
  for p in $precs; do
    local q=()
    [ "$p" = int8 ] && q=(--quantize)
    ortload[$p]=$("$py" scripts/embed_ort.py "${onnx[@]}" "${q[@]}" --tokenizer "$model/tokenizer.json" --corpus "$data/corpus.jsonl" \
      --queries "$data/queries.jsonl" --docs 4 --rounds 1 --query-runs 1 --threads 2 --clients 1,2,8,32 --client-seconds "${BENCH_ORT_SECONDS:-8}" 2>/dev/null)
    echo "${ortload[$p]}" >&2
  done
  kern=$(cd embedder/builtin && RAG_TEST_MODEL_DIR="$model" "$tmp/builtin.test" -test.run '^$' -test.bench 'EmbedQueryBatch/int8/batch1$' -test.benchtime 1x -test.v 2>&1 |
    sed -n 's/.*kernel \([a-z0-9]*\), int8 kernel \([a-z0-9]*\).*/fp32 kernel \1, int8 kernel \2/p' | head -1)
  echo "## built-in embedder vs ONNX Runtime, $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "$(basename "$model"); built-in: Go, GOMAXPROCS $(nproc), $kern; ONNX Runtime $ortv: Python, 2 intra-op threads, int8 by its quantize_dynamic (per channel). Documents: $ndocs Cranfield documents (mean $tokens tokens), best of $rounds interleaved rounds. Query alone: one at a time, tokeniser included."
  echo
  echo "| engine | precision | documents/s | CPU ms per document | query alone p50 / p99 ms | CPU ms per query alone | in passes of 16 |"
  echo "|---|---|---:|---:|---:|---:|---:|"
  for p in $precs; do
    echo "| built-in | $p | ${best[go-$p-docs]} | ${best[go-$p-cpudoc]} | ${best[go-$p-p50]} / ${best[go-$p-p99]} | ${best[go-$p-q1cpu]} | ${best[go-$p-q16cpu]} |"
    echo "| ONNX Runtime | $p | ${best[ort-$p-docs]} | ${best[ort-$p-cpudoc]} | ${best[ort-$p-p50]} / ${best[ort-$p-p99]} | – | – |"
  done
  echo
  echo "Query embedding under load: C clients each embedding one query at a time (closed loop), then arrivals at 80 % of the best closed-loop rate (open loop, built-in only); queries/s, p50 / p99 ms (built-in: ${BENCH_LOAD_QUERIES:-1500} queries a row; ONNX Runtime: ${BENCH_ORT_SECONDS:-8} s a row, one session shared by the threads):"
  echo
  echo "| engine | precision | 1 client | 2 clients | 8 clients | 32 clients | open loop at 80 % | queries a pass at 8 / 32 |"
  echo "|---|---|---|---|---|---|---|---|"
  for p in $precs; do
    echo "$loadout" | awk -v p="$p" '
      function m(line, u,   i, n, f) { n = split(line, f, /[ \t]+/); for (i = 1; i < n; i++) if (f[i+1] == u) return f[i]; return "" }
      index($1, "BenchmarkQueryLoad/" p "/") == 1 {
        key = $1; sub(/-[0-9]+$/, "", key); sub(".*/" p "/", "", key)
        cell[key] = sprintf("%.0f/s, %s / %s", m($0, "queries/s"), m($0, "p50-ms"), m($0, "p99-ms"))
        pass[key] = m($0, "queries/pass"); off[key] = m($0, "offered/s")
      }
      END {
        printf "| built-in | %s | %s | %s | %s | %s | %s (offered %.0f/s) | %s / %s |\n", p, cell["closed/clients1"], cell["closed/clients2"],
          cell["closed/clients8"], cell["closed/clients32"], cell["open/80pct"], off["open/80pct"], pass["closed/clients8"], pass["closed/clients32"]
      }'
    echo "${ortload[$p]}" | jq -r --arg p "$p" '"| ONNX Runtime | \($p) | " + ([.load[] | "\(.queries_per_s | round)/s, \(.p50_ms) / \(.p99_ms)"] | join(" | ")) + " | – | – |"'
  done
  echo
  echo "Queries during a bulk ingest (built-in; documents embedded back to back, 2 query clients):"
  echo
  for p in $precs; do
    echo "$loadout" | awk -v p="$p" '
      function m(line, u,   i, n, f) { n = split(line, f, /[ \t]+/); for (i = 1; i < n; i++) if (f[i+1] == u) return f[i]; return "" }
      index($1, "BenchmarkQueryLoad/" p "/ingest/") == 1 {
        printf "- %s: %.0f queries/s, p50 %s ms, p99 %s ms, beside %.0f documents/s\n", p, m($0, "queries/s"), m($0, "p50-ms"), m($0, "p99-ms"), m($0, "docs/s")
      }'
  done
}
if [ "$mode" = embed ]; then
  embed_bench
  exit
fi
clients=${BENCH_CLIENTS:-8}
phase=${BENCH_PHASE:-10s}
rate=
[ "$1" = replicas ] && phase=${BENCH_PHASE:-30s}
batch=${BENCH_BATCH:-256}
if [ "$mode" = hung ]; then
  clients=${BENCH_CLIENTS:-64}
  phase=${BENCH_PHASE:-12s}
  rate=${BENCH_RATE:-200}
fi
port=${BENCH_PORT:-18090}
reset=${BENCH_RESET_S:-10}
work=$(mktemp -d)
ragd_pid=
replica_pid=
services_up=
cleanup() {
  [ -n "$replica_pid" ] && kill "$replica_pid" 2>/dev/null && wait "$replica_pid" 2>/dev/null
  [ -n "$ragd_pid" ] && kill "$ragd_pid" 2>/dev/null && wait "$ragd_pid" 2>/dev/null
  [ -n "$services_up" ] && scripts/services.sh purge >/dev/null 2>&1
  if [ -n "${BENCH_KEEP_DATA:-}" ] && [ -d "$work/data" ]; then
    mv "$work/data" "$BENCH_KEEP_DATA" && cp "$work/rag.yaml" "$BENCH_KEEP_DATA/rag.yaml"
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# scale: the corpus, the queries and, with vectors, each query's exact top
# 10, cached in BENCH_CACHE: the text corpus by size (synth_corpus.py), the
# pool of real vectors once (ragd-vectors texts, embedded by the built-in
# model through ragd embed), the corpus with vectors, the queries and the
# exact answers by size and tenants (ragd-vectors make, which also writes
# the table of the vectors' structure, stats-N.md).
scale_data() {
  cache=${BENCH_CACHE:-$work/cache}
  vecs=${BENCH_VECTORS:-mixed}
  mkdir -p "$cache"
  tenants=0
  [ "$mode" = servers ] && tenants=${BENCH_TENANTS:-3}
  local text=$cache/synth-$docs.jsonl
  if [ ! -s "$text" ]; then
    echo "== making $text" >&2
    python3 ../shared/tools/synth_corpus.py "$data" "$text.tmp" "$docs"
    mv "$text.tmp" "$text"
  fi
  exact= vstats=
  case "$vecs" in
    mixed) mixed_vectors "$text" ;;
    none)
      corpus=$text qfile=$cache/queries-text.jsonl
      [ -s "$qfile" ] || jq -c '{text}' "$data/queries.jsonl" > "$qfile" ;;
    *) echo "bench: BENCH_VECTORS=$vecs: want mixed or none" >&2; exit 2 ;;
  esac
  if [ "$tenants" -gt 0 ]; then
    local plain=$corpus
    corpus=${plain%.jsonl}-t$tenants.jsonl
    if [ ! -s "$corpus" ] || [ "$corpus" -ot "$plain" ]; then
      echo "== spreading $plain over $tenants tenants" >&2
      awk -v t="$tenants" '{ sub(/^\{/, "{\"tenant\": \"t" ((NR - 1) % t) "\", "); print }' "$plain" > "$corpus.tmp"
      mv "$corpus.tmp" "$corpus"
    fi
  fi
}

# mixed_vectors TEXT gives the corpus TEXT vectors mixed from real ones
# (internal/vecgen): sets corpus, qfile, exact and vstats.
mixed_vectors() {
  local text=$1 pool=$cache/pool-texts.jsonl pv=$cache/pool-vectors.jsonl t=${BENCH_TENANTS:-3}
  corpus=$cache/synth-$docs-mixed.jsonl qfile=$cache/queries-mixed.jsonl
  exact=$cache/exact-$docs-t$t.jsonl vstats=$cache/stats-$docs.md
  if [ ! -s "$pv" ]; then
    echo "== embedding the pool of real texts with the built-in model" >&2
    eval "$(scripts/model.sh)"
    "$work/ragd-vectors" texts -collection "$data" > "$pool"
    mkdir -p "$work/embed"
    { jq -r 'select(.kind != "query") | .text' "$pool" | RAGD_DATA_DIR=$work/embed "$work/ragd" embed -c rag.yaml
      jq -r 'select(.kind == "query") | .text' "$pool" | RAGD_DATA_DIR=$work/embed "$work/ragd" embed -c rag.yaml --input-type query
    } > "$pv.tmp"
    [ "$(wc -l < "$pv.tmp")" = "$(wc -l < "$pool")" ] || { echo "bench: the pool's vectors do not match its texts" >&2; exit 1; }
    mv "$pv.tmp" "$pv"
  fi
  if [ ! -s "$corpus" ] || [ ! -s "$exact" ] || [ "$corpus" -ot "$pv" ]; then
    echo "== mixing vectors for $docs documents and the exact top 10 of each query" >&2
    "$work/ragd-vectors" make -pool "$pool" -pool-vectors "$pv" -corpus "$text" -out "$corpus" \
      -queries "$qfile" -exact "$exact" -stats "$vstats" -tenants "$t" >&2
  fi
}

# health prints GET /v1/status/health of the ragd on port $1 (default the
# bench's).
health() { curl -sf -H "Authorization: Bearer ${RAGD_API_KEY:-}" "http://127.0.0.1:${1:-$port}/v1/status/health"; }

# caught_up waits until every derived store that is kept (not dormant:
# something reads it) has applied the change log (GET /v1/status/health's
# log.stores[].behind), when the server has one, for at most
# BENCH_CATCHUP_S seconds (default 3600).
caught_up() {
  local limit=${BENCH_CATCHUP_S:-3600} start=$SECONDS behind
  while [ $((SECONDS - start)) -lt "$limit" ]; do
    behind=$(health | jq '[.log.stores[]? | select(.dormant | not) | .behind] | add // 0') || behind=1
    [ "$behind" = 0 ] && return
    sleep 1
  done
  echo "bench: derived stores still behind after $limit s: $(health | jq -c '.log')" >&2
  exit 1
}

# indexed waits until the pgvector store's HNSW index holds every row: the
# vector component's detail no longer counts rows outside it.
indexed() {
  local limit=${BENCH_CATCHUP_S:-3600} start=$SECONDS detail
  while [ $((SECONDS - start)) -lt "$limit" ]; do
    detail=$(health | jq -r '.components.vector.detail // ""') || detail=unknown
    case "$detail" in *"not yet in the HNSW index"*|unknown) ;; *) return ;; esac
    sleep 2
  done
  echo "bench: HNSW index still behind after $limit s: $detail" >&2
  exit 1
}

# go_heap MiB of go_memstats_<$1>_bytes of the ragd on the bench's port.
go_heap() {
  curl -sf -H "Authorization: Bearer ${RAGD_API_KEY:-}" "http://127.0.0.1:$port/metrics" |
    awk -v m="go_memstats_$1_bytes" '$1 == m { printf "%.0f", $2 / 1048576 }'
}

# pss KB of the processes given: proportional set size, so the shared
# memory PostgreSQL's processes all map is counted once.
pss() { local p t=0; for p in "$@"; do t=$((t + $(awk '/^Pss:/{print $2}' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0))); done; echo "$t"; }
mib() { echo $(( $1 / 1024 )); }
dir_mib() { echo $(( $(du -sb "$1" | cut -f1) / 1048576 )); }

# ingest_corpus writes the corpus with BENCH_WRITERS concurrent `ragd
# ingest` processes (one slice of the file each, round-robin by line).
ingest_corpus() {
  local w=${BENCH_WRITERS:-1} i pids=()
  [ "$mode" = servers ] && w=${BENCH_WRITERS:-8}
  if [ "$w" -le 1 ]; then
    "$work/ragd" ingest --server "http://127.0.0.1:$port" --no-resume --batch "$batch" --progress plain "$corpus" >&2
    return
  fi
  mkdir -p "$work/parts"
  awk -v w="$w" -v d="$work/parts" '{ print > (d "/part-" (NR % w) ".jsonl") }' "$corpus"
  for i in $(seq 0 $((w - 1))); do
    "$work/ragd" ingest --server "http://127.0.0.1:$port" --no-resume --batch "$batch" "$work/parts/part-$i.jsonl" >"$work/parts/ingest-$i.log" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || { tail -5 "$work/parts/ingest-$i.log" >&2; echo "bench: writer $i failed" >&2; exit 1; }
  done
  rm -rf "$work/parts"
}

# replica starts a second ragd (on port $rport) on the same servers with an
# empty data directory and reports how long until it answers /readyz as
# ready and its keyword index has applied the log, sampling what /readyz
# and health say meanwhile. It keeps running (replica_pid) until the caller
# stops it or the bench ends.
rport=$((port + 50))
replica() {
  local t0 first_ready= current= rz kw now last= rstart=$SECONDS states=()
  echo "== starting a second replica on 127.0.0.1:$rport" >&2
  t0=$(date +%s.%N)
  RAGD_DATA_DIR="$work/replica" RAGD_LISTEN="127.0.0.1:$rport" "$work/ragd" serve -c "$work/rag.yaml" 2>"$work/replica.log" &
  replica_pid=$!
  while [ -z "$current" ] && [ $((SECONDS - rstart)) -lt "${BENCH_CATCHUP_S:-3600}" ]; do
    kill -0 "$replica_pid" 2>/dev/null || { tail -20 "$work/replica.log" >&2; echo "bench: the replica exited" >&2; exit 1; }
    rz=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$rport/readyz" || true)
    kw=$(health "$rport" | jq -c '[.components.keyword.status, .components.keyword.detail, (.log.stores[]? | select(.store == "keyword") | .behind)]' 2>/dev/null || echo '"no answer"')
    now=$(date +%s.%N)
    if [ "readyz $rz, keyword $kw" != "$last" ] && [ "${#states[@]}" -lt 8 ]; then
      last="readyz $rz, keyword $kw"
      states+=("$(awk -v a="$t0" -v b="$now" 'BEGIN{printf "%.0f s", b-a}'): $last")
    fi
    [ -z "$first_ready" ] && [ "$rz" = 200 ] && first_ready=$now
    if [ "$rz" = 200 ] && [ "$(health "$rport" | jq '[.log.stores[]? | select(.store == "keyword") | .behind] | add // 1')" = 0 ]; then
      current=$now
    fi
    sleep 1
  done
  [ -n "$current" ] || { echo "bench: the replica's keyword index was not current after ${BENCH_CATCHUP_S:-3600} s" >&2; current=$(date +%s.%N); }
  replica_rss=$(awk '/VmRSS/{print $2}' "/proc/$replica_pid/status")
  replica_line=$(awk -v a="$t0" -v r="${first_ready:-$t0}" -v c="$current" 'BEGIN { printf "ready (/readyz 200) after %.0f s, keyword index current after %.0f s", r-a, c-a }')
  replica_states=$(printf '%s; ' "${states[@]}")
}

# cpu_s is the CPU time (user + system) process $1 has used, in seconds.
cpu_s() { awk -v t="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$1/stat"; }

# pg_cpu is the CPU seconds of PostgreSQL so far: the postmaster, the
# backends it has waited for and those running now (servers mode).
pg_cpu() {
  { awk -v t="$(getconf CLK_TCK)" '{ printf "%.2f\n", ($16 + $17) / t }' "/proc/$pm/stat"
    local p
    for p in "$pm" $(pgrep -P "$pm"); do cpu_s "$p" 2>/dev/null || true; echo; done; } | awk '{ t += $1 } END { printf "%.2f", t }'
}

# children_cpu prints the user and system seconds of this shell's children
# that have ended (the ragd ingest writers, once waited for). Call it in
# this shell (redirect, no pipe or substitution: a subshell has its own).
children_cpu() { times > "$work/times"; tail -1 "$work/times" | awk '{ for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); printf "%.2f ", p[1] * 60 + p[2] } print "" }'; }

# graph_built asks for the graph (a query that switches it on) until it
# answers: with the shipped rag.yaml the embedded graph is dormant until a
# query asks for it, then built from the change log.
graph_built() {
  local body
  body=$(jq -c '. + {text: "wing flutter"}' <<<"$graph")
  until curl -sf -H 'Content-Type: application/json' -H "Authorization: Bearer ${RAGD_API_KEY:-}" -d "$body" "http://127.0.0.1:$port/v1/query" |
      jq -e '.sources.graph.status == "ok"' >/dev/null; do
    sleep 0.5
  done
}

# settle waits, before scale's query phases, until ragd's background work
# after the writes (the keyword index rebuilt in clustered order, the IVF
# trained and regrouped, the vectors file compacted) is over: ragd used
# less than 0.25 s of CPU in 5 s, or BENCH_SETTLE_S (900) passed. The
# query phases' CPU per query is then what a query costs, not that plus
# the maintenance running beside it; settle_s and settle_cpu say how long
# and how much that maintenance took (the table's settle row).
settle() {
  local start prev cur
  echo "== waiting for ragd's background work to end" >&2
  start=$(date +%s.%N) settle_cpu0=$(cpu_s "$ragd_pid")
  prev=$settle_cpu0
  while :; do
    sleep 5
    cur=$(cpu_s "$ragd_pid")
    awk -v a="$prev" -v b="$cur" 'BEGIN { exit !(b - a < 0.25) }' && break
    prev=$cur
    if awk -v a="$start" -v b="$(date +%s.%N)" -v l="${BENCH_SETTLE_S:-900}" 'BEGIN { exit !(b - a > l) }'; then
      echo "bench: ragd still busy after ${BENCH_SETTLE_S:-900} s; measuring anyway" >&2
      break
    fi
  done
  settle_s=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
  settle_cpu=$(awk -v a="$settle_cpu0" -v b="$cur" 'BEGIN { printf "%.0f", b - a }')
}

# ingest_row prints the ingest row of scale's table (the variables scale
# set: the times t0..t5, the CPU readings, how, dormant and preloaded).
ingest_row() {
  awk -v n="$docs" -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t5" -v how="$how" -v servers="$([ "$mode" = servers ] && echo 1)" \
      -v c0="$c0" -v c2="$c2" -v pg0="$pg0" -v pg2="$pg2" -v neo0="$neo0" -v neo2="$neo2" -v jit0="$jit0" -v jit2="$jit2" -v cl="$(awk -v u0="$cu0" -v s0="$cs0" -v u="$cu" -v s="$cs" 'BEGIN{print u+s-u0-s0}')" -v dormant="$dormant" -v pre="$preloaded" 'BEGIN {
    if (pre != "") {
      printf "| keyword store current from empty (%s) | %.0f s from ragd'"'"'s start (**%.0f docs/s**); ragd CPU %.0f s (%.2f ms per document), PostgreSQL %.0f s |\n", how, c-a, n/(c-a), c2-c0, (c2-c0)*1000/n, pg2-pg0
      exit
    }
    printf "| ingest (%s) | %.0f s, %.0f docs/s; every store kept caught up after %.0f s (**%.0f docs/s**)%s", how, b-a, n/(b-a), c-a, n/(c-a), (dormant == "" ? "" : " (" dormant " dormant: nothing reads it)")
    if (servers) printf "; every row in the HNSW index after %.0f s (%.0f docs/s)", d-a, n/(d-a)
    printf "; ragd CPU %.0f s (%.2f ms per document), the clients %.0f s", c2-c0, (c2-c0)*1000/n, cl
    if (servers) printf "; until every store was current PostgreSQL %.0f s (%.2f ms per document), Neo4j %.0f s (%.2f ms per document, of which its JIT compiler threads at least %.2f ms): %.2f ms of CPU per document in all", pg2-pg0, (pg2-pg0)*1000/n, neo2-neo0, (neo2-neo0)*1000/n, (jit2-jit0)*1000/n, (c2-c0+cl+pg2-pg0+neo2-neo0)*1000/n
    printf " |\n" }'
}

# timed_lock / timed_unlock: with BENCH_LOCK (a file), the timed query
# phases hold an exclusive flock on it (the ingest and the graph's build do
# not), with ragd and this script at niceness 0 meanwhile, so that a
# machine shared by several benchmarks runs one timed phase at a time.
timed_lock() {
  [ -n "${BENCH_LOCK:-}" ] || return 0
  exec 9>"$BENCH_LOCK"
  echo "== waiting for $BENCH_LOCK" >&2
  flock 9
  renice -n 0 -p "$ragd_pid" $$ >/dev/null 2>&1 || true
  echo "== timed phase (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
}
timed_unlock() {
  [ -n "${BENCH_LOCK:-}" ] || return 0
  renice -n 10 -p "$ragd_pid" $$ >/dev/null 2>&1 || true
  flock -u 9
  exec 9>&-
}

# jit_cpu is the CPU seconds of the Neo4j JVM's JIT compiler threads alive
# now (C1 and C2; the JVM starts and ends them as it needs, so the
# difference of two readings is a lower bound). A thread's own figures are
# under /proc/PID/task/TID (/proc/TID/stat sums the whole process), after
# its name, which has a space.
jit_cpu() {
  [ -n "$neo" ] || { echo 0; return; }
  local t
  for t in /proc/"$neo"/task/*; do
    case "$(cat "$t/comm" 2>/dev/null)" in C1\ Compiler*|C2\ Compiler*) cat "$t/stat" 2>/dev/null ;; esac
  done | awk -v t="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); s += $12 + $13 } END { printf "%.2f", s / t }'
}

# timed_ingest writes corpus $1 and waits for every kept store (and, in
# servers mode, the HNSW index), setting scale's times and CPU readings.
timed_ingest() {
  c0=$(cpu_s "$ragd_pid")
  if [ "$mode" = servers ]; then pg0=$(pg_cpu); [ -n "$neo" ] && neo0=$(cpu_s "$neo") jit0=$(jit_cpu); fi
  t0=$(date +%s.%N)
  children_cpu > "$work/cpu0"
  if [ -n "$preloaded" ]; then
    echo "== the keyword store applies the preloaded record's change log" >&2
    t0=$ragd_t0 c0=0
  else
    echo "== ingesting $1" >&2
    corpus=$1 ingest_corpus
  fi
  children_cpu > "$work/cpu1"
  read -r cu0 cs0 < "$work/cpu0"
  read -r cu cs < "$work/cpu1"
  t1=$(date +%s.%N)
  caught_up
  t2=$(date +%s.%N)
  c2=$(cpu_s "$ragd_pid")
  if [ "$mode" = servers ]; then pg2=$(pg_cpu); [ -n "$neo" ] && neo2=$(cpu_s "$neo") jit2=$(jit_cpu); fi
  t5=$t2
  if [ "$mode" = servers ]; then
    indexed
    t5=$(date +%s.%N)
  fi
}

scale() {
  local t0 t1 t2 t3 t4 t5 b c0 c2 c3 c4 cu0 cs0 cu cs pg0=0 pg2=0 neo0=0 neo2=0 jit0=0 jit2=0
  timed_ingest "$corpus"
  rss_ingest=$(awk '/VmRSS/{print $2}' "/proc/$ragd_pid/status")
  anon_ingest=$(awk '/RssAnon/{print $2}' "/proc/$ragd_pid/status")
  dormant=$(health | jq -r '[.log.stores[]? | select(.dormant) | .store] | join(", ")')
  if [ -n "${BENCH_WRITES_ONLY:-}" ]; then
    local how="${BENCH_WRITERS:-1} concurrent ragd ingest, batches of $batch" pass first=$corpus
    [ "$mode" = servers ] && how="${BENCH_WRITERS:-8} concurrent ragd ingest, batches of $batch"
    echo "## ragd writes: $docs documents, $mode, $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    ingest_row
    # Later passes write the corpus again under new ids (servers warm,
    # the collection growing by the corpus each pass).
    for pass in $(seq 2 "${BENCH_WRITES_PASSES:-1}"); do
      sed -E "s/^(\{(\"tenant\": \"[^\"]*\", )?\"id\": \"[^\"]*)\"/\1~p$pass\"/" "$first" > "$work/pass.jsonl"
      timed_ingest "$work/pass.jsonl"
      how="pass $pass: the same documents under new ids, on the servers of the passes before"
      ingest_row
    done
    return
  fi

  # What each row sends: the sources off in it, and -send (vector: no text).
  off() { jq -nc '{sources: ($ARGS.positional | map({(.): {enabled: false}}) | add)}' --args "$@"; }
  graph='{"sources":{"graph":{"enabled":true,"weight":1}},"expand":{"enabled":true}}'
  vsend=vector; hsend=both
  if [ "$vecs" = none ]; then vsend=text; hsend=text; fi
  common=(-server "http://127.0.0.1:$port" -queries "$qfile" -pid "$ragd_pid" -duration "$phase")
  settle
  timed_lock
  echo "== warming up" >&2
  "$work/ragd-bench" "${common[@]}" -clients "$clients" -send "$hsend" -duration 3s >/dev/null
  out=$work/scale.md
  {
    "$work/ragd-bench" "${common[@]}" -header -clients 1 -label "keyword only, 1 client" -send text -body "$(off vector graph graph_expand)"
    "$work/ragd-bench" "${common[@]}" -clients 1 -label "vector only, 1 client" -send "$vsend" -body "$(off keyword graph graph_expand)"
    "$work/ragd-bench" "${common[@]}" -clients 1 -label "hybrid, 1 client" -send "$hsend" -took
    "$work/ragd-bench" "${common[@]}" -clients "$clients" -label "hybrid, $clients clients" -send "$hsend" -took
  } > "$out"
  # Recall@10 of the vector source's answers against the exact top 10.
  : > "$work/recall-api.md"
  if [ -n "$exact" ]; then
    echo "== vector recall through the API" >&2
    local rq=${BENCH_RECALL_QUERIES:-200}
    "$work/ragd-bench" -server "http://127.0.0.1:$port" -queries "$qfile" -exact "$exact" -recall-queries "$rq" \
      -label "all documents, $rq queries" -body "$(off keyword graph graph_expand)" >> "$work/recall-api.md"
    if [ "$tenants" -gt 0 ]; then
      "$work/ragd-bench" -server "http://127.0.0.1:$port" -queries "$qfile" -exact "$exact" -recall-queries "$rq" -tenant t1 \
        -label "tenant t1 of $tenants, $rq queries" -body "$(off keyword graph graph_expand)" >> "$work/recall-api.md"
    fi
  fi
  timed_unlock
  # Memory and disk of the shipped configuration, before anything asks
  # for the graph.
  rss=$(awk '/VmRSS/{print $2}' "/proc/$ragd_pid/status")
  anon=$(awk '/RssAnon/{print $2}' "/proc/$ragd_pid/status")
  hwm=$(awk '/VmHWM/{print $2}' "/proc/$ragd_pid/status")
  # The Go heap: in use as the runs left it, then live (the heap profile
  # forces a collection first), kept in BENCH_PROFILE_DIR when set.
  heap_inuse=$(go_heap heap_inuse)
  curl -sf -o "$work/heap.pprof" "http://127.0.0.1:$port/debug/pprof/heap?gc=1" -H "Authorization: Bearer ${RAGD_API_KEY:-}" || true
  heap_live=$(go_heap heap_alloc)
  if [ -n "${BENCH_PROFILE_DIR:-}" ] && [ -s "$work/heap.pprof" ]; then
    mkdir -p "$BENCH_PROFILE_DIR" && cp "$work/heap.pprof" "$BENCH_PROFILE_DIR/heap-$docs-$mode.pprof"
  fi
  b=$(du -sb "$work/data" | cut -f1)
  disk=$(for d in "$work"/data/*/; do [ -d "$d" ] || continue; printf '%s %s MiB, ' "$(basename "$d")" $(($(du -sb "$d" | cut -f1) / 1048576)); done | sed 's/, $//')

  # The graph: built when a query first asks for it (unless rag.yaml reads
  # it), then measured.
  c3=$(cpu_s "$ragd_pid")
  t3=$(date +%s.%N)
  if [ -z "$preloaded" ]; then
    echo "== asking for the graph" >&2
    graph_built
  fi
  t4=$(date +%s.%N)
  c4=$(cpu_s "$ragd_pid")
  if [ -z "$preloaded" ]; then
    timed_lock
    "$work/ragd-bench" "${common[@]}" -clients 1 -label "hybrid with graph and expansion, 1 client" -send "$hsend" -body "$graph" -took >> "$out"
    timed_unlock
  fi
  grss=$(awk '/VmRSS/{print $2}' "/proc/$ragd_pid/status")
  ganon=$(awk '/RssAnon/{print $2}' "/proc/$ragd_pid/status")
  gb=$(du -sb "$work/data" | cut -f1)

  if [ "$mode" = servers ]; then
    pgpss=$(pss "$pm" $(pgrep -P "$pm"))
    neorss=0
    [ -n "$neo" ] && neorss=$(awk '/VmRSS/{print $2}' "/proc/$neo/status")
    [ -n "$osn" ] && osrss=$(awk '/VmRSS/{print $2}' "/proc/$osn/status")
    echo "== pgvector recall" >&2
    timed_lock
    embed=()
    [ "$vecs" = none ] && embed=(-embed-dim 384)
    [ -n "$exact" ] && embed=(-exact "$exact")
    "$work/ragd-bench" -queries "$qfile" -pg-recall "$RAGD_PG_DSN" -recall-queries "${BENCH_RECALL_QUERIES:-200}" -tenant t1 "${embed[@]}" \
      -ef-shipped "$(sed -n 's/^    ef_search: \([0-9]*\).*/\1/p' "$work/rag.yaml")" -ef "40,100,200,400,800" -tenant-every-ef > "$work/recall.md"
    timed_unlock
    if [ -z "$preloaded" ]; then
      replica
      kill "$replica_pid" && wait "$replica_pid" 2>/dev/null
      replica_pid=
    fi
  fi

  local what="embedded default" how="ragd ingest, batches of $batch"
  if [ "$mode" = servers ]; then
    what="PostgreSQL $("$PG_BIN_DIR/postgres" --version | awk '{print $3}') + pgvector $(psql -X -At "$RAGD_PG_DSN" -c "SELECT extversion FROM pg_extension WHERE extname = 'vector'") (HNSW) + Neo4j, deploy/rag.servers.yaml"
    [ -n "$osn" ] && what="PostgreSQL $("$PG_BIN_DIR/postgres" --version | awk '{print $3}') + pgvector (HNSW) + Neo4j + OpenSearch $(curl -fsS "$RAGD_OPENSEARCH_URL" | jq -r .version.number) (heap ${BENCH_OPENSEARCH_HEAP:-1g}, keyword), deploy/rag.opensearch.yaml"
    how="${BENCH_WRITERS:-8} concurrent ragd ingest, batches of $batch"
    [ -n "$preloaded" ] && how="record preloaded with ragd-bench -pg-load; the row times ragd's keyword store applying its change log from empty, ragd started with it"
  fi
  echo "## ragd at scale: $docs documents, $what, $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  if [ "$vecs" = mixed ]; then
    echo "Documents carry vectors mixed from real all-MiniLM-L6-v2 vectors (cmd/ragd-vectors, internal/vecgen); queries are held-out sentences and Cranfield's queries with their real vectors, the keyword side their texts. The vectors' structure:"
    echo
    cat "$vstats"
  else
    echo "The $embedder embedder embeds documents and queries."
  fi
  if [ "$mode" = servers ]; then
    if [ -n "$preloaded" ]; then
      [ -n "$pgload" ] && echo "The bench loaded the record first (ragd-bench -pg-load, one writer, batches of 1,000, then the HNSW index in bulk): $pgload."
      echo "Documents spread over ${BENCH_TENANTS:-3} tenants (queries search them all). PostgreSQL of BENCH_PG_DSN, shared_buffers $(psql -X -At "$RAGD_PG_DSN" -c 'SHOW shared_buffers'), loaded beforehand (ragd-bench -pg-load); graph off (no Neo4j); nothing written during the run."
    else
      echo "Documents spread over ${BENCH_TENANTS:-3} tenants (queries search them all). PostgreSQL shared_buffers $PG_SB; Neo4j heap $NEO_HEAP, page cache $NEO_PC, JVM flags \`$NEO_OPTS\`; HNSW bulk builds with maintenance_work_mem ${BENCH_INDEX_MEM_MB:-2048} MB."
    fi
  fi
  echo
  echo "| measure | ragd |"
  echo "|---|---|"
  ingest_row
  echo "| ragd's background work after the writes (rebuilds, index training, compaction), waited for before the query rows | ${settle_s:-?} s, ${settle_cpu:-?} s of ragd CPU (until under 0.25 s of CPU in 5 s) |"
  [ -z "$preloaded" ] && awk -v a="$t3" -v b="$t4" -v c0="$c3" -v c1="$c4" 'BEGIN {
    printf "| the graph, built when a query first asks for it | answering after %.0f s (ragd CPU %.0f s) |\n", b-a, c1-c0 }'
  row() { grep -F "| $1 |" "$out" | awk -F'|' '{ gsub(/ /, "", $5); gsub(/ /, "", $6); gsub(/ /, "", $4); gsub(/ /, "", $9); gsub(/ /, "", $7); print $5 " / " $6 " ms (" $4 " req/s, " $7 " CPU ms/query, " $9 " partial)" }'; }
  echo "| keyword-only p50 / p99, 1 client | $(row 'keyword only, 1 client') |"
  echo "| vector-only p50 / p99, 1 client | $(row 'vector only, 1 client') |"
  echo "| hybrid p50 / p99, 1 client | $(row 'hybrid, 1 client') |"
  echo "| hybrid, $clients clients | $(row "hybrid, $clients clients") |"
  [ -z "$preloaded" ] && echo "| hybrid with graph and expansion on, p50 / p99, 1 client | $(row 'hybrid with graph and expansion, 1 client') |"
  took() { grep -F "($1):" "$out" | cut -d: -f2- | sed 's/^ //'; }
  echo "| inside hybrid answers, took_ms p50 / p99 (1 client) | $(took 'hybrid, 1 client') |"
  [ -z "$preloaded" ] && echo "| inside hybrid answers with graph and expansion on (1 client) | $(took 'hybrid with graph and expansion, 1 client') |"
  echo "| RSS of ragd after ingest / after the runs / peak | $((rss_ingest / 1024)) / $((rss / 1024)) / $((hwm / 1024)) MiB, of which anonymous (heap) $((anon_ingest / 1024)) / $((anon / 1024)) MiB, the rest mapped store files |"
  echo "| Go heap after the runs: in use / live (after a forced collection) | ${heap_inuse:-?} / ${heap_live:-?} MiB (memory limit: $(curl -sf -H "Authorization: Bearer ${RAGD_API_KEY:-}" "http://127.0.0.1:$port/metrics" | awk '$1 == "go_gc_gomemlimit_bytes" { if ($2 > 1e18) print "none"; else printf "%.0f MiB", $2 / 1048576 }')) |"
  [ -z "$preloaded" ] && echo "| RSS / on disk of ragd with the graph asked for | $((grss / 1024)) MiB, of which anonymous $((ganon / 1024)) MiB / $((gb / 1048576)) MiB |"
  if [ "$mode" = servers ]; then
    echo "| PostgreSQL (PSS of all its processes) / Neo4j RSS after the runs | $(mib "$pgpss") / $(mib "$neorss") MiB |"
    if [ -n "$preloaded" ]; then
      echo "| on disk | ragd $((b / 1048576)) MiB ($disk), PostgreSQL $(( $(psql -X -At "$RAGD_PG_DSN" -c 'SELECT pg_database_size(current_database())') / 1048576 )) MiB (the database) |"
    else
      echo "| on disk | ragd $((b / 1048576)) MiB ($disk), PostgreSQL $(dir_mib "$RAG_SERVICES_DIR/postgres/data") MiB, Neo4j $(dir_mib "$RAG_SERVICES_DIR/neo4j/data") MiB |"
    fi
    [ -n "$osn" ] && echo "| OpenSearch RSS after the runs / on disk | $(mib "$osrss") MiB / $(dir_mib "$RAG_SERVICES_DIR/opensearch/data") MiB |"
    [ -z "$preloaded" ] && echo "| a second replica joining (empty data dir) | $replica_line; RSS then $((replica_rss / 1024)) MiB; meanwhile: $replica_states |"
  else
    echo "| on disk | $((b / 1048576)) MiB ($disk) |"
  fi
  echo
  grep '^|' "$out"
  echo
  grep '^took_ms' "$out"
  if [ -s "$work/recall-api.md" ]; then
    echo
    echo "Vector source's recall@10 against the exact top 10 (through the API, vector only, one query at a time; load average $(cut -d' ' -f1-3 /proc/loadavg)):"
    echo
    echo "| queries | recall@10 | p50 / p99 ms |"
    echo "|---|---|---|"
    cat "$work/recall-api.md"
  fi
  if [ -s "$work/recall.md" ]; then
    echo
    echo "pgvector recall@10 against exact search (${BENCH_RECALL_QUERIES:-200} queries, in-process Retrieve at each ef_search; load average $(cut -d' ' -f1-3 /proc/loadavg)):"
    echo
    cat "$work/recall.md"
  fi
  if [ -n "${BENCH_LANCEDB:-}" ]; then
    echo "== LanceDB on the same files" >&2
    kill "$ragd_pid" && wait "$ragd_pid" 2>/dev/null
    ragd_pid=
    echo
    echo "LanceDB (scripts/peer_lancedb.py, load average $(cut -d' ' -f1-3 /proc/loadavg) before):"
    echo
    "$BENCH_LANCEDB" scripts/peer_lancedb.py --corpus "$corpus" --queries "$qfile" --dir "$work/lancedb" \
      --phase "${phase%s}" --clients "$clients"
  fi
}

replicas_data() {
  if [ "${BENCH_DOCS:-0}" -gt 0 ]; then
    docs=$BENCH_DOCS
    scale_data
    send=both
    if [ "$vecs" = none ]; then send=text; fi
  else
    corpus=$data/corpus.jsonl qfile=$data send=text
  fi
}

# replicas: two replicas on the same servers, queries split over them,
# without and then with a steady write load through A.
replicas_bench() {
  local what docs_desc
  echo "== ingesting $corpus through A" >&2
  ingest_corpus
  caught_up
  replica
  local bench=("$work/ragd-bench" -replicas "http://127.0.0.1:$port,http://127.0.0.1:$rport"
    -replica-pids "$ragd_pid,$replica_pid" -queries "$qfile" -send "$send" -clients "$clients")
  echo "== warming up both replicas for ${BENCH_WARMUP:-10s}" >&2
  "${bench[@]}" -duration "${BENCH_WARMUP:-10s}" -label warm-up >/dev/null
  # cpu_split: CPU seconds of A, B, PostgreSQL (the postmaster, the
  # backends it has waited for and those running now) and Neo4j so far.
  cpu_split() {
    echo "$(cpu_s "$ragd_pid") $(cpu_s "$replica_pid") $(pg_cpu) $(cpu_s "$neo")"
  }
  # run_phase LABEL ARGS... runs one phase and notes where the CPU went.
  run_phase() {
    local label=$1 c0 c1 t0 t1
    shift
    echo "== $label: $clients clients, $phase" >&2
    c0=$(cpu_split) t0=$(date +%s.%N)
    "${bench[@]}" -duration "$phase" -label "$label" -lag-out "$work/lag.txt" "$@" >> "$work/replicas.md"
    c1=$(cpu_split) t1=$(date +%s.%N)
    awk -v l="$label" -v a="$c0" -v b="$c1" -v t0="$t0" -v t1="$t1" 'BEGIN { split(a, x, " "); split(b, y, " ")
      printf "%s (%.0f s wall clock): A %.1f, B %.1f, PostgreSQL %.1f, Neo4j %.1f\n", l, t1 - t0, y[1]-x[1], y[2]-x[2], y[3]-x[3], y[4]-x[4] }' >> "$work/cpu.txt"
  }
  local load0
  load0=$(cut -d' ' -f1-3 /proc/loadavg)
  # The logs' lengths before the phases (ingest, B joining, warm-up).
  declare -A log_lines=([A]=$(wc -l < "$work/ragd.log") [B]=$(wc -l < "$work/replica.log"))
  : > "$work/replicas.md"
  run_phase "no writes" -header
  run_phase "writes" -write-docs "$corpus" -write-rate "${BENCH_WRITE_RATE:-200}" \
    -write-batch "${BENCH_WRITE_BATCH:-100}" -drain "${BENCH_DRAIN_S:-120}s"
  run_phase "no writes, after"
  what="PostgreSQL $("$PG_BIN_DIR/postgres" --version | awk '{print $3}') + pgvector $(psql -X -At "$RAGD_PG_DSN" -c "SELECT extversion FROM pg_extension WHERE extname = 'vector'") + Neo4j, deploy/rag.servers.yaml"
  docs_desc="Cranfield ($(grep -c . "$corpus") lines)"
  [ "${BENCH_DOCS:-0}" -gt 0 ] && docs_desc="$docs synthetic documents over ${BENCH_TENANTS:-3} tenants"
  echo "## ragd replicas under writes: 2 replicas, $what, $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load average $load0 before the phases, $(cut -d' ' -f1-3 /proc/loadavg) after"
  echo
  echo "$docs_desc ingested through A; B joined with an empty data_dir ($replica_line). $clients closed-loop hybrid query clients (shipped defaults, $embedder embedder) split over A and B, $phase a phase; the writer upserts the same corpus through A, every pass changing each text. Lag from GET /v1/status/health every second (log.stores[], kept stores only): entries behind the log's head and the age of the oldest unapplied entry. CPU per query is the replica's whole CPU (applying the log included) over its queries. Everything on one machine: ragd ×2, PostgreSQL, Neo4j and the clients share its cores."
  echo
  cat "$work/replicas.md"
  echo
  echo "CPU seconds per phase (the machine has $(nproc) cores; the writes phase includes the wait until both replicas were current):"
  echo
  sed 's/^/- /' "$work/cpu.txt"
  echo
  echo "Lag readings during the writes, one a second:"
  echo
  grep '^writes,' "$work/lag.txt" | sed 's/^/- /'
  echo
  echo "Warnings and errors in the replicas' logs (count × level | message | source or route | status | code | reason or error):"
  echo
  local r f when
  for when in before during; do
    for r in A B; do
      f=$work/ragd.log
      [ "$r" = B ] && f=$work/replica.log
      if [ "$when" = before ]; then head -n "${log_lines[$r]}" "$f"; else tail -n +"$((${log_lines[$r]} + 1))" "$f"; fi |
        jq -Rr 'fromjson? | select(.level == "WARN" or .level == "ERROR") | [.level, .msg, (.source // .route // ""), (.status // "" | tostring), (.code // ""), ((.reason // .error // .err // "") | .[:300])] | join(" | ")' |
        sort | uniq -c | sort -rn | head -5 |
        awk -v r="$r" -v w="$when" '{ n = $1; $1 = ""; print "- " r ", " w " the phases: " n " ×" $0 } END { if (NR == 0) print "- " r ", " w " the phases: none" }'
    done
  done
}

# no_fallback stops the run when ragd serves on the hashing stand-in while
# the built-in model was asked for: figures of the stand-in would pass for
# the model's.
no_fallback() {
  [ "$embedder" = builtin ] || return 0
  if grep -q "SERVING WITHOUT THE BUILT-IN MODEL" "$work/ragd.log"; then
    echo "bench: ragd could not load the built-in model and serves on hashing; run scripts/model.sh (RAGD_MODEL_CACHE) or set BENCH_EMBEDDER=hashing" >&2
    exit 1
  fi
}

# precision is the built-in encoder's precision, from the embedder's
# identity in GET /v1/status/server.
precision() {
  local id
  id=$(curl -sf -H "Authorization: Bearer ${RAGD_API_KEY:-}" "http://127.0.0.1:$port/v1/status/server" | jq -r '[.. | .identity? // empty] | first')
  case "$id" in
    *precision=int8*) echo int8 ;;
    *kind=builtin*) echo fp32 ;;
    *) echo "no built-in model" ;;
  esac
}

# load semantic: see the header. One fresh ragd per variant on port $port.
semantic_bench() {
  local v kind cfg t0 t1 c0 c1 ndocs cap rate out first=1 took=()
  local clist=${BENCH_CLIENT_LIST:-1 2 8 32}
  echo "## ragd load, semantic: embedded stores, hybrid text queries, query-vector LRU off, $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $phase phases, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  : > "$work/ingest.md"
  for v in ${BENCH_VARIANTS:-int8 fp32 hashing}; do
    kind=builtin
    [ "$v" = hashing ] && kind=hashing
    cfg=$work/rag-$v.yaml
    sed -e "s/^  kind: $embedder.*/  kind: $kind/" "$work/rag.yaml" > "$cfg"
    [ "$kind" = builtin ] && sed -i "s/^  kind: builtin$/&\n  precision: $v/" "$cfg"
    grep -q "^  kind: $kind" "$cfg" && grep -q "query_entries: 0" "$cfg" || { echo "bench: could not write the $v config" >&2; exit 1; }
    echo "== $v: starting ragd" >&2
    RAGD_DATA_DIR="$work/data-$v" RAGD_LISTEN="127.0.0.1:$port" "$work/ragd" serve -c "$cfg" 2>"$work/ragd.log" &
    ragd_pid=$!
    for _ in $(seq 1 300); do
      curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break
      kill -0 "$ragd_pid" 2>/dev/null || { tail -20 "$work/ragd.log" >&2; exit 1; }
      sleep 0.2
    done
    if [ "$kind" = builtin ]; then
      no_fallback
      [ "$(precision)" = "$v" ] || { echo "bench: ragd runs $(precision), not $v" >&2; exit 1; }
    fi
    echo "== $v: ingesting $data" >&2
    c0=$(cpu_s "$ragd_pid"); t0=$(date +%s.%N)
    "$work/ragd" ingest --server "http://127.0.0.1:$port" --no-resume "$data" >&2
    t1=$(date +%s.%N); c1=$(cpu_s "$ragd_pid")
    ndocs=$(grep -c . "$data/corpus.jsonl")
    awk -v v="$v" -v n="$ndocs" -v a="$t0" -v b="$t1" -v c="$c0" -v d="$c1" \
      'BEGIN { printf "| %s | %d | %.1f | %.0f | %.1f |\n", v, n, b - a, n / (b - a), 1000 * (d - c) / n }' >> "$work/ingest.md"
    "$work/ragd-bench" -server "http://127.0.0.1:$port" -queries "$data" -clients 8 -duration "${BENCH_WARMUP:-3s}" -label warm-up >/dev/null
    cap=0
    for c in $clist; do
      echo "== $v: $c clients, closed loop" >&2
      out=$("$work/ragd-bench" -server "http://127.0.0.1:$port" -queries "$data" -clients "$c" -pid "$ragd_pid" \
        -duration "$phase" -label "$v, $c clients" -took -json "$work/run.json" ${first:+-header})
      first=
      echo "$out" | grep '^|'
      took+=("$(echo "$out" | grep '^took_ms')")
      cap=$(jq -r --arg c "$cap" '[.ReqPerSec, ($c | tonumber)] | max' "$work/run.json")
    done
    rate=$(awk -v c="$cap" 'BEGIN { printf "%.0f", 0.8 * c }')
    echo "== $v: open loop at $rate queries/s" >&2
    out=$("$work/ragd-bench" -server "http://127.0.0.1:$port" -queries "$data" -clients 256 -rate "$rate" -pid "$ragd_pid" \
      -duration "$phase" -label "$v, open loop $rate/s (80 % of $(printf %.0f "$cap"))" -took)
    echo "$out" | grep '^|'
    took+=("$(echo "$out" | grep '^took_ms')")
    kill "$ragd_pid"; wait "$ragd_pid" 2>/dev/null || true
    ragd_pid=
  done
  echo
  echo "Time inside ragd (answers where the source was ok):"
  echo
  printf -- '- %s\n' "${took[@]}"
  echo
  echo "Ingest of Cranfield through \`ragd ingest --server\` (embedding, the stores and the change log; ragd's CPU over the documents):"
  echo
  echo "| variant | documents | seconds | documents/s | ragd CPU ms per document |"
  echo "|---|---:|---:|---:|---:|"
  cat "$work/ingest.md"
  echo
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
}

echo "== building ragd, ragd-bench and ragd-vectors" >&2
go build -o "$work/ragd" ./cmd/ragd
go build -o "$work/ragd-bench" ./cmd/ragd-bench
go build -o "$work/ragd-vectors" ./cmd/ragd-vectors
[ "$1" = scale ] && scale_data
[ "$1" = replicas ] && replicas_data

# The bench config: the shipped file of the mode with a short breaker
# cooldown (recovery is measured against it), pprof for profiling the run,
# and the fault-injection endpoints (embedded).
preloaded=
[ "$1" = scale ] && [ "$mode" = servers ] && preloaded=${BENCH_PG_DSN:-}
if [ "$mode" != servers ]; then
  src=rag.yaml
else
  src=deploy/rag.servers.yaml
  [ "${keyword:-bleve}" = opensearch ] && src=deploy/rag.opensearch.yaml
  # Servers of the benchmark's own, so stopping them disturbs nobody.
  # (PostgreSQL runs as the postgres user when we are root, which cannot
  # enter a root-owned scratch directory: use the services' own base then.)
  sdir=$work/services
  [ "$(id -u)" = 0 ] && sdir=/var/lib/ragd-services/bench-$port
  export RAG_SERVICES_DIR=$sdir RAG_SERVICES_PORT_BASE=$((port + 1))
  echo "== starting the servers in $RAG_SERVICES_DIR" >&2
  services_up=1
  # scale and replicas: Neo4j with its full JIT, as a long-running
  # production server (the test servers stop at C1 to start faster; load
  # keeps that, as its restart phase measures a cold start).
  if [ "$1" != load ]; then
    export RAG_NEO4J_JAVA_OPTS=${BENCH_NEO4J_JAVA_OPTS:--XX:+UseParallelGC}
  elif [ -n "${BENCH_NEO4J_JAVA_OPTS:-}" ]; then
    export RAG_NEO4J_JAVA_OPTS=$BENCH_NEO4J_JAVA_OPTS
  fi
  NEO_OPTS=${RAG_NEO4J_JAVA_OPTS:-}
  if [ "$1" = scale ]; then
    # Sized for the corpus: a production setup, not the test servers. No
    # embedder: vectors come with the documents (or from the built-in
    # embedder).
    export RAG_PG_SHARED_BUFFERS=${BENCH_PG_SHARED_BUFFERS:-2GB} RAG_NEO4J_HEAP=${BENCH_NEO4J_HEAP:-1g} \
      RAG_NEO4J_PAGECACHE=${BENCH_NEO4J_PAGECACHE:-2g}
    PG_SB=$RAG_PG_SHARED_BUFFERS NEO_HEAP=$RAG_NEO4J_HEAP NEO_PC=$RAG_NEO4J_PAGECACHE
    if [ -z "$preloaded" ]; then
      scripts/services.sh start postgres >&2
      scripts/services.sh start neo4j >&2
    fi
    if [ "$keyword" = opensearch ]; then
      RAG_OPENSEARCH_HEAP=${BENCH_OPENSEARCH_HEAP:-1g} scripts/services.sh start opensearch >&2
    fi
  elif [ "$1" = replicas ]; then
    scripts/services.sh start postgres >&2
    scripts/services.sh start neo4j >&2
  else
    scripts/services.sh up >&2
  fi
  eval "$(scripts/services.sh env)"
  PG_BIN_DIR=$RAG_TEST_PG_BIN
  listener() { ss -ltnpH "sport = :$1" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2; }
  neo=
  if [ -n "$preloaded" ]; then
    export RAGD_PG_DSN=$BENCH_PG_DSN
  else
    neo=$(listener "${RAGD_NEO4J_URI##*:}")
    [ -n "$neo" ] || { echo "bench: no Neo4j listening (scripts/services.sh)" >&2; exit 1; }
  fi
  pm=$(listener "$(echo "$RAGD_PG_DSN" | sed -E 's#.*:([0-9]+)/.*#\1#')")
  [ -n "$pm" ] || { echo "bench: no PostgreSQL listening (scripts/services.sh, BENCH_PG_DSN)" >&2; exit 1; }
  osn=
  if [ "${keyword:-bleve}" = opensearch ]; then
    osn=$(listener "${RAGD_OPENSEARCH_URL##*:}")
    [ -n "$osn" ] || { echo "bench: no OpenSearch listening (scripts/services.sh)" >&2; exit 1; }
  fi
  export RAGD_ADMIN_KEY=${RAGD_ADMIN_KEY:-bench-admin-key-$RANDOM$RANDOM$RANDOM}
  export RAGD_API_KEY=$RAGD_ADMIN_KEY
fi
# Servers mode switches the graph source and its expansion on, so that
# Neo4j is on every query's path (the shipped file leaves it off).
graph_on=()
[ "$mode" = servers ] && [ "$1" = load ] && graph_on=(-e "s/^    graph:   {weight: 0,/    graph:   {weight: 1.0,/" -e "s/^    enabled: false        # follows graph links/    enabled: true         # follows graph links/")
sed "${graph_on[@]}" -e "s/^  reset_timeout_s: .*/  reset_timeout_s: $reset/" \
    -e "s/^  kind: builtin .*/  kind: $embedder${BENCH_PRECISION:+\\n  precision: $BENCH_PRECISION}/" \
    -e "s/^    query_entries: .*/    query_entries: ${BENCH_QUERY_CACHE:-0}/" \
    -e "s/^  shutdown_grace_s: .*/&\n  pprof: true\n  debug_faults: true/" \
    -e "s/^  level: info/  level: warn/" "$src" > "$work/rag.yaml"
grep -q "reset_timeout_s: $reset" "$work/rag.yaml" || { echo "bench: could not set reset_timeout_s in $src" >&2; exit 1; }
grep -q "^  kind: $embedder" "$work/rag.yaml" || { echo "bench: could not set the embedder in $src" >&2; exit 1; }
# The query-vector LRU (a section of its own where the file has none).
grep -q "query_entries:" "$work/rag.yaml" || sed -i "s/^  kind: $embedder.*/&\n  cache: {query_entries: ${BENCH_QUERY_CACHE:-0}}/" "$work/rag.yaml"
if [ "$mode" = servers ] && [ "$1" = scale ]; then
  if grep -q '^    index_build_mem_mb:' "$work/rag.yaml"; then
    sed -i "s/^    index_build_mem_mb: [0-9]*/    index_build_mem_mb: ${BENCH_INDEX_MEM_MB:-2048}/" "$work/rag.yaml"
  else
    sed -i "s/^    ef_search: .*/&\n    index_build_mem_mb: ${BENCH_INDEX_MEM_MB:-2048}/" "$work/rag.yaml"
  fi
  grep -q "index_build_mem_mb: ${BENCH_INDEX_MEM_MB:-2048}" "$work/rag.yaml" || { echo "bench: could not set index_build_mem_mb in $src" >&2; exit 1; }
fi
if [ -n "$preloaded" ]; then
  # No Neo4j: the graph off (the file's graph section replaced).
  awk '/^  graph:$/ { print "  graph:\n    kind: none"; skip = 1; next } skip && /^    / { next } { skip = 0; print }' "$work/rag.yaml" > "$work/rag.yaml.tmp"
  mv "$work/rag.yaml.tmp" "$work/rag.yaml"
  grep -q "^    kind: none" "$work/rag.yaml" || { echo "bench: could not switch the graph off in $src" >&2; exit 1; }
fi
if [ "$mode" = servers ] && [ "$1" = load ] && ! grep -q "graph:   {weight: 1.0," "$work/rag.yaml"; then
  echo "bench: could not switch the graph on in $src" >&2; exit 1
fi

if [ "$mode" = semantic ]; then
  semantic_bench
  exit
fi
echo "== starting ragd ($mode, $embedder embedder) on 127.0.0.1:$port" >&2
pgload=
if [ -n "$preloaded" ] && { [ "$(psql -X -At "$RAGD_PG_DSN" -c "SELECT to_regclass('ragd_documents') IS NOT NULL")" != t ] ||
    [ "$(psql -X -At "$RAGD_PG_DSN" -c "SELECT EXISTS (SELECT 1 FROM ragd_documents)")" != t ]; }; then
  echo "== loading $corpus into $(echo "$RAGD_PG_DSN" | sed -E 's#//[^@]*@#//#') (ragd-bench -pg-load)" >&2
  "$work/ragd-bench" -queries "$qfile" -pg-recall "$RAGD_PG_DSN" -pg-load "$corpus" -pg-build-mem-mb "${BENCH_INDEX_MEM_MB:-2048}" \
    -recall-queries 1 -ef 100 > "$work/pgload.md"
  pgload=$(grep '^loaded' "$work/pgload.md")
fi
ragd_t0=$(date +%s.%N)
RAGD_DATA_DIR="$work/data" RAGD_LISTEN="127.0.0.1:$port" "$work/ragd" serve -c "$work/rag.yaml" 2>"$work/ragd.log" &
ragd_pid=$!
for _ in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break
  kill -0 "$ragd_pid" 2>/dev/null || { tail -20 "$work/ragd.log" >&2; exit 1; }
  sleep 0.2
done
no_fallback
if [ "$1" = scale ]; then
  scale
  exit
fi
if [ "$1" = replicas ]; then
  replicas_bench
  exit
fi
echo "== ingesting $data" >&2
"$work/ragd" ingest --server "http://127.0.0.1:$port" --no-resume "$data" >&2 || true

common=(-server "http://127.0.0.1:$port" -queries "$data" -clients "$clients" -pid "$ragd_pid")
# Servers get longer: a fresh Neo4j compiles its hot paths (C2) under the
# first thousands of queries. Then every breaker the warm-up may have
# opened must have closed again (its recovery probe finds the source warm).
warmup=${BENCH_WARMUP:-3s}
[ "$mode" = servers ] && warmup=${BENCH_WARMUP:-30s}
echo "== warming up for $warmup" >&2
"$work/ragd-bench" "${common[@]}" -duration "$warmup" -label warm-up >/dev/null
for _ in $(seq 1 120); do
  [ "$(health | jq '[.components | to_entries[] | select(.key | startswith("breaker:")) | .value.state] | all(. == "closed")')" = true ] && break
  sleep 1
done

echo "## ragd load, $mode, $embedder embedder$( [ "$embedder" = builtin ] && echo " ($(precision))"), query-vector LRU ${BENCH_QUERY_CACHE:-0} entries, $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $clients clients${rate:+ (open loop, $rate queries/s)}, $phase phases, reset_timeout ${reset}s, load average $(cut -d' ' -f1-3 /proc/loadavg)${NEO_OPTS:+, Neo4j JVM flags \`$NEO_OPTS\`}"
echo
if [ "$mode" = embedded ]; then
  "$work/ragd-bench" "${common[@]}" -duration "$phase" -scenario embedded -reset-timeout "${reset}s"
elif [ "$mode" = hung ]; then
  "$work/ragd-bench" "${common[@]}" -rate "$rate" -duration "$phase" -scenario vector-hung -reset-timeout "${reset}s"
  echo
  echo "vector guard after the run:"
  curl -sf "http://127.0.0.1:$port/metrics" | grep -E '^ragd_guard_(limit|shed_total|timeouts_total)\{.*source="vector"' | sed 's/^/    /'
  echo "background probe trials that failed (ragd log): $(grep -c 'guard: trial failed' "$work/ragd.log" || true)"
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
else
  "$work/ragd-bench" "${common[@]}" -duration "$phase" -scenario servers -reset-timeout "${reset}s" \
    -neo4j-pid "$neo" -pg-pid "$pm" \
    -neo4j-stop "scripts/services.sh stop neo4j" -neo4j-start "scripts/services.sh start neo4j"
fi
