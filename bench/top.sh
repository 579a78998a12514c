#!/usr/bin/env bash
# bench/top.sh — `queuectl top --once` on a table with 1,000,000 done jobs: what a frame
# costs, as a ratio against floors measured in the same run (issue 17).
#
#   bash bench/top.sh                      # from the repository root (or anywhere)
#   BACKENDS="sqlite postgresql" bash bench/top.sh
#
# Builds queuectl in $BUILD_DIR (default: build), starts throwaway servers with
# scripts/test-servers.sh in a temporary directory (stopped and removed on exit), migrates,
# and fills each backend by the database's own row generator (generate_series, a recursive
# CTE, a cross join of digits) with 1,000,000 done jobs in 10 queues, finished over the last
# 24 hours (so about 700 in the last minute), 1,000 failed ones, 100 ready and 20
# processing. Then $ROUNDS rounds; each times $N runs, one after the other, of:
#   version  queuectl --version    (process start: the floor)
#   claim    queuectl claim none   (an empty queue: connect, session setup, schema check,
#                                   one indexed statement: the floor of any command)
#   top      queuectl top --once   (one frame: eight statements in one snapshot)
#   stats    queuectl stats        (done, failed, canceled counted up to 100,000 a queue)
#   exact    queuectl stats --exact (for comparison: it counts every done job)
#   overview what the page of `queuectl serve` asks every 2 s: GET /api/stats and /api/top,
#            with curl, from a server started on the same database
#   list     queuectl list --status failed (a page of 100 of the 1,000 failed jobs, oldest
#            first, among the million done ones: the jobs view filtered on failed), through
#            the failed jobs' index; and `list --status failed,canceled`, the same page
#            through the general listing, which reads the history in id order
#            (failed,canceled: two statuses take it; there are no canceled jobs)
#   small    queuectl list small (every status of a queue of 3 ready jobs enqueued after
#            the rest: the jobs view of one queue with no status chosen)
# and reports ms per run and ratios: top against version and against claim; stats and
# exact against claim; the overview against stats (issue 32: the web view on a large table). Medians of the rounds go to the table. Nothing asserts a time: the machine is
# shared and noisy.
#
# Knobs: BUILD_DIR, BACKENDS ("sqlite postgresql mysql"), ROWS (1000000), N (20),
# ROUNDS (3), KEEP_TMP=1, SKIP_BUILD=1 (use the queuectl already built in $BUILD_DIR).
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
BACKENDS=${BACKENDS:-sqlite postgresql mysql}
ROWS=${ROWS:-1000000}
N=${N:-20}
ROUNDS=${ROUNDS:-3}

say() { printf '== %s\n' "$*" >&2; }

if [[ ${SKIP_BUILD:-0} != 1 ]]; then
  say "building queuectl in $BUILD_DIR"
  [[ -f $BUILD_DIR/CMakeCache.txt ]] ||
    cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD_DIR" -j2 --target queuectl >/dev/null
fi
Q=$BUILD_DIR/queuectl

TMP=$(mktemp -d /tmp/queuectl-top-bench.XXXXXX)
chmod 755 "$TMP"
cleanup() {
  bash "$ROOT/scripts/test-servers.sh" stop "$TMP/servers" >/dev/null 2>&1 || true
  [[ ${KEEP_TMP:-0} = 1 ]] || rm -rf "$TMP"
}
trap cleanup EXIT
declare -A URL=([sqlite]="sqlite://$TMP/q.db")
if [[ $BACKENDS == *postgresql* || $BACKENDS == *mysql* ]]; then
  mkdir -p "$TMP/servers"
  say "starting throwaway servers in $TMP/servers"
  eval "$(bash "$ROOT/scripts/test-servers.sh" start "$TMP/servers")"
  URL[postgresql]=$QUEUECTL_TEST_PG_URL
  URL[mysql]=$QUEUECTL_TEST_MYSQL_URL
fi

# Runs SQL text on backend $1 with its own client.
run_sql() {
  case $1 in
    sqlite) sqlite3 "$TMP/q.db" ;;
    postgresql) psql -q -v ON_ERROR_STOP=1 "${URL[postgresql]}" >/dev/null ;;
    mysql)
      [[ ${URL[mysql]} =~ ^mysql://([^:]+):([^@]+)@([^:/]+):([0-9]+)/([^?]+) ]]
      mariadb -u "${BASH_REMATCH[1]}" -p"${BASH_REMATCH[2]}" -h "${BASH_REMATCH[3]}" \
        -P "${BASH_REMATCH[4]}" "${BASH_REMATCH[5]}" >/dev/null
      ;;
  esac
}

fill() {
  case $1 in
    postgresql)
      run_sql postgresql <<SQL
INSERT INTO job_queue (queue, status, attempts, payload, created_at, updated_at, finished_at)
SELECT 'q' || (g % 10), 2, 1, '{}', t, t, t
  FROM generate_series(1, $ROWS) g, LATERAL (SELECT now() - (g % 86400) * interval '1 second' AS t) x;
INSERT INTO job_queue (queue, status, attempts, payload, last_error, finished_at)
SELECT 'q' || (g % 10), 3, 25, '{}', 'error ' || g || E'\nat frame 2', now() - g * interval '1 minute'
  FROM generate_series(1, 1000) g;
INSERT INTO job_queue (queue, payload) SELECT 'q' || (g % 10), '{}' FROM generate_series(1, 100) g;
VACUUM ANALYZE job_queue;
SQL
      ;;
    sqlite)
      run_sql sqlite <<SQL
WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < $ROWS)
INSERT INTO job_queue (queue, status, attempts, payload, created_at, updated_at, finished_at)
SELECT 'q' || (n % 10), 2, 1, '{}', t, t, t
  FROM (SELECT n, strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || (n % 86400) || ' seconds') AS t FROM c);
WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 1000)
INSERT INTO job_queue (queue, status, attempts, payload, last_error, finished_at)
SELECT 'q' || (n % 10), 3, 25, '{}', 'error ' || n || char(10) || 'at frame 2',
       strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || n || ' minutes') FROM c;
WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 100)
INSERT INTO job_queue (queue, payload) SELECT 'q' || (n % 10), '{}' FROM c;
ANALYZE;
SQL
      ;;
    mysql)
      local d="(SELECT 0 n UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
      run_sql mysql <<SQL
SET time_zone = '+00:00';
INSERT INTO job_queue (queue, status, attempts, payload, created_at, updated_at, finished_at)
SELECT CONCAT('q', g % 10), 2, 1, '{}', t, t, t
  FROM (SELECT g, NOW(6) - INTERVAL (g % 86400) SECOND AS t
          FROM (SELECT a.n + 10 * b.n + 100 * c.n + 1000 * d.n + 10000 * e.n + 100000 * f.n AS g
                  FROM $d a, $d b, $d c, $d d, $d e, $d f) s
         WHERE g < $ROWS) x;
INSERT INTO job_queue (queue, status, attempts, payload, last_error, finished_at)
SELECT CONCAT('q', g % 10), 3, 25, '{}', CONCAT('error ', g, '\nat frame 2'), NOW(6) - INTERVAL g MINUTE
  FROM (SELECT a.n + 10 * b.n + 100 * c.n AS g FROM $d a, $d b, $d c) s;
INSERT INTO job_queue (queue, payload)
SELECT CONCAT('q', g % 10), '{}' FROM (SELECT a.n + 10 * b.n AS g FROM $d a, $d b) s;
ANALYZE TABLE job_queue;
SQL
      ;;
  esac
  "$Q" --db "${URL[$1]}" claim q1 --limit 20 --worker bench-worker >/dev/null
  for _ in 1 2 3; do "$Q" --db "${URL[$1]}" -q enqueue small >/dev/null; done
}

for b in $BACKENDS; do
  "$Q" --db "${URL[$b]}" -q migrate
  say "$b: filling $ROWS done jobs"
  fill "$b"
done

# ms per run of "$@", $N runs in a row.
per_run_ms() {
  local start end i
  start=$(date +%s%N)
  for ((i = 0; i < N; i++)); do "$@" >/dev/null 2>&1 || true; done
  end=$(date +%s%N)
  awk -v s="$start" -v e="$end" -v n="$N" 'BEGIN { printf "%.2f", (e - s) / 1e6 / n }'
}
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# The overview's poll: both routes, one after the other, as the page asks them.
overview() { curl -sf "$1/api/stats" >/dev/null && curl -sf "$1/api/top" >/dev/null; }

echo
echo "| backend | version ms | claim ms | top --once ms | stats ms | stats --exact ms | overview ms | list failed ms | list failed,canceled ms | list small ms | top / claim | stats / claim | exact / claim | overview / stats | list / claim | small / claim |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for b in $BACKENDS; do
  u=${URL[$b]}
  "$Q" --db "$u" serve --listen 127.0.0.1:0 2>"$TMP/serve-$b.log" &
  serve_pid=$!
  for _ in $(seq 100); do grep -q listening "$TMP/serve-$b.log" && break; sleep 0.1; done
  web=$(grep -o 'http://127.0.0.1:[0-9]*' "$TMP/serve-$b.log")
  "$Q" --db "$u" top --once >/dev/null  # warm the caches once
  overview "$web"
  v=() c=() t=() s=() e=() o=() l=() g=() m=() tc=() sc=() ec=() os=() lc=() mc=()
  for ((r = 1; r <= ROUNDS; r++)); do
    vr=$(per_run_ms "$Q" --version)
    cr=$(per_run_ms "$Q" --db "$u" claim none)
    tr=$(per_run_ms "$Q" --db "$u" top --once)
    sr=$(per_run_ms "$Q" --db "$u" stats)
    er=$(per_run_ms "$Q" --db "$u" stats --exact)
    or=$(per_run_ms overview "$web")
    lr=$(per_run_ms "$Q" --db "$u" list --status failed)
    gr=$(per_run_ms "$Q" --db "$u" list --status failed,canceled)
    mr=$(per_run_ms "$Q" --db "$u" list small)
    echo "round=$r backend=$b version=$vr claim=$cr top=$tr stats=$sr exact=$er overview=$or list=$lr general=$gr small=$mr" >&2
    v+=("$vr") c+=("$cr") t+=("$tr") s+=("$sr") e+=("$er") o+=("$or") l+=("$lr") g+=("$gr") m+=("$mr")
    lc+=("$(ratio "$lr" "$cr")") mc+=("$(ratio "$mr" "$cr")")
    tc+=("$(ratio "$tr" "$cr")") sc+=("$(ratio "$sr" "$cr")") ec+=("$(ratio "$er" "$cr")")
    os+=("$(ratio "$or" "$sr")")
  done
  kill "$serve_pid"; wait "$serve_pid" || true
  echo "| $b | $(median "${v[@]}") | $(median "${c[@]}") | $(median "${t[@]}") | $(median "${s[@]}") | $(median "${e[@]}") | $(median "${o[@]}") | $(median "${l[@]}") | $(median "${g[@]}") | $(median "${m[@]}") | $(median "${tc[@]}")x | $(median "${sc[@]}")x | $(median "${ec[@]}")x | $(median "${os[@]}")x | $(median "${lc[@]}")x | $(median "${mc[@]}")x |"
done
