# shellcheck shell=bash
# .ci/postgres.sh — a throwaway PostgreSQL server for the tests of the
# PostgreSQL backend. Sourced by .ci/run (bash, root, no stdin, CI=true);
# developers can source it too:
#
#   source .ci/postgres.sh && memgate_pg_start && trap memgate_pg_stop EXIT
#
# memgate_pg_start installs PostgreSQL from Debian's packages if no server
# binaries are present, creates a cluster in a temporary directory owned by
# an unprivileged user (initdb refuses root), starts it on a Unix socket in
# that directory only (no TCP port, so nothing else on the machine can
# collide with it), and exports MEMGATE_TEST_POSTGRES_URL. The tests create
# and drop one database each on that server. memgate_pg_stop stops the
# server and removes the directory. A MEMGATE_TEST_POSTGRES_URL that is
# already set is used as it is, and nothing is started.

MEMGATE_PG_DIR=""
MEMGATE_PG_BIN=""
MEMGATE_PG_USER=""

memgate_pg_bindir() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  if [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
    echo "$d"
  fi
}

memgate_pg_start() {
  if [ -n "${MEMGATE_TEST_POSTGRES_URL:-}" ]; then
    echo "postgres: using the server in MEMGATE_TEST_POSTGRES_URL"
    return 0
  fi
  MEMGATE_PG_BIN=$(memgate_pg_bindir)
  if [ -z "$MEMGATE_PG_BIN" ]; then
    echo "postgres: no server binaries; installing Debian's postgresql package"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq </dev/null
    apt-get install -y -qq --no-install-recommends postgresql </dev/null >/dev/null
    MEMGATE_PG_BIN=$(memgate_pg_bindir)
    if [ -z "$MEMGATE_PG_BIN" ]; then
      echo "postgres: installing PostgreSQL did not provide initdb and pg_ctl" >&2
      return 1
    fi
  fi
  # The package creates the postgres user; a machine that has the
  # binaries without it gets an unprivileged user of our own.
  MEMGATE_PG_USER=postgres
  if ! id -u "$MEMGATE_PG_USER" >/dev/null 2>&1; then
    MEMGATE_PG_USER=memgate-pg
    id -u "$MEMGATE_PG_USER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$MEMGATE_PG_USER"
  fi
  MEMGATE_PG_DIR=$(mktemp -d /tmp/memgate-pg.XXXXXX)
  chown "$MEMGATE_PG_USER" "$MEMGATE_PG_DIR"
  chmod 0755 "$MEMGATE_PG_DIR"
  # Trust authentication on the socket only; the cluster lives as long as
  # this run. fsync is off: it is thrown away afterwards.
  runuser -u "$MEMGATE_PG_USER" -- "$MEMGATE_PG_BIN/initdb" -D "$MEMGATE_PG_DIR/data" -U postgres \
    -A trust -E UTF8 --locale=C.UTF-8 --no-sync >"$MEMGATE_PG_DIR/initdb.log" 2>&1 || {
    cat "$MEMGATE_PG_DIR/initdb.log" >&2
    return 1
  }
  runuser -u "$MEMGATE_PG_USER" -- "$MEMGATE_PG_BIN/pg_ctl" -D "$MEMGATE_PG_DIR/data" -l "$MEMGATE_PG_DIR/server.log" -w -t 60 \
    -o "-c listen_addresses='' -k $MEMGATE_PG_DIR -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
    start >/dev/null || {
    cat "$MEMGATE_PG_DIR/server.log" >&2
    return 1
  }
  export MEMGATE_TEST_POSTGRES_URL="postgres://postgres@/postgres?host=$MEMGATE_PG_DIR"
  echo "postgres: $("$MEMGATE_PG_BIN/postgres" --version) on $MEMGATE_PG_DIR"
}

memgate_pg_stop() {
  if [ -n "$MEMGATE_PG_DIR" ] && [ -d "$MEMGATE_PG_DIR/data" ]; then
    runuser -u "$MEMGATE_PG_USER" -- "$MEMGATE_PG_BIN/pg_ctl" -D "$MEMGATE_PG_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  if [ -n "$MEMGATE_PG_DIR" ]; then
    rm -rf "$MEMGATE_PG_DIR"
  fi
  MEMGATE_PG_DIR=""
}
