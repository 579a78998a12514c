#!/usr/bin/env bash
# bench/ack_parts.sh — where the time of a claim+ack goes on PostgreSQL when the queue keeps
# its done jobs (issue 34): the library's claim+ack with the schema as migrated, against the
# same with one part of the schema taken away at a time, and against a queue that keeps no
# done job (`--keep-done off`, whose ack deletes its jobs, as graphile-worker's does).
#
#   bash bench/ack_parts.sh                  # from anywhere; ~3 minutes
#   ROUNDS=5 BATCH=2000 bash bench/ack_parts.sh
#
# Builds queue_bench in $BUILD_DIR (default: build; SKIP_BUILD=1 uses it as it is), starts a
# throwaway PostgreSQL through bench/servers.sh unless URL names one (the database's name
# must contain "bench" or "test": its queue tables are dropped), and in each round runs each
# variant once, in a rotating order:
#   as migrated     queue_bench --claim: W forked workers loop JobRepository::claim(limit B)
#                   + ack_many until JOBS jobs are done
#   -groups index   the same without job_queue_processing_groups, the index a claimed row
#                   enters for the group probes and the concurrency limit's count
#   -finished index without job_queue_finished, the index a done row enters for counting
#                   and purging by age
#   -triggers       without the two BEFORE UPDATE triggers of the shared table
#                   (job_queue_count_attempts, job_queue_dead_letter), for which PostgreSQL
#                   locks each row an ack updates before it looks at their WHEN clauses
#   -all three      the three above together
#   keep-done off   the schema as migrated, `--keep-done off`: the ack deletes its jobs
# The parts are taken away by this script's own fixed statements after `queue_bench
# --reset-only`; `--keep-schema` then measures on the tables as they are. None of the
# variants but the first and the last is a schema queuectl could run on: they show what each
# part costs, not something to do. The figure is the median over rounds of each variant's
# jobs per second, its ratio to "as migrated" (per round) and its mean claim and ack times.
# Nothing is asserted: the machine is shared and noisy; read the ratios.
#
# Knobs (environment): BUILD_DIR, SKIP_BUILD=1, URL, JOBS (100000), WORKERS (2), BATCH
# (1000), ROUNDS (3), KEEP_TMP=1.
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
JOBS=${JOBS:-100000}
WORKERS=${WORKERS:-2}
BATCH=${BATCH:-1000}
ROUNDS=${ROUNDS:-3}

say() { printf '== %s\n' "$*" >&2; }
die() { echo "bench/ack_parts.sh: $*" >&2; exit 1; }
field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }

source "$ROOT/bench/history.sh"  # median, ratio
source "$ROOT/bench/servers.sh"
bench_build queue_bench
QB=$BUILD_DIR/bench/queue_bench
[[ -x $QB ]] || die "no $QB"
command -v psql >/dev/null || die "needs psql"
if [[ -z ${URL:-} ]]; then
  bench_servers queuectl-ack-parts
  URL=$QUEUECTL_TEST_PG_URL
fi
[[ $URL == postgresql://* ]] || die "URL must name a PostgreSQL database"

VARIANTS=(migrated no-groups-index no-finished-index no-triggers no-all-three keep-done-off)
label() {
  case $1 in
    migrated) echo "as migrated (done jobs kept)" ;;
    no-groups-index) echo "without job_queue_processing_groups" ;;
    no-finished-index) echo "without job_queue_finished" ;;
    no-triggers) echo "without the two BEFORE UPDATE triggers" ;;
    no-all-three) echo "without all three" ;;
    keep-done-off) echo "\`--keep-done off\` (the ack deletes)" ;;
  esac
}
# The statements that take a variant's part away (fixed text, nothing from outside).
DROP_GROUPS="DROP INDEX job_queue_processing_groups;"
DROP_FINISHED="DROP INDEX job_queue_finished;"
DROP_TRIGGERS="DROP TRIGGER job_queue_count_attempts ON job_queue;
DROP TRIGGER job_queue_dead_letter ON job_queue;"
variant_sql() {
  case $1 in
    no-groups-index) echo "$DROP_GROUPS" ;;
    no-finished-index) echo "$DROP_FINISHED" ;;
    no-triggers) echo "$DROP_TRIGGERS" ;;
    no-all-three) printf '%s\n%s\n%s\n' "$DROP_GROUPS" "$DROP_FINISHED" "$DROP_TRIGGERS" ;;
  esac
}

run() {  # VARIANT: the claim_ack line
  local v=$1 keep=on
  "$QB" --db "$URL" --reset-only 2>/dev/null
  local sql
  sql=$(variant_sql "$v")
  [[ -n $sql ]] && psql -q -X -v ON_ERROR_STOP=1 "$URL" -c "$sql" >/dev/null
  [[ $v == keep-done-off ]] && keep=off
  "$QB" --db "$URL" --keep-schema --claim --workers "$WORKERS" --batches "$BATCH" \
    --jobs "$JOBS" --keep-done "$keep" 2>/dev/null | grep '^claim_ack'
}

declare -A JPS CLAIM ACK RATIO
n=${#VARIANTS[@]}
for ((r = 0; r < ROUNDS; r++)); do
  declare -A line=()
  for ((i = 0; i < n; i++)); do
    v=${VARIANTS[$(((i + r) % n))]}
    say "round $((r + 1)) of $ROUNDS: $v"
    line[$v]=$(run "$v")
    echo "${line[$v]}" >&2
  done
  base=$(field "${line[migrated]}" jobs_per_s)
  for v in "${VARIANTS[@]}"; do
    JPS[$v]+=" $(field "${line[$v]}" jobs_per_s)"
    CLAIM[$v]+=" $(field "${line[$v]}" claim_ms)"
    ACK[$v]+=" $(field "${line[$v]}" ack_many_ms)"
    RATIO[$v]+=" $(ratio "$(field "${line[$v]}" jobs_per_s)" "$base")"
  done
done

mean() { printf '%s\n' "$@" | awk '{ s += $1 } END { printf "%.1f", s / NR }'; }
echo "| PostgreSQL, W=$WORKERS, B=$BATCH, $JOBS jobs, $ROUNDS rounds | jobs/s (median) | / as migrated (median) | claim ms | ack ms |"
echo "|---|---:|---:|---:|---:|"
for v in "${VARIANTS[@]}"; do
  # shellcheck disable=SC2086 # the lists are space-separated numbers
  echo "| $(label "$v") | $(median ${JPS[$v]}) | $(median ${RATIO[$v]})x | $(mean ${CLAIM[$v]}) | $(mean ${ACK[$v]}) |"
done
