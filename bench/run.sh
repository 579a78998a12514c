#!/usr/bin/env bash
# bench/run.sh — queuectl's benchmark figures on PostgreSQL, MariaDB and SQLite, in one go.
#
#   bench/run.sh                       # from the repository root (or anywhere)
#   BUILD_DIR=build-bench bench/run.sh
#
# It builds queue_bench and queuectl in $BUILD_DIR (default: build, configured on first
# use), starts throwaway PostgreSQL and MariaDB servers with scripts/test-servers.sh in a
# temporary directory (stopped and removed on exit, whatever happens), and measures on
# every backend in $BACKENDS:
#   (i)   `queuectl enqueue --from FILE` of $ENQUEUE_JOBS NDJSON jobs (one process,
#         wall clock, connect and parse included) -> jobs/s;
#   (ii)  claim+ack throughput with queue_bench: W forked workers in {1,2,4}, each looping
#         claim(limit B, lease 30s) + ack_many, B in {1,100}, until the queue is empty;
#   (iii) `stats` latency with 1,000,000 done jobs + 1,000 ready (median of 20 runs);
#   (iv)  PostgreSQL only: the bare-SQL baseline, pgbench running the dialect's claim
#         statement (100 jobs) and a one-statement ack of those 100 ids, 2 clients,
#         prepared statements -> jobs/s = tps * 100; once draining the same 20,000 jobs
#         as queue_bench W=2 B=100, once for $PGBENCH_SECONDS s on a deep queue.
# Then prints a markdown table and writes it, with the method, to bench/results.md
# (RESULTS=path to write elsewhere).
#
# Knobs (environment): BUILD_DIR, BACKENDS ("postgresql mysql sqlite"), ENQUEUE_JOBS
# (100000), CLAIM_WORKERS (1,2,4), CLAIM_BATCHES (1,100), JOBS_B1 (6000), JOBS_B100
# (100000), STATS_DONE (1000000), STATS_READY (1000), STATS_RUNS (20), PGBENCH_SECONDS (20),
# PGBENCH_CLIENTS (2), PGBENCH_PREFILL (1000000), PG_BIN (/usr/lib/postgresql/15/bin),
# KEEP_TMP=1 to keep the temporary directory (logs, NDJSON file).
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
BACKENDS=${BACKENDS:-postgresql mysql sqlite}
ENQUEUE_JOBS=${ENQUEUE_JOBS:-100000}
CLAIM_WORKERS=${CLAIM_WORKERS:-1,2,4}
CLAIM_BATCHES=${CLAIM_BATCHES:-1,100}
JOBS_B1=${JOBS_B1:-6000}
JOBS_B100=${JOBS_B100:-100000}
STATS_DONE=${STATS_DONE:-1000000}
STATS_READY=${STATS_READY:-1000}
STATS_RUNS=${STATS_RUNS:-20}
PGBENCH_SECONDS=${PGBENCH_SECONDS:-20}
PGBENCH_CLIENTS=${PGBENCH_CLIENTS:-2}
PGBENCH_PREFILL=${PGBENCH_PREFILL:-1000000}
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
RESULTS=${RESULTS:-$ROOT/bench/results.md}

# shellcheck source=bench/pg_claim_ack.sh
source "$ROOT/bench/pg_claim_ack.sh"

say() { printf '\n== %s\n' "$*" >&2; }
die() { echo "bench/run.sh: $*" >&2; exit 1; }

# ---------------------------------------------------------------- build --
say "building queue_bench and queuectl in $BUILD_DIR"
if [[ ! -f $BUILD_DIR/CMakeCache.txt ]]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
fi
cmake --build "$BUILD_DIR" -j"$(nproc)" --target queue_bench queuectl >&2
QB=$BUILD_DIR/bench/queue_bench
QC=$BUILD_DIR/queuectl
[[ -x $QB && -x $QC ]] || die "build did not produce $QB and $QC"

# -------------------------------------------------------------- servers --
# A short path: the servers' Unix sockets live in it (limit ~107 bytes).
TMP=$(mktemp -d /tmp/qbench.XXXXXX)
cleanup() {
  local rc=$?
  "$ROOT/scripts/test-servers.sh" stop "$TMP" >/dev/null 2>&1 || true
  if [[ ${KEEP_TMP:-0} == 1 ]]; then
    echo "bench/run.sh: kept $TMP" >&2
  else
    rm -rf -- "$TMP"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

need_servers=0
for b in $BACKENDS; do [[ $b == postgresql || $b == mysql ]] && need_servers=1; done
if ((need_servers)); then
  say "starting throwaway PostgreSQL and MariaDB in $TMP"
  server_env=$("$ROOT/scripts/test-servers.sh" start "$TMP") || die "the servers did not start (logs in $TMP)"
  eval "$server_env"
fi
SQLITE_URL="sqlite://$TMP/queuectl_bench.db"

url_for() {
  case $1 in
    postgresql) echo "$QUEUECTL_TEST_PG_URL" ;;
    mysql) echo "$QUEUECTL_TEST_MYSQL_URL" ;;
    sqlite) echo "$SQLITE_URL" ;;
  esac
}
label_for() {
  case $1 in
    postgresql) echo "PostgreSQL" ;;
    mysql) echo "MariaDB" ;;
    sqlite) echo "SQLite" ;;
  esac
}

# Figures, keyed "backend:figure"; RAW keeps every result line for the report.
declare -A FIG=()
RAW=""

# key=value lookup in a queue_bench result line: field LINE KEY
field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }

# ------------------------------------------------------ NDJSON for (i) --
NDJSON=$TMP/jobs.ndjson
awk -v n="$ENQUEUE_JOBS" 'BEGIN {
  for (i = 1; i <= n; i++)
    printf "{\"queue\":\"bench\",\"payload\":{\"n\":%d,\"kind\":\"email\"},\"priority\":%d}\n", i, i % 3
}' >"$NDJSON"

for b in $BACKENDS; do
  url=$(url_for "$b")
  say "$(label_for "$b"): enqueue --from ($ENQUEUE_JOBS jobs)"
  "$QB" --db "$url" --reset-only
  t0=$EPOCHREALTIME
  "$QC" --db "$url" -q enqueue --from "$NDJSON" >&2
  t1=$EPOCHREALTIME
  FIG[$b:enqueue]=$(awk -v n="$ENQUEUE_JOBS" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }')
  FIG[$b:enqueue_s]=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
  line="enqueue backend=$b jobs=$ENQUEUE_JOBS seconds=${FIG[$b:enqueue_s]} jobs_per_s=${FIG[$b:enqueue]}"
  echo "$line" >&2
  RAW+="$line"$'\n'

  say "$(label_for "$b"): claim+ack (workers $CLAIM_WORKERS x batch $CLAIM_BATCHES)"
  while read -r line; do
    echo "$line" >&2
    [[ $line == claim_ack* ]] || continue
    RAW+="$line"$'\n'
    FIG[$b:claim:$(field "$line" workers):$(field "$line" batch)]=$(field "$line" jobs_per_s)
  done < <("$QB" --db "$url" --claim --workers "$CLAIM_WORKERS" --batches "$CLAIM_BATCHES" \
             --jobs-b1 "$JOBS_B1" --jobs-b100 "$JOBS_B100")

  say "$(label_for "$b"): stats with $STATS_DONE done + $STATS_READY ready jobs"
  line=$("$QB" --db "$url" --stats --done "$STATS_DONE" --ready "$STATS_READY" --runs "$STATS_RUNS")
  echo "$line" >&2
  RAW+="$line"$'\n'
  FIG[$b:stats]=$(field "$line" median_ms)
  FIG[$b:stats_ready]=$(field "$line" ready_part_median_ms)
  FIG[$b:stats_range]="$(field "$line" min_ms)–$(field "$line" max_ms)"
done

# ------------------------------------------------- (iv) pgbench baseline --
PGBENCH_NOTES=()
if [[ " $BACKENDS " == *" postgresql "* ]]; then
  say "PostgreSQL: pgbench bare-SQL baseline (claim 100 + ack 100, $PGBENCH_CLIENTS clients)"
  PGBENCH=$PG_BIN/pgbench
  [[ -x $PGBENCH ]] || PGBENCH=$(command -v pgbench) || die "pgbench not found"
  pg_env_from_url "$QUEUECTL_TEST_PG_URL"
  PSQL=(psql -X -q -v ON_ERROR_STOP=1 -tA)
  write_claim_ack_sql "$QB" "$QUEUECTL_TEST_PG_URL" "$TMP/claim_ack.sql" || die "no claim script"

  # prefill N: a fresh schema and N ready jobs in queue "bench", vacuumed and analyzed.
  prefill() {
    "$QB" --db "$QUEUECTL_TEST_PG_URL" --reset-only
    "${PSQL[@]}" -c "INSERT INTO job_queue (queue, payload)
                     SELECT 'bench', CAST('{\"n\":' || g || '}' AS jsonb)
                       FROM generate_series(1, $1) AS g"
    "${PSQL[@]}" -c "VACUUM ANALYZE job_queue"
  }
  # run_pgbench KEY LABEL PGBENCH-DURATION-ARGS...: runs the script, records jobs/s = tps * 100.
  run_pgbench() {
    local key=$1 label=$2 tps left done_rows processing note
    shift 2
    "$PGBENCH" -n -M prepared -c "$PGBENCH_CLIENTS" -j "$PGBENCH_CLIENTS" "$@" \
      -D queue=bench -D worker=pgbench -D limit=100 -D lease_ms=30000 \
      -f "$TMP/claim_ack.sql" >"$TMP/$key.out" 2>&1 || { cat "$TMP/$key.out" >&2; die "pgbench failed"; }
    cat "$TMP/$key.out" >&2
    tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time).*/\1/p' "$TMP/$key.out")
    [[ -n $tps ]] || die "no tps in pgbench output"
    FIG[postgresql:$key]=$(awk -v t="$tps" 'BEGIN { printf "%.0f", t * 100 }')
    left=$("${PSQL[@]}" -c "SELECT count(*) FROM job_queue WHERE status = 0")
    done_rows=$("${PSQL[@]}" -c "SELECT count(*) FROM job_queue WHERE status = 2")
    processing=$("${PSQL[@]}" -c "SELECT count(*) FROM job_queue WHERE status = 1")
    note="$label: tps $tps; $done_rows jobs done, $processing left processing, $left still ready"
    PGBENCH_NOTES+=("$note")
    echo "$note" >&2
    RAW+="pgbench backend=postgresql run=$key clients=$PGBENCH_CLIENTS $* tps=$tps jobs_per_s=${FIG[postgresql:$key]} done=$done_rows ready_left=$left"$'\n'
  }

  # (a) The same work as queue_bench W=2 B=100: a queue of $JOBS_B100 jobs, drained by
  #     exactly JOBS_B100 / 100 claims split over the clients.
  per_client=$((JOBS_B100 / 100 / PGBENCH_CLIENTS))
  prefill $((per_client * 100 * PGBENCH_CLIENTS))
  run_pgbench pgbench_drain "drain $((per_client * 100 * PGBENCH_CLIENTS)) jobs" -t "$per_client"
  # (b) Steady state: ${PGBENCH_SECONDS}s on a deep queue that must not run dry.
  prefill "$PGBENCH_PREFILL"
  run_pgbench pgbench_timed "${PGBENCH_SECONDS}s on $PGBENCH_PREFILL jobs" -T "$PGBENCH_SECONDS"
  left=$("${PSQL[@]}" -c "SELECT count(*) FROM job_queue WHERE status = 0")
  ((left > 0)) || PGBENCH_NOTES+=("WARNING: the ${PGBENCH_SECONDS}s run emptied the queue; raise PGBENCH_PREFILL")
fi

# --------------------------------------------------------------- report --
val() { local v=${FIG[$1]:-}; echo "${v:-n/a}"; }
header="| figure |"
rule="|---|"
for b in $BACKENDS; do header+=" $(label_for "$b") |"; rule+="---:|"; done

table() {
  echo "$header"
  echo "$rule"
  local row w bt
  row="| \`enqueue --from\`, $ENQUEUE_JOBS NDJSON jobs (jobs/s) |"
  for b in $BACKENDS; do row+=" $(val "$b:enqueue") |"; done
  echo "$row"
  IFS=, read -ra batches <<<"$CLAIM_BATCHES"
  IFS=, read -ra workers <<<"$CLAIM_WORKERS"
  for bt in "${batches[@]}"; do
    for w in "${workers[@]}"; do
      row="| claim+ack, W=$w, B=$bt (jobs/s) |"
      for b in $BACKENDS; do row+=" $(val "$b:claim:$w:$bt") |"; done
      echo "$row"
    done
  done
  row="| \`stats\`, $STATS_DONE done + $STATS_READY ready, median of $STATS_RUNS (ms) |"
  for b in $BACKENDS; do row+=" $(val "$b:stats") |"; done
  echo "$row"
  row="| \`stats\` min–max (ms) |"
  for b in $BACKENDS; do row+=" $(val "$b:stats_range") |"; done
  echo "$row"
  row="| of which the ready counts (stats_ready alone), median (ms) |"
  for b in $BACKENDS; do row+=" $(val "$b:stats_ready") |"; done
  echo "$row"
  local key label
  for key in pgbench_drain pgbench_timed; do
    [[ -n ${FIG[postgresql:$key]:-} ]] || continue
    if [[ $key == pgbench_drain ]]; then
      label="bare SQL, pgbench c=$PGBENCH_CLIENTS, claim 100 + ack 100, draining $JOBS_B100 jobs (jobs/s)"
    else
      label="bare SQL, pgbench c=$PGBENCH_CLIENTS, claim 100 + ack 100, ${PGBENCH_SECONDS}s on $PGBENCH_PREFILL jobs (jobs/s)"
    fi
    row="| $label |"
    for b in $BACKENDS; do
      if [[ $b == postgresql ]]; then row+=" ${FIG[postgresql:$key]} |"; else row+=" — |"; fi
    done
    echo "$row"
  done
}

TABLE=$(table)
RATIO=""
if [[ -n ${FIG[postgresql:claim:2:100]:-} ]]; then
  for key in pgbench_drain pgbench_timed; do
    [[ -n ${FIG[postgresql:$key]:-} ]] || continue
    RATIO+=$(awk -v q="${FIG[postgresql:claim:2:100]}" -v p="${FIG[postgresql:$key]}" -v k="$key" \
      'BEGIN { r = p / q; printf "- PostgreSQL W=2 B=100: queuectl %d jobs/s vs bare SQL (%s) %d jobs/s: ratio %.2f, %s 1.5x\n", q, k, p, r, (r <= 1.5 ? "within" : "NOT within") }')$'\n'
  done
fi

pg_version=$([[ -n ${PGHOST:-} ]] && psql -X -tA -c 'SHOW server_version' 2>/dev/null || true)
my_version=""
if [[ " $BACKENDS " == *" mysql "* ]]; then
  my_version=$(mariadb --no-defaults -S "$TMP/mysql/mysql.sock" -uroot -N -e 'SELECT VERSION()' 2>/dev/null || true)
fi
sqlite_version=$(sqlite3 --version 2>/dev/null | cut -d' ' -f1 || true)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)

{
  echo "# queuectl benchmark figures"
  echo
  echo "Generated by \`bench/run.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) CPU(s) ($cpu), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM."
  echo "Servers: PostgreSQL ${pg_version:-?}, MariaDB ${my_version:-?}, SQLite ${sqlite_version:-?};"
  echo "throwaway servers from \`scripts/test-servers.sh\` (fsync off, synchronous_commit off,"
  echo "innodb_flush_log_at_trx_commit = 2): figures measure CPU and round trips, not disks."
  build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD_DIR/CMakeCache.txt")
  echo "Build: ${build_type:-RelWithDebInfo (the CMakeLists default)}, \`$(basename "$BUILD_DIR")\`; git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$([[ -n $(git -C "$ROOT" status --porcelain -- src sql commands 2>/dev/null) ]] && echo ' with uncommitted changes in src/, sql/ or commands/')."
  echo
  echo "$TABLE"
  echo
  [[ -n $RATIO ]] && { printf '%s\n' "$RATIO"; }
  for n in "${PGBENCH_NOTES[@]}"; do echo "- pgbench $n"; done
  echo
  cat <<EOF
How each figure is made:

- \`enqueue --from\`: one \`queuectl -q enqueue --from FILE\` process on a freshly migrated
  schema, wall clock including start-up, connection, JSON validation and the inserts
  (one transaction, multi-row INSERTs of 500 rows).
- claim+ack: \`queue_bench --claim\` refills the queue with the database's own row
  generator ($JOBS_B1 jobs for B=1, $JOBS_B100 for B=100), ANALYZEs, forks W workers,
  each with its own connection through \`Database\`, and times, from a common start
  until the last worker finds the queue empty, loops of \`JobRepository::claim(limit B,
  lease 30s)\` + \`JobRepository::ack_many\` with the claim's token. Every run checks
  that all jobs ended done and no ack lost its lease.
- \`stats\`: \`queue_bench --stats\` inserts $STATS_DONE done + $STATS_READY ready jobs over
  10 queues with the database's generator (PostgreSQL generate_series, MariaDB
  seq_1_to_N, SQLite a recursive CTE), runs VACUUM ANALYZE / ANALYZE TABLE / ANALYZE,
  then times \`JobRepository::stats({})\` (all queues) $STATS_RUNS times after one warm-up,
  and the dialect's \`stats_ready\` statement alone (the ready counts, served by the
  claim index) as many times.
- bare SQL: \`pgbench -n -M prepared -c $PGBENCH_CLIENTS -j $PGBENCH_CLIENTS\` over a script of the
  PostgreSQL dialect's own claim statement (printed by \`queue_bench --print-claim-sql\`;
  limit 100, a random token, the same parameters) and one
  \`UPDATE ... WHERE id = ANY(ids) AND status = 1 AND lock_token = token\`; jobs/s =
  tps × 100. Twice: draining a queue of $JOBS_B100 jobs with exactly $JOBS_B100 / 100 claims
  (\`-t\`, the same work as queue_bench W=2 B=100), and for ${PGBENCH_SECONDS}s (\`-T\`) on a
  queue pre-filled with $PGBENCH_PREFILL jobs.

The machine has 2 cores shared by the servers, the benchmark clients and, while these
were taken, other engineers' builds and test runs: treat differences under ~20-30% as
noise. Rerun with \`bench/run.sh\` (\`BUILD_DIR=...\` to pick the build directory).

Raw result lines (claim_ms / ack_many_ms: mean wall time of one \`claim\` / \`ack_many\`
call inside a worker; the last, empty claim of each worker is included):

\`\`\`
EOF
  printf '%s' "$RAW"
  echo '```'

} >"$RESULTS.tmp"
mv -f "$RESULTS.tmp" "$RESULTS"

echo
echo "$TABLE"
echo
[[ -n $RATIO ]] && echo "$RATIO"
echo "(written to $RESULTS)"
