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
#
# Each prints one markdown table (req/s, p50/p99, CPU ms per query, each
# source's share of ok answers, breaker transitions per phase) and a summary
# of the goals under it. Paste both into README's "Under load" section with
# the machine they ran on (nproc, CPU model) and the date.
#
# Settings (environment): RAG_CRANFIELD_DIR (default ../shared/data/cranfield),
# BENCH_CLIENTS (8), BENCH_PHASE (10s), BENCH_PORT (18090), BENCH_RESET_S (10).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ "${1:-}" = load ] || usage
mode=${2:-embedded}
case "$mode" in embedded|servers) ;; *) usage ;; esac

data=${RAG_CRANFIELD_DIR:-../shared/data/cranfield}
[ -f "$data/corpus.jsonl" ] || { echo "bench: no corpus at $data (set RAG_CRANFIELD_DIR)" >&2; exit 1; }
clients=${BENCH_CLIENTS:-8}
phase=${BENCH_PHASE:-10s}
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

echo "== building ragd and ragd-bench" >&2
go build -o "$work/ragd" ./cmd/ragd
go build -o "$work/ragd-bench" ./cmd/ragd-bench

# The bench config: the shipped file of the mode with a short breaker
# cooldown (recovery is measured against it), pprof for profiling the run,
# and the fault-injection endpoints (embedded).
if [ "$mode" = embedded ]; then
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
echo "== ingesting $data" >&2
"$work/ragd" ingest --server "http://127.0.0.1:$port" --no-resume "$data" >&2 || true

common=(-server "http://127.0.0.1:$port" -queries "$data" -clients "$clients" -pid "$ragd_pid")
echo "== warming up" >&2
"$work/ragd-bench" "${common[@]}" -duration 3s -label warm-up >/dev/null

echo "## ragd load, $mode, $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $clients clients, $phase phases, reset_timeout ${reset}s"
echo
if [ "$mode" = embedded ]; then
  "$work/ragd-bench" "${common[@]}" -duration "$phase" -scenario embedded -reset-timeout "${reset}s"
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
