#!/usr/bin/env bash
# bench/stale_claim.sh — `queuectl claim --limit 1000` against a ready backlog that arrived
# after the table's statistics were taken (issue 33), as a ratio to the same claim once the
# statistics are fresh, and to the floor of any command (a claim of an empty queue).
#
#   bash bench/stale_claim.sh                      # from the repository root (or anywhere)
#   BACKENDS=postgresql BACKLOGS="1000 10000" bash bench/stale_claim.sh
#
# Builds queuectl in $BUILD_DIR (default: build), starts throwaway servers in a temporary
# directory (stopped and removed on exit), and for each backend fills job_queue with $DONE
# (1,000,000) finished jobs, made by the database itself, then ANALYZE. For each backlog
# size B in $BACKLOGS it then adds B ready jobs to queue 'stale' and B to queue 'fresh'
# (half of each in groups of 10), with no ANALYZE, and times:
#   empty  queuectl claim none               (an empty queue: the floor of any command)
#   stale  queuectl claim stale --limit 1000 (statistics from before the burst)
# then runs ANALYZE and times
#   fresh  queuectl claim fresh --limit 1000 (the same state, statistics fresh)
# Each is the median of $ROUNDS rounds; a round deletes the last round's backlog, runs
# ANALYZE, and adds a new one. Reports ms and the ratios
# stale/fresh and stale/empty. Nothing asserts a time.
#
# Knobs: BUILD_DIR, BACKENDS ("sqlite postgresql mysql"), DONE (1000000),
# BACKLOGS ("1000 10000 100000"), ROUNDS (3), KEEP_TMP=1, SKIP_BUILD=1.
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
BACKENDS=${BACKENDS:-sqlite postgresql mysql}
DONE=${DONE:-1000000}
BACKLOGS=${BACKLOGS:-1000 10000 100000}
ROUNDS=${ROUNDS:-3}

say() { printf '== %s\n' "$*" >&2; }

if [[ ${SKIP_BUILD:-0} != 1 ]]; then
  say "building queuectl in $BUILD_DIR"
  [[ -f $BUILD_DIR/CMakeCache.txt ]] ||
    cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD_DIR" -j2 --target queuectl >/dev/null
fi
Q=$BUILD_DIR/queuectl

TMP=$(mktemp -d /tmp/queuectl-stale-bench.XXXXXX)
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

# Runs SQL text (standard input) on backend $1 with its own client.
run_sql() {
  case $1 in
    sqlite) sqlite3 "$TMP/q.db" >/dev/null ;;
    postgresql) psql -q -v ON_ERROR_STOP=1 "${URL[postgresql]}" >/dev/null ;;
    mysql)
      [[ ${URL[mysql]} =~ ^mysql://([^:]+):([^@]+)@([^:/]+):([0-9]+)/([^?]+) ]]
      mariadb -u "${BASH_REMATCH[1]}" -p"${BASH_REMATCH[2]}" -h "${BASH_REMATCH[3]}" \
        -P "${BASH_REMATCH[4]}" "${BASH_REMATCH[5]}" >/dev/null
      ;;
  esac
}

# Rows 1..$2 as a FROM clause with column g, on backend $1.
series() {
  case $1 in
    postgresql) echo "generate_series(1, $2) AS s (g)" ;;
    mysql) echo "(SELECT seq AS g FROM seq_1_to_$2) AS s" ;;  # MariaDB's Sequence engine
    *) echo "(WITH RECURSIVE r (g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM r WHERE g < $2)
             SELECT g FROM r) AS s" ;;
  esac
}
concat() { [[ $1 == mysql ]] && echo "CONCAT($2, $3)" || echo "$2 || $3"; }
now_of() {
  case $1 in
    postgresql) echo "now()" ;;
    mysql) echo "NOW(6)" ;;
    sqlite) echo "strftime('%Y-%m-%d %H:%M:%f', 'now')" ;;
  esac
}
analyze_of() {
  case $1 in
    postgresql) echo "ANALYZE job_queue;" ;;
    mysql) echo "ANALYZE TABLE job_queue;" ;;
    sqlite) echo "ANALYZE;" ;;
  esac
}

# Milliseconds a command takes, its output discarded.
time_ms() {
  local t0 t1
  t0=$(date +%s%N)
  "$@" >/dev/null
  t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000000))
}
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b <= 0) b = 1; printf "%.2fx", a / b }'; }

printf '\n| backend | backlog | empty ms | stale ms | fresh ms | stale/fresh | stale/empty |\n'
printf '|---|---:|---:|---:|---:|---:|---:|\n'
for b in $BACKENDS; do
  url=${URL[$b]}
  say "$b: migrating and filling $DONE finished jobs"
  "$Q" --db "$url" migrate >/dev/null
  run_sql "$b" <<SQL
INSERT INTO job_queue (queue, status, attempts, payload, finished_at)
SELECT 'done', 2, 1, '{}', $(now_of "$b") FROM $(series "$b" "$DONE");
SQL
  for backlog in $BACKLOGS; do
    empty=() stale=() fresh=()
    for ((r = 1; r <= ROUNDS; r++)); do
      say "$b: backlog $backlog, round $r"
      # Statistics of a table with no ready job, then the burst in two queues alike.
      run_sql "$b" <<SQL
DELETE FROM job_queue WHERE queue IN ('stale', 'fresh');
$(analyze_of "$b")
INSERT INTO job_queue (queue, payload, group_key)
SELECT q.name, '{}', CASE WHEN g % 2 = 0 THEN $(concat "$b" "'g'" "(g % ($backlog / 20 + 1))") END
  FROM $(series "$b" "$backlog"), (SELECT 'stale' AS name UNION ALL SELECT 'fresh') q;
SQL
      empty+=("$(time_ms "$Q" --db "$url" claim none -q)")
      stale+=("$(time_ms "$Q" --db "$url" claim stale --limit 1000 -o ndjson)")
      echo "$(analyze_of "$b")" | run_sql "$b"
      fresh+=("$(time_ms "$Q" --db "$url" claim fresh --limit 1000 -o ndjson)")
    done
    e=$(median "${empty[@]}") s=$(median "${stale[@]}") f=$(median "${fresh[@]}")
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$b" "$backlog" "$e" "$s" "$f" \
      "$(ratio "$s" "$f")" "$(ratio "$s" "$e")"
  done
done
