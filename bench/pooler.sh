#!/usr/bin/env bash
# bench/pooler.sh — `work` through PgBouncer in transaction mode (?pooling=transaction)
# against `work` straight to the same PostgreSQL, in one run.
#
#   bash bench/pooler.sh           # from the repository root (or anywhere); ~2 minutes
#
# Starts throwaway PostgreSQL, MariaDB and PgBouncer with scripts/test-servers.sh in a
# temporary directory (stopped and removed on exit). Alternately, $REPEAT times each:
#   one worker   N jobs enqueued, then one `work --drain --concurrency 4 -- true`;
#   fleet        N jobs, then W `work --drain -- true` processes at once (through the pool
#                of 8 server connections, queuectl_fleet);
# straight to the server, then through PgBouncer. Each figure is the ratio (through
# PgBouncer) / (direct) of jobs per second, the median over the runs, beside the direct
# figure's own ratio to a floor measured in the same run: N `true` processes spawned one
# after another by the shell (what `work` does per job, without the database).
# Nothing is asserted.
#
# Knobs (environment): QUEUECTL (build/queuectl), N (2000), W (16), REPEAT (3).
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
QUEUECTL=${QUEUECTL:-$ROOT/build/queuectl}
N=${N:-2000}
W=${W:-16}
REPEAT=${REPEAT:-3}

say() { printf '== %s\n' "$*" >&2; }
die() { echo "bench/pooler.sh: $*" >&2; exit 1; }
median() { sort -g | awk 'NF { v[++n] = $1 } END { if (n == 0) print ""; else if (n % 2) print v[(n + 1) / 2]; else printf "%.6g\n", (v[n / 2] + v[n / 2 + 1]) / 2 }'; }
now() { date +%s.%N; }
[[ -x $QUEUECTL ]] || die "no queuectl at $QUEUECTL (build first, or set QUEUECTL)"

TMP=$(mktemp -d /tmp/qpooler.XXXXXX)
cleanup() {
  local rc=$?
  "$ROOT/scripts/test-servers.sh" stop "$TMP" >/dev/null 2>&1 || true
  rm -rf -- "$TMP"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
say "starting throwaway PostgreSQL, MariaDB and PgBouncer in $TMP"
server_env=$("$ROOT/scripts/test-servers.sh" start "$TMP") || die "the servers did not start"
eval "$server_env"
DIRECT=$QUEUECTL_TEST_PG_URL
POOL=${QUEUECTL_TEST_PGBOUNCER_URL}?pooling=transaction
FLEET=${QUEUECTL_TEST_PGBOUNCER_URL%/*}/queuectl_fleet?pooling=transaction

"$QUEUECTL" --db "$DIRECT" -q migrate
lines=$TMP/jobs.ndjson
for ((i = 0; i < N; i++)); do printf '{"queue":"bench","payload":{"n":%d}}\n' "$i"; done >"$lines"

fill() { "$QUEUECTL" --db "$DIRECT" -q enqueue --from "$lines" >/dev/null; }
rate() { awk -v a="$1" -v b="$2" -v n="$N" 'BEGIN { printf "%.3f", n / (b - a) }'; }
one_worker() {  # URL -> jobs/s
  fill
  local t0; t0=$(now)
  "$QUEUECTL" --db "$1" -q work bench --drain --concurrency 4 -- true >/dev/null
  rate "$t0" "$(now)"
}
fleet() {  # URL -> jobs/s
  fill
  local t0 pids=() p; t0=$(now)
  for ((w = 0; w < W; w++)); do
    "$QUEUECTL" --db "$1" -q work bench --drain -- true >/dev/null &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  rate "$t0" "$(now)"
}
floor() {
  local t0; t0=$(now)
  local bin; bin=$(type -P true)  # the program, not the shell's builtin
  for ((i = 0; i < N; i++)); do "$bin"; done
  rate "$t0" "$(now)"
}

declare -a f1 f2 r1 r2 fl
for ((r = 0; r < REPEAT; r++)); do
  say "run $((r + 1)) of $REPEAT"
  fl+=("$(floor)")
  d1=$(one_worker "$DIRECT"); p1=$(one_worker "$POOL")
  d2=$(fleet "$DIRECT"); p2=$(fleet "$FLEET")
  say "one worker: direct $d1/s, pooled $p1/s; $W workers: direct $d2/s, pooled $p2/s; floor ${fl[-1]}/s"
  f1+=("$d1"); f2+=("$d2")
  r1+=("$(awk -v a="$p1" -v b="$d1" 'BEGIN { printf "%.3f", a / b }')")
  r2+=("$(awk -v a="$p2" -v b="$d2" 'BEGIN { printf "%.3f", a / b }')")
done
floor_m=$(printf '%s\n' "${fl[@]}" | median)
printf '| %s jobs, median of %s runs | through PgBouncer / direct | direct / floor |\n' "$N" "$REPEAT"
printf '|---|---:|---:|\n'
printf '| one `work --concurrency 4` | %s | %s |\n' "$(printf '%s\n' "${r1[@]}" | median)" \
  "$(awk -v a="$(printf '%s\n' "${f1[@]}" | median)" -v b="$floor_m" 'BEGIN { printf "%.3f", a / b }')"
printf '| %s `work` processes (pool of 8) | %s | %s |\n' "$W" "$(printf '%s\n' "${r2[@]}" | median)" \
  "$(awk -v a="$(printf '%s\n' "${f2[@]}" | median)" -v b="$floor_m" 'BEGIN { printf "%.3f", a / b }')"
