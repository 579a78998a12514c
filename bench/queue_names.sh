#!/usr/bin/env bash
# bench/queue_names.sh — what migration 9's queue-name rule costs an INSERT, on each backend.
#
#   bash bench/queue_names.sh              # from the repository root (or anywhere)
#
# Migration 9 makes the table refuse a queue name the command line cannot name: a CHECK on
# PostgreSQL and MariaDB, a BEFORE INSERT trigger on SQLite. Every INSERT pays it, queuectl's
# and the applications' own. This measures the floor the rule changes: the database writing
# $JOBS rows by itself in one statement (INSERT INTO job_queue ... SELECT from a generated
# series: no client, no parsing, no transfer), with the rule in place and with it dropped,
# rounds interleaved on an emptied table. The ratio with/without is the rule's cost.
#
# Builds queuectl in $BUILD_DIR (default: build), starts throwaway servers with
# scripts/test-servers.sh in a temporary directory (stopped and removed on exit).
# Knobs: BUILD_DIR, JOBS (100000), ROUNDS (5), BACKENDS ("postgresql mysql sqlite").
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
JOBS=${JOBS:-100000}
ROUNDS=${ROUNDS:-5}
BACKENDS=${BACKENDS:-"postgresql mysql sqlite"}

say() { printf '\n== %s\n' "$*" >&2; }

say "building queuectl in $BUILD_DIR"
[[ -f $BUILD_DIR/CMakeCache.txt ]] ||
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
cmake --build "$BUILD_DIR" -j2 --target queuectl >/dev/null
Q=$BUILD_DIR/queuectl

TMP=$(mktemp -d "${TMPDIR:-/tmp}/queuectl-bench-names.XXXXXX")
chmod 755 "$TMP"  # the postgres user runs the server from under it
cleanup() {
  bash "$ROOT/scripts/test-servers.sh" stop "$TMP/srv" >/dev/null 2>&1 || true
  rm -rf "$TMP"
}
trap cleanup EXIT

# The rule as migration 9 writes it: its statements, cut from the migration file.
# A trigger runs to its END; line, the CHECK to its first line ending in ";".
rule_sql() {
  awk '/^(ALTER TABLE job_queue|CREATE TRIGGER (IF NOT EXISTS )?job_queue_queue_name)/ {on = 1; trig = /TRIGGER/}
       on {print}
       on && ((trig && /^END;$/) || (!trig && /;$/)) {exit}' "$ROOT/sql/$1/009_queue_names.sql"
}

now_ns() { date +%s%N; }

# backend-specific: run SQL ($1) and time one statement; each defines sql_run and rows_sql.
case_postgresql() {
  export PGPASSWORD=queuectl
  port=$(sed -n 's/.*@127.0.0.1:\([0-9]*\)\/.*/\1/p' <<<"$QUEUECTL_TEST_PG_URL")
  sql_run() { psql -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U queuectl -d queuectl_test -c "$1" >/dev/null; }
  rows_sql="INSERT INTO job_queue (queue, payload, priority)
            SELECT 'bench', jsonb_build_object('n', g, 'kind', 'email'), g % 3
              FROM generate_series(1, $JOBS) g"
  rule_on=$(rule_sql postgresql)
  rule_off="ALTER TABLE job_queue DROP CONSTRAINT job_queue_queue_name"
  empty="TRUNCATE job_queue"
  url=$QUEUECTL_TEST_PG_URL
}
case_mysql() {
  sock=$TMP/srv/mysql/mysql.sock
  sql_run() { printf '%s\n' "$1" | mariadb --no-defaults -S "$sock" -uroot queuectl_test; }
  rows_sql="INSERT INTO job_queue (queue, payload, priority)
            SELECT 'bench', JSON_OBJECT('n', seq, 'kind', 'email'), seq % 3 FROM seq_1_to_$JOBS"
  rule_on=$(rule_sql mysql)
  rule_off="ALTER TABLE job_queue DROP CONSTRAINT job_queue_queue_name"
  empty="TRUNCATE job_queue"
  url=$QUEUECTL_TEST_MYSQL_URL
}
case_sqlite() {
  file=$TMP/names.db
  sql_run() { sqlite3 "$file" "$1"; }
  rows_sql="WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < $JOBS)
            INSERT INTO job_queue (queue, payload, priority)
            SELECT 'bench', json_object('n', n, 'kind', 'email'), n % 3 FROM g"
  rule_on=$(rule_sql sqlite)
  rule_off="DROP TRIGGER job_queue_queue_name"
  empty="DELETE FROM job_queue"
  url=sqlite://$file
}

say "starting servers in $TMP/srv"
eval "$(bash "$ROOT/scripts/test-servers.sh" start "$TMP/srv")"

printf '| backend | with the rule, jobs/s | without, jobs/s | ratio with/without (median of %s) |\n|---|---:|---:|---:|\n' "$ROUNDS"
for backend in $BACKENDS; do
  "case_$backend"
  "$Q" --db "$url" migrate >/dev/null 2>&1
  with=() without=() ratios=()
  for ((r = 1; r <= ROUNDS; r++)); do
    for mode in with without; do
      sql_run "$empty"
      if [[ $mode == without ]]; then sql_run "$rule_off"; fi
      t0=$(now_ns); sql_run "$rows_sql"; t1=$(now_ns)
      if [[ $mode == without ]]; then sql_run "$rule_on"; fi
      rate=$(awk -v n="$JOBS" -v ns=$((t1 - t0)) 'BEGIN { printf "%d", n / (ns / 1e9) }')
      if [[ $mode == with ]]; then with+=("$rate"); else without+=("$rate"); fi
    done
    ratios+=("$(awk -v a="${with[-1]}" -v b="${without[-1]}" 'BEGIN { printf "%.3f", a / b }')")
  done
  median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
  printf '| %s | %s | %s | %sx |\n' "$backend" "$(median "${with[@]}")" "$(median "${without[@]}")" \
    "$(median "${ratios[@]}")"
done
