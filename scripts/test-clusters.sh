#!/usr/bin/env bash
# Throwaway database clusters for queuectl's failover and Galera suites, in the spirit of
# scripts/test-servers.sh: everything lives in DIR, listens on 127.0.0.1 only, runs as
# plain background processes (no system service), and `stop` ends all of it.
#
# Usage:
#   scripts/test-clusters.sh start pg-sync  DIR  # PostgreSQL 15 primary + streaming standby,
#   scripts/test-clusters.sh start pg-async DIR  #   synchronous or asynchronous replication
#   scripts/test-clusters.sh failover DIR [S]    # stop the primary at once (-m immediate),
#                                                #   wait S seconds (default 0: a failover
#                                                #   manager deciding), promote the standby;
#                                                #   prints the seconds it all took
#   scripts/test-clusters.sh start galera   DIR  # 3 MariaDB Galera nodes (galera-4, rsync)
#   scripts/test-clusters.sh kill-node DIR N     # SIGKILL Galera node N (1..3)
#   scripts/test-clusters.sh restart-node DIR N  # restart it (recovers its position: IST)
#   scripts/test-clusters.sh stop DIR            # stop everything started in DIR; idempotent
#
# `start` prints export lines (also in DIR/env):
#   pg-*:   QUEUECTL_CLUSTER_URL (both hosts, target_session_attrs=read-write),
#           QUEUECTL_CLUSTER_PRIMARY_URL, QUEUECTL_CLUSTER_STANDBY_URL
#   galera: QUEUECTL_GALERA_URL1..3 (one URL per node)
# Accounts: PostgreSQL role queuectl (trust on loopback), database queuectl_test; MariaDB
# user queuectl / queuectl, database queuectl_test. Tuned for speed (fsync off): test data
# only. Facts these steps rely on: /work/shared/CLUSTERS.md.
set -euo pipefail

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
GALERA_LIB=${GALERA_LIB:-/usr/lib/galera/libgalera_smm.so}
READY_TIMEOUT=${READY_TIMEOUT:-60}
DB_NAME=queuectl_test
DB_USER=queuectl
DB_PASS=queuectl

die() { echo "test-clusters: $*" >&2; exit 1; }
usage() {
  echo "usage: $0 {start pg-sync|pg-async|galera DIR | failover DIR | kill-node DIR N |" \
       "restart-node DIR N | stop DIR}" >&2
  exit 2
}

IS_ROOT=0
[[ $(id -u) -eq 0 ]] && IS_ROOT=1
# As root the servers run as their own users (rsync SST as root cannot write the joiner's
# folders); DIR must then be reachable by them.
MY_USER=$(id -un)
((IS_ROOT)) && MY_USER=mysql

port_in_use() {
  if command -v ss >/dev/null 2>&1; then
    [[ -n $(ss -Htln "sport = :$1" 2>/dev/null) ]]
  else
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
  fi
}
# A free TCP port, not one of those already handed out in this run.
TAKEN=()
pick_port() {
  local p i x skip
  for ((i = 0; i < 200; i++)); do
    p=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
    skip=0
    for x in "${TAKEN[@]}"; do [[ $p == "$x" ]] && skip=1; done
    ((skip)) && continue
    port_in_use "$p" && continue
    TAKEN+=("$p")
    echo "$p"
    return 0
  done
  die "could not find a free TCP port"
}

log() { printf '%s %s\n' "$(date '+%T.%3N')" "$*" >>"$DIR/clusters.log"; }

show_log() {
  [[ -f $1 ]] || return 0
  echo "---- last lines of $1 ----" >&2
  tail -n 30 "$1" >&2 || true
}

# ---------------------------------------------------------------- PostgreSQL --

as_pg() {
  if ((IS_ROOT)); then
    (cd "$DIR" && runuser -u postgres -- "$@")
  else
    (cd "$DIR" && "$@")
  fi
}

pg_node_start() {  # NAME PORT [EXTRA -c SETTINGS]
  local name=$1 port=$2 extra=${3:-}
  log "pg: starting $name on $port"
  if ! as_pg "$PG_BIN/pg_ctl" start -D "$DIR/$name" -l "$DIR/$name.log" -w -t "$READY_TIMEOUT" \
      -o "-p $port -c cluster_name=$name $extra" >>"$DIR/clusters.log" 2>&1; then
    show_log "$DIR/$name.log"
    die "PostgreSQL node $name did not start"
  fi
}

pg_psql() {  # PORT SQL
  "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$1" -U "$DB_USER" -d postgres \
    -c "$2"
}

pg_start() {
  local mode=$1 p1 p2
  command -v "$PG_BIN/pg_ctl" >/dev/null || die "$PG_BIN/pg_ctl not found"
  p1=$(pick_port)
  p2=$(pick_port)
  echo "$p1" >"$DIR/primary.port"
  echo "$p2" >"$DIR/standby.port"
  if ((IS_ROOT)); then
    chmod a+x "$DIR"
    chown postgres: "$DIR"
    runuser -u postgres -- test -x "$DIR" || die "user postgres cannot reach $DIR"
  fi
  log "pg: initdb"
  as_pg "$PG_BIN/initdb" -D "$DIR/primary" -U "$DB_USER" --auth=trust -E UTF8 --locale=C \
    --no-sync >>"$DIR/clusters.log" 2>&1 || die "initdb failed (see $DIR/clusters.log)"
  as_pg tee -a "$DIR/primary/postgresql.conf" >/dev/null <<EOF
listen_addresses = '127.0.0.1'
unix_socket_directories = '$DIR'
max_connections = 100
fsync = off
full_page_writes = on
wal_level = replica
max_wal_senders = 5
max_replication_slots = 5
hot_standby = on
wal_log_hints = on
log_min_messages = warning
EOF
  pg_node_start primary "$p1"
  pg_psql "$p1" "CREATE DATABASE $DB_NAME" >/dev/null
  log "pg: base backup"
  as_pg "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$p1" -U "$DB_USER" -D "$DIR/standby" -R \
    -X stream -c fast -C -S standby_slot >>"$DIR/clusters.log" 2>&1 ||
    die "pg_basebackup failed (see $DIR/clusters.log)"
  pg_node_start standby "$p2"
  local deadline=$((SECONDS + READY_TIMEOUT)) state=""
  local want="streaming|async"
  until [[ $state == "$want" ]]; do
    ((SECONDS < deadline)) || { show_log "$DIR/standby.log"; die "standby never streamed ($state)"; }
    sleep 0.2
    state=$(pg_psql "$p1" "SELECT state || '|' || sync_state FROM pg_stat_replication" || true)
  done
  if [[ $mode == sync ]]; then
    # Only the primary waits for its standby, and only from now on: in its own
    # postgresql.auto.conf, written after the base backup, so that the promoted copy does
    # not wait for a standby of its own.
    pg_psql "$p1" "ALTER SYSTEM SET synchronous_standby_names = 'standby'" >/dev/null
    pg_psql "$p1" "SELECT pg_reload_conf()" >/dev/null
    want="streaming|sync"
    state=""
    until [[ $state == "$want" ]]; do
      ((SECONDS < deadline)) || die "standby never became synchronous ($state)"
      sleep 0.2
      state=$(pg_psql "$p1" "SELECT state || '|' || sync_state FROM pg_stat_replication" || true)
    done
  fi
  log "pg: standby $state"
  cat >"$DIR/env" <<EOF
export QUEUECTL_CLUSTER_URL='postgresql://$DB_USER@127.0.0.1:$p1,127.0.0.1:$p2/$DB_NAME?target_session_attrs=read-write&connect_timeout=2'
export QUEUECTL_CLUSTER_PRIMARY_URL='postgresql://$DB_USER@127.0.0.1:$p1/$DB_NAME'
export QUEUECTL_CLUSTER_STANDBY_URL='postgresql://$DB_USER@127.0.0.1:$p2/$DB_NAME'
EOF
  echo pg >"$DIR/kind"
}

pg_failover() {
  local delay=$1 t0 t1
  t0=$(date +%s.%N)
  log "pg: stopping the primary (immediate)"
  as_pg "$PG_BIN/pg_ctl" stop -D "$DIR/primary" -m immediate -w >>"$DIR/clusters.log" 2>&1 || true
  sleep "$delay"
  log "pg: promoting the standby"
  as_pg "$PG_BIN/pg_ctl" promote -D "$DIR/standby" -w -t "$READY_TIMEOUT" \
    >>"$DIR/clusters.log" 2>&1 || die "promote failed"
  t1=$(date +%s.%N)
  log "pg: promoted"
  echo "$t1 - $t0" | bc -l | xargs printf '%.2f\n'
}

pg_stop() {
  local node
  for node in standby primary; do
    [[ -f $DIR/$node/postmaster.pid ]] || continue
    log "pg: stopping $node"
    as_pg "$PG_BIN/pg_ctl" stop -D "$DIR/$node" -m immediate -w -t 30 >>"$DIR/clusters.log" 2>&1 ||
      true
  done
}

# -------------------------------------------------------------------- Galera --

galera_addresses() {
  local n addr=""
  for n in 1 2 3; do addr+="${addr:+,}127.0.0.1:$(cat "$DIR/node$n.gport")"; done
  echo "$addr"
}

galera_node_run() {  # N [EXTRA ARGS]
  local n=$1
  shift
  local d=$DIR/node$n
  setsid mariadbd --no-defaults --user="$MY_USER" \
    --datadir="$d/data" --socket="$d/mysql.sock" --pid-file="$d/mariadbd.pid" \
    --port="$(cat "$DIR/node$n.port")" --bind-address=127.0.0.1 --skip-name-resolve \
    --log-error="$d/error.log" --tmpdir="$d/tmp" --skip-log-bin \
    --innodb-buffer-pool-size=128M --innodb-flush-log-at-trx-commit=2 --innodb-doublewrite=0 \
    --innodb-lock-wait-timeout=5 --max-connections=200 --max-session-mem-used=1G \
    --character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_ci \
    --binlog-format=ROW --innodb-autoinc-lock-mode=2 --wsrep-on=ON \
    --wsrep-provider="$GALERA_LIB" \
    --wsrep-cluster-address="gcomm://$(galera_addresses)" \
    --wsrep-node-address="127.0.0.1:$(cat "$DIR/node$n.gport")" \
    --wsrep-provider-options="gmcast.listen_addr=tcp://127.0.0.1:$(cat "$DIR/node$n.gport");ist.recv_addr=127.0.0.1:$(cat "$DIR/node$n.iport")" \
    --wsrep-sst-receive-address="127.0.0.1:$(cat "$DIR/node$n.sport")" \
    --wsrep-sst-method=rsync --wsrep-cluster-name=queuectl_test "$@" \
    </dev/null >>"$DIR/node$n.stdout" 2>&1 &
  echo $! >"$d/launcher.pid"
}

galera_wait_synced() {  # N
  local n=$1 deadline=$((SECONDS + 120)) state=""
  until [[ $state == Synced ]]; do
    if ((SECONDS >= deadline)); then
      show_log "$DIR/node$n/error.log"
      die "Galera node $n never reached Synced ($state)"
    fi
    sleep 0.3
    state=$(mariadb --no-defaults -S "$DIR/node$n/mysql.sock" -uroot -N -B \
      -e "SHOW STATUS LIKE 'wsrep_local_state_comment'" 2>/dev/null | cut -f2 || true)
  done
  log "galera: node $n synced"
}

galera_start() {
  command -v mariadbd >/dev/null || die "mariadbd not found"
  [[ -f $GALERA_LIB ]] || die "$GALERA_LIB not found (install galera-4)"
  command -v rsync >/dev/null || die "rsync not found (SST)"
  local n
  for n in 1 2 3; do
    pick_port >"$DIR/node$n.port"
    pick_port >"$DIR/node$n.gport"
    pick_port >"$DIR/node$n.iport"
    pick_port >"$DIR/node$n.sport"
    mkdir -p "$DIR/node$n/tmp"
  done
  cat >"$DIR/init.sql" <<EOF
FLUSH PRIVILEGES;
CREATE DATABASE IF NOT EXISTS $DB_NAME;
CREATE USER IF NOT EXISTS '$DB_USER'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
CREATE USER IF NOT EXISTS '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PASS';
GRANT ALL PRIVILEGES ON *.* TO '$DB_USER'@'127.0.0.1';
GRANT ALL PRIVILEGES ON *.* TO '$DB_USER'@'localhost';
EOF
  log "galera: install-db node 1"
  if ((IS_ROOT)); then
    chmod a+x "$DIR"
    chown -R mysql: "$DIR/node1" "$DIR/node2" "$DIR/node3"
    runuser -u mysql -- test -x "$DIR" || die "user mysql cannot reach $DIR"
  fi
  mariadb-install-db --no-defaults --datadir="$DIR/node1/data" --user="$MY_USER" \
    --auth-root-authentication-method=normal --skip-test-db --skip-name-resolve \
    --extra-file="$DIR/init.sql" --tmpdir="$DIR/node1/tmp" >>"$DIR/clusters.log" 2>&1 ||
    die "mariadb-install-db failed (see $DIR/clusters.log)"
  echo galera >"$DIR/kind"
  galera_node_run 1 --wsrep-new-cluster
  galera_wait_synced 1
  # The joiners get everything by SST from the first node: only their folders are needed.
  for n in 2 3; do
    mkdir -p "$DIR/node$n/data"
    ((IS_ROOT)) && chown mysql: "$DIR/node$n/data"
    galera_node_run "$n"
    galera_wait_synced "$n"
  done
  local size
  size=$(mariadb --no-defaults -S "$DIR/node1/mysql.sock" -uroot -N -B \
    -e "SHOW STATUS LIKE 'wsrep_cluster_size'" | cut -f2)
  [[ $size == 3 ]] || die "Galera cluster size is $size, not 3"
  {
    for n in 1 2 3; do
      echo "export QUEUECTL_GALERA_URL$n='mysql://$DB_USER:$DB_PASS@127.0.0.1:$(cat "$DIR/node$n.port")/$DB_NAME'"
    done
  } >"$DIR/env"
}

galera_pid() {  # N
  local pid
  pid=$(cat "$DIR/node$1/mariadbd.pid" 2>/dev/null || true)
  [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null && echo "$pid"
  return 0
}

galera_kill() {  # N
  local pid
  pid=$(galera_pid "$1")
  [[ -n $pid ]] || return 0
  log "galera: SIGKILL node $1 ($pid)"
  kill -KILL "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
}

galera_restart() {  # N: recover the last position first, so that it rejoins by IST
  local n=$1 pos
  log "galera: recovering node $n"
  mariadbd --no-defaults --user="$MY_USER" --datadir="$DIR/node$n/data" \
    --tmpdir="$DIR/node$n/tmp" --innodb-buffer-pool-size=64M --binlog-format=ROW \
    --wsrep-on=ON --wsrep-provider="$GALERA_LIB" --wsrep-cluster-address=gcomm:// \
    --wsrep-sst-method=rsync --wsrep-recover >"$DIR/node$n.recover.log" 2>&1 || true
  pos=$( (grep -o 'Recovered position: .*' "$DIR/node$n.recover.log" || true) | tail -1 | awk '{print $3}')
  log "galera: node $n recovered position '$pos'"
  if [[ -n $pos ]]; then
    galera_node_run "$n" --wsrep-start-position="$pos"
  else
    galera_node_run "$n"
  fi
  galera_wait_synced "$n"
}

galera_stop() {
  local n pid
  for n in 3 2 1; do  # one at a time: the last one keeps the cluster's state
    pid=$(galera_pid "$n")
    [[ -n $pid ]] || continue
    log "galera: stopping node $n"
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + 60))
    while kill -0 "$pid" 2>/dev/null; do
      ((SECONDS < deadline)) || { kill -KILL "$pid" 2>/dev/null || true; break; }
      sleep 0.2
    done
  done
}

# ---------------------------------------------------------------------- main --

(($# >= 2)) || usage
cmd=$1
case $cmd in
  start)
    (($# == 3)) || usage
    kind=$2
    mkdir -p -- "$3"
    DIR=$(cd -- "$3" && pwd -P)
    ((${#DIR} <= 80)) || die "path too long for Unix sockets: $DIR"
    started=0
    on_exit() { ((started)) || { "$0" stop "$DIR" >/dev/null 2>&1 || true; }; }
    trap on_exit EXIT
    case $kind in
      pg-sync) pg_start sync ;;
      pg-async) pg_start async ;;
      galera) galera_start ;;
      *) usage ;;
    esac
    started=1
    cat "$DIR/env"
    ;;
  failover)
    DIR=$(cd -- "$2" && pwd -P)
    pg_failover "${3:-0}"
    ;;
  kill-node | restart-node)
    (($# == 3)) || usage
    DIR=$(cd -- "$2" && pwd -P)
    [[ $3 =~ ^[123]$ ]] || usage
    if [[ $cmd == kill-node ]]; then galera_kill "$3"; else galera_restart "$3"; fi
    ;;
  stop)
    [[ -d $2 ]] || exit 0
    DIR=$(cd -- "$2" && pwd -P)
    pg_stop
    galera_stop
    ;;
  *) usage ;;
esac
