#!/usr/bin/env bash
# bench/work.sh — how close `queuectl work` comes to the bare process spawn it is built on,
# on SQLite, PostgreSQL and MariaDB (issue "Speed where users feel it").
#
#   bash bench/work.sh                     # from the repository root (or anywhere)
#   QUEUECTL=/path/to/queuectl bash bench/work.sh   # a binary already built
#
# Builds queuectl in $BUILD_DIR (default: build) unless $QUEUECTL names a binary, starts
# throwaway servers with scripts/test-servers.sh in a temporary directory (stopped and
# removed on exit), then runs $ROUNDS rounds. Each round measures, one after the other, a
# floor, then each backend followed by a floor again (a backend's ratio is to the mean of
# the floors just before and just after it):
#   floor   spawn_floor N 8 /usr/bin/true     N spawns of a trivial binary, 8 at a time,
#           each with posix_spawn (bench/spawn_floor.cpp, compiled into the run's folder):
#           the vfork-style start queuectl gives its own children. FLOOR=xargs measures
#           `seq N | xargs -P8 -I{} true` instead, the floor until 2026-11-29, which forks
#           and so was slower than `work` itself where copying page tables is slow.
#   work    queuectl -q -o json work bench --concurrency 8 --drain -- /usr/bin/true
#           over N jobs enqueued just before (not timed), on each backend; the summary it
#           prints must count all N done
# and reports jobs per second and the ratio work / floor of the same round; the table shows
# the medians of the rounds; both are written to $RESULTS. The floor is what any worker
# that runs one process per job must pay; the ratio is the share of it queuectl keeps (1.0 =
# no cost over the spawn).
# Nothing here asserts a time: the machine is shared and noisy; read the ratios.
#
# Knobs (environment): BUILD_DIR, QUEUECTL, N (2000), ROUNDS (3), CONCURRENCY (8), FLOOR
# (spawn, the default, or xargs), BACKENDS ("sqlite postgresql mysql"), KEEP_DONE (on: the
# queue keeps its done jobs, the default; off: `queue bench --keep-done off`, each ack
# deletes its job), RESULTS (where the results go: bench/work_results.md), KEEP_TMP=1.
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
N=${N:-2000}
ROUNDS=${ROUNDS:-3}
CONCURRENCY=${CONCURRENCY:-8}
BACKENDS=${BACKENDS:-sqlite postgresql mysql}
KEEP_DONE=${KEEP_DONE:-on}
FLOOR=${FLOOR:-spawn}
RESULTS=${RESULTS:-$ROOT/bench/work_results.md}

say() { printf '== %s\n' "$*" >&2; }
die() { echo "bench/work.sh: $*" >&2; exit 1; }
[[ $FLOOR == spawn || $FLOOR == xargs ]] || die "FLOOR must be spawn or xargs, not '$FLOOR'"

if [[ -n ${QUEUECTL:-} ]]; then
  Q=$QUEUECTL
else
  say "building queuectl in $BUILD_DIR"
  [[ -f $BUILD_DIR/CMakeCache.txt ]] ||
    cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD_DIR" -j2 --target queuectl >/dev/null
  Q=$BUILD_DIR/queuectl
fi
[[ -x $Q ]] || die "no queuectl binary at $Q"

TMP=$(mktemp -d /tmp/queuectl-work-bench.XXXXXX)
chmod 755 "$TMP"
cleanup() {
  bash "$ROOT/scripts/test-servers.sh" stop "$TMP/servers" >/dev/null 2>&1 || true
  [[ ${KEEP_TMP:-0} = 1 ]] || rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$TMP/servers"
# Both sides run the binary by its full path, so neither searches PATH for it.
TRUE=$(type -P true) || die "no 'true' binary in PATH"
if [[ $FLOOR == spawn ]]; then
  "${CXX:-g++}" -O2 -o "$TMP/spawn_floor" "$ROOT/bench/spawn_floor.cpp" ||
    die "cannot compile bench/spawn_floor.cpp"
fi
if [[ $BACKENDS == *postgresql* || $BACKENDS == *mysql* ]]; then
  say "starting throwaway servers in $TMP/servers"
  eval "$(bash "$ROOT/scripts/test-servers.sh" start "$TMP/servers")"
fi
declare -A URL=([sqlite]="sqlite:$TMP/q.db" [postgresql]=${QUEUECTL_TEST_PG_URL:-}
                [mysql]=${QUEUECTL_TEST_MYSQL_URL:-})
for b in $BACKENDS; do
  "$Q" --db "${URL[$b]}" -q migrate
  "$Q" --db "${URL[$b]}" -q queue bench --keep-done "$KEEP_DONE"
done

# The jobs: N lines of NDJSON, enqueued in one transaction before each timed run.
for ((i = 0; i < N; i++)); do echo '{"payload":{}}'; done >"$TMP/jobs.ndjson"

now_ns() { date +%s%N; }
jobs_per_s() { awk -v n="$N" -v s="$1" -v e="$2" 'BEGIN { printf "%.0f", n / ((e - s) / 1e9) }'; }

# Each backend's run is bracketed by floors, one measured just before it and one just after
# (the one after is the next backend's before): its ratio is to their mean, so that a machine
# that speeds up or slows down during a round moves both sides alike.
floor_now() {
  local start end
  start=$(now_ns)
  if [[ $FLOOR == spawn ]]; then
    "$TMP/spawn_floor" "$N" "$CONCURRENCY" "$TRUE"
  else
    seq "$N" | xargs -P"$CONCURRENCY" -I{} "$TRUE"
  fi
  end=$(now_ns)
  jobs_per_s "$start" "$end"
}
declare -A RATE RATIO
FLOORS=()
ROUND_LOG=$TMP/rounds.log
round_line() { echo "$*" | tee -a "$ROUND_LOG"; }
for ((r = 1; r <= ROUNDS; r++)); do
  before=$(floor_now)
  FLOORS+=("$before")
  round_line "round=$r what=floor jobs_per_s=$before"
  for b in $BACKENDS; do
    "$Q" --db "${URL[$b]}" -q enqueue bench --from "$TMP/jobs.ndjson" >/dev/null
    start=$(now_ns)
    summary=$("$Q" --db "${URL[$b]}" -q -o json work bench --concurrency "$CONCURRENCY" --drain \
      -- "$TRUE") || die "$b: work failed: $summary"
    end=$(now_ns)
    done_jobs=$(sed -n 's/.*"done": *\([0-9]*\).*/\1/p' <<<"$summary")
    [[ $done_jobs == "$N" ]] || die "$b: work did $done_jobs of $N jobs: $summary"
    after=$(floor_now)
    FLOORS+=("$after")
    RATE[$b,$r]=$(jobs_per_s "$start" "$end")
    RATIO[$b,$r]=$(awk -v a="${RATE[$b,$r]}" -v f="$before" -v g="$after" \
                     'BEGIN { printf "%.2f", a / ((f + g) / 2) }')
    round_line "round=$r what=$b jobs_per_s=${RATE[$b,$r]} ratio_to_floor=${RATIO[$b,$r]}"
    round_line "round=$r what=floor jobs_per_s=$after"
    before=$after
  done
done

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
if [[ $FLOOR == spawn ]]; then floor_name="posix_spawn, $CONCURRENCY at a time"; else floor_name="xargs -P$CONCURRENCY"; fi
table=$(
  echo "| \`work --concurrency $CONCURRENCY -- true\`, keep done $KEEP_DONE, median of $ROUNDS rounds of $N jobs | jobs/s | floor ($floor_name) jobs/s | ratio to the floor |"
  echo "|---|---:|---:|---:|"
  for b in $BACKENDS; do
    rates=() ratios=()
    for ((r = 1; r <= ROUNDS; r++)); do rates+=("${RATE[$b,$r]}"); ratios+=("${RATIO[$b,$r]}"); done
    echo "| $b | $(median "${rates[@]}") | $(median "${FLOORS[@]}") | $(median "${ratios[@]}")x |"
  done
)
echo
echo "$table"
knobs="N=$N ROUNDS=$ROUNDS CONCURRENCY=$CONCURRENCY FLOOR=$FLOOR KEEP_DONE=$KEEP_DONE BACKENDS=\"$BACKENDS\""
dirty=
git -C "$ROOT" diff --quiet HEAD -- 2>/dev/null || dirty=" with uncommitted changes"
cat >"$RESULTS" <<MD
# queuectl work against the bare process spawn

Command: \`$knobs bash bench/work.sh\`, binary $Q, commit $(git -C "$ROOT" rev-parse --short HEAD)$dirty, $(date -u +%Y-%m-%d).
Each backend's ratio is to the mean of the floors measured just before and just after it.

\`\`\`
$(cat "$ROUND_LOG")
\`\`\`

$table
MD
say "wrote $RESULTS"
