#!/usr/bin/env bash
# bench/cron.sh — what schedules cost (issue 29), as ratios to floors measured in the same run,
# on SQLite, PostgreSQL and MariaDB.
#
#   bash bench/cron.sh                              # from the repository root (or anywhere)
#   QUEUECTL=/path/to/queuectl bash bench/cron.sh   # a binary already built
#
# Two measurements per backend and round:
#   work    `queuectl -q -o json work bench --concurrency 8 --drain -- true` over N jobs
#           enqueued just before, once with no schedule and once with S schedules on the
#           same queue (@every 10s), all of them due when the worker starts, so that its
#           housekeeping fires 100 a second (one job each, which the worker also runs) for the
#           whole run. Reported: jobs done per second, and the ratio with / without (1.0 =
#           schedules cost the claim loop nothing).
#   tick    `queuectl -q cron tick` over S due schedules (an hour late each: 7 jobs each, see
#           due_now), against the floor of a bare INSERT of as many jobs in one statement
#           through the backend's own client (psql, mariadb, sqlite3), plus one process
#           spawn of `queuectl --version`. Reported: seconds, and tick / floor.
# Nothing here asserts a time: the machine is shared and noisy; read the ratios.
#
# Knobs (environment): BUILD_DIR, QUEUECTL, N (3000), S (1000), ROUNDS (3),
# BACKENDS ("sqlite postgresql mysql"), KEEP_TMP=1.
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
N=${N:-3000}
S=${S:-1000}
ROUNDS=${ROUNDS:-3}
BACKENDS=${BACKENDS:-sqlite postgresql mysql}

say() { printf '== %s\n' "$*" >&2; }
die() { echo "bench/cron.sh: $*" >&2; exit 1; }

if [[ -n ${QUEUECTL:-} ]]; then
  Q=$QUEUECTL
else
  say "building queuectl in $BUILD_DIR"
  [[ -f $BUILD_DIR/CMakeCache.txt ]] ||
    cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD_DIR" -j2 --target queuectl >/dev/null
  Q=$BUILD_DIR/queuectl
fi
[[ -x $Q ]] || die "no queuectl binary at $Q"

TMP=$(mktemp -d /tmp/queuectl-cron-bench.XXXXXX)
chmod 755 "$TMP"
cleanup() {
  bash "$ROOT/scripts/test-servers.sh" stop "$TMP/servers" >/dev/null 2>&1 || true
  [[ ${KEEP_TMP:-0} = 1 ]] || rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$TMP/servers"
if [[ $BACKENDS == *postgresql* || $BACKENDS == *mysql* ]]; then
  say "starting throwaway servers in $TMP/servers"
  eval "$(bash "$ROOT/scripts/test-servers.sh" start "$TMP/servers")"
fi
declare -A URL=([sqlite]="sqlite:$TMP/q.db" [postgresql]=${QUEUECTL_TEST_PG_URL:-}
                [mysql]=${QUEUECTL_TEST_MYSQL_URL:-})
for b in $BACKENDS; do "$Q" --db "${URL[$b]}" -q migrate; done

# Bare SQL through each backend's own client, for the floor.
sql() {
  local b=$1 text=$2
  case $b in
    sqlite) sqlite3 "$TMP/q.db" "$text" >/dev/null ;;
    postgresql) psql -q -X "$QUEUECTL_TEST_PG_URL" -c "$text" >/dev/null ;;
    mysql)
      # mysql://user:password@host:port/db
      local u=${QUEUECTL_TEST_MYSQL_URL#mysql://} user pass host port db
      user=${u%%:*}; u=${u#*:}; pass=${u%%@*}; u=${u#*@}; host=${u%%:*}; u=${u#*:}
      port=${u%%/*}; db=${u#*/}
      MYSQL_PWD=$pass mariadb -u "$user" -h "$host" -P "$port" "$db" -e "$text" >/dev/null ;;
  esac
}
series() {  # $2 rows of ('floor', '{}') as SQL for backend $1
  case $1 in
    postgresql) echo "SELECT 'floor', '{}'::jsonb FROM generate_series(1, $2)" ;;
    *) echo "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $2)
             SELECT 'floor', '{}' FROM n" ;;
  esac
}
# Every schedule due: its next tick an hour back. With the default misfire (`once`, a tick
# more than 60 s late is missed), each makes one job for the missed hour and one for each
# tick of the last minute: 7 jobs for `@every 10s`.
due_now() {
  sql "$1" "UPDATE queuectl_schedules SET next_fire = next_fire - 3600"
}

for ((i = 0; i < N; i++)); do echo '{"payload":{}}'; done >"$TMP/jobs.ndjson"
for ((i = 0; i < S; i++)); do
  printf '{"name":"bench-%d","schedule":"@every 10s","queue":"bench"}\n' "$i"
done >"$TMP/schedules.ndjson"

now_ns() { date +%s%N; }
secs() { awk -v s="$1" -v e="$2" 'BEGIN { printf "%.3f", (e - s) / 1e9 }'; }

# work: jobs done per second by one worker over N jobs (and the schedules' jobs meanwhile).
work_rate() {
  local b=$1 start end summary done
  "$Q" --db "${URL[$b]}" -q enqueue bench --from "$TMP/jobs.ndjson" >/dev/null
  start=$(now_ns)
  summary=$("$Q" --db "${URL[$b]}" -q -o json work bench --concurrency 8 --drain -- true)
  end=$(now_ns)
  done=$(sed -n 's/.*"done": *\([0-9]*\).*/\1/p' <<<"$summary")
  [[ ${done:-0} -ge $N ]] || die "$b: work did $done of $N jobs: $summary"
  awk -v n="$done" -v s="$start" -v e="$end" 'BEGIN { printf "%.0f", n / ((e - s) / 1e9) }'
}

for ((r = 1; r <= ROUNDS; r++)); do
  for b in $BACKENDS; do
    "$Q" --db "${URL[$b]}" -q purge --older-than 0s --status done,failed,canceled >/dev/null
    "$Q" --db "${URL[$b]}" -q cron apply /dev/null --prune >/dev/null
    without=$(work_rate "$b")
    "$Q" --db "${URL[$b]}" -q cron apply "$TMP/schedules.ndjson" >/dev/null
    due_now "$b"  # all S due when the worker starts: it fires 100 a second meanwhile
    with=$(work_rate "$b")
    "$Q" --db "${URL[$b]}" -q cron apply /dev/null --prune >/dev/null
    "$Q" --db "${URL[$b]}" -q cron apply "$TMP/schedules.ndjson" >/dev/null
    ratio=$(awk -v a="$with" -v b="$without" 'BEGIN { printf "%.2f", a / b }')
    echo "round=$r backend=$b what=work without_jobs_per_s=$without with_${S}_schedules_jobs_per_s=$with ratio=$ratio"

    # tick over S due schedules, against a bare INSERT of S jobs and one process spawn.
    due_now "$b"
    start=$(now_ns)
    made=$("$Q" --db "${URL[$b]}" -q -o json cron tick)
    end=$(now_ns)
    tick=$(secs "$start" "$end")
    jobs=$(sed -n 's/^ *"jobs": *\([0-9]*\).*/\1/p' <<<"$made" | head -1)
    [[ ${jobs:-0} -ge $S ]] || die "$b: cron tick made ${jobs:-no} jobs for $S schedules"
    start=$(now_ns)
    "$Q" --version >/dev/null
    # (MariaDB stops a recursive CTE at 1,000 rows unless told otherwise.)
    [[ $b == mysql ]] && prefix="SET STATEMENT max_recursive_iterations = $((jobs + 1)) FOR " || prefix=
    sql "$b" "${prefix}INSERT INTO job_queue (queue, payload) $(series "$b" "$jobs")"
    end=$(now_ns)
    floor=$(secs "$start" "$end")
    ratio=$(awk -v a="$tick" -v b="$floor" 'BEGIN { printf "%.1f", a / b }')
    echo "round=$r backend=$b what=tick schedules=$S jobs=$jobs tick_s=$tick floor_s=$floor ratio=$ratio"
  done
done
