#!/usr/bin/env bash
# Throwaway PostgreSQL 15 + MariaDB servers for queuectl's integration tests, and a
# PgBouncer in front of the PostgreSQL.
#
# Usage:
#   scripts/test-servers.sh start  DIR   # init (if needed) + start both, write DIR/env, print it
#   scripts/test-servers.sh stop   DIR   # stop both; idempotent, never fails if already stopped
#   scripts/test-servers.sh env    DIR   # print DIR/env
#   scripts/test-servers.sh status DIR   # exit 0 if both are running
#
# Typical use:
#   d=$(mktemp -d)
#   eval "$(scripts/test-servers.sh start "$d")"   # exports QUEUECTL_TEST_PG_URL / _MYSQL_URL
#   ... run tests ...
#   scripts/test-servers.sh stop "$d"; rm -rf "$d"
#
# Layout of DIR:
#   DIR/pg/data          PostgreSQL cluster (owned by 'postgres' when run as root)
#   DIR/pg/.s.PGSQL.N    PostgreSQL Unix socket
#   DIR/mysql/data       MariaDB datadir, DIR/mysql/my.cnf its only option file
#   DIR/mysql/mysql.sock MariaDB Unix socket
#   DIR/*.log            logs of every step and of both servers
#   DIR/pgbouncer/       PgBouncer's configuration, pid file and log
#   DIR/env              export lines for the test URLs
#
# Accounts:
#   PostgreSQL: superuser role queuectl / password queuectl, database queuectl_test;
#               Unix socket = trust, TCP = scram-sha-256 (password is really checked).
#   MariaDB:    queuectl@127.0.0.1 and queuectl@localhost / queuectl, ALL PRIVILEGES ON *.* WITH GRANT OPTION,
#               database queuectl_test; root has no password (socket: mariadb -S DIR/mysql/mysql.sock -uroot).
#
# PgBouncer (QUEUECTL_TEST_PGBOUNCER_URL, database queuectl_tx): the same database and
# account through a pool in transaction mode with 4 server connections, as most
# deployments run it; database queuectl_session is the same pool in session mode,
# queuectl_fleet a transaction pool of 8 server connections (the 32-worker test),
# queuectl_suite the transaction pool the suites run through (ctest *_pgbouncer), in front
# of a database of their own (queuectl_test_pooled, so that they run beside the direct
# suites), and queuectl_one a transaction pool of one server connection. A third database,
# queuectl_test_side, takes more suites side by side (QUEUECTL_TEST_PG_DATABASE, see
# tests/support/fixture.hpp).
#
# Both servers listen only on 127.0.0.1 (plus their Unix sockets in DIR), on free
# ports chosen at start. No system service is ever used. Servers are tuned for
# speed, not durability (fsync=off etc.) — never put real data there.
set -euo pipefail

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
READY_TIMEOUT=${READY_TIMEOUT:-60}
DB_NAME=queuectl_test
DB_USER=queuectl
DB_PASS=queuectl

die() { echo "test-servers: $*" >&2; exit 1; }
usage() { echo "usage: $0 {start|stop|env|status} DIR" >&2; exit 2; }

(($# == 2)) || usage
cmd=$1
[[ -n "$2" ]] || usage

# ---------------------------------------------------------------- setup --

if [[ $cmd == start ]]; then
  mkdir -p -- "$2"
elif [[ $cmd == stop && ! -d "$2" ]]; then
  echo "test-servers: $2 does not exist, nothing to stop" >&2
  exit 0
fi
[[ -d "$2" ]] || die "no such directory: $2"
DIR=$(cd -- "$2" && pwd -P)

PGDIR=$DIR/pg
PGDATA=$PGDIR/data
MYDIR=$DIR/mysql
MYDATA=$MYDIR/data
MYSOCK=$MYDIR/mysql.sock
MYPID=$MYDIR/mariadbd.pid
MYCNF=$MYDIR/my.cnf
STEPLOG=$DIR/test-servers.log
ENVFILE=$DIR/env

IS_ROOT=0
[[ $(id -u) -eq 0 ]] && IS_ROOT=1

log() { printf '%s [%s] %s\n' "$(date '+%F %T')" "$$" "$*" >>"$STEPLOG"; }

# Run a PostgreSQL tool as the user owning the cluster (postgres refuses root).
# cd to DIR first: the caller's cwd may not be readable by 'postgres'.
as_pg() {
  if ((IS_ROOT)); then
    (cd "$DIR" && runuser -u postgres -- "$@")
  else
    (cd "$DIR" && "$@")
  fi
}

# Print the tail of a log file to stderr.
show_log() {
  local f=$1
  if [[ -f $f ]]; then
    echo "---- last lines of $f ----" >&2
    tail -n 40 "$f" >&2 || true
    echo "----" >&2
  fi
}

port_in_use() {
  local p=$1
  if command -v ss >/dev/null 2>&1; then
    [[ -n $(ss -Htln "sport = :$p" 2>/dev/null) ]]
  else
    # fallback: something accepts connections there
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null
  fi
}

# pick_port [EXCLUDE...]: a free TCP port below the ephemeral range.
pick_port() {
  local p i x skip
  for ((i = 0; i < 200; i++)); do
    p=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
    skip=0
    for x in "$@"; do [[ $p == "$x" ]] && skip=1; done
    ((skip)) && continue
    port_in_use "$p" && continue
    echo "$p"
    return 0
  done
  die "could not find a free TCP port"
}

# Serialize start/stop on the same DIR.
lock_dir() {
  exec 9>"$DIR/.lock"
  if command -v flock >/dev/null 2>&1; then
    flock -w 120 9 || die "timed out waiting for lock on $DIR/.lock"
  fi
}

# ----------------------------------------------------------- PostgreSQL --

pg_running() {
  [[ -f $PGDATA/postmaster.pid ]] || return 1
  as_pg "$PG_BIN/pg_ctl" status -D "$PGDATA" >/dev/null 2>&1
}

pg_port() { cat "$PGDIR/port" 2>/dev/null || true; }

pg_init() {
  log "pg: initdb in $PGDATA"
  rm -rf "$PGDATA" "$PGDIR/.initialized"
  mkdir -p "$PGDIR"
  if ((IS_ROOT)); then
    id postgres >/dev/null 2>&1 || die "user 'postgres' does not exist (is postgresql-15 installed?)"
    chown postgres: "$PGDIR"
    : >"$DIR/pg.log"
    chown postgres: "$DIR/pg.log"
  fi
  if ! as_pg "$PG_BIN/initdb" -D "$PGDATA" -U "$DB_USER" \
      --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C \
      --no-sync >>"$DIR/pg-initdb.log" 2>&1; then
    show_log "$DIR/pg-initdb.log"
    die "PostgreSQL initdb failed"
  fi
  as_pg tee -a "$PGDATA/postgresql.conf" >/dev/null <<EOF

# ---- queuectl test settings (scripts/test-servers.sh) ----
listen_addresses = '127.0.0.1'
unix_socket_directories = '$PGDIR'
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
log_min_messages = warning
log_line_prefix = '%m [%p] %q%u@%d '
# counts the statements each command sends (tests/cli/test_round_trips_cli.cpp)
shared_preload_libraries = 'pg_stat_statements'
EOF
  log "pg: initdb ok"
}

# pg_start_once PORT -> 0 ok, 1 failed, 2 port taken
pg_start_once() {
  local port=$1
  log "pg: starting on 127.0.0.1:$port"
  if as_pg "$PG_BIN/pg_ctl" start -D "$PGDATA" -l "$DIR/pg.log" -w -t "$READY_TIMEOUT" \
      -o "-p $port" >>"$STEPLOG" 2>&1 9>&-; then
    return 0
  fi
  if grep -q 'could not bind\|Address already in use' "$DIR/pg.log" 2>/dev/null; then
    return 2
  fi
  return 1
}

pg_start() {
  local port rc=0 i
  if pg_running; then
    port=$(pg_port)
    log "pg: already running on port $port"
    i=3 # skip the start loop, still check readiness/setup below
  else
    if [[ ! -f $PGDIR/.initialized ]]; then
      pg_init
    fi
    port=$(pg_port)
    if [[ -z $port ]] || port_in_use "$port"; then
      port=$(pick_port)
    fi
    i=0
  fi
  for (( ; i < 3; i++)); do
    echo "$port" >"$PGDIR/port"
    rc=0
    pg_start_once "$port" || rc=$?
    ((rc == 0)) && break
    if ((rc == 2)); then
      log "pg: port $port taken, retrying"
      port=$(pick_port "$port")
      continue
    fi
    show_log "$DIR/pg.log"
    die "PostgreSQL failed to start (see $DIR/pg.log, $STEPLOG)"
  done
  ((rc == 0)) || { show_log "$DIR/pg.log"; die "PostgreSQL failed to start"; }

  # pg_ctl -w already waited; double-check over TCP like the tests will connect.
  local deadline=$((SECONDS + READY_TIMEOUT))
  until "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$port" -d postgres -U "$DB_USER"; do
    if ((SECONDS >= deadline)); then
      show_log "$DIR/pg.log"
      die "PostgreSQL not ready after ${READY_TIMEOUT}s"
    fi
    sleep 0.2
  done

  if [[ ! -f $PGDIR/.initialized ]]; then
    log "pg: creating role password and databases $DB_NAME, ${DB_NAME}_pooled, ${DB_NAME}_side"
    if ! as_pg "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$PGDIR" -p "$port" -U "$DB_USER" -d postgres \
        >>"$DIR/pg-setup.log" 2>&1 <<EOF; then
ALTER ROLE $DB_USER WITH PASSWORD '$DB_PASS';
SELECT 'CREATE DATABASE $DB_NAME' WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = '$DB_NAME')\gexec
SELECT 'CREATE DATABASE ${DB_NAME}_pooled' WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = '${DB_NAME}_pooled')\gexec
SELECT 'CREATE DATABASE ${DB_NAME}_side' WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = '${DB_NAME}_side')\gexec
EOF
      show_log "$DIR/pg-setup.log"
      die "PostgreSQL setup failed"
    fi
    touch "$PGDIR/.initialized"
  fi
  log "pg: ready on 127.0.0.1:$port"
}

pg_stop() {
  [[ -d $PGDATA ]] || return 0
  if [[ ! -f $PGDATA/postmaster.pid ]]; then
    log "pg: not running"
    return 0
  fi
  log "pg: stopping"
  if as_pg "$PG_BIN/pg_ctl" stop -D "$PGDATA" -m fast -w -t 60 >>"$STEPLOG" 2>&1; then
    log "pg: stopped"
    return 0
  fi
  # Fallback: signal the postmaster from its pid file.
  local pid
  pid=$(head -n1 "$PGDATA/postmaster.pid" 2>/dev/null || true)
  if [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null; then
    log "pg: pg_ctl stop failed, killing postmaster $pid"
    kill -INT "$pid" 2>/dev/null || true
    wait_pid_gone "$pid" 30 || kill -KILL "$pid" 2>/dev/null || true
  fi
  log "pg: stopped (fallback)"
  return 0
}

# -------------------------------------------------------------- MariaDB --

wait_pid_gone() {
  local pid=$1 t=$2 deadline
  deadline=$((SECONDS + t))
  while kill -0 "$pid" 2>/dev/null; do
    ((SECONDS >= deadline)) && return 1
    sleep 0.2
  done
  return 0
}

my_pid() {
  local pid
  pid=$(cat "$MYPID" 2>/dev/null || true)
  [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

my_admin() { mariadb-admin --no-defaults --socket="$MYSOCK" -uroot --connect-timeout=2 "$@"; }

my_running() {
  [[ -n $(my_pid) ]] && my_admin ping >/dev/null 2>&1
}

my_port() { cat "$MYDIR/port" 2>/dev/null || true; }

my_write_cnf() {
  local port=$1
  cat >"$MYCNF" <<EOF
# Generated by scripts/test-servers.sh — the only option file this server reads.
[mariadbd]
datadir = $MYDATA
socket = $MYSOCK
pid-file = $MYPID
log-error = $DIR/mysql.log
tmpdir = $MYDIR/tmp
port = $port
bind-address = 127.0.0.1
skip-name-resolve
skip-log-bin
max_connections = 300
innodb_buffer_pool_size = 256M
# A session that runs away with memory fails its statement (and so its test) instead of
# taking the machine's: one CI run saw a mariadbd of 21 GiB.
max_session_mem_used = 1G
innodb_flush_log_at_trx_commit = 2
innodb_lock_wait_timeout = 5
innodb_doublewrite = 0
character-set-server = utf8mb4
collation-server = utf8mb4_unicode_ci
EOF
  if ((IS_ROOT)); then
    echo "user = root" >>"$MYCNF"
  fi
}

my_init() {
  log "mysql: mariadb-install-db in $MYDATA"
  rm -rf "$MYDATA" "$MYDIR/.initialized"
  mkdir -p "$MYDIR/tmp"
  local userargs=()
  ((IS_ROOT)) && userargs=(--user=root)
  # Users/grants are created during bootstrap via --extra-file. WITH GRANT OPTION: the
  # outage tests make an account of their own for the process under test, and lock it.
  # (bootstrap runs with grant tables disabled; FLUSH PRIVILEGES enables them)
  cat >"$MYDIR/init.sql" <<EOF
FLUSH PRIVILEGES;
CREATE DATABASE IF NOT EXISTS $DB_NAME;
CREATE USER IF NOT EXISTS '$DB_USER'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
CREATE USER IF NOT EXISTS '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PASS';
GRANT ALL PRIVILEGES ON *.* TO '$DB_USER'@'127.0.0.1' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO '$DB_USER'@'localhost' WITH GRANT OPTION;
EOF
  if ! mariadb-install-db --no-defaults --datadir="$MYDATA" --auth-root-authentication-method=normal \
      "${userargs[@]}" --skip-test-db --skip-name-resolve --extra-file="$MYDIR/init.sql" \
      --tmpdir="$MYDIR/tmp" --innodb-buffer-pool-size=64M --innodb-doublewrite=0 \
      >>"$DIR/mysql-install.log" 2>&1; then
    show_log "$DIR/mysql-install.log"
    die "mariadb-install-db failed"
  fi
  log "mysql: install-db ok"
}

# my_start_once PORT -> 0 ok, 1 failed, 2 port taken
my_start_once() {
  local port=$1 pid deadline
  log "mysql: starting on 127.0.0.1:$port"
  my_write_cnf "$port"
  rm -f "$MYPID"
  local logsize=0
  [[ -f $DIR/mysql.log ]] && logsize=$(stat -c %s "$DIR/mysql.log")
  # setsid + redirected stdio: fully detached from the caller's terminal/job.
  # 9>&-: the server must not inherit (and so hold) the DIR lock.
  setsid mariadbd --defaults-file="$MYCNF" </dev/null >>"$DIR/mysql-stdout.log" 2>&1 9>&- &
  pid=$!
  deadline=$((SECONDS + READY_TIMEOUT))
  until my_admin ping >/dev/null 2>&1; do
    if ! kill -0 "$pid" 2>/dev/null && [[ -z $(my_pid) ]]; then
      if tail -c +$((logsize + 1)) "$DIR/mysql.log" 2>/dev/null | grep -q 'Address already in use\|Bind on TCP/IP port'; then
        return 2
      fi
      return 1
    fi
    if ((SECONDS >= deadline)); then
      log "mysql: not ready after ${READY_TIMEOUT}s"
      kill -TERM "$pid" 2>/dev/null || true
      return 1
    fi
    sleep 0.2
  done
  return 0
}

my_start() {
  local port rc i
  if my_running; then
    log "mysql: already running on port $(my_port)"
    return 0
  fi
  if [[ -n $(my_pid) ]]; then
    # process exists but does not answer: finish it off before restarting
    log "mysql: stale/unresponsive server, stopping it"
    my_stop
  fi
  if [[ ! -f $MYDIR/.initialized ]]; then
    my_init
  fi
  mkdir -p "$MYDIR/tmp"
  port=$(my_port)
  if [[ -z $port ]] || port_in_use "$port"; then
    port=$(pick_port "$@")
  fi
  for ((i = 0; i < 3; i++)); do
    echo "$port" >"$MYDIR/port"
    rc=0
    my_start_once "$port" || rc=$?
    ((rc == 0)) && break
    if ((rc == 2)); then
      log "mysql: port $port taken, retrying"
      port=$(pick_port "$@" "$port")
      continue
    fi
    show_log "$DIR/mysql.log"
    show_log "$DIR/mysql-stdout.log"
    die "MariaDB failed to start (see $DIR/mysql.log, $STEPLOG)"
  done
  ((rc == 0)) || { show_log "$DIR/mysql.log"; die "MariaDB failed to start"; }

  # Check the test account over TCP, as the tests will connect.
  if ! mariadb --no-defaults -h 127.0.0.1 -P "$port" -u"$DB_USER" -p"$DB_PASS" "$DB_NAME" \
      -e 'SELECT 1' >>"$DIR/mysql-setup.log" 2>&1; then
    show_log "$DIR/mysql-setup.log"
    die "MariaDB is up but $DB_USER cannot log in over TCP"
  fi
  touch "$MYDIR/.initialized"
  log "mysql: ready on 127.0.0.1:$port"
}

my_stop() {
  local pid
  pid=$(my_pid || true)
  if [[ -z $pid ]]; then
    log "mysql: not running"
    return 0
  fi
  log "mysql: stopping pid $pid"
  my_admin shutdown >>"$STEPLOG" 2>&1 || true
  if ! wait_pid_gone "$pid" 60; then
    log "mysql: still running, sending TERM"
    kill -TERM "$pid" 2>/dev/null || true
    if ! wait_pid_gone "$pid" 30; then
      log "mysql: still running, sending KILL"
      kill -KILL "$pid" 2>/dev/null || true
      wait_pid_gone "$pid" 10 || true
    fi
  fi
  log "mysql: stopped"
  return 0
}

# ------------------------------------------------------------ PgBouncer --

PGBDIR=$DIR/pgbouncer
pgb_port() { cat "$PGBDIR/port" 2>/dev/null || true; }
pgb_pid() {
  local pid
  pid=$(cat "$PGBDIR/pgbouncer.pid" 2>/dev/null) || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  echo "$pid"
}

pgb_start() {
  local bin port pg i t
  bin=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)
  [[ -x $bin ]] || die "pgbouncer not found (run scripts/install-deps.sh)"
  if pgb_pid >/dev/null; then
    log "pgbouncer: already running on port $(pgb_port)"
    return 0
  fi
  mkdir -p "$PGBDIR"
  pg=$(pg_port)
  printf '"%s" "%s"\n' "$DB_USER" "$DB_PASS" >"$PGBDIR/userlist.txt"
  chmod 600 "$PGBDIR/userlist.txt"
  for ((i = 0; i < 3; i++)); do
    port=$(pick_port "$pg" "$(my_port)")
    # One pooler, pools of the same database: transaction mode (what most deployments
    # run), session mode, a transaction pool of 8 server connections for a fleet of
    # workers, one for the suites run through the pooler (so that no other test leaves
    # session state on its server sessions), and one of a single server session (whose next
    # client is certain to get what the last one left).
    cat >"$PGBDIR/pgbouncer.ini" <<INI
[databases]
queuectl_tx = host=127.0.0.1 port=$pg dbname=$DB_NAME pool_mode=transaction
queuectl_session = host=127.0.0.1 port=$pg dbname=$DB_NAME pool_mode=session
queuectl_fleet = host=127.0.0.1 port=$pg dbname=$DB_NAME pool_mode=transaction pool_size=8
queuectl_suite = host=127.0.0.1 port=$pg dbname=${DB_NAME}_pooled pool_mode=transaction
queuectl_one = host=127.0.0.1 port=$pg dbname=$DB_NAME pool_mode=transaction pool_size=1

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = scram-sha-256
auth_file = $PGBDIR/userlist.txt
pool_mode = transaction
default_pool_size = 4
max_client_conn = 200
logfile = $PGBDIR/pgbouncer.log
pidfile = $PGBDIR/pgbouncer.pid
INI
    echo "$port" >"$PGBDIR/port"
    log "pgbouncer: starting on 127.0.0.1:$port"
    if ((IS_ROOT)); then
      chown -R postgres: "$PGBDIR"
      # PgBouncer refuses to run as root.
      runuser -u postgres -- "$bin" -d "$PGBDIR/pgbouncer.ini" >>"$STEPLOG" 2>&1 9>&- || true
    else
      "$bin" -d "$PGBDIR/pgbouncer.ini" >>"$STEPLOG" 2>&1 9>&- || true
    fi
    for ((t = 0; t < 50; t++)); do
      if PGPASSWORD=$DB_PASS psql -X -q -h 127.0.0.1 -p "$port" -U "$DB_USER" queuectl_tx \
          -c 'SELECT 1' >>"$DIR/pgbouncer-setup.log" 2>&1; then
        log "pgbouncer: ready on 127.0.0.1:$port"
        return 0
      fi
      sleep 0.2
    done
    log "pgbouncer: not ready on port $port, retrying"
    pgb_stop
  done
  show_log "$PGBDIR/pgbouncer.log"
  show_log "$DIR/pgbouncer-setup.log"
  die "PgBouncer failed to start (see $PGBDIR/pgbouncer.log)"
}

pgb_stop() {
  local pid
  pid=$(pgb_pid) || { log "pgbouncer: not running"; return 0; }
  log "pgbouncer: stopping pid $pid"
  kill -INT "$pid" 2>/dev/null || true
  if ! wait_pid_gone "$pid" 10; then
    kill -KILL "$pid" 2>/dev/null || true
    wait_pid_gone "$pid" 5 || true
  fi
  return 0
}

# ---------------------------------------------------------------- main --

write_env() {
  local pgp myp
  pgp=$(pg_port)
  myp=$(my_port)
  cat >"$ENVFILE.tmp" <<EOF
export QUEUECTL_TEST_PG_URL=postgresql://$DB_USER:$DB_PASS@127.0.0.1:$pgp/$DB_NAME
export QUEUECTL_TEST_MYSQL_URL=mysql://$DB_USER:$DB_PASS@127.0.0.1:$myp/$DB_NAME
export QUEUECTL_TEST_PGBOUNCER_URL=postgresql://$DB_USER:$DB_PASS@127.0.0.1:$(pgb_port)/queuectl_tx
EOF
  mv -f "$ENVFILE.tmp" "$ENVFILE"
}

check_pg_access() {
  ((IS_ROOT)) || return 0
  # DIR may be e.g. a 0700 mktemp dir: let 'postgres' traverse it.
  chmod a+x "$DIR"
  if ! runuser -u postgres -- test -x "$DIR"; then
    die "user 'postgres' cannot reach $DIR (a parent directory is not world-executable); use a DIR under /tmp"
  fi
}

case $cmd in
  start)
    lock_dir
    log "start: begin (root=$IS_ROOT)"
    [[ -x $PG_BIN/pg_ctl ]] || die "$PG_BIN/pg_ctl not found (run scripts/install-deps.sh)"
    command -v mariadbd >/dev/null || die "mariadbd not found (run scripts/install-deps.sh)"
    # Unix socket paths are limited to 107 bytes (DIR/pg/.s.PGSQL.NNNNN).
    ((${#DIR} <= 85)) || die "path too long for Unix sockets (${#DIR} > 85 chars): $DIR"
    check_pg_access
    # If anything below fails, don't leave half the pair running.
    start_ok=0
    on_start_exit() {
      if ((start_ok == 0)); then
        log "start: failed, stopping servers"
        pgb_stop || true
        pg_stop || true
        my_stop || true
      fi
    }
    trap on_start_exit EXIT
    pg_start
    my_start "$(pg_port)"
    pgb_start
    write_env
    start_ok=1
    log "start: done"
    cat "$ENVFILE"
    ;;
  stop)
    lock_dir
    log "stop: begin"
    pgb_stop || true
    pg_stop || true
    my_stop || true
    log "stop: done"
    ;;
  env)
    [[ -f $ENVFILE ]] || die "$ENVFILE does not exist (run: $0 start $DIR)"
    cat "$ENVFILE"
    ;;
  status)
    rc=0
    if pg_running; then echo "postgresql: running on 127.0.0.1:$(pg_port)"; else echo "postgresql: stopped"; rc=1; fi
    if my_running; then echo "mariadb: running on 127.0.0.1:$(my_port)"; else echo "mariadb: stopped"; rc=1; fi
    if pgb_pid >/dev/null; then echo "pgbouncer: running on 127.0.0.1:$(pgb_port)"; else echo "pgbouncer: stopped"; rc=1; fi
    exit $rc
    ;;
  *) usage ;;
esac
