#!/usr/bin/env bash
# bench/enqueue.sh — `queuectl enqueue --from FILE` on PostgreSQL, as a ratio against its
# floor, the database writing the same rows by itself.
#
#   bash bench/enqueue.sh                  # from the repository root (or anywhere)
#
# Builds queuectl and queue_bench in $BUILD_DIR (default: build), starts throwaway servers
# with scripts/test-servers.sh in a temporary directory (stopped and removed on exit), and
# runs $ROUNDS rounds on an emptied table, each:
#   (a) enqueue: one `queuectl enqueue --from FILE` of $JOBS NDJSON lines
#                {"queue":"bench","payload":{"n":N,"kind":"email"},"priority":N%3} -> jobs/s
#                (the whole command: process start, connection, reading and checking every
#                line, the inserts, the commit);
#   (b) floor:   one psql statement, INSERT INTO job_queue (queue, payload, priority)
#                SELECT ... FROM generate_series(1, $JOBS), the same rows built by the
#                server (no client, no parsing, no transfer) -> jobs/s.
# The ratio of each round and their median are reported. The machine is shared and noisy:
# only the ratio means anything. Writes bench/enqueue_results.md (RESULTS=path elsewhere).
#
# Knobs: BUILD_DIR, JOBS (100000), ROUNDS (3), RESULTS, KEEP_TMP=1.
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
JOBS=${JOBS:-100000}
ROUNDS=${ROUNDS:-3}
RESULTS=${RESULTS:-$ROOT/bench/enqueue_results.md}

say() { printf '\n== %s\n' "$*" >&2; }
die() { echo "bench/enqueue.sh: $*" >&2; exit 1; }

say "building queuectl and queue_bench in $BUILD_DIR"
[[ -f $BUILD_DIR/CMakeCache.txt ]] ||
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
cmake --build "$BUILD_DIR" -j"$(nproc)" --target queue_bench queuectl >&2
QB=$BUILD_DIR/bench/queue_bench
QC=$BUILD_DIR/queuectl

# shellcheck source=bench/servers.sh
source "$ROOT/bench/servers.sh"
bench_servers qenqueue
URL=$QUEUECTL_TEST_PG_URL
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -tA "$URL")

NDJSON=$TMP/jobs.ndjson
awk -v n="$JOBS" 'BEGIN {
  for (i = 1; i <= n; i++)
    printf "{\"queue\":\"bench\",\"payload\":{\"n\":%d,\"kind\":\"email\"},\"priority\":%d}\n", i, i % 3
}' >"$NDJSON"

empty() {
  "$QB" --db "$URL" --reset-only
  "${PSQL[@]}" -c "VACUUM ANALYZE job_queue"
}
count() { "${PSQL[@]}" -c "SELECT count(*) FROM job_queue WHERE queue = 'bench' AND status = 0"; }
now_ns() { date +%s%N; }

RATIOS=()
ROWS=""
for round in $(seq 1 "$ROUNDS"); do
  empty
  say "round $round: queuectl enqueue --from ($JOBS lines)"
  start=$(now_ns)
  "$QC" --db "$URL" -q enqueue --from "$NDJSON" >/dev/null
  elapsed=$(($(now_ns) - start))
  [[ $(count) == "$JOBS" ]] || die "enqueue --from did not write $JOBS jobs"
  cli=$(awk -v n="$JOBS" -v ns="$elapsed" 'BEGIN { printf "%.0f", n / (ns / 1e9) }')

  empty
  say "round $round: floor, INSERT ... SELECT generate_series"
  start=$(now_ns)
  "${PSQL[@]}" -c "INSERT INTO job_queue (queue, payload, priority)
                   SELECT 'bench', jsonb_build_object('n', g, 'kind', 'email'), g % 3
                     FROM generate_series(1, $JOBS) AS g"
  elapsed=$(($(now_ns) - start))
  [[ $(count) == "$JOBS" ]] || die "the floor did not write $JOBS jobs"
  floor=$(awk -v n="$JOBS" -v ns="$elapsed" 'BEGIN { printf "%.0f", n / (ns / 1e9) }')
  ratio=$(awk -v p="$cli" -v f="$floor" 'BEGIN { printf "%.2f", p / f }')
  RATIOS+=("$ratio")
  ROWS+="| $round | $cli | $floor | ${ratio}x |"$'\n'
  echo "round $round: enqueue --from $cli jobs/s, floor $floor jobs/s, ratio $ratio" >&2
done
median=$(printf '%s\n' "${RATIOS[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')

report=$(cat <<MD
# enqueue --from on PostgreSQL

Command: \`JOBS=$JOBS ROUNDS=$ROUNDS bash bench/enqueue.sh\`, commit $(git -C "$ROOT" rev-parse --short HEAD), $(date -u +%Y-%m-%d).

| round | enqueue --from (jobs/s) | floor: INSERT ... SELECT generate_series (jobs/s) | ratio |
|---:|---:|---:|---:|
$ROWS
Median ratio: **${median}x**. One \`queuectl enqueue --from FILE\` of $JOBS NDJSON lines against
one psql statement that builds the same rows in the server. Both on the same throwaway
PostgreSQL 15 (fsync off), into a freshly emptied table.
MD
)
printf '%s\n' "$report" >"$RESULTS"
printf '%s\n' "$report"
