#!/usr/bin/env bash
# bench/overhead.sh — what every queuectl command pays before its one useful statement:
# process start, connection and session setup, schema check. Each figure is a ratio
# against the bare process spawn measured in the same run (issue 13).
#
#   bash bench/overhead.sh                 # from the repository root (or anywhere)
#
# Builds queuectl in $BUILD_DIR (default: build), starts throwaway servers with
# scripts/test-servers.sh in a temporary directory (stopped and removed on exit), then runs
# $ROUNDS rounds; each round times $N runs, one after the other, of:
#   floor    /bin/true                      (fork + exec of a trivial binary, from bash)
#   version  queuectl --version             (process start; it loads no database client)
#   claim    queuectl claim empty --limit 1 (an empty queue: connect, setup, schema check,
#            the claim statement) on SQLite, PostgreSQL and MariaDB
# and reports ms per run and the ratio against the floor of the same round; the medians of
# the rounds go to the table. Nothing here asserts a time: the machine is shared and noisy.
# How many statements a claim and an ack send is counted, not timed, by
# tests/cli/test_round_trips_cli.cpp.
#
# Knobs: BUILD_DIR, N (200), ROUNDS (3), KEEP_TMP=1.
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
N=${N:-200}
ROUNDS=${ROUNDS:-3}

say() { printf '== %s\n' "$*" >&2; }

say "building queuectl in $BUILD_DIR"
[[ -f $BUILD_DIR/CMakeCache.txt ]] ||
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" -j2 --target queuectl >/dev/null
Q=$BUILD_DIR/queuectl

TMP=$(mktemp -d /tmp/queuectl-overhead.XXXXXX)
chmod 755 "$TMP"
cleanup() {
  bash "$ROOT/scripts/test-servers.sh" stop "$TMP/servers" >/dev/null 2>&1 || true
  [[ ${KEEP_TMP:-0} = 1 ]] || rm -rf "$TMP"
}
trap cleanup EXIT
mkdir -p "$TMP/servers"
say "starting throwaway servers in $TMP/servers"
eval "$(bash "$ROOT/scripts/test-servers.sh" start "$TMP/servers")"
declare -A URL=([sqlite]="sqlite:$TMP/q.db" [postgresql]=$QUEUECTL_TEST_PG_URL
                [mysql]=$QUEUECTL_TEST_MYSQL_URL)
for b in sqlite postgresql mysql; do "$Q" --db "${URL[$b]}" -q migrate; done

# ms per run of "$@", $N runs in a row.
per_run_ms() {
  local start end i
  start=$(date +%s%N)
  for ((i = 0; i < N; i++)); do "$@" >/dev/null 2>&1 || true; done
  end=$(date +%s%N)
  awk -v s="$start" -v e="$end" -v n="$N" 'BEGIN { printf "%.3f", (e - s) / 1e6 / n }'
}

declare -A MS RATIO
names=(floor version claim_sqlite claim_postgresql claim_mysql)
for ((r = 1; r <= ROUNDS; r++)); do
  floor=$(per_run_ms /bin/true)
  MS[floor,$r]=$floor
  MS[version,$r]=$(per_run_ms "$Q" --version)
  for b in sqlite postgresql mysql; do
    MS[claim_$b,$r]=$(per_run_ms "$Q" --db "${URL[$b]}" claim empty --limit 1)
  done
  for n in "${names[@]}"; do
    RATIO[$n,$r]=$(awk -v a="${MS[$n,$r]}" -v f="$floor" 'BEGIN { printf "%.2f", a / f }')
    echo "round=$r what=$n ms_per_run=${MS[$n,$r]} ratio_to_spawn=${RATIO[$n,$r]}"
  done
done

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo
echo "| per run, median of $ROUNDS rounds of $N | ms | ratio to the bare spawn |"
echo "|---|---:|---:|"
for n in "${names[@]}"; do
  ms=() ratios=()
  for ((r = 1; r <= ROUNDS; r++)); do ms+=("${MS[$n,$r]}"); ratios+=("${RATIO[$n,$r]}"); done
  echo "| $n | $(median "${ms[@]}") | $(median "${ratios[@]}")x |"
done
