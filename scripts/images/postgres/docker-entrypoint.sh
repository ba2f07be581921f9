#!/bin/bash
# Entry point of ragd-local/postgres: the part of the official postgres
# image's behaviour that ragd uses. On an empty data directory: initdb with
# POSTGRES_USER (default postgres) and POSTGRES_PASSWORD (scram-sha-256 over
# TCP, trust on the local socket), create POSTGRES_DB, run
# /docker-entrypoint-initdb.d/*.sql and *.sh. Then run postgres as the
# postgres user, listening on every address of the container, with the
# arguments given (an argument list that starts with "-" goes to postgres).
set -euo pipefail
if [ "${1:0:1}" = - ]; then set -- postgres "$@"; fi
if [ "$1" != postgres ]; then exec "$@"; fi

if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA"
  chown postgres:postgres "$PGDATA"
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "${BASH_SOURCE[0]}" "$@"
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD: the superuser password for connections over TCP}"
  user=${POSTGRES_USER:-postgres}
  db=${POSTGRES_DB:-$user}
  pwfile=$(mktemp)
  printf '%s' "$POSTGRES_PASSWORD" > "$pwfile"
  initdb -D "$PGDATA" -U "$user" --pwfile="$pwfile" -E UTF8 --locale=C.UTF-8 \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -c unix_socket_directories=/var/run/postgresql" -w start >/dev/null
  if [ "$db" != postgres ]; then
    psql -v ON_ERROR_STOP=1 -qX -U "$user" -d postgres -c "CREATE DATABASE \"$db\""
  fi
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sql) echo "docker-entrypoint.sh: running $f"; psql -v ON_ERROR_STOP=1 -qX -U "$user" -d "$db" -f "$f" ;;
      *.sh) echo "docker-entrypoint.sh: running $f"; . "$f" ;;
    esac
  done
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  echo "docker-entrypoint.sh: database initialized"
fi
# Later -c settings win: the caller's arguments come after the default.
exec postgres -c listen_addresses='*' "${@:2}"
