#!/usr/bin/env bash
# bench/graphile.sh — queuectl's library claim+ack against graphile-worker's batched local
# queue (issue 34), side by side on one PostgreSQL server, in the same run.
#
#   bash bench/graphile.sh                 # from anywhere; ~5 minutes; needs node and npm
#   JOBS=50000 ROUNDS=5 bash bench/graphile.sh
#
# graphile-worker (the version bench/graphile/package.json pins) is installed from the npm
# registry into the run's temporary folder, never into the repository. Node.js and npm are
# not among what scripts/install-deps.sh installs (no test needs them); graphile-worker 0.18
# declares Node.js 22 and ran on Node.js 20 here. Each round, alternately (which goes first
# alternates too):
#   queuectl   queue_bench --claim: W forked workers, each its own connection, loop
#              JobRepository::claim(limit B) + ack_many until JOBS jobs are done; once for each
#              B in BATCHES (the best is the figure); with KEEP_DONE="on off" (the
#              default) once with the queue keeping its done jobs (queuectl's default) and
#              once with `queue bench --keep-done off` (an ack deletes its job, as
#              graphile-worker's completion does), each its own figure and ratio
#   graphile   bench/graphile/drain.mjs: one Node.js process runs graphile-worker with
#              CONCURRENCY jobs at once, its local queue fetching L jobs a query and its
#              completions batched (completeJobBatchDelay 0), a no-op task, until JOBS jobs
#              have succeeded (graphile-worker's own perfTest: 24 at once, L = 500); once for
#              each L in LOCAL_QUEUES (the best is the figure: each side gets as many tries)
# over JOBS jobs each, added by the database itself (queuectl: its row generator;
# graphile-worker: one call of graphile_worker.add_jobs with an array of them; add_job once a
# row, each with its own pg_notify and task upsert, took minutes for 100,000) and analyzed first. The
# figure is jobs per second, and the median of the per-round ratios queuectl / graphile. The
# graphile figure includes its runner's start (connecting its pool), a few milliseconds of
# several seconds. Nothing is asserted: the machine is shared and noisy; read the ratios.
#
# Knobs (environment): BUILD_DIR, SKIP_BUILD=1, JOBS (100000), ROUNDS (3), WORKERS (2),
# BATCHES ("100 1000 2000"), CONCURRENCY (24), LOCAL_QUEUES ("500 1000 2000"),
# KEEP_DONE ("on off"), KEEP_TMP=1.
# graphile-worker drains fastest from a local queue of 2,000 (no faster at 5,000 or 10,000),
# which the earlier default of "500 1000" left out.
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
JOBS=${JOBS:-100000}
ROUNDS=${ROUNDS:-3}
WORKERS=${WORKERS:-2}
BATCHES=${BATCHES:-100 1000 2000}
CONCURRENCY=${CONCURRENCY:-24}
LOCAL_QUEUES=${LOCAL_QUEUES:-500 1000 2000}
KEEP_DONE=${KEEP_DONE:-on off}

say() { printf '== %s\n' "$*" >&2; }
die() { echo "bench/graphile.sh: $*" >&2; exit 1; }
field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }

{ command -v node && command -v npm; } >/dev/null || die "needs node and npm"
source "$ROOT/bench/history.sh"  # median, ratio
source "$ROOT/bench/servers.sh"
bench_build queue_bench
QB=$BUILD_DIR/bench/queue_bench
[[ -x $QB ]] || die "no $QB"
bench_servers queuectl-graphile
URL=$QUEUECTL_TEST_PG_URL

say "installing graphile-worker from the npm registry into $TMP/gw"
mkdir -p "$TMP/gw"
cp "$ROOT/bench/graphile/package.json" "$ROOT/bench/graphile/drain.mjs" "$TMP/gw/"
(cd "$TMP/gw" && npm install --no-audit --no-fund --loglevel=error >/dev/null 2>&1) ||
  die "npm install of graphile-worker failed"
(cd "$TMP/gw" && npx --no-install graphile-worker -c "$URL" --schema-only >/dev/null) ||
  die "graphile-worker could not install its schema"
version=$(node -p "require('$TMP/gw/node_modules/graphile-worker/package.json').version")

graphile_drain() {  # one drain with local queue size $1: "graphile ... jobs_per_s=N local_queue=L"
  psql -qAtX -v ON_ERROR_STOP=1 "$URL" >/dev/null <<SQL
DELETE FROM graphile_worker._private_jobs;
SELECT count(*) FROM graphile_worker.add_jobs(ARRAY(
  SELECT json_populate_record(NULL::graphile_worker.job_spec,
                              json_build_object('identifier', 'noop', 'payload', json_build_object('n', g)))
    FROM generate_series(1, $JOBS) g));
VACUUM ANALYZE graphile_worker._private_jobs;
SQL
  echo "$(cd "$TMP/gw" && node drain.mjs "$URL" "$JOBS" "$CONCURRENCY" "$1") local_queue=$1"
}

queuectl_drain() {  # one drain at batch $1, done jobs kept ($KEEP: on) or not: the claim_ack line
  "$QB" --db "$URL" --claim --workers "$WORKERS" --batches "$1" --jobs "$JOBS" \
    --keep-done "$KEEP" | grep '^claim_ack'
}
queuectl_best() {  # queuectl's best batch for each KEEP_DONE: "on:jobs_per_s=N best=B ..." lines
  for KEEP in $KEEP_DONE; do echo "$KEEP $(best_of queuectl_drain $BATCHES)"; done
}

best_of() {  # best_of DRAIN VALUES...: DRAIN once with each value; "jobs_per_s=N best=V" of the fastest
  local drain=$1 best=0 best_v=0 line jps v
  shift
  for v in "$@"; do
    line=$("$drain" "$v")
    echo "$line" >&2
    jps=$(field "$line" jobs_per_s)
    if ((jps > best)); then best=$jps best_v=$v; fi
  done
  echo "jobs_per_s=$best best=$best_v"
}

declare -A q=() ratios=() batches=()
g=() sizes=()
for ((r = 1; r <= ROUNDS; r++)); do
  # Which goes first alternates, so that what the run before leaves (WAL to checkpoint,
  # dead rows) falls on both alike.
  if ((r % 2)); then
    say "round $r of $ROUNDS: queuectl, then graphile-worker $version"
    ql=$(queuectl_best)
    gl=$(best_of graphile_drain $LOCAL_QUEUES)
  else
    say "round $r of $ROUNDS: graphile-worker $version, then queuectl"
    gl=$(best_of graphile_drain $LOCAL_QUEUES)
    ql=$(queuectl_best)
  fi
  g+=("$(field "$gl" jobs_per_s)") sizes+=("$(field "$gl" best)")
  while read -r keep line; do
    q[$keep]+=" $(field "$line" jobs_per_s)" batches[$keep]+=" $(field "$line" best)"
    ratios[$keep]+=" $(ratio "$(field "$line" jobs_per_s)" "$(field "$gl" jobs_per_s)")"
  done <<<"$ql"
done

echo
echo "| PostgreSQL, $JOBS jobs, median of $ROUNDS rounds | jobs/s |"
echo "|---|---:|"
kept() { [[ $1 == on ]] && echo "done jobs kept" || echo "--keep-done off: an ack deletes its job"; }
for keep in $KEEP_DONE; do
  echo "| queuectl library, $(kept "$keep"), $WORKERS workers, best of batch ${BATCHES// /, } (best:${batches[$keep]}) | $(median ${q[$keep]}) |"
done
echo "| graphile-worker $version, concurrency $CONCURRENCY, batched completions, best of local queue ${LOCAL_QUEUES// /, } (best: ${sizes[*]}) | $(median "${g[@]}") |"
for keep in $KEEP_DONE; do
  echo "| queuectl ($(kept "$keep")) / graphile-worker (per-round ratios:${ratios[$keep]}) | **$(median ${ratios[$keep]})x** |"
done
