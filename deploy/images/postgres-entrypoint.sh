#!/bin/sh
# Cubicle's Postgres: Debian's server, started as `postgres`. On an empty volume it initialises
# the cluster with one role, `cubicle`, whose password is read from POSTGRES_PASSWORD_FILE (a
# Compose secret), and one database, `cubicle`; every connection must then give that password.
set -eu
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
: "${PGDATA:?}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  [ -r "${POSTGRES_PASSWORD_FILE:-}" ] || {
    echo "Cubicle's Postgres cannot start: POSTGRES_PASSWORD_FILE (${POSTGRES_PASSWORD_FILE:-unset}) is missing or unreadable" >&2
    exit 78
  }
  [ -s "$POSTGRES_PASSWORD_FILE" ] || {
    echo "Cubicle's Postgres cannot start: POSTGRES_PASSWORD_FILE ($POSTGRES_PASSWORD_FILE) is empty" >&2
    exit 78
  }
  password=$(head -n 1 "$POSTGRES_PASSWORD_FILE" | tr -d '\r\n')
  pwfile=$(mktemp)
  printf '%s\n' "$password" > "$pwfile"
  "$bin/initdb" --pgdata="$PGDATA" --username=cubicle --pwfile="$pwfile" \
    --auth-local=scram-sha-256 --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  "$bin/pg_ctl" --pgdata="$PGDATA" --options="-c listen_addresses=''" --wait start >/dev/null
  PGPASSWORD=$password "$bin/createdb" --host=/var/run/postgresql --username=cubicle cubicle
  "$bin/pg_ctl" --pgdata="$PGDATA" --wait stop >/dev/null
fi
exec "$bin/postgres" -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/var/run/postgresql
