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
# 100 ready and 20 processing; analyzed (bench/history.sh, as bench/top.sh fills its table:
# the database's own row generator, a million rows per statement).
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

source "$ROOT/bench/servers.sh"
bench_build queuectl
Q=$BUILD_DIR/queuectl
source "$ROOT/bench/history.sh"
bench_servers queuectl-stats-bench  # TMP, the servers in it, their URLs

declare -A URL
URL[sqlite:empty]="sqlite://$TMP/empty.db"
URL[sqlite:full]="sqlite://$TMP/full.db"
# The test database is `full`; `empty` is a second database on the same server.
URL[postgresql:full]=$QUEUECTL_TEST_PG_URL
URL[postgresql:empty]=${QUEUECTL_TEST_PG_URL%/*}/queuectl_empty
URL[mysql:full]=$QUEUECTL_TEST_MYSQL_URL
URL[mysql:empty]=${QUEUECTL_TEST_MYSQL_URL%/*}/queuectl_empty

# `empty` needs creating on the servers; SQLite makes its file.
create_empty() {
  case $1 in
    postgresql | mysql) echo "CREATE DATABASE queuectl_empty" | history_sql "${URL[$1:full]}" ;;
  esac
}

for b in $BACKENDS; do
  create_empty "$b"
  "$Q" --db "${URL[$b:empty]}" -q migrate
  "$Q" --db "${URL[$b:full]}" -q migrate
  rows=$ROWS
  [[ $b == sqlite ]] && rows=$SQLITE_ROWS
  fill_history "$b" "${URL[$b:full]}" "$rows"
done

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
