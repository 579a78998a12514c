#!/usr/bin/env bash
# bench/groups.sh — what ordered groups cost the claim, on PostgreSQL, MariaDB and SQLite.
#
#   bash bench/groups.sh                   # from the repository root (or anywhere)
#
# takes about 5 minutes on the 2-core machine. It builds group_bench in $BUILD_DIR
# (default: build, configured on first use), starts throwaway PostgreSQL and MariaDB
# servers with scripts/test-servers.sh in a temporary directory (stopped and removed on
# exit, whatever happens), runs bench/group_bench.cpp on every backend in $BACKENDS and
# writes the figures, with the method, to bench/groups_results.md (RESULTS=path to write
# elsewhere). To use servers that are already running instead, give their URLs:
#
#   PG_URL=postgresql://u:p@127.0.0.1:5432/bench_groups \
#   MYSQL_URL=mysql://u:p@127.0.0.1:3306/bench_groups bash bench/groups.sh
#
# (the database's name must contain "bench" or "test": group_bench drops and re-creates
# the queuectl tables in it; no server is started or stopped then).
#
# Every figure is read as a ratio against a floor measured in the same run, because the
# machine is shared and noisy; nothing here asserts a time.
#   (1) claim+ack throughput (group_bench --throughput): $JOBS jobs drained by $WORKERS
#       forked workers, each looping JobRepository::claim(limit $BATCH) + ack_many, as
#       queue_bench --claim does; shapes: ungrouped (the floor), rr (group_key
#       "g<i % $GROUP_COUNT>", ids interleave), bygroup (the same groups, group after
#       group). Each drain is checked: every job done, no lease lost, no job claimed before
#       an older job of its group finished (and a control: the same check run on the
#       ungrouped drain with the bygroup keys pinned on afterwards must find violations).
#       The shapes run $REPEAT times, interleaved; the ratio is the median of the ratios
#       of the runs.
#   (2) claim latency (group_bench --latency): $BUSY_GROUPS busy groups (a processing head
#       and 1 or 2 ready followers each), $CLAIMABLE claimable ready jobs, without and with
#       $DONE done rows; median of $ITERATIONS claim(limit 1) calls, each followed by a
#       release that puts the job back. Floors: the same claim with 0 done rows, and the
#       same table without group keys.
#
# Knobs (environment): BUILD_DIR, BACKENDS ("postgresql mysql sqlite"), JOBS (100000),
# GROUP_COUNT (10000), WORKERS (2), BATCH (100), SHAPES (ungrouped,rr,bygroup), REPEAT (2),
# BUSY_GROUPS (10000), CLAIMABLE (1000), DONE (1000000), ITERATIONS (200), PG_URL,
# MYSQL_URL, RESULTS, KEEP_TMP=1 to keep the temporary directory (logs, raw output).
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
BACKENDS=${BACKENDS:-postgresql mysql sqlite}
JOBS=${JOBS:-100000}
GROUP_COUNT=${GROUP_COUNT:-10000}
WORKERS=${WORKERS:-2}
BATCH=${BATCH:-100}
SHAPES=${SHAPES:-ungrouped,rr,bygroup}
REPEAT=${REPEAT:-2}
BUSY_GROUPS=${BUSY_GROUPS:-10000}
CLAIMABLE=${CLAIMABLE:-1000}
DONE=${DONE:-1000000}
ITERATIONS=${ITERATIONS:-200}
RESULTS=${RESULTS:-$ROOT/bench/groups_results.md}
COMMAND="bash bench/groups.sh"
for knob in BACKENDS JOBS GROUP_COUNT WORKERS BATCH SHAPES REPEAT BUSY_GROUPS CLAIMABLE DONE ITERATIONS; do
  if [[ -n $(printenv "$knob") ]]; then COMMAND="$knob='${!knob}' $COMMAND"; fi
done

say() { printf '\n== %s\n' "$*" >&2; }
die() { echo "bench/groups.sh: $*" >&2; exit 1; }

# ---------------------------------------------------------------- build --
say "building group_bench in $BUILD_DIR"
if [[ ! -f $BUILD_DIR/CMakeCache.txt ]]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
fi
cmake --build "$BUILD_DIR" -j"$(nproc)" --target group_bench >&2
GB=$BUILD_DIR/bench/group_bench
[[ -x $GB ]] || die "build did not produce $GB"

# -------------------------------------------------------------- servers --
TMP=$(mktemp -d /tmp/qgroups.XXXXXX)  # short: the servers' sockets live in it
STARTED=0
cleanup() {
  local rc=$?
  ((STARTED)) && { "$ROOT/scripts/test-servers.sh" stop "$TMP" >/dev/null 2>&1 || true; }
  if [[ ${KEEP_TMP:-0} == 1 ]]; then
    echo "bench/groups.sh: kept $TMP" >&2
  else
    rm -rf -- "$TMP"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

need_servers=0 need_url_servers=0
for b in $BACKENDS; do
  [[ $b == postgresql || $b == mysql ]] && need_url_servers=1
  [[ $b == postgresql && -z ${PG_URL:-} ]] && need_servers=1
  [[ $b == mysql && -z ${MYSQL_URL:-} ]] && need_servers=1
done
if ((need_servers)); then
  say "starting throwaway PostgreSQL and MariaDB in $TMP"
  STARTED=1
  server_env=$("$ROOT/scripts/test-servers.sh" start "$TMP") || die "the servers did not start (logs in $TMP)"
  eval "$server_env"
fi
PG_URL=${PG_URL:-${QUEUECTL_TEST_PG_URL:-}}
MYSQL_URL=${MYSQL_URL:-${QUEUECTL_TEST_MYSQL_URL:-}}
SQLITE_URL="sqlite://$TMP/queuectl_bench.db"
# queuectl opens only an existing SQLite file (a mistyped path is an error, not a new
# database): an empty file is one, and group_bench migrates it.
: >"$TMP/queuectl_bench.db"

url_for() {
  case $1 in
    postgresql) echo "$PG_URL" ;;
    mysql) echo "$MYSQL_URL" ;;
    sqlite) echo "$SQLITE_URL" ;;
    *) die "unknown backend $1" ;;
  esac
}
label_for() {
  case $1 in
    postgresql) echo "PostgreSQL" ;;
    mysql) echo "MariaDB" ;;
    sqlite) echo "SQLite" ;;
  esac
}

# key=value lookup in a result line: field LINE KEY
field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }
# median of the numbers on stdin (one a line)
median() { sort -g | awk 'NF { v[++n] = $1 } END { if (n == 0) print ""; else if (n % 2) print v[(n + 1) / 2]; else printf "%.6g\n", (v[n / 2] + v[n / 2 + 1]) / 2 }'; }
ratio() { [[ -n $1 && -n $2 ]] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }' || echo ""; }

# ---------------------------------------------------------------- runs --
declare -A FIG=()
RAW=""
EXPLAIN=""
t_start=$EPOCHREALTIME
for b in $BACKENDS; do
  url=$(url_for "$b")
  say "$(label_for "$b"): throughput ($SHAPES x $REPEAT), then claim latency"
  out=$TMP/$b.out
  "$GB" --db "$url" --throughput --latency --explain \
    --jobs "$JOBS" --groups "$GROUP_COUNT" --workers "$WORKERS" --batch "$BATCH" \
    --shapes "$SHAPES" --repeat "$REPEAT" --busy-groups "$BUSY_GROUPS" \
    --claimable "$CLAIMABLE" --done "$DONE" --iterations "$ITERATIONS" >"$out" ||
    die "group_bench failed on $b (its output: $out; KEEP_TMP=1 keeps it)"
  while IFS= read -r line; do
    case $line in
      drain*)
        echo "$line" >&2
        RAW+="$line"$'\n'
        s=$(field "$line" shape)
        r=$(field "$line" run)
        FIG[$b:drain:$s:$r]=$(field "$line" jobs_per_s)
        FIG[$b:empty:$s]=$((${FIG[$b:empty:$s]:-0} + $(field "$line" empty_claims)))
        FIG[$b:viol:$s]=$((${FIG[$b:viol:$s]:-0} + $(field "$line" order_violations)))
        if [[ $s == ungrouped ]]; then
          FIG[$b:control]="${FIG[$b:control]:+${FIG[$b:control]}, }$(field "$line" control_violations)"
        fi
        ;;
      latency*)
        echo "$line" >&2
        RAW+="$line"$'\n'
        k="$b:lat:$(field "$line" case):$(field "$line" layout):$(field "$line" done)"
        FIG[$k]=$(field "$line" median_ms)
        FIG[$k:range]="$(field "$line" p10_ms)–$(field "$line" p90_ms)"
        ;;
      explain*) EXPLAIN+="$line"$'\n' ;;
    esac
  done <"$out"
done
elapsed=$(awk -v a="$t_start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')

# ------------------------------------------------------------- figures --
IFS=, read -ra shapes <<<"$SHAPES"
for b in $BACKENDS; do
  for s in "${shapes[@]}"; do
    FIG[$b:tp:$s]=$(for ((r = 1; r <= REPEAT; r++)); do echo "${FIG[$b:drain:$s:$r]:-}"; done | median)
    if [[ -n ${FIG[$b:tp:$s]} ]]; then FIG[$b:tp:$s]=$(printf '%.0f' "${FIG[$b:tp:$s]}"); fi
    [[ $s == ungrouped ]] && continue
    FIG[$b:tpratio:$s]=$(for ((r = 1; r <= REPEAT; r++)); do
      ratio "${FIG[$b:drain:$s:$r]:-}" "${FIG[$b:drain:ungrouped:$r]:-}"; echo
    done | median)
    if [[ -n ${FIG[$b:tpratio:$s]} ]]; then FIG[$b:tpratio:$s]=$(printf '%.2f' "${FIG[$b:tpratio:$s]}"); fi
  done
  for layout in blocked_first claimable_first; do
    g0=${FIG[$b:lat:grouped:$layout:0]:-}
    g1=${FIG[$b:lat:grouped:$layout:$DONE]:-}
    u1=${FIG[$b:lat:ungrouped:as_built:$DONE]:-}
    FIG[$b:flat:$layout]=$(ratio "$g1" "$g0")
    FIG[$b:vsung:$layout]=$(ratio "$g1" "$u1")
    FIG[$b:vsung0:$layout]=$(ratio "$g0" "${FIG[$b:lat:ungrouped:as_built:0]:-}")
  done
  FIG[$b:flat:ungrouped]=$(ratio "${FIG[$b:lat:ungrouped:as_built:$DONE]:-}" "${FIG[$b:lat:ungrouped:as_built:0]:-}")
done

val() { local v=${FIG[$1]:-}; echo "${v:-n/a}"; }
row() {  # row LABEL KEY-SUFFIX [range]: one table row, a column per backend
  local label=$1 key=$2 r="| $1 |"
  for b in $BACKENDS; do
    if [[ ${3:-} == range && -n ${FIG[$b:$key:range]:-} ]]; then
      r+=" $(val "$b:$key") ($(val "$b:$key:range")) |"
    else
      r+=" $(val "$b:$key") |"
    fi
  done
  echo "$r"
}
header() {
  local h="| $1 |" rule="|---|"
  for b in $BACKENDS; do h+=" $(label_for "$b") |"; rule+="---:|"; done
  echo "$h"
  echo "$rule"
}
shape_label() {
  case $1 in
    ungrouped) echo "ungrouped (floor)" ;;
    rr) echo "grouped, round robin" ;;
    bygroup) echo "grouped, group after group" ;;
  esac
}

throughput_table() {
  header "claim+ack, $JOBS jobs, W=$WORKERS, B=$BATCH, $GROUP_COUNT groups"
  local s
  for s in "${shapes[@]}"; do
    row "$(shape_label "$s") (jobs/s, median of $REPEAT)" "tp:$s"
  done
  for s in "${shapes[@]}"; do
    [[ $s == ungrouped ]] && continue
    row "**ratio $(shape_label "$s") / ungrouped** (goal ≥ 0.7)" "tpratio:$s"
  done
  for s in "${shapes[@]}"; do
    [[ $s == ungrouped ]] && continue
    row "empty claims, $(shape_label "$s") (all runs)" "empty:$s"
  done
  for s in "${shapes[@]}"; do
    [[ $s == ungrouped ]] && continue
    row "group order violations, $(shape_label "$s") (all runs)" "viol:$s"
  done
  if [[ " ${shapes[*]} " == *" ungrouped "* ]]; then
    row "control: violations the same check finds in the ungrouped drains (per run)" "control"
  fi
}

latency_table() {
  header "claim(limit 1) latency, median ms (p10–p90); $BUSY_GROUPS busy groups, $CLAIMABLE claimable"
  row "grouped, blocked followers first, 0 done" "lat:grouped:blocked_first:0" range
  row "grouped, blocked followers first, $DONE done" "lat:grouped:blocked_first:$DONE" range
  row "grouped, claimable first, 0 done" "lat:grouped:claimable_first:0" range
  row "grouped, claimable first, $DONE done" "lat:grouped:claimable_first:$DONE" range
  row "ungrouped, same rows, 0 done" "lat:ungrouped:as_built:0" range
  row "ungrouped, same rows, $DONE done" "lat:ungrouped:as_built:$DONE" range
  row "**ratio $DONE done / 0 done**, grouped, blocked first" "flat:blocked_first"
  row "**ratio $DONE done / 0 done**, grouped, claimable first" "flat:claimable_first"
  row "ratio $DONE done / 0 done, ungrouped" "flat:ungrouped"
  row "**ratio grouped / ungrouped**, $DONE done, blocked first" "vsung:blocked_first"
  row "**ratio grouped / ungrouped**, $DONE done, claimable first" "vsung:claimable_first"
  row "ratio grouped / ungrouped, 0 done, blocked first" "vsung0:blocked_first"
  row "ratio grouped / ungrouped, 0 done, claimable first" "vsung0:claimable_first"
}

TP_TABLE=$(throughput_table)
LAT_TABLE=$(latency_table)

# --------------------------------------------------------------- report --
pg_version="" my_version=""
if [[ " $BACKENDS " == *" postgresql "* ]]; then
  pg_version=$(psql -X -tA "$PG_URL" -c 'SHOW server_version' 2>/dev/null | cut -d' ' -f1 || true)
fi
if [[ " $BACKENDS " == *" mysql "* ]]; then
  if ((STARTED)); then
    my_version=$(mariadb --no-defaults -S "$TMP/mysql/mysql.sock" -uroot -N -e 'SELECT VERSION()' 2>/dev/null || true)
  fi
fi
sqlite_version=$(sqlite3 --version 2>/dev/null | cut -d' ' -f1 || true)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD_DIR/CMakeCache.txt")

{
  echo "# Ordered groups: benchmark figures"
  echo
  echo "Generated by \`$COMMAND\` on $(date -u '+%Y-%m-%d %H:%M UTC') in ${elapsed} s;"
  echo "$(nproc) cores ($cpu), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM, shared with other work."
  echo "Servers: PostgreSQL ${pg_version:-?}, MariaDB ${my_version:-?}, SQLite ${sqlite_version:-?}"
  if ((STARTED)); then
    echo "(throwaway servers from \`scripts/test-servers.sh\`: fsync off, so the figures measure CPU"
    echo "and round trips, not disks)."
  elif ((need_url_servers)); then
    echo "(servers given by PG_URL / MYSQL_URL)."
  fi
  echo "Build: ${build_type:-?}, \`$(basename "$BUILD_DIR")\`; git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$([[ -n $(git -C "$ROOT" status --porcelain -- src sql commands 2>/dev/null) ]] && echo ' with uncommitted changes in src/, sql/ or commands/ (the ordered groups work)')."
  echo
  echo "The machine is shared and noisy: read the ratios, each against a floor measured in"
  echo "the same run, not the absolute figures."
  echo
  echo "## Claim+ack throughput, grouped vs ungrouped"
  echo
  echo "$TP_TABLE"
  echo
  echo "## Claim latency with busy groups and done rows"
  echo
  echo "$LAT_TABLE"
  echo
  cat <<EOF
## How each figure is made

- Throughput (\`group_bench --throughput\`, \`bench/group_bench.cpp\`): the queue is emptied
  and refilled with $JOBS ready jobs by the database's own row generator, ANALYZEd
  (VACUUM ANALYZE on PostgreSQL), then $WORKERS forked worker processes, each with its own
  connection, loop \`JobRepository::claim(limit $BATCH, lease 30s)\` + \`ack_many\` with the
  claim's token, exactly as \`queue_bench --claim\` does, from a common start until the
  queue is empty. Shapes: *ungrouped*, no group key (the floor); *round robin*,
  \`group_key = "g<i % $GROUP_COUNT>"\` for the i-th job (ids interleave: each group's
  jobs are spread over the whole queue); *group after group*, the same $GROUP_COUNT groups
  but a group's jobs are neighbours in claim order (job i in group i·$GROUP_COUNT/$JOBS),
  so each claim walks past the followers of the heads it takes. A grouped claim may come
  back empty while jobs remain (every head held by the other worker): a worker stops only
  when its claim is empty and no job is ready or processing (those "empty claims" are
  counted, and timed as part of the run). The shapes run $REPEAT times, interleaved
  (ungrouped, round robin, group after group, ungrouped, ...); the jobs/s shown are the
  medians, and the ratio is the median of each run's grouped / ungrouped ratio.
- Every drain is checked: all $JOBS jobs done (status 2), none left, no ack lost its lease,
  and no job claimed before an older job of its group finished. For that each worker
  records, on the monotonic clock all processes share, when \`claim()\` returned each job
  and when \`ack_many()\` was called for it; a job whose claim returned before the ack of
  an older job of its group began is a violation. (The rows' own \`locked_at\` /
  \`finished_at\` cannot serve: they are transaction start times, and a PostgreSQL claim's
  transaction starts before the statement is planned and its snapshot taken, so a correct
  claim can carry a \`locked_at\` a little before the \`finished_at\` of the job it
  follows; an early version of this check found 5 such pairs in 90,000.) The control row
  shows the check has teeth: after each ungrouped drain the same check is run with the
  group-after-group keys pinned on the finished rows, and finds most jobs out of order.
- Latency (\`group_bench --latency\`): $BUSY_GROUPS groups each with a processing head
  (lease 1 day) and 1 or 2 ready followers (alternately: $((BUSY_GROUPS + BUSY_GROUPS / 2)) blocked
  ready jobs), then $CLAIMABLE ready jobs that may run (every other one ungrouped, the
  others heads of groups of their own), then, for the "$DONE done" rows, $DONE done
  rows spread over the same $BUSY_GROUPS group keys (bulk-inserted with generate_series,
  MariaDB's seq_1_to_N, a recursive CTE on SQLite), then ANALYZE. One iteration times
  \`JobRepository::claim(limit 1)\` alone; then \`release\` gives the job back and its
  run_at is put back, so every iteration starts from the same state (10 warm-up
  iterations, then $ITERATIONS timed). Two layouts of the claim order (priority, run_at,
  id): *blocked followers first*, the usual case (a busy group's backlog is older than
  new work), where a claim must walk past all $((BUSY_GROUPS + BUSY_GROUPS / 2)) blocked followers, probing
  each one's group, before it reaches a claimable job; and *claimable first*. The
  ungrouped floor is the same rows without any group key (its first ready job is
  claimable at once).
- Plans: the claim statement's plan on the grouped table (PostgreSQL \`EXPLAIN (ANALYZE,
  BUFFERS)\` of the claim, MariaDB \`ANALYZE\` of \`claim_pick\` and of \`claim_recheck\`,
  each in a transaction rolled back; SQLite \`EXPLAIN QUERY PLAN\`) are below.

Raw result lines:

\`\`\`
EOF
  printf '%s' "$RAW"
  echo '```'
  echo
  echo "<details><summary>Plans of the claim statement on the grouped latency table</summary>"
  echo
  echo '```'
  printf '%s' "$EXPLAIN"
  echo '```'
  echo
  echo "</details>"
} >"$RESULTS.tmp"
mv -f "$RESULTS.tmp" "$RESULTS"

echo
echo "$TP_TABLE"
echo
echo "$LAT_TABLE"
echo
echo "(written to $RESULTS in ${elapsed} s)"
