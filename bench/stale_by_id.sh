#!/usr/bin/env bash
# bench/stale_by_id.sh — PostgreSQL: a lease holder's write of one job by id (an extend) on a
# table whose statistics were taken before the jobs processing now, in the form queuectl
# used until 2026-11-28 (`status = 1`) and the form it uses now (`CAST(status AS integer) =
# 1`), each as a ratio to the floor: the same UPDATE by primary key with no status test.
#
#   bash bench/stale_by_id.sh                      # from anywhere; about a minute
#   PROCESSING="10000 100000" ROUNDS=5 bash bench/stale_by_id.sh
#
# Builds queuectl in $BUILD_DIR (default: build; SKIP_BUILD=1 uses it as it is) for its
# schema (`migrate`), starts a throwaway PostgreSQL (bench/servers.sh), and fills job_queue
# with $DONE (100,000) finished jobs, then ANALYZE. For each P in $PROCESSING it adds P jobs
# processing under one token, with no ANALYZE, and runs pgbench (one client, $RUNS
# transactions, each an extend of a random held job, rolled back) on the floor, the old form
# and the new form, in an order that turns each round; then ANALYZE and the two forms again.
# Reports the median ms of $ROUNDS rounds and the ratios to the floor of the same round.
# Nothing asserts a time.
#
# Knobs: BUILD_DIR, SKIP_BUILD=1, DONE (100000), PROCESSING ("10000 100000"), ROUNDS (3),
# RUNS (300), KEEP_TMP=1.
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
DONE=${DONE:-100000}
PROCESSING=${PROCESSING:-10000 100000}
ROUNDS=${ROUNDS:-3}
RUNS=${RUNS:-300}

say() { printf '== %s\n' "$*" >&2; }
die() { echo "bench/stale_by_id.sh: $*" >&2; exit 1; }

source "$ROOT/bench/history.sh"  # median, ratio
source "$ROOT/bench/servers.sh"
bench_build queuectl
Q=$BUILD_DIR/queuectl
[[ -x $Q ]] || die "no $Q"
command -v pgbench >/dev/null || die "pgbench is not installed (scripts/install-deps.sh)"
bench_servers queuectl-stale-by-id
URL=$QUEUECTL_TEST_PG_URL

sql() { psql -q -v ON_ERROR_STOP=1 "$URL" >/dev/null; }

# The WHERE of each form; the SET is queuectl's extend without its progress columns.
declare -A WHERE=(
  [floor]="id = :id"
  [old]="id = :id AND status = 1 AND lock_token = 't' AND lock_until > now()"
  [new]="id = :id AND CAST(status AS integer) = 1 AND lock_token = 't' AND lock_until > now()"
)
# ms a transaction of form $1 over ids $2..$3, by pgbench.
latency() {
  cat >"$TMP/$1.sql" <<SQL
\\set id random($2, $3)
BEGIN;
UPDATE job_queue SET lock_until = now() + INTERVAL '1 minute', updated_at = now() WHERE ${WHERE[$1]};
ROLLBACK;
SQL
  pgbench -n -f "$TMP/$1.sql" -t "$RUNS" -c 1 "$URL" 2>/dev/null |
    sed -n 's/^latency average = \([0-9.]*\) ms$/\1/p'
}

say "migrating and filling $DONE finished jobs"
"$Q" --db "$URL" migrate >/dev/null
sql <<SQL
ALTER TABLE job_queue SET (autovacuum_enabled = false);
INSERT INTO job_queue (queue, status, attempts, payload, finished_at)
SELECT 'done', 2, 1, '{}', now() FROM generate_series(1, $DONE);
SQL

echo
echo "| jobs processing | statistics | floor ms | \`status = 1\` ms | cast ms | \`status = 1\` / floor | cast / floor |"
echo "|---:|---|---:|---:|---:|---:|---:|"
for p in $PROCESSING; do
  declare -A ms=()
  for stats in stale fresh; do for f in floor old new; do ms[$stats.$f]=""; done; done
  for ((r = 1; r <= ROUNDS; r++)); do
    say "$p processing, round $r of $ROUNDS"
    # Statistics with nothing processing, then the burst.
    sql <<SQL
DELETE FROM job_queue WHERE queue = 'held';
ANALYZE job_queue;
INSERT INTO job_queue (queue, status, attempts, payload, lock_token, locked_at, lock_until)
SELECT 'held', 1, 1, '{}', 't', now(), now() + INTERVAL '1 hour' FROM generate_series(1, $p);
SQL
    read -r lo hi < <(psql -At -F ' ' "$URL" -c "SELECT min(id), max(id) FROM job_queue WHERE queue = 'held'")
    case $((r % 3)) in 1) order="floor old new" ;; 2) order="old new floor" ;; 0) order="new floor old" ;; esac
    for stats in stale fresh; do
      [[ $stats == fresh ]] && echo "ANALYZE job_queue;" | sql
      for f in $order; do ms[$stats.$f]+=" $(latency "$f" "$lo" "$hi")"; done
    done
  done
  for stats in stale fresh; do
    # shellcheck disable=SC2086
    fl=$(median ${ms[$stats.floor]}) old=$(median ${ms[$stats.old]}) new=$(median ${ms[$stats.new]})
    echo "| $p | $stats | $fl | $old | $new | $(ratio "$old" "$fl")x | $(ratio "$new" "$fl")x |"
  done
done
