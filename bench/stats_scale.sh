#!/usr/bin/env bash
# bench/stats_scale.sh — `queuectl stats` (and `stats -o prometheus`) on a long history
# against the same command on an empty table, in one run (issue 34: "within 3x of empty").
#
#   bash bench/stats_scale.sh                            # ~25 minutes: 10M rows on the servers
#   ROWS=1000000 SQLITE_ROWS=100000 bash bench/stats_scale.sh   # a quick look
#
# Builds queuectl in $BUILD_DIR (default: build) unless SKIP_BUILD=1, starts throwaway
# servers (bench/servers.sh: in a temporary directory, stopped and removed on exit), and
# makes two databases per backend, both migrated: `empty` (no job at all) and
# `full`: $ROWS done jobs (PostgreSQL, MariaDB; default 10,000,000) or $SQLITE_ROWS
# (SQLite; default 1,000,000) in 10 queues, finished over the last day, plus 1,000 failed,
# 100 ready and 20 processing; analyzed. The rows go in by the database's own generator
# (generate_series, a recursive CTE, a cross join of digits), a million per statement.
# Then $ROUNDS rounds, each timing $N runs in a row of, alternately on empty and full:
#   stats                  the table and its capped counts
#   stats -o prometheus    the same counts as the textfile collector reads them
#   stats --exact          (full only) every finished row counted, for comparison
# and prints ms per run and the ratios full / empty; medians of the rounds go to the table.
# Nothing asserts a time: the machine is shared and noisy.
#
# Knobs: BUILD_DIR, BACKENDS ("sqlite postgresql mysql"), ROWS, SQLITE_ROWS, N (10),
# ROUNDS (3), KEEP_TMP=1, SKIP_BUILD=1.
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
BACKENDS=${BACKENDS:-sqlite postgresql mysql}
ROWS=${ROWS:-10000000}
SQLITE_ROWS=${SQLITE_ROWS:-1000000}
N=${N:-10}
ROUNDS=${ROUNDS:-3}

say() { printf '== %s\n' "$*" >&2; }
die() { echo "bench/stats_scale.sh: $*" >&2; exit 1; }

if [[ ${SKIP_BUILD:-0} != 1 ]]; then
  say "building queuectl in $BUILD_DIR"
  [[ -f $BUILD_DIR/CMakeCache.txt ]] ||
    cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD_DIR" -j2 --target queuectl >/dev/null
fi
Q=$BUILD_DIR/queuectl

source "$ROOT/bench/servers.sh"
bench_servers queuectl-stats-bench  # TMP, the servers in it, their URLs

declare -A URL
URL[sqlite:empty]="sqlite://$TMP/empty.db"
URL[sqlite:full]="sqlite://$TMP/full.db"
# The test database is `full`; `empty` is a second database on the same server.
URL[postgresql:full]=$QUEUECTL_TEST_PG_URL
URL[postgresql:empty]=${QUEUECTL_TEST_PG_URL%/*}/queuectl_empty
URL[mysql:full]=$QUEUECTL_TEST_MYSQL_URL
URL[mysql:empty]=${QUEUECTL_TEST_MYSQL_URL%/*}/queuectl_empty

# SQL text on stdin, run on database $2 (empty or full) of backend $1 by its own client.
run_sql() {
  local url=${URL[$1:$2]}
  case $1 in
    sqlite) sqlite3 "${url#sqlite://}" ;;
    postgresql) psql -q -v ON_ERROR_STOP=1 "$url" >/dev/null ;;
    mysql)
      [[ $url =~ ^mysql://([^:]+):([^@]+)@([^:/]+):([0-9]+)/([^?]+) ]]
      mariadb -u "${BASH_REMATCH[1]}" -p"${BASH_REMATCH[2]}" -h "${BASH_REMATCH[3]}" \
        -P "${BASH_REMATCH[4]}" "${BASH_REMATCH[5]}" >/dev/null
      ;;
  esac
}

create_empty() {
  case $1 in
    postgresql) echo "CREATE DATABASE queuectl_empty" | run_sql postgresql full ;;
    mysql) echo "CREATE DATABASE queuectl_empty" | run_sql mysql full ;;
  esac
}

# $3 done jobs into backend $1's `full`, a million per statement ($2: its first number).
fill_chunk() {
  local from=$2 count=$3
  case $1 in
    postgresql)
      run_sql postgresql full <<SQL
INSERT INTO job_queue (queue, status, attempts, payload, created_at, updated_at, finished_at)
SELECT 'q' || (g % 10), 2, 1, '{}', t, t, t
  FROM generate_series($from, $from + $count - 1) g,
       LATERAL (SELECT now() - (g % 86400) * interval '1 second' AS t) x;
SQL
      ;;
    sqlite)
      run_sql sqlite full <<SQL
WITH RECURSIVE c(n) AS (SELECT $from UNION ALL SELECT n + 1 FROM c WHERE n < $from + $count - 1)
INSERT INTO job_queue (queue, status, attempts, payload, created_at, updated_at, finished_at)
SELECT 'q' || (n % 10), 2, 1, '{}', t, t, t
  FROM (SELECT n, strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || (n % 86400) || ' seconds') AS t FROM c);
SQL
      ;;
    mysql)
      local d="(SELECT 0 n UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
      run_sql mysql full <<SQL
SET time_zone = '+00:00';
INSERT INTO job_queue (queue, status, attempts, payload, created_at, updated_at, finished_at)
SELECT CONCAT('q', g % 10), 2, 1, '{}', t, t, t
  FROM (SELECT g, NOW(6) - INTERVAL (g % 86400) SECOND AS t
          FROM (SELECT $from + a.n + 10 * b.n + 100 * c.n + 1000 * d.n + 10000 * e.n + 100000 * f.n AS g
                  FROM $d a, $d b, $d c, $d d, $d e, $d f) s
         WHERE g < $from + $count) x;
SQL
      ;;
  esac
}

# The rest of `full`: failed, ready and processing jobs; statistics.
fill_rest() {
  case $1 in
    postgresql)
      run_sql postgresql full <<SQL
INSERT INTO job_queue (queue, status, attempts, payload, last_error, finished_at)
SELECT 'q' || (g % 10), 3, 25, '{}', 'error ' || g, now() - g * interval '1 minute'
  FROM generate_series(1, 1000) g;
INSERT INTO job_queue (queue, payload) SELECT 'q' || (g % 10), '{}' FROM generate_series(1, 100) g;
VACUUM ANALYZE job_queue;
SQL
      ;;
    sqlite)
      run_sql sqlite full <<SQL
WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 1000)
INSERT INTO job_queue (queue, status, attempts, payload, last_error, finished_at)
SELECT 'q' || (n % 10), 3, 25, '{}', 'error ' || n,
       strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || n || ' minutes') FROM c;
WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 100)
INSERT INTO job_queue (queue, payload) SELECT 'q' || (n % 10), '{}' FROM c;
ANALYZE;
SQL
      ;;
    mysql)
      local d="(SELECT 0 n UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
      run_sql mysql full <<SQL
SET time_zone = '+00:00';
INSERT INTO job_queue (queue, status, attempts, payload, last_error, finished_at)
SELECT CONCAT('q', g % 10), 3, 25, '{}', CONCAT('error ', g), NOW(6) - INTERVAL g MINUTE
  FROM (SELECT a.n + 10 * b.n + 100 * c.n AS g FROM $d a, $d b, $d c) s;
INSERT INTO job_queue (queue, payload)
SELECT CONCAT('q', g % 10), '{}' FROM (SELECT a.n + 10 * b.n AS g FROM $d a, $d b) s;
ANALYZE TABLE job_queue;
SQL
      ;;
  esac
  "$Q" --db "${URL[$1:full]}" claim q1 --limit 20 --worker bench-worker >/dev/null
}

for b in $BACKENDS; do
  create_empty "$b"
  "$Q" --db "${URL[$b:empty]}" -q migrate
  "$Q" --db "${URL[$b:full]}" -q migrate
  rows=$ROWS
  [[ $b == sqlite ]] && rows=$SQLITE_ROWS
  for ((from = 1; from <= rows; from += 1000000)); do
    count=$((rows - from + 1 < 1000000 ? rows - from + 1 : 1000000))
    say "$b: done jobs $from to $((from + count - 1)) of $rows"
    fill_chunk "$b" "$from" "$count"
  done
  fill_rest "$b"
done

per_run_ms() {
  local start end i
  start=$(date +%s%N)
  for ((i = 0; i < N; i++)); do "$@" >/dev/null 2>&1 || true; done
  end=$(date +%s%N)
  awk -v s="$start" -v e="$end" -v n="$N" 'BEGIN { printf "%.2f", (e - s) / 1e6 / n }'
}
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

echo
echo "| backend | finished rows | stats empty ms | stats full ms | full / empty | prometheus empty ms | prometheus full ms | full / empty | stats --exact full ms | exact / empty |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for b in $BACKENDS; do
  e=${URL[$b:empty]} f=${URL[$b:full]}
  rows=$ROWS
  [[ $b == sqlite ]] && rows=$SQLITE_ROWS
  "$Q" --db "$f" stats >/dev/null  # warm the caches once
  "$Q" --db "$e" stats >/dev/null
  se=() sf=() pe=() pf=() xf=() rs=() rp=() rx=()
  for ((r = 1; r <= ROUNDS; r++)); do
    ser=$(per_run_ms "$Q" --db "$e" stats)
    sfr=$(per_run_ms "$Q" --db "$f" stats)
    per=$(per_run_ms "$Q" --db "$e" -o prometheus stats)
    pfr=$(per_run_ms "$Q" --db "$f" -o prometheus stats)
    xfr=$(per_run_ms "$Q" --db "$f" stats --exact)
    echo "round=$r backend=$b stats_empty=$ser stats_full=$sfr prom_empty=$per prom_full=$pfr exact_full=$xfr" >&2
    se+=("$ser") sf+=("$sfr") pe+=("$per") pf+=("$pfr") xf+=("$xfr")
    rs+=("$(ratio "$sfr" "$ser")") rp+=("$(ratio "$pfr" "$per")") rx+=("$(ratio "$xfr" "$ser")")
  done
  echo "| $b | $rows | $(median "${se[@]}") | $(median "${sf[@]}") | $(median "${rs[@]}")x | $(median "${pe[@]}") | $(median "${pf[@]}") | $(median "${rp[@]}")x | $(median "${xf[@]}") | $(median "${rx[@]}")x |"
done
