#!/usr/bin/env bash
# bench/pipe.sh — the command-line pipe `claim --limit B -o ndjson | ack --from -` on
# PostgreSQL, as a ratio against its floor, the bare SQL of the same claim and ack.
#
#   bash bench/pipe.sh                     # from the repository root (or anywhere)
#
# Builds queuectl and queue_bench in $BUILD_DIR (default: build), starts throwaway servers
# with scripts/test-servers.sh in a temporary directory (stopped and removed on exit), and
# runs $ROUNDS rounds, each:
#   (a) pipe:  $JOBS ready jobs drained by $JOBS/$BATCH pipelines
#              `queuectl claim bench --limit $BATCH -o ndjson | queuectl ack --from -`, one
#              after the other (two processes, two connections, per batch) -> jobs/s; every
#              job must end done;
#   (b) floor: the same $JOBS jobs drained by pgbench, one client, running the dialect's own
#              claim statement with limit $BATCH and one UPDATE acking the claimed ids
#              (bench/pg_claim_ack.sh), prepared statements, one connection -> jobs/s =
#              tps * $BATCH.
# The ratio pipe/floor of each round is reported, and their median. The machine is shared
# and noisy: only the ratio means anything, and nothing here asserts a time. Writes the
# figures to bench/pipe_results.md (RESULTS=path to write elsewhere).
#
# Knobs: BUILD_DIR, JOBS (20000), BATCH (1000), ROUNDS (3), PG_BIN, RESULTS, KEEP_TMP=1.
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
JOBS=${JOBS:-20000}
BATCH=${BATCH:-1000}
ROUNDS=${ROUNDS:-3}
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
RESULTS=${RESULTS:-$ROOT/bench/pipe_results.md}
# shellcheck source=bench/pg_claim_ack.sh
source "$ROOT/bench/pg_claim_ack.sh"

say() { printf '\n== %s\n' "$*" >&2; }
die() { echo "bench/pipe.sh: $*" >&2; exit 1; }

say "building queuectl and queue_bench in $BUILD_DIR"
[[ -f $BUILD_DIR/CMakeCache.txt ]] ||
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
cmake --build "$BUILD_DIR" -j"$(nproc)" --target queue_bench queuectl >&2
QB=$BUILD_DIR/bench/queue_bench
QC=$BUILD_DIR/queuectl
PGBENCH=$PG_BIN/pgbench
[[ -x $PGBENCH ]] || PGBENCH=$(command -v pgbench) || die "pgbench not found"

# shellcheck source=bench/servers.sh
source "$ROOT/bench/servers.sh"
bench_servers qpipe
URL=$QUEUECTL_TEST_PG_URL
pg_env_from_url "$URL"
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -tA)
write_claim_ack_sql "$QB" "$URL" "$TMP/claim_ack.sql" || die "no claim script"
((JOBS % BATCH == 0)) || die "JOBS must be a multiple of BATCH"
PIPES=$((JOBS / BATCH))

prefill() {
  "$QB" --db "$URL" --reset-only
  "${PSQL[@]}" -c "INSERT INTO job_queue (queue, payload)
                   SELECT 'bench', CAST('{\"n\":' || g || '}' AS jsonb)
                     FROM generate_series(1, $JOBS) AS g"
  "${PSQL[@]}" -c "VACUUM ANALYZE job_queue"
}
all_done() {
  [[ $("${PSQL[@]}" -c "SELECT count(*) FROM job_queue WHERE status = 2") == "$JOBS" ]]
}
now_ns() { date +%s%N; }

RATIOS=()
ROWS=""
for round in $(seq 1 "$ROUNDS"); do
  prefill
  say "round $round: pipe, $PIPES x claim --limit $BATCH | ack --from -"
  start=$(now_ns)
  for _ in $(seq 1 "$PIPES"); do
    "$QC" --db "$URL" claim bench --limit "$BATCH" -o ndjson | "$QC" --db "$URL" -q ack --from - >/dev/null
  done
  elapsed=$(($(now_ns) - start))
  all_done || die "the pipe left jobs undone"
  pipe=$(awk -v n="$JOBS" -v ns="$elapsed" 'BEGIN { printf "%.0f", n / (ns / 1e9) }')

  prefill
  say "round $round: floor, pgbench claim $BATCH + ack, 1 client"
  "$PGBENCH" -n -M prepared -c 1 -j 1 -t "$PIPES" \
    -D queue=bench -D worker=pgbench -D limit="$BATCH" -D lease_ms=30000 \
    -f "$TMP/claim_ack.sql" >"$TMP/pgbench.out" 2>&1 || { cat "$TMP/pgbench.out" >&2; die "pgbench failed"; }
  all_done || die "pgbench left jobs undone"
  tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time).*/\1/p' "$TMP/pgbench.out")
  floor=$(awk -v t="$tps" -v b="$BATCH" 'BEGIN { printf "%.0f", t * b }')
  ratio=$(awk -v p="$pipe" -v f="$floor" 'BEGIN { printf "%.2f", p / f }')
  RATIOS+=("$ratio")
  ROWS+="| $round | $pipe | $floor | ${ratio}x |"$'\n'
  echo "round $round: pipe $pipe jobs/s, floor $floor jobs/s, ratio $ratio" >&2
done
median=$(printf '%s\n' "${RATIOS[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')

report=$(cat <<MD
# The command-line pipe on PostgreSQL

Command: \`JOBS=$JOBS BATCH=$BATCH ROUNDS=$ROUNDS bash bench/pipe.sh\`, commit $(git -C "$ROOT" rev-parse --short HEAD), $(date -u +%Y-%m-%d).

| round | pipe (jobs/s) | floor: bare SQL, pgbench (jobs/s) | ratio |
|---:|---:|---:|---:|
$ROWS
Median ratio: **${median}x**. The pipe is \`queuectl claim bench --limit $BATCH -o ndjson | queuectl ack --from -\`,
$PIPES times in a row, draining $JOBS jobs; the floor drains the same number with pgbench (one
client, prepared statements) running the dialect's own claim statement and one UPDATE for
the ack (bench/pg_claim_ack.sh). Both on the same throwaway PostgreSQL 15 (fsync off).
MD
)
echo "$report" >"$RESULTS"
echo "$report"
