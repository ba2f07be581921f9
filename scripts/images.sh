#!/usr/bin/env bash
# Container images for ragd's tests and docker-compose.yml, built here from
# Debian's packages and Maven Central only (no other registry is needed):
#
#   ragd-local/debian:trixie          debootstrap --variant=minbase trixie, imported
#   ragd-local/golang:<go version>    that base with this machine's Go toolchain
#   ragd-local/postgres:17-pgvector   Debian's postgresql-17 + postgresql-17-pgvector
#   ragd-local/neo4j:5.26             Neo4j Community's jars (Maven Central) on Debian's JRE
#   ragd-local/opensearch:2.19.6      OpenSearch's integ-test distribution + analysis-common
#                                     (Maven Central) on Debian's JRE
#   ragd:local                        the project's Dockerfile, on the two local bases
#
#   scripts/images.sh build      load the images from the cache, build what is missing
#   scripts/images.sh env        export lines: eval "$(scripts/images.sh env)"
#   scripts/images.sh engine up|down|env
#                                a private Docker engine (root; see below)
#   scripts/images.sh compose    build the Compose v2 CLI plugin (tools/compose)
#                                and print its directory
#
# Each image carries a label with the hash of its inputs (recipe, versions,
# base image, for ragd:local the checkout's files); `build` keeps an image
# whose label matches, else loads $RAG_CACHE_DIR/images/<name>-<hash>.tar,
# else builds it and saves that tarball, so a warm run builds nothing.
#
# The private engine: Debian's docker.io (installed when missing), its data,
# state and socket under RAG_DOCKER_DIR (default /var/lib/ragd-docker), so it
# shares nothing with another engine on the machine. `engine env` prints
# DOCKER_HOST for it. See docs/services.md "Containers".
set -euo pipefail
: "${HOME:=$(getent passwd "$(id -u)" | cut -d: -f6)}"
export HOME
CHECKOUT=$(cd "$(dirname "$0")/.." && pwd -P)
CACHE_DIR=${RAG_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ragd}
IMAGE_CACHE=$CACHE_DIR/images
DOCKER_DIR=${RAG_DOCKER_DIR:-/var/lib/ragd-docker}
DEBIAN_SUITE=trixie
DEBIAN_MIRROR=${RAG_DEBIAN_MIRROR:-http://deb.debian.org/debian}
NEO4J_VERSION=${RAG_NEO4J_VERSION:-5.26.30}
OPENSEARCH_VERSION=${RAG_OPENSEARCH_VERSION:-2.19.6}
COMPOSE_VERSION=$(sed -n 's#^[[:space:]]*github.com/docker/compose/v5 \(v[0-9.]*\).*#\1#p' "$CHECKOUT/tools/compose/go.mod" | head -n 1)
COMPOSE_DIR=$CACHE_DIR/compose/$COMPOSE_VERSION

BASE_IMAGE=ragd-local/debian:$DEBIAN_SUITE
PG_IMAGE=ragd-local/postgres:17-pgvector
NEO4J_IMAGE=ragd-local/neo4j:${NEO4J_VERSION%.*}
OPENSEARCH_IMAGE=ragd-local/opensearch:$OPENSEARCH_VERSION
RAGD_IMAGE=ragd:local
LABEL=org.ragd.inputs

export DEBIAN_FRONTEND=noninteractive

T0=$(date +%s%N)
log() {
  local ms=$((($(date +%s%N) - T0) / 1000000))
  printf '[images %4d.%ds] %s\n' $((ms / 1000)) $((ms % 1000 / 100)) "$*" >&2
}
die() { log "ERROR: $*"; exit 1; }
is_root() { [ "$(id -u)" = 0 ]; }

APT_UPDATED=
apt_install() {
  is_root || die "missing packages ($*); run as root or install them: apt-get install $*"
  if [ -z "$APT_UPDATED" ]; then
    apt-get update -qq >/dev/null
    APT_UPDATED=1
  fi
  log "apt-get install $*"
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# ---- the private engine ----------------------------------------------------------
ENGINE_SOCK=$DOCKER_DIR/docker.sock
ENGINE_PID=$DOCKER_DIR/dockerd.pid
ENGINE_LOG=$DOCKER_DIR/dockerd.log

engine_answers() { # HOST
  local h=${1#unix://}
  [ -S "$h" ] && curl -fsS -m 3 --unix-socket "$h" http://docker/_ping >/dev/null 2>&1
}

# engine_pid: the pid of this engine's dockerd, from its pid file, when that
# process is this dockerd (a machine that restarted, or a dockerd killed,
# leaves the file behind, and its pid may belong to another process since).
engine_pid() {
  local pid
  [ -f "$ENGINE_PID" ] && pid=$(cat "$ENGINE_PID") && [ -n "$pid" ] &&
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "--pidfile $ENGINE_PID" && echo "$pid"
}

engine_up() {
  if engine_answers "$ENGINE_SOCK"; then log "engine already answers on unix://$ENGINE_SOCK"; return; fi
  is_root || die "starting a Docker engine needs root"
  command -v dockerd >/dev/null 2>&1 || apt_install docker.io
  command -v curl >/dev/null 2>&1 || apt_install curl
  mkdir -p "$DOCKER_DIR"
  local pid
  if pid=$(engine_pid); then
    die "dockerd (pid $pid) runs on $DOCKER_DIR but does not answer; stop it: scripts/images.sh engine down"
  fi
  # A pid file left behind: dockerd refuses to start while the pid in it is
  # alive, whatever that process is now; so does the containerd it starts.
  rm -f "$ENGINE_PID"
  local cpid=$DOCKER_DIR/exec/containerd/containerd.pid
  if [ -f "$cpid" ] && ! tr '\0' ' ' <"/proc/$(cat "$cpid")/cmdline" 2>/dev/null | grep -qF -- "$DOCKER_DIR/exec/containerd"; then
    rm -f "$cpid"
  fi
  log "starting dockerd (data $DOCKER_DIR/data, socket unix://$ENGINE_SOCK)"
  # Its own data root, state (exec root, with its containerd) and socket:
  # nothing shared with an engine someone else runs on this machine.
  setsid dockerd --data-root "$DOCKER_DIR/data" --exec-root "$DOCKER_DIR/exec" \
    -H "unix://$ENGINE_SOCK" --pidfile "$ENGINE_PID" >>"$ENGINE_LOG" 2>&1 </dev/null &
  local i started=$!
  for i in $(seq 1 120); do
    engine_answers "$ENGINE_SOCK" && { log "dockerd answers: $(DOCKER_HOST=unix://$ENGINE_SOCK docker version -f '{{.Server.Version}}' 2>/dev/null)"; return; }
    kill -0 "$started" 2>/dev/null || { tail -n 30 "$ENGINE_LOG" >&2; die "dockerd exited during start"; }
    sleep 0.5
  done
  tail -n 30 "$ENGINE_LOG" >&2
  die "dockerd did not answer within 60 s"
}

engine_down() {
  local pid i
  pid=$(engine_pid) || { log "engine not running"; return; }
  log "stopping dockerd (pid $pid)"
  kill -TERM "$pid"
  for i in $(seq 1 120); do
    if ! kill -0 "$pid" 2>/dev/null; then
      # dockerd leaves its default network namespace mounted under the exec
      # root; nothing else of it may stay mounted either once it is gone.
      awk -v d="$DOCKER_DIR/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r | xargs -r umount 2>/dev/null || true
      log "dockerd stopped"
      return
    fi
    sleep 0.5
  done
  die "dockerd (pid $pid) did not stop within 60 s"
}

# docker_host: DOCKER_HOST when set, else the private engine when it
# answers, else the usual socket.
docker_host() {
  if [ -n "${DOCKER_HOST:-}" ]; then echo "$DOCKER_HOST"
  elif engine_answers "$ENGINE_SOCK"; then echo "unix://$ENGINE_SOCK"
  else echo "unix:///var/run/docker.sock"
  fi
}

# ---- cache -------------------------------------------------------------------------
hash_of() { sha256sum | cut -c1-16; }

# image_label IMAGE: the inputs hash an image was built from, or nothing.
image_label() { docker image inspect -f "{{index .Config.Labels \"$LABEL\"}}" "$1" 2>/dev/null || true; }

# ensure IMAGE HASH BUILD_FN: the image with those inputs is present after it.
ensure() {
  local image=$1 hash=$2 fn=$3 tar begin
  tar=$IMAGE_CACHE/$(printf '%s' "$image" | tr '/:' '__')-$hash.tar
  if [ "$(image_label "$image")" = "$hash" ]; then
    log "$image: present ($hash)"
    return
  fi
  begin=$(date +%s)
  if [ -f "$tar" ]; then
    log "$image: loading $tar"
    docker load -i "$tar" >/dev/null
    [ "$(image_label "$image")" = "$hash" ] || die "$tar did not hold $image built from $hash"
    log "$image: loaded in $(($(date +%s) - begin)) s"
    return
  fi
  log "$image: building ($hash)"
  "$fn" "$hash"
  [ "$(image_label "$image")" = "$hash" ] || die "$image: built without the label $LABEL=$hash"
  mkdir -p "$IMAGE_CACHE"
  rm -f "$IMAGE_CACHE/$(printf '%s' "$image" | tr '/:' '__')"-*.tar
  docker save -o "$tar.tmp" "$image"
  mv "$tar.tmp" "$tar"
  log "$image: built in $(($(date +%s) - begin)) s, saved $(du -h "$tar" | cut -f1)"
}

# ---- the images ----------------------------------------------------------------------
# Builds run on the host's network: their apt-get and go downloads go where
# the host's would, and no container needs a route out.
build() {
  local out rc=0
  out=$(DOCKER_BUILDKIT=0 docker build --network host "$@" 2>&1) || rc=$?
  [ "$rc" = 0 ] || { printf '%s\n' "$out" | tail -n 40 >&2; return "$rc"; }
}

base_hash() { printf 'base v1 %s minbase ca-certificates\n' "$DEBIAN_SUITE" | hash_of; }
build_base() {
  local hash=$1 root
  is_root || die "debootstrap needs root"
  command -v debootstrap >/dev/null 2>&1 || apt_install debootstrap
  root=$(mktemp -d)
  log "debootstrap --variant=minbase $DEBIAN_SUITE"
  debootstrap --variant=minbase --include=ca-certificates "$DEBIAN_SUITE" "$root" "$DEBIAN_MIRROR" \
    >"$root.log" 2>&1 || { tail -n 20 "$root.log" >&2; rm -rf "$root" "$root.log"; die "debootstrap failed"; }
  printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' > "$root/etc/apt/apt.conf.d/90ragd"
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb "$root"/var/log/*.log
  tar -C "$root" -c . | docker import --change "LABEL $LABEL=$hash" --change 'CMD ["bash"]' - "$BASE_IMAGE" >/dev/null
  rm -rf "$root" "$root.log"
}

# The Go toolchain that builds ragd: this machine's (go.mod's version), so
# building the image downloads no toolchain, with this machine's CA
# certificates, so the build's module downloads trust what the host's go
# trusts (a proxy that inspects TLS, say). Only the build stage has them.
go_version() { go env GOVERSION; }
golang_image() { echo "ragd-local/golang:$(go_version | sed 's/^go//')"; }
golang_hash() {
  { printf 'golang v1 %s %s\n' "$(base_hash)" "$(go_version)"; cat /etc/ssl/certs/ca-certificates.crt; } | hash_of
}
build_golang() {
  local hash=$1 goroot ctx
  goroot=$(go env GOROOT)
  ctx=$(mktemp -d)
  cat > "$ctx/Dockerfile" <<DOCKERFILE
FROM $BASE_IMAGE
COPY go /usr/local/go
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
ENV PATH=/usr/local/go/bin:/root/go/bin:\$PATH GOPATH=/root/go
DOCKERFILE
  cp /etc/ssl/certs/ca-certificates.crt "$ctx/"
  tar -c -C "$ctx" Dockerfile ca-certificates.crt -C "$goroot" --transform 's,^\.,go,' --exclude ./pkg/obj --exclude ./.git . |
    build --label "$LABEL=$hash" -t "$(golang_image)" -
  rm -rf "$ctx"
}

recipe_hash() { # DIR: the recipe's files
  (cd "$CHECKOUT/scripts/images/$1" && find . -type f | LC_ALL=C sort | xargs sha256sum)
}
pg_hash() { { echo "postgres v1 $(base_hash)"; recipe_hash postgres; } | hash_of; }
build_pg() {
  build --label "$LABEL=$1" --build-arg "BASE=$BASE_IMAGE" -t "$PG_IMAGE" "$CHECKOUT/scripts/images/postgres"
}

NEO4J_HOME=$CACHE_DIR/neo4j/neo4j-community-$NEO4J_VERSION
neo4j_hash() { { echo "neo4j v1 $(base_hash) $NEO4J_VERSION"; recipe_hash neo4j; } | hash_of; }
build_neo4j() {
  # The jars come from Maven Central, installed as scripts/services.sh does.
  [ -f "$NEO4J_HOME/.complete" ] || RAG_CACHE_DIR=$CACHE_DIR "$CHECKOUT/scripts/services.sh" install neo4j
  [ -f "$NEO4J_HOME/lib/neo4j-$NEO4J_VERSION.jar" ] || die "no Neo4j $NEO4J_VERSION jars in $NEO4J_HOME/lib"
  tar -c -C "$CHECKOUT/scripts/images/neo4j" . -C "$NEO4J_HOME" lib |
    build --label "$LABEL=$1" --build-arg "BASE=$BASE_IMAGE" -t "$NEO4J_IMAGE" -
}

OPENSEARCH_CACHED=$CACHE_DIR/opensearch/opensearch-$OPENSEARCH_VERSION
opensearch_hash() { { echo "opensearch v1 $(base_hash) $OPENSEARCH_VERSION"; recipe_hash opensearch; } | hash_of; }
build_opensearch() {
  # The install comes from Maven Central, made as scripts/services.sh makes it.
  [ -f "$OPENSEARCH_CACHED/.complete" ] || RAG_CACHE_DIR=$CACHE_DIR "$CHECKOUT/scripts/services.sh" install opensearch
  [ -f "$OPENSEARCH_CACHED/modules/analysis-common/analysis-common-$OPENSEARCH_VERSION.jar" ] ||
    die "no OpenSearch $OPENSEARCH_VERSION with analysis-common in $OPENSEARCH_CACHED"
  tar -c -C "$CHECKOUT/scripts/images/opensearch" . -C "$(dirname "$OPENSEARCH_CACHED")" \
    --exclude "${OPENSEARCH_CACHED##*/}/.complete" --transform "s,^${OPENSEARCH_CACHED##*/},opensearch," "${OPENSEARCH_CACHED##*/}" |
    build --label "$LABEL=$1" --build-arg "BASE=$BASE_IMAGE" -t "$OPENSEARCH_IMAGE" -
}

# ragd:local: the project's Dockerfile with the local base images; its
# inputs are the checkout's files that git does not ignore, less those that
# cannot change the binary or the image (tests, docs, CI and scripts, the
# Python client, the tool modules), so a commit that changes only those
# reuses the image.
ragd_hash() {
  {
    echo "ragd v2 $(base_hash) $(golang_hash)"
    (cd "$CHECKOUT" && git ls-files -z --cached --others --exclude-standard -- . \
      ':!*_test.go' ':!*.md' ':!**/testdata/**' ':!docs/' ':!.ci/' ':!scripts/' ':!clients/' ':!e2e/' ':!tools/' |
      xargs -0 sha256sum 2>/dev/null || true)
  } | hash_of
}
build_ragd() {
  build --label "$LABEL=$1" --build-arg "GO_IMAGE=$(golang_image)" --build-arg "RUNTIME_IMAGE=$BASE_IMAGE" \
    --build-arg "GOPROXY=$(go env GOPROXY)" -t "$RAGD_IMAGE" "$CHECKOUT"
}

build_all() {
  command -v docker >/dev/null 2>&1 || die "no docker command; install docker.io (or run: $0 engine up)"
  docker version -f '{{.Server.Version}}' >/dev/null 2>&1 || die "no Docker engine answers on ${DOCKER_HOST:-the default socket}; start one (as root: $0 engine up, then eval \"\$($0 engine env)\")"
  local begin; begin=$(date +%s)
  ensure "$BASE_IMAGE" "$(base_hash)" build_base
  # The images on the base build side by side: their time is mostly
  # downloads and the JVM's recording run, not the same CPU.
  local pids=() rc=0 p
  ensure "$PG_IMAGE" "$(pg_hash)" build_pg & pids+=($!)
  ensure "$NEO4J_IMAGE" "$(neo4j_hash)" build_neo4j & pids+=($!)
  ensure "$OPENSEARCH_IMAGE" "$(opensearch_hash)" build_opensearch & pids+=($!)
  { ensure "$(golang_image)" "$(golang_hash)" build_golang && ensure "$RAGD_IMAGE" "$(ragd_hash)" build_ragd; } & pids+=($!)
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  [ "$rc" = 0 ] || die "building the images failed"
  log "images ready in $(($(date +%s) - begin)) s"
}

print_env() {
  cat <<ENV
export RAG_PG_IMAGE='$PG_IMAGE'
export RAG_NEO4J_IMAGE='$NEO4J_IMAGE'
export RAG_OPENSEARCH_IMAGE='$OPENSEARCH_IMAGE'
export RAGD_IMAGE='$RAGD_IMAGE'
export RAG_GO_IMAGE='$(golang_image)'
export RAG_RUNTIME_IMAGE='$BASE_IMAGE'
ENV
}

# ---- Compose v2 -----------------------------------------------------------------------
# The Compose CLI plugin, built from its Go module pinned in tools/compose
# (Debian bookworm has only Compose v1); installed where the docker CLI
# looks for plugins: $DOCKER_CONFIG/cli-plugins, default ~/.docker. Built
# unoptimised and without debug data, as Jaeger is (scripts/services.sh):
# the tests run it a few times, and the build takes 87 instead of 121 s of
# CPU.
install_compose() {
  local bin=$COMPOSE_DIR/docker-compose plugins=${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins
  if [ ! -x "$bin" ]; then
    log "building Compose $COMPOSE_VERSION from tools/compose"
    mkdir -p "$COMPOSE_DIR"
    (cd "$CHECKOUT/tools/compose" && GOFLAGS=-mod=readonly go build -trimpath -gcflags=all='-N -l' -ldflags "-s -w -X github.com/docker/compose/v5/internal.Version=$COMPOSE_VERSION" -o "$bin.tmp" github.com/docker/compose/v5/cmd) \
      >"$COMPOSE_DIR/build.log" 2>&1 || { tail -n 20 "$COMPOSE_DIR/build.log" >&2; die "building Compose failed"; }
    mv "$bin.tmp" "$bin"
  fi
  mkdir -p "$plugins"
  if ! cmp -s "$bin" "$plugins/docker-compose"; then
    cp "$bin" "$plugins/docker-compose.tmp"
    mv "$plugins/docker-compose.tmp" "$plugins/docker-compose"
  fi
  log "docker compose: $(docker compose version --short 2>/dev/null || echo "not found in $plugins")"
}

case "${1:-}" in
  build) DOCKER_HOST=$(docker_host); export DOCKER_HOST; build_all ;;
  env) print_env ;;
  engine)
    case "${2:-}" in
      up) engine_up ;;
      down) engine_down ;;
      env) echo "export DOCKER_HOST='unix://$ENGINE_SOCK'" ;;
      *) die "usage: $0 engine up|down|env" ;;
    esac
    ;;
  compose) install_compose ;;
  *)
    sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
