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
#
# Each prints one markdown table (req/s, p50/p99, CPU ms per query, each
# source's share of ok answers, breaker transitions per phase) and a summary
# of the goals under it. Paste both into README's "Under load" section with
# the machine they ran on (nproc, CPU model) and the date.
#
#   scripts/bench.sh scale N         ragd with its embedded stores on N synthetic
#                                    documents (Cranfield and near-copies, made by
#                                    ../shared/tools/synth_corpus.py): ingest rate
#                                    and ragd's CPU time per document, keyword-only,
#                                    vector-only and hybrid (shipped defaults)
#                                    latency with 1 client, hybrid req/s and partial
#                                    answers with 8, RSS and size on disk; then the
#                                    graph (dormant with the shipped defaults) asked
#                                    for, the time until it answers, hybrid with the
#                                    graph source and expansion switched on, each
#                                    source's time inside the answers, RSS and disk
#                                    with the graph. One table for README's "At
#                                    100,000 documents" section. Needs python3 and
#                                    jq. BENCH_LANCEDB=PYTHON also runs
#                                    scripts/peer_lancedb.py on the same files with
#                                    that Python (which has lancedb) and prints its
#                                    JSON line.
#
#   scripts/bench.sh embed           the built-in embedder beside ONNX Runtime
#                                    (Python, 2 threads) on the same model and
#                                    texts, interleaved rounds: documents/s on
#                                    BENCH_DOCS (128) Cranfield documents, one
#                                    query's p50/p99 latency, and the ratios. One
#                                    table for docs/embedders.md and README. Needs
#                                    RAG_TEST_MODEL_DIR (the model directory) and
#                                    a Python with onnxruntime, tokenizers and
#                                    numpy (BENCH_PYTHON, default python3); the
#                                    ONNX graph is BENCH_ONNX, else the one
#                                    embedder/builtin/testdata/gen_reference.py
#                                    fetches. BENCH_ROUNDS (3), best of each.
#                                    RAGD_KERNEL=avx2 (or go) measures the
#                                    built-in's slower kernels on this CPU.
#
# Settings (environment): RAG_CRANFIELD_DIR (default ../shared/data/cranfield),
# BENCH_CLIENTS (8; 64 for hung), BENCH_PHASE (10s; 12s for hung, longer
# than the cooldown), BENCH_PORT (18090), BENCH_RESET_S (10), BENCH_RATE
# (hung only; 200), BENCH_EMBEDDER (load and scale: hashing, so the figures
# measure the stores and compare with earlier runs; builtin runs the shipped
# model).
# scale only: BENCH_CACHE (a directory keeping the generated corpora between
# runs; default a temporary one), BENCH_VECTORS (384: documents and queries
# carry the same random unit vectors, as given to the peers; 0: the built-in
# embedder embeds them), BENCH_CATCHUP_S (3600: the longest wait after the
# ingest for the derived stores to apply the change log).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,63p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
case "${1:-}" in
  load)
    mode=${2:-embedded}
    case "$mode" in embedded|servers|hung) ;; *) usage ;; esac ;;
  embed) mode=embed ;;
  scale)
    mode=embedded
    docs=${2:-}
    [[ "$docs" =~ ^[0-9]+$ ]] || usage ;;
  *) usage ;;
esac

data=${RAG_CRANFIELD_DIR:-../shared/data/cranfield}
[ -f "$data/corpus.jsonl" ] || { echo "bench: no corpus at $data (set RAG_CRANFIELD_DIR)" >&2; exit 1; }
data=$(cd "$data" && pwd)

# embed: the built-in embedder's Go benchmarks and scripts/embed_ort.py on
# the same texts, alternating, BENCH_ROUNDS times; the best figure of each.
embed_bench() {
  local model=${RAG_TEST_MODEL_DIR:-} py=${BENCH_PYTHON:-python3} rounds=${BENCH_ROUNDS:-3} ndocs=${BENCH_DOCS:-128}
  [ -n "$model" ] && [ -f "$model/model.safetensors" ] || { echo "bench: set RAG_TEST_MODEL_DIR to the model directory (ragd model import/pull)" >&2; exit 1; }
  embed_tmp=$(mktemp -d); trap 'rm -rf "$embed_tmp"' EXIT
  local tmp=$embed_tmp
  go test -c -o "$tmp/builtin.test" ./embedder/builtin/ >&2
  local onnx=(); [ -n "${BENCH_ONNX:-}" ] && onnx=(--onnx "$BENCH_ONNX")
  local go_docs=0 go_p50=1e9 go_p99=1e9 ort_docs=0 ort_p50=1e9 ort_p99=1e9 go_cpu=1e9 ort_cpu=1e9 out ortv="" tokens="" kern=""
  best() { awk -v a="$1" -v b="$2" -v hi="$3" 'BEGIN { if ((hi && b > a) || (!hi && b < a)) print b; else print a }'; }
  for r in $(seq "$rounds"); do
    echo "== round $r/$rounds (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    out=$(cd embedder/builtin && RAG_TEST_MODEL_DIR="$model" BENCH_DOCS="$ndocs" RAG_BENCH_CORPUS="$data/corpus.jsonl" \
      RAG_BENCH_QUERIES="$data/queries.jsonl" "$tmp/builtin.test" -test.run '^$' -test.v \
      -test.bench 'EmbedDocuments$|EmbedQuery$' -test.benchtime 2x 2>&1)
    out+=$'\n'$(cd embedder/builtin && RAG_TEST_MODEL_DIR="$model" RAG_BENCH_QUERIES="$data/queries.jsonl" \
      "$tmp/builtin.test" -test.run '^$' -test.bench 'EmbedQuery$' -test.benchtime 200x 2>&1)
    echo "$out" | grep -E '^Benchmark' >&2
    kern=$(echo "$out" | sed -n 's/.*kernel \([a-z0-9]*\).*/\1/p' | head -1)
    go_docs=$(best "$go_docs" "$(echo "$out" | awk '/EmbedDocuments/ { for (i = 1; i < NF; i++) if ($(i+1) == "docs/s") print $i }')" 1)
    go_cpu=$(best "$go_cpu" "$(echo "$out" | awk '/EmbedDocuments/ { for (i = 1; i < NF; i++) if ($(i+1) == "cpu-ms/doc") print $i }')" 0)
    go_p50=$(best "$go_p50" "$(echo "$out" | awk '/EmbedQuery/ && $2 == 200 { for (i = 1; i < NF; i++) if ($(i+1) == "p50-ms") print $i }')" 0)
    go_p99=$(best "$go_p99" "$(echo "$out" | awk '/EmbedQuery/ && $2 == 200 { for (i = 1; i < NF; i++) if ($(i+1) == "p99-ms") print $i }')" 0)
    out=$("$py" scripts/embed_ort.py "${onnx[@]}" --tokenizer "$model/tokenizer.json" --corpus "$data/corpus.jsonl" \
      --queries "$data/queries.jsonl" --docs "$ndocs" --rounds 1 --threads 2)
    echo "$out" >&2
    ort_docs=$(best "$ort_docs" "$(echo "$out" | jq .docs_per_s)" 1)
    ort_cpu=$(best "$ort_cpu" "$(echo "$out" | jq .cpu_ms_per_doc)" 0)
    ort_p50=$(best "$ort_p50" "$(echo "$out" | jq .query_p50_ms)" 0)
    ort_p99=$(best "$ort_p99" "$(echo "$out" | jq .query_p99_ms)" 0)
    ortv=$(echo "$out" | jq -r .onnxruntime)
    tokens=$(echo "$out" | jq .mean_tokens)
  done
  echo "## built-in embedder vs ONNX Runtime, $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "$(basename "$model"), $ndocs Cranfield documents (mean $tokens tokens), best of $rounds interleaved rounds"
  echo
  echo "| | documents/s | CPU ms per document | query p50 | query p99 |"
  echo "|---|---|---|---|---|"
  echo "| built-in (Go, $kern kernel, GOMAXPROCS $(nproc)) | $go_docs | $go_cpu | $go_p50 ms | $go_p99 ms |"
  echo "| ONNX Runtime $ortv (Python, 2 threads) | $ort_docs | $ort_cpu | $ort_p50 ms | $ort_p99 ms |"
  awk -v a="$go_docs" -v b="$ort_docs" -v g="$go_cpu" -v h="$ort_cpu" -v c="$go_p50" -v d="$ort_p50" -v e="$go_p99" -v f="$ort_p99" \
    'BEGIN { printf "| built-in / ONNX Runtime | %.2f× | %.2f× | %.2f× | %.2f× |\n", a / b, g / h, c / d, e / f }'
}
if [ "$mode" = embed ]; then
  embed_bench
  exit
fi
clients=${BENCH_CLIENTS:-8}
phase=${BENCH_PHASE:-10s}
rate=
if [ "$mode" = hung ]; then
  clients=${BENCH_CLIENTS:-64}
  phase=${BENCH_PHASE:-12s}
  rate=${BENCH_RATE:-200}
fi
port=${BENCH_PORT:-18090}
reset=${BENCH_RESET_S:-10}
work=$(mktemp -d)
ragd_pid=
services_up=
cleanup() {
  [ -n "$ragd_pid" ] && kill "$ragd_pid" 2>/dev/null && wait "$ragd_pid" 2>/dev/null
  [ -n "$services_up" ] && scripts/services.sh purge >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

# scale: the corpus and the query file (Cranfield's queries, each with a
# random unit vector when BENCH_VECTORS > 0), cached by size and dimension.
scale_data() {
  cache=${BENCH_CACHE:-$work/cache}
  vdim=${BENCH_VECTORS:-384}
  mkdir -p "$cache"
  corpus=$cache/synth-$docs-v$vdim.jsonl
  qfile=$cache/queries-v$vdim.jsonl
  vflag=()
  [ "$vdim" -gt 0 ] && vflag=(--vectors "$vdim")
  if [ ! -s "$corpus" ]; then
    echo "== making $corpus" >&2
    python3 ../shared/tools/synth_corpus.py "$data" "$corpus.tmp" "$docs" "${vflag[@]}"
    mv "$corpus.tmp" "$corpus"
  fi
  if [ ! -s "$qfile" ]; then
    python3 - "$data/queries.jsonl" "$qfile" "$vdim" <<'PY'
import json, random, sys
src, out, dim = sys.argv[1], sys.argv[2], int(sys.argv[3])
rnd = random.Random(7)
with open(src) as f, open(out, "w") as o:
    for line in f:
        q = {"text": json.loads(line)["text"]}
        if dim:
            v = [rnd.gauss(0, 1) for _ in range(dim)]
            n = sum(x * x for x in v) ** 0.5
            q["vector"] = [round(x / n, 6) for x in v]
        o.write(json.dumps(q) + "\n")
PY
  fi
}

# caught_up waits until every derived store that is kept (not dormant:
# something reads it) has applied the change log (GET /v1/status/health's
# log.stores[].behind), when the server has one, for at most
# BENCH_CATCHUP_S seconds (default 3600).
caught_up() {
  local limit=${BENCH_CATCHUP_S:-3600} start=$SECONDS behind
  while [ $((SECONDS - start)) -lt "$limit" ]; do
    behind=$(curl -sf "http://127.0.0.1:$port/v1/status/health" | jq '[.log.stores[]? | select(.dormant | not) | .behind] | add // 0') || behind=1
    [ "$behind" = 0 ] && return
    sleep 1
  done
  echo "bench: derived stores still behind after $limit s: $(curl -sf "http://127.0.0.1:$port/v1/status/health" | jq -c '.log')" >&2
  exit 1
}

# cpu_s is the CPU time (user + system) process $1 has used, in seconds.
cpu_s() { awk -v t="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$1/stat"; }

# graph_built asks for the graph (a query that switches it on) until it
# answers: with the shipped rag.yaml the embedded graph is dormant until a
# query asks for it, then built from the change log.
graph_built() {
  local body
  body=$(jq -c '. + {text: "wing flutter"}' <<<"$graph")
  until curl -sf -H 'Content-Type: application/json' -d "$body" "http://127.0.0.1:$port/v1/query" |
      jq -e '.sources.graph.status == "ok"' >/dev/null; do
    sleep 0.5
  done
}

scale() {
  local t0 t1 t2 t3 t4 b c0 c2 c3 c4
  echo "== ingesting $corpus" >&2
  c0=$(cpu_s "$ragd_pid")
  t0=$(date +%s.%N)
  /usr/bin/time -f '%U %S' -o "$work/client.cpu" \
    "$work/ragd" ingest --server "http://127.0.0.1:$port" --no-resume --progress plain "$corpus" >&2
  t1=$(date +%s.%N)
  caught_up
  t2=$(date +%s.%N)
  c2=$(cpu_s "$ragd_pid")
  rss_ingest=$(awk '/VmRSS/{print $2}' "/proc/$ragd_pid/status")
  anon_ingest=$(awk '/RssAnon/{print $2}' "/proc/$ragd_pid/status")
  dormant=$(curl -sf "http://127.0.0.1:$port/v1/status/health" | jq -r '[.log.stores[]? | select(.dormant) | .store] | join(", ")')

  # What each row sends: the sources off in it, and -send (vector: no text).
  off() { jq -nc '{sources: ($ARGS.positional | map({(.): {enabled: false}}) | add)}' --args "$@"; }
  graph='{"sources":{"graph":{"enabled":true,"weight":1}},"expand":{"enabled":true}}'
  vsend=vector; hsend=both
  if [ "$vdim" = 0 ]; then vsend=text; hsend=text; fi
  common=(-server "http://127.0.0.1:$port" -queries "$qfile" -pid "$ragd_pid" -duration "$phase")
  echo "== warming up" >&2
  "$work/ragd-bench" "${common[@]}" -clients "$clients" -send "$hsend" -duration 3s >/dev/null
  out=$work/scale.md
  {
    "$work/ragd-bench" "${common[@]}" -header -clients 1 -label "keyword only, 1 client" -send text -body "$(off vector graph graph_expand)"
    "$work/ragd-bench" "${common[@]}" -clients 1 -label "vector only, 1 client" -send "$vsend" -body "$(off keyword graph graph_expand)"
    "$work/ragd-bench" "${common[@]}" -clients 1 -label "hybrid, 1 client" -send "$hsend" -took
    "$work/ragd-bench" "${common[@]}" -clients "$clients" -label "hybrid, $clients clients" -send "$hsend" -took
  } > "$out"
  # Memory and disk of the shipped configuration, before anything asks
  # for the graph.
  rss=$(awk '/VmRSS/{print $2}' "/proc/$ragd_pid/status")
  anon=$(awk '/RssAnon/{print $2}' "/proc/$ragd_pid/status")
  hwm=$(awk '/VmHWM/{print $2}' "/proc/$ragd_pid/status")
  b=$(du -sb "$work/data" | cut -f1)
  disk=$(for d in "$work"/data/*/; do printf '%s %s MiB, ' "$(basename "$d")" $(($(du -sb "$d" | cut -f1) / 1048576)); done | sed 's/, $//')

  # The graph: built when a query first asks for it (unless rag.yaml reads
  # it), then measured.
  echo "== asking for the graph" >&2
  c3=$(cpu_s "$ragd_pid")
  t3=$(date +%s.%N)
  graph_built
  t4=$(date +%s.%N)
  c4=$(cpu_s "$ragd_pid")
  "$work/ragd-bench" "${common[@]}" -clients 1 -label "hybrid with graph and expansion, 1 client" -send "$hsend" -body "$graph" -took >> "$out"
  grss=$(awk '/VmRSS/{print $2}' "/proc/$ragd_pid/status")
  ganon=$(awk '/RssAnon/{print $2}' "/proc/$ragd_pid/status")
  gb=$(du -sb "$work/data" | cut -f1)

  echo "## ragd at scale: $docs documents, embedded default, $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  if [ "$vdim" -gt 0 ]; then
    echo "Documents and queries carry the same random unit $vdim-dimensional vectors (the embedder is not used)."
  else
    echo "The ${BENCH_EMBEDDER:-hashing} embedder embeds documents and queries."
  fi
  echo
  echo "| measure | ragd |"
  echo "|---|---|"
  read -r cu cs < "$work/client.cpu"
  awk -v n="$docs" -v a="$t0" -v b="$t1" -v c="$t2" -v c0="$c0" -v c2="$c2" -v cl="$(awk -v u="$cu" -v s="$cs" 'BEGIN{print u+s}')" -v dormant="$dormant" 'BEGIN {
    printf "| ingest (ragd ingest, batches of 256) | %.0f s, %.0f docs/s; every store kept caught up after %.0f s (**%.0f docs/s**)%s; ragd CPU %.0f s (%.2f ms per document), the client %.0f s |\n", b-a, n/(b-a), c-a, n/(c-a), (dormant == "" ? "" : " (" dormant " dormant: nothing reads it)"), c2-c0, (c2-c0)*1000/n, cl }'
  awk -v a="$t3" -v b="$t4" -v c0="$c3" -v c1="$c4" 'BEGIN {
    printf "| the graph, built when a query first asks for it | answering after %.0f s (ragd CPU %.0f s) |\n", b-a, c1-c0 }'
  row() { grep -F "| $1 |" "$out" | awk -F'|' '{ gsub(/ /, "", $5); gsub(/ /, "", $6); gsub(/ /, "", $4); gsub(/ /, "", $9); gsub(/ /, "", $7); print $5 " / " $6 " ms (" $4 " req/s, " $7 " CPU ms/query, " $9 " partial)" }'; }
  echo "| keyword-only p50 / p99, 1 client | $(row 'keyword only, 1 client') |"
  echo "| vector-only p50 / p99, 1 client | $(row 'vector only, 1 client') |"
  echo "| hybrid p50 / p99, 1 client | $(row 'hybrid, 1 client') |"
  echo "| hybrid, $clients clients | $(row "hybrid, $clients clients") |"
  echo "| hybrid with graph and expansion on, p50 / p99, 1 client | $(row 'hybrid with graph and expansion, 1 client') |"
  took() { grep -F "($1):" "$out" | cut -d: -f2- | sed 's/^ //'; }
  echo "| inside hybrid answers, took_ms p50 / p99 (1 client) | $(took 'hybrid, 1 client') |"
  echo "| inside hybrid answers with graph and expansion on (1 client) | $(took 'hybrid with graph and expansion, 1 client') |"
  echo "| RSS after ingest / after the query runs / peak | $((rss_ingest / 1024)) / $((rss / 1024)) / $((hwm / 1024)) MiB, of which anonymous (heap) $((anon_ingest / 1024)) / $((anon / 1024)) MiB, the rest mapped store files |"
  echo "| on disk | $((b / 1048576)) MiB ($disk) |"
  echo "| RSS / on disk with the graph built | $((grss / 1024)) MiB, of which anonymous $((ganon / 1024)) MiB / $((gb / 1048576)) MiB |"
  echo
  grep '^|' "$out"
  echo
  grep '^took_ms' "$out"
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

[ "$1" = scale ] && scale_data
echo "== building ragd and ragd-bench" >&2
go build -o "$work/ragd" ./cmd/ragd
go build -o "$work/ragd-bench" ./cmd/ragd-bench

# The bench config: the shipped file of the mode with a short breaker
# cooldown (recovery is measured against it), pprof for profiling the run,
# and the fault-injection endpoints (embedded).
if [ "$mode" != servers ]; then
  src=rag.yaml
else
  src=deploy/rag.servers.yaml
  # Servers of the benchmark's own, so stopping them disturbs nobody.
  # (PostgreSQL runs as the postgres user when we are root, which cannot
  # enter a root-owned scratch directory: use the services' own base then.)
  sdir=$work/services
  [ "$(id -u)" = 0 ] && sdir=/var/lib/ragd-services/bench-$port
  export RAG_SERVICES_DIR=$sdir RAG_SERVICES_PORT_BASE=$((port + 1))
  echo "== starting PostgreSQL and Neo4j in $RAG_SERVICES_DIR" >&2
  services_up=1
  scripts/services.sh up >&2
  eval "$(scripts/services.sh env)"
  export RAGD_ADMIN_KEY=${RAGD_ADMIN_KEY:-bench-admin-key-$RANDOM$RANDOM$RANDOM}
  export RAGD_API_KEY=$RAGD_ADMIN_KEY
fi
# Servers mode switches the graph source and its expansion on, so that
# Neo4j is on every query's path (the shipped file leaves it off).
graph_on=()
[ "$mode" = servers ] && graph_on=(-e "s/^    graph:   {weight: 0,/    graph:   {weight: 1.0,/" -e "s/^    enabled: false        # follows graph links/    enabled: true         # follows graph links/")
sed "${graph_on[@]}" -e "s/^  reset_timeout_s: .*/  reset_timeout_s: $reset/" \
    -e "s/^  kind: builtin .*/  kind: ${BENCH_EMBEDDER:-hashing}/" \
    -e "s/^  shutdown_grace_s: .*/&\n  pprof: true\n  debug_faults: true/" \
    -e "s/^  level: info/  level: warn/" "$src" > "$work/rag.yaml"
grep -q "reset_timeout_s: $reset" "$work/rag.yaml" || { echo "bench: could not set reset_timeout_s in $src" >&2; exit 1; }
if [ "$mode" = servers ] && ! grep -q "graph:   {weight: 1.0," "$work/rag.yaml"; then
  echo "bench: could not switch the graph on in $src" >&2; exit 1
fi

echo "== starting ragd ($mode) on 127.0.0.1:$port" >&2
RAGD_DATA_DIR="$work/data" RAGD_LISTEN="127.0.0.1:$port" "$work/ragd" serve -c "$work/rag.yaml" 2>"$work/ragd.log" &
ragd_pid=$!
for _ in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break
  kill -0 "$ragd_pid" 2>/dev/null || { tail -20 "$work/ragd.log" >&2; exit 1; }
  sleep 0.2
done
if [ "$1" = scale ]; then
  scale
  exit
fi
echo "== ingesting $data" >&2
"$work/ragd" ingest --server "http://127.0.0.1:$port" --no-resume "$data" >&2 || true

common=(-server "http://127.0.0.1:$port" -queries "$data" -clients "$clients" -pid "$ragd_pid")
echo "== warming up" >&2
"$work/ragd-bench" "${common[@]}" -duration 3s -label warm-up >/dev/null

echo "## ragd load, $mode, $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $clients clients${rate:+ (open loop, $rate queries/s)}, $phase phases, reset_timeout ${reset}s, load average $(cut -d' ' -f1-3 /proc/loadavg)"
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
  bolt=${RAGD_NEO4J_URI##*:}
  pgport=$(echo "$RAGD_PG_DSN" | sed -E 's#.*:([0-9]+)/.*#\1#')
  listener() { ss -ltnpH "sport = :$1" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2; }
  neo=$(listener "$bolt")
  pm=$(listener "$pgport")
  [ -n "$neo" ] && [ -n "$pm" ] || { echo "bench: no Neo4j on $bolt or PostgreSQL on $pgport (scripts/services.sh up)" >&2; exit 1; }
  "$work/ragd-bench" "${common[@]}" -duration "$phase" -scenario servers -reset-timeout "${reset}s" \
    -neo4j-pid "$neo" -pg-pid "$pm" \
    -neo4j-stop "scripts/services.sh stop neo4j" -neo4j-start "scripts/services.sh start neo4j"
fi
