#!/usr/bin/env bash
# bench/limits.sh — what a concurrency limit (queue --max-processing) and a rate limit (queue
# --rate) cost the claim, on PostgreSQL, MariaDB and SQLite.
#
#   bash bench/limits.sh              # from the repository root (or anywhere); ~3 minutes
#
# Builds queue_bench in $BUILD_DIR (default: build), starts throwaway PostgreSQL and MariaDB
# servers with scripts/test-servers.sh in a temporary directory (stopped and removed on exit),
# and for each backend runs `queue_bench --claim` (W forked workers looping claim(limit B) +
# ack_many until the queue is empty) without a limit and with one, alternately (which goes
# first alternates too), $REPEAT times each. The limit is $LIMIT: above W x B, so it never
# throttles, and what is measured is the work of enforcing it (the queue's settings row
# locked, the processing jobs counted) against the claim without it. The rate is $RATE starts a second with a burst as large,
# far above what the claim achieves, so it never throttles either: what is measured is the
# bucket read, refilled and written by every claim. The figure is the median of the per-run ratios
# limited / unlimited of jobs per second, measured in the same run: read the ratios, not
# the absolute figures (this machine is shared and noisy). Nothing is asserted.
#
# Knobs (environment): BUILD_DIR, BACKENDS ("postgresql mysql sqlite"), WORKERS (2),
# BATCHES ("1 100"), JOBS_B1 (3000), JOBS_B100 (20000), LIMIT (1000), RATE (1000000),
# KINDS ("max-processing rate"), REPEAT (3), DURABLE (1: the throwaway servers commit durably,
# PostgreSQL with fsync, synchronous_commit and full_page_writes on, MariaDB with
# innodb_flush_log_at_trx_commit = 1; default 0, the test servers' settings), PG_URL and
# MYSQL_URL (servers already running; the database name must contain "bench" or "test").
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
BACKENDS=${BACKENDS:-postgresql mysql sqlite}
WORKERS=${WORKERS:-2}
BATCHES=${BATCHES:-1 100}
JOBS_B1=${JOBS_B1:-3000}
JOBS_B100=${JOBS_B100:-20000}
LIMIT=${LIMIT:-1000}
RATE=${RATE:-1000000}
KINDS=${KINDS:-max-processing rate}
REPEAT=${REPEAT:-3}
DURABLE=${DURABLE:-0}

say() { printf '== %s\n' "$*" >&2; }
die() { echo "bench/limits.sh: $*" >&2; exit 1; }
field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }
median() { sort -g | awk 'NF { v[++n] = $1 } END { if (n == 0) print ""; else if (n % 2) print v[(n + 1) / 2]; else printf "%.6g\n", (v[n / 2] + v[n / 2 + 1]) / 2 }'; }

say "building queue_bench in $BUILD_DIR"
[[ -f $BUILD_DIR/CMakeCache.txt ]] || cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
cmake --build "$BUILD_DIR" -j"$(nproc)" --target queue_bench >&2
QB=$BUILD_DIR/bench/queue_bench
[[ -x $QB ]] || die "build did not produce $QB"

TMP=$(mktemp -d /tmp/qlimits.XXXXXX)
STARTED=0
cleanup() {
  local rc=$?
  ((STARTED)) && { "$ROOT/scripts/test-servers.sh" stop "$TMP" >/dev/null 2>&1 || true; }
  rm -rf -- "$TMP"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [[ -z ${PG_URL:-} || -z ${MYSQL_URL:-} ]] && [[ $BACKENDS == *postgresql* || $BACKENDS == *mysql* ]]; then
  say "starting throwaway PostgreSQL and MariaDB in $TMP"
  STARTED=1
  server_env=$("$ROOT/scripts/test-servers.sh" start "$TMP") || die "the servers did not start"
  eval "$server_env"
fi
PG_URL=${PG_URL:-${QUEUECTL_TEST_PG_URL:-}}
MYSQL_URL=${MYSQL_URL:-${QUEUECTL_TEST_MYSQL_URL:-}}
if ((DURABLE)); then
  ((STARTED)) || die "DURABLE=1 changes server settings: only on the servers this script starts"
  say "durable commits: fsync, synchronous_commit, full_page_writes on; innodb_flush_log_at_trx_commit = 1"
  if [[ $BACKENDS == *postgresql* ]]; then
    psql -X -q -v ON_ERROR_STOP=1 "$PG_URL" -c "ALTER SYSTEM SET fsync = on" \
      -c "ALTER SYSTEM SET synchronous_commit = on" -c "ALTER SYSTEM SET full_page_writes = on" \
      -c "SELECT pg_reload_conf()" >/dev/null
  fi
  if [[ $BACKENDS == *mysql* ]]; then
    mariadb --no-defaults -S "$TMP/mysql/mysql.sock" -uroot \
      -e "SET GLOBAL innodb_flush_log_at_trx_commit = 1" >/dev/null
  fi
fi

printf '| claim+ack, W=%s, with a limit vs none: jobs/s ratio (median of %s runs each) | batch |' \
  "$WORKERS" "$REPEAT"
for b in $BACKENDS; do printf ' %s |' "$b"; done
printf '\n|---|---:|'
for b in $BACKENDS; do printf -- '---:|'; done
printf '\n'
claim_run() {  # one drain of $url at batch $batch with the options given: its claim_ack line
  "$QB" --db "$url" --claim --workers "$WORKERS" --batches "$batch" \
    --jobs-b1 "$JOBS_B1" --jobs-b100 "$JOBS_B100" "$@" | grep '^claim_ack'
}

for kind in $KINDS; do
  case $kind in
    max-processing) limit_args=(--max-processing "$LIMIT"); label="--max-processing $LIMIT / none" ;;
    rate) limit_args=(--rate "$RATE"); label="--rate $RATE/s / none" ;;
    *) die "unknown kind $kind (max-processing, rate)" ;;
  esac
  for batch in $BATCHES; do
    row="| $label | $batch |"
    for b in $BACKENDS; do
      case $b in
        postgresql) url=$PG_URL ;;
        mysql) url=$MYSQL_URL ;;
        sqlite) url="sqlite://$TMP/queuectl_bench.db"; [[ -e $TMP/queuectl_bench.db ]] || : >"$TMP/queuectl_bench.db" ;;
      esac
      ratios=""
      for ((r = 1; r <= REPEAT; r++)); do
        # Each run resets the schema; which of the two goes first alternates, so that what
        # the run before leaves (dropped files, WAL to checkpoint) falls on both alike.
        if ((r % 2)); then
          free=$(claim_run) capped=$(claim_run "${limit_args[@]}")
        else
          capped=$(claim_run "${limit_args[@]}") free=$(claim_run)
        fi
        echo "$free" >&2
        echo "$capped" >&2
        ratios+=$(awk -v a="$(field "$capped" jobs_per_s)" -v b="$(field "$free" jobs_per_s)" \
          'BEGIN { printf "%.3f", a / b }')$'\n'
      done
      row+=" $(median <<<"$ratios" | awk '{ printf "%.2f", $1 }') |"
    done
    echo "$row"
  done
done
