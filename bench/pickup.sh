#!/usr/bin/env bash
# bench/pickup.sh — pickup latency: from a job's enqueue to the start of its command under
# `queuectl work`, at a steady 500 jobs a second and when the worker is idle, on PostgreSQL
# (woken by LISTEN/NOTIFY), MariaDB and SQLite (polling), against the floor: the time a bare
# fork and exec of the same command takes to start (issue 34).
#
#   bash bench/pickup.sh                     # ~4 minutes
#   BACKENDS=postgresql RATE=200 bash bench/pickup.sh
#
# Builds queuectl and pickup_bench in $BUILD_DIR (default: build) unless SKIP_BUILD=1,
# starts throwaway servers (bench/servers.sh: in a temporary directory, stopped and removed
# on exit). For each backend and each poll setting (the default, and
# --poll-interval 100ms on the polling backends), a fresh queue and one
#   queuectl work pickup --concurrency 8 [--poll-interval ..] -- bash -c SCRIPT
# where SCRIPT appends "$QUEUECTL_JOB_ID $EPOCHREALTIME" to a ledger; then pickup_bench
# enqueues, one job a transaction, at $RATE a second for $SECONDS_BUSY s (steady), and then
# at 2 a second for $SECONDS_IDLE s (idle: the worker has drained the queue and waits
# between jobs), and prints the p50, p95, p99 and max of enqueue-to-start. The floor,
# measured first in the same run: $FLOOR runs of `bash -c SCRIPT` by fork and exec, from
# before the fork to the script's timestamp. Nothing asserts a time.
#
# Knobs: BUILD_DIR, BACKENDS ("sqlite postgresql mysql"), RATE (500), SECONDS_BUSY (10),
# SECONDS_IDLE (10), FLOOR (200), KEEP_TMP=1, SKIP_BUILD=1.
set -euo pipefail
export LC_ALL=C  # $EPOCHREALTIME with a decimal point

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
BACKENDS=${BACKENDS:-sqlite postgresql mysql}
RATE=${RATE:-500}
SECONDS_BUSY=${SECONDS_BUSY:-10}
SECONDS_IDLE=${SECONDS_IDLE:-10}
FLOOR=${FLOOR:-200}

say() { printf '== %s\n' "$*" >&2; }
die() { echo "bench/pickup.sh: $*" >&2; exit 1; }

source "$ROOT/bench/servers.sh"
bench_build queuectl pickup_bench
Q=$BUILD_DIR/queuectl
P=$BUILD_DIR/bench/pickup_bench
bench_servers queuectl-pickup-bench  # TMP, the servers in it, their URLs
worker=
# The worker first (it would hold its database), then bench/servers.sh's own cleanup.
trap 'rc=$?; [[ -z $worker ]] || { kill "$worker"; wait "$worker"; } 2>/dev/null
  (exit $rc); bench_servers_cleanup' EXIT

declare -A URL=([sqlite]="sqlite://$TMP/q.db" [postgresql]=$QUEUECTL_TEST_PG_URL
  [mysql]=$QUEUECTL_TEST_MYSQL_URL)

script() { printf 'echo "$QUEUECTL_JOB_ID $EPOCHREALTIME" >> %q' "$1"; }

say "floor: $FLOOR spawns of bash -c SCRIPT"
"$P" --floor "$FLOOR" --ledger "$TMP/floor.ledger" --command "$(script "$TMP/floor.ledger")" |
  tee "$TMP/floor.txt" >&2
field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" "$2"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }
floor_p50=$(field p50_ms "$TMP/floor.txt")
floor_p99=$(field p99_ms "$TMP/floor.txt")

echo
echo "| backend | worker wakes by | load | p50 ms | p95 ms | p99 ms | max ms | p50 / floor p50 | p99 / floor p99 |"
echo "|---|---|---|---:|---:|---:|---:|---:|---:|"
echo "| (floor: fork and exec) | | $FLOOR spawns | $floor_p50 | $(field p95_ms "$TMP/floor.txt") | $floor_p99 | $(field max_ms "$TMP/floor.txt") | 1.0x | 1.0x |"
run=0
for b in $BACKENDS; do
  u=${URL[$b]}
  "$Q" --db "$u" -q migrate
  polls=("")
  [[ $b != postgresql ]] && polls+=("100ms")
  for poll in "${polls[@]}"; do
    run=$((run + 1))
    queue=pickup$run
    ledger=$TMP/run$run.ledger
    : >"$ledger"
    args=(work "$queue" --concurrency 8)
    wakes="LISTEN/NOTIFY"
    [[ $b != postgresql ]] && wakes="polling (default)"
    if [[ -n $poll ]]; then
      args+=(--poll-interval "$poll")
      wakes="polling every $poll"
    fi
    "$Q" --db "$u" -q "${args[@]}" -- bash -c "$(script "$ledger")" 2>"$TMP/work$run.log" &
    worker=$!
    sleep 2  # connected, listening, idle
    for load in busy idle; do
      if [[ $load == busy ]]; then rate=$RATE seconds=$SECONDS_BUSY; else rate=2 seconds=$SECONDS_IDLE; fi
      say "$b, $wakes: $rate jobs/s for $seconds s"
      "$P" --db "$u" --queue "$queue" --rate "$rate" --seconds "$seconds" --ledger "$ledger" |
        tee "$TMP/run$run-$load.txt" >&2
      f=$TMP/run$run-$load.txt
      echo "| $b | $wakes | $rate jobs/s | $(field p50_ms "$f") | $(field p95_ms "$f") | $(field p99_ms "$f") | $(field max_ms "$f") | $(ratio "$(field p50_ms "$f")" "$floor_p50")x | $(ratio "$(field p99_ms "$f")" "$floor_p99")x |"
    done
    kill "$worker"
    wait "$worker" 2>/dev/null || true
    worker=
  done
done
