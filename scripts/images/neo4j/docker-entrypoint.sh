#!/bin/bash
# Entry point of ragd-local/neo4j: writes neo4j.conf from defaults and the
# NEO4J_* environment variables (as the official image maps them:
# NEO4J_server_memory_pagecache_size -> server.memory.pagecache.size, a
# double underscore for an underscore), sets the initial password from
# NEO4J_AUTH on an empty /data, and runs the server as the neo4j user.
# server.memory.heap.* and server.jvm.additional become JVM options, as the
# neo4j launcher makes them. `record-cds` records the class-data-sharing
# archive at image build time.
set -euo pipefail
home=$NEO4J_HOME
cmd=${1:-neo4j}
case "$cmd" in
  neo4j|record-cds) ;;
  *) exec "$@" ;;
esac
if [ "$(id -u)" = 0 ]; then
  chown -R neo4j:neo4j /data /logs
  exec setpriv --reuid=neo4j --regid=neo4j --init-groups "${BASH_SOURCE[0]}" "$@"
fi

declare -A conf=(
  [server.default_listen_address]=0.0.0.0
  [server.directories.data]=/data
  [server.directories.logs]=/logs
  [server.directories.run]=$home/run
  [server.directories.plugins]=$home/plugins
  [server.directories.import]=$home/import
  [server.https.enabled]=false
  [server.memory.pagecache.size]=128m
  [dbms.usage_report.enabled]=false
  [db.tx_log.preallocate]=false
  [server.config.strict_validation.enabled]=false
  # Bolt's network layer otherwise waits twice 5 s for quiet on shutdown.
  [internal.dbms.bolt.netty_server_shutdown_quiet_period]=0
  [internal.dbms.bolt.netty_server_shutdown_timeout]=1s
)
for var in $(compgen -e); do
  case "$var" in
    NEO4J_AUTH|NEO4J_HOME|NEO4J_CONF|NEO4J_ACCEPT_LICENSE_AGREEMENT) continue ;;
    NEO4J_*) ;;
    *) continue ;;
  esac
  key=${var#NEO4J_}
  key=${key//__/@}
  key=${key//_/.}
  conf[${key//@/_}]=${!var}
done

auth=${NEO4J_AUTH:-neo4j/neo4j}
if [ "$cmd" = record-cds ]; then
  # A private server on loopback ports that are free in the build's network.
  auth=none
  port=$((20000 + RANDOM % 20000))
  while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || (exec 3<>"/dev/tcp/127.0.0.1/$((port + 1))") 2>/dev/null; do
    port=$((port + 2))
  done
  conf[server.default_listen_address]=127.0.0.1
  conf[server.bolt.listen_address]=127.0.0.1:$port
  conf[server.http.listen_address]=127.0.0.1:$((port + 1))
fi
if [ "$auth" = none ]; then conf[dbms.security.auth_enabled]=false; fi

jvm=(-Xms"${conf[server.memory.heap.initial_size]:-512m}" -Xmx"${conf[server.memory.heap.max_size]:-512m}"
  -XX:+ExitOnOutOfMemoryError -Dfile.encoding=UTF-8)
# shellcheck disable=SC2206 # options are words, one or more a line
[ -z "${conf[server.jvm.additional]:-}" ] || jvm+=(${conf[server.jvm.additional]})
unset 'conf[server.memory.heap.initial_size]' 'conf[server.memory.heap.max_size]' 'conf[server.jvm.additional]'
: > "$home/conf/neo4j.conf"
for key in "${!conf[@]}"; do printf '%s=%s\n' "$key" "${conf[$key]}" >> "$home/conf/neo4j.conf"; done

export NEO4J_CONF=$home/conf
cp=("$home/lib/*")
cds=$home/neo4j.jsa
if [ "$cmd" = record-cds ]; then
  java "${jvm[@]}" -XX:ArchiveClassesAtExit="$cds" -cp "${cp[0]}" org.neo4j.server.CommunityEntryPoint \
    --home-dir="$home" --config-dir="$home/conf" >/logs/record-cds.log 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do
    grep -q 'Started\.' /logs/record-cds.log && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" || true
  [ -s "$cds" ] || { tail -n 30 /logs/record-cds.log >&2; echo "record-cds: no archive written" >&2; exit 1; }
  echo "record-cds: $(du -h "$cds" | cut -f1) archive recorded"
  exit 0
fi
[ -f "$cds" ] && jvm+=(-XX:SharedArchiveFile="$cds")

if [ "$auth" != none ] && [ ! -d /data/databases/system ]; then
  user=${auth%%/*} password=${auth#*/}
  [ "$user" = neo4j ] || { echo "NEO4J_AUTH: the user must be neo4j, got $user" >&2; exit 1; }
  java -Xmx128m -cp "${cp[0]}" org.neo4j.cli.AdminTool dbms set-initial-password "$password" >/dev/null
fi
exec java "${jvm[@]}" -cp "${cp[0]}" org.neo4j.server.CommunityEntryPoint --home-dir="$home" --config-dir="$home/conf"
