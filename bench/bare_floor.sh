#!/usr/bin/env bash
# bench/bare_floor.sh — a bare-SQL floor driven as the library is (issue 34): claim+ack
# through queuectl's library against the article's statements run bare by the same worker
# processes, on the same table, in the same run. MariaDB by default; BACKEND=postgresql for
# PostgreSQL, whose batch-100 floor bench/run.sh also measures with pgbench.
#
#   bash bench/bare_floor.sh                       # MariaDB; from anywhere; ~2 minutes
#   BACKEND=postgresql bash bench/bare_floor.sh    # PostgreSQL
#
# Builds queue_bench in $BUILD_DIR (default: build; SKIP_BUILD=1 uses it as it is), starts a
# throwaway MariaDB and PostgreSQL (scripts/test-servers.sh starts both) through
# bench/servers.sh unless URL names a server, and for each batch size B runs, alternately
# (which goes first alternates too), $REPEAT times each:
#   library  queue_bench --claim: W forked workers loop JobRepository::claim(limit B) +
#            ack_many until the queue is empty
#   bare     queue_bench --claim --bare: the same workers run the article's statements
#            themselves (seeds: MariaDB "SELECT id ... LIMIT n FOR UPDATE SKIP LOCKED", then
#            UPDATE ... WHERE id IN (...), COMMIT; PostgreSQL the one statement UPDATE ...
#            WHERE id IN (that SELECT) RETURNING id), in queuectl's claim order, and one
#            UPDATE to done guarded by the token: the least any SKIP LOCKED queue on this
#            table can do
# over the same jobs (refilled and analyzed before each run; each run checks that every job
# ended done). The figure is the median of the per-run ratios library / bare of jobs per
# second. Nothing is asserted: the machine is shared and noisy; read the ratios.
#
# Knobs (environment): BACKEND (mysql, postgresql), BUILD_DIR, SKIP_BUILD=1, URL (a server of
# that backend already running; the database name must contain "bench" or "test":
# queue_bench drops its tables), WORKERS (2),
# BATCHES ("1 100"), JOBS_B1 (3000), JOBS_B100 (20000), REPEAT (3), KEEP_TMP=1.
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
BACKEND=${BACKEND:-mysql}
WORKERS=${WORKERS:-2}
BATCHES=${BATCHES:-1 100}
JOBS_B1=${JOBS_B1:-3000}
JOBS_B100=${JOBS_B100:-20000}
REPEAT=${REPEAT:-3}

say() { printf '== %s\n' "$*" >&2; }
die() { echo "bench/bare_floor.sh: $*" >&2; exit 1; }
field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }

source "$ROOT/bench/history.sh"  # median, ratio
source "$ROOT/bench/servers.sh"
bench_build queue_bench
QB=$BUILD_DIR/bench/queue_bench
[[ -x $QB ]] || die "no $QB"

case $BACKEND in
  mysql | postgresql) ;;
  *) die "BACKEND must be mysql or postgresql, not '$BACKEND'" ;;
esac
if [[ -z ${URL:-} ]]; then
  bench_servers queuectl-bare-floor
  if [[ $BACKEND == mysql ]]; then URL=$QUEUECTL_TEST_MYSQL_URL; else URL=$QUEUECTL_TEST_PG_URL; fi
fi

run() {  # BATCH [--bare]: the claim_ack line
  "$QB" --db "$URL" --claim --workers "$WORKERS" --batches "$1" --jobs-b1 "$JOBS_B1" \
    --jobs-b100 "$JOBS_B100" "${@:2}" | grep '^claim_ack'
}

echo "| claim+ack on $BACKEND, W=$WORKERS, median of $REPEAT runs each | batch | library jobs/s | bare SQL jobs/s | library / bare |"
echo "|---|---:|---:|---:|---:|"
for batch in $BATCHES; do
  lib=() bare=() ratios=()
  for ((r = 1; r <= REPEAT; r++)); do
    say "batch $batch, round $r of $REPEAT"
    # Each run resets the schema; which goes first alternates, so that what the run before
    # leaves (dropped files, WAL to checkpoint) falls on both alike.
    if ((r % 2)); then
      l=$(run "$batch")
      b=$(run "$batch" --bare)
    else
      b=$(run "$batch" --bare)
      l=$(run "$batch")
    fi
    echo "$l" >&2
    echo "$b" >&2
    lib+=("$(field "$l" jobs_per_s)") bare+=("$(field "$b" jobs_per_s)")
    ratios+=("$(ratio "$(field "$l" jobs_per_s)" "$(field "$b" jobs_per_s)")")
  done
  echo "| $BACKEND | $batch | $(median "${lib[@]}") | $(median "${bare[@]}") | $(median "${ratios[@]}")x |"
done
