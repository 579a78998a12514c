#!/usr/bin/env bash
# bench/scale.sh — the scale curves of issue 34 (item 5): how throughput and latency move as
# one thing grows, each point against a reference measured in the same run.
#
#   bash bench/scale.sh                    # from the repository root (or anywhere)
#   SKIP_BUILD=1 BACKENDS=sqlite N=200 SIZES="10000 100000" bash bench/scale.sh   # a quick look
#
# Uses $BUILD_DIR/queuectl, $BUILD_DIR/bench/queue_bench and $BUILD_DIR/bench/claim_latency
# (default build/), built first (incrementally) unless SKIP_BUILD=1 or QUEUECTL, QUEUE_BENCH or
# CLAIM_LATENCY names a binary to use as it is, starts
# throwaway servers (bench/servers.sh: in a temporary directory, stopped and removed on exit)
# when BACKENDS needs them, and prints three markdown tables on stdout (progress on stderr):
#
# 1. work  Jobs/s of W separate `queuectl -q -o json work Q --concurrency 1 --drain -- true`
#          processes started at once over N jobs enqueued just before (not timed), W in
#          $WORKERS, against the floor `seq N | xargs -PW -I{} true` (N spawns, W at a time)
#          timed just before in the same round; the summaries must count all N done, and
#          `stats --exact` the queue's N done and nothing ready or processing. Medians of
#          $ROUNDS rounds of jobs/s and of the per-round ratios work / floor.
# 2. batch Library claim+ack by `queue_bench --claim` (W=$CLAIM_WORKERS forked workers looping
#          claim(limit B) + ack_many until the queue is empty; it checks that every job ended
#          done and no ack lost its lease), B in $BATCHES, over clamp(200 x B, N, 50 x N)
#          jobs; jobs/s and the ratio to B=1 of the same round, medians of $ROUNDS rounds.
#          (bench/pg_claim_ack.sh's pgbench script takes any batch as `-D limit=B` and could
#          give PostgreSQL a bare-SQL floor, but the prefill and the runner that make it jobs/s
#          are bench/run.sh's, hard-wired to B=100: not reused.)
# 3. latency  One claim(1) then its ack through the library (bench/claim_latency.cpp: one
#          connection, as `work` claims), timed in a table holding S done jobs
#          (bench/history.sh's fill_history: S done in 10 queues, 1,000 failed, 100 ready,
#          20 processing), then a burst of ready jobs in q0 (one of the history's queues) and
#          ANALYZE, for S in $SIZES (SQLite: up to $SQLITE_MAX). The reference is a second
#          database filled the same way at the smallest size, kept for the whole backend: its
#          samples alternate with the size's, one for one, so the ratio p50 / p50 at the
#          smallest (and p99) compares moments, not minutes apart. $ROUNDS x $SAMPLES samples
#          each (the smallest size is its own reference: 1.00x); one database per size,
#          dropped after it.
# Nothing is asserted: the machine is shared and noisy; read the ratios.
#
# Knobs (environment): BUILD_DIR, QUEUECTL (a queuectl binary), QUEUE_BENCH, CLAIM_LATENCY,
# SKIP_BUILD=1, BACKENDS ("sqlite postgresql mysql"), PARTS ("work batch latency"), N (2000), ROUNDS (3),
# WORKERS ("1 2 4 8 16 32"), CLAIM_WORKERS (2), BATCHES ("1 10 100 1000"),
# SIZES ("10000 100000 1000000 10000000"), SQLITE_MAX (1000000), SAMPLES (100), BURST
# (default: what the reference needs, ROUNDS x SAMPLES x sizes + 10 x sizes + 100), KEEP_TMP=1.
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
BACKENDS=${BACKENDS:-sqlite postgresql mysql}
PARTS=${PARTS:-work batch latency}
N=${N:-2000}
ROUNDS=${ROUNDS:-3}
WORKERS=${WORKERS:-1 2 4 8 16 32}
CLAIM_WORKERS=${CLAIM_WORKERS:-2}
BATCHES=${BATCHES:-1 10 100 1000}
SIZES=${SIZES:-10000 100000 1000000 10000000}
SQLITE_MAX=${SQLITE_MAX:-1000000}
SAMPLES=${SAMPLES:-100}

say() { printf '== %s\n' "$*" >&2; }
die() { echo "bench/scale.sh: $*" >&2; exit 1; }

Q=${QUEUECTL:-$BUILD_DIR/queuectl}
QB=${QUEUE_BENCH:-$BUILD_DIR/bench/queue_bench}
CL=${CLAIM_LATENCY:-$BUILD_DIR/bench/claim_latency}
source "$ROOT/bench/servers.sh"
# The binaries this run uses, built unless given.
targets=() bins=("$Q")
[[ -n ${QUEUECTL:-} ]] || targets+=(queuectl)
if [[ $PARTS == *batch* ]]; then
  bins+=("$QB")
  [[ -n ${QUEUE_BENCH:-} ]] || targets+=(queue_bench)
fi
if [[ $PARTS == *latency* ]]; then
  bins+=("$CL")
  [[ -n ${CLAIM_LATENCY:-} ]] || targets+=(claim_latency)
fi
((${#targets[@]} == 0)) || bench_build "${targets[@]}"
for bin in "${bins[@]}"; do [[ -x $bin ]] || die "no $bin"; done
source "$ROOT/bench/history.sh"  # fill_history, history_sql, median, ratio
if [[ $BACKENDS == *postgresql* || $BACKENDS == *mysql* ]]; then
  bench_servers queuectl-scale-bench  # TMP, the servers in it, their URLs
else  # SQLite alone: no servers, the same cleanup
  TMP=$(mktemp -d /tmp/queuectl-scale-bench.XXXXXX)
  trap bench_servers_cleanup EXIT; trap 'exit 130' INT TERM
fi
# The file's name must say "bench": queue_bench drops and re-creates the tables it is given.
declare -A URL=([sqlite]="sqlite://$TMP/queuectl_bench.db"
  [postgresql]=${QUEUECTL_TEST_PG_URL:-} [mysql]=${QUEUECTL_TEST_MYSQL_URL:-})
for b in $BACKENDS; do
  [[ -n ${URL[$b]:-} ]] || die "unknown backend $b (sqlite, postgresql, mysql)"
  "$Q" --db "${URL[$b]}" -q migrate
done

now_ns() { date +%s%N; }
per_s() { awk -v n="$1" -v s="$2" -v e="$3" 'BEGIN { printf "%.0f", n / ((e - s) / 1e9) }'; }
num() { sed -n "s/.*\"$2\": *\([0-9]*\).*/\1/p" <<<"$1" | sed -n 1p; }  # a JSON number by key
field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }                   # key=value words
ndjson() { local i; for ((i = 0; i < $1; i++)); do echo '{"payload":{}}'; done >"$2"; }

# ------------------------------------------------- 1. work against the worker count --
# work_run BACKEND WORKERS QUEUE: W workers drain N fresh jobs of QUEUE; sets RATE.
work_run() {
  local b=$1 w=$2 qn=$3 u=${URL[$1]} i start end total=0 n st pids=()
  "$Q" --db "$u" -q enqueue "$qn" --from "$TMP/jobs.ndjson" >/dev/null
  start=$(now_ns)
  for ((i = 0; i < w; i++)); do
    "$Q" --db "$u" -q -o json work "$qn" --concurrency 1 --drain -- true \
      >"$TMP/sum.$i" 2>"$TMP/err.$i" &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[i]}" || die "$b: worker $i of $w failed: $(cat "$TMP/err.$i" "$TMP/sum.$i")"
  done
  end=$(now_ns)
  for ((i = 0; i < w; i++)); do
    n=$(num "$(cat "$TMP/sum.$i")" "done")
    total=$((total + ${n:-0}))
  done
  st=$("$Q" --db "$u" -o json stats "$qn" --exact)
  [[ $total == "$N" && $(num "$st" "done") == "$N" && $(num "$st" ready) == 0 &&
    $(num "$st" processing) == 0 ]] || die "$b: $w workers did $total of $N jobs; stats: $st"
  RATE=$(per_s "$N" "$start" "$end")
}

if [[ $PARTS == *work* ]]; then
  ndjson "$N" "$TMP/jobs.ndjson"
  declare -A FLOOR WRATE WRATIO
  for ((r = 1; r <= ROUNDS; r++)); do
    for w in $WORKERS; do
      say "work: round $r of $ROUNDS, $w worker(s), $N jobs"
      start=$(now_ns)
      seq "$N" | xargs -P"$w" -I{} true
      FLOOR[$w,$r]=$(per_s "$N" "$start" "$(now_ns)")
      for b in $BACKENDS; do
        work_run "$b" "$w" "scale-w$w-r$r"
        WRATE[$b,$w,$r]=$RATE
        WRATIO[$b,$w,$r]=$(ratio "$RATE" "${FLOOR[$w,$r]}")
        echo "round=$r backend=$b workers=$w jobs_per_s=$RATE floor=${FLOOR[$w,$r]} ratio=${WRATIO[$b,$w,$r]}" >&2
      done
    done
  done
  echo
  echo "| \`work --concurrency 1 --drain -- true\` x W processes, $N jobs, median of $ROUNDS rounds | W | jobs/s | floor (\`xargs -PW true\`) jobs/s | work / floor |"
  echo "|---|---:|---:|---:|---:|"
  for b in $BACKENDS; do
    for w in $WORKERS; do
      f=() a=() x=()
      for ((r = 1; r <= ROUNDS; r++)); do
        f+=("${FLOOR[$w,$r]}") a+=("${WRATE[$b,$w,$r]}") x+=("${WRATIO[$b,$w,$r]}")
      done
      echo "| $b | $w | $(median "${a[@]}") | $(median "${f[@]}") | $(median "${x[@]}")x |"
    done
  done
fi

# ------------------------------------------------- 2. claim+ack against the batch size --
claim_jobs() {  # B: the jobs of a run at batch B, clamp(200 x B, N, 50 x N)
  local j=$((200 * $1))
  if ((j < N)); then j=$N; fi
  if ((j > 50 * N)); then j=$((50 * N)); fi
  echo "$j"
}
if [[ $PARTS == *batch* ]]; then
  declare -A CRATE CRATIO
  first=${BATCHES%% *}
  for ((r = 1; r <= ROUNDS; r++)); do
    for b in $BACKENDS; do
      for bs in $BATCHES; do
        say "batch: round $r of $ROUNDS, $b, W=$CLAIM_WORKERS B=$bs, $(claim_jobs "$bs") jobs"
        line=$("$QB" --db "${URL[$b]}" --claim --workers "$CLAIM_WORKERS" --batches "$bs" \
          --jobs "$(claim_jobs "$bs")" 2>>"$TMP/queue_bench.log" | grep '^claim_ack') ||
          die "$b: queue_bench failed at B=$bs: $(tail -n 5 "$TMP/queue_bench.log")"
        CRATE[$b,$bs,$r]=$(field "$line" jobs_per_s)
        CRATIO[$b,$bs,$r]=$(ratio "${CRATE[$b,$bs,$r]}" "${CRATE[$b,$first,$r]}")
        echo "round=$r $line ratio_to_b$first=${CRATIO[$b,$bs,$r]}" >&2
      done
    done
  done
  echo
  echo "| claim(limit B) + ack_many, W=$CLAIM_WORKERS, median of $ROUNDS rounds | B | jobs per run | jobs/s | ratio to B=$first |"
  echo "|---|---:|---:|---:|---:|"
  for b in $BACKENDS; do
    for bs in $BATCHES; do
      a=() x=()
      for ((r = 1; r <= ROUNDS; r++)); do a+=("${CRATE[$b,$bs,$r]}") x+=("${CRATIO[$b,$bs,$r]}"); done
      echo "| $b | $bs | $(claim_jobs "$bs") | $(median "${a[@]}") | $(median "${x[@]}")x |"
    done
  done
fi

# ------------------------------------------------- 3. claim latency against the history --
db_url() { [[ $1 == sqlite ]] && echo "sqlite://$TMP/$2.db" || echo "${URL[$1]%/*}/$2"; }
drop_db() {  # BACKEND NAME
  case $1 in
    sqlite) rm -f "$TMP/$2.db" "$TMP/$2.db-wal" "$TMP/$2.db-shm" ;;
    mysql) echo "DROP DATABASE IF EXISTS $2;" | history_sql "${URL[$1]}" ;;
    postgresql)  # FORCE: an autovacuum worker may be in it
      echo "DROP DATABASE IF EXISTS $2 WITH (FORCE);" |
        PGOPTIONS='-c client_min_messages=warning' history_sql "${URL[$1]}" ;;
  esac
}
# make_history BACKEND NAME SIZE: a fresh database NAME with SIZE done jobs (fill_history),
# the burst in q0, fresh statistics.
make_history() {
  local b=$1 u
  u=$(db_url "$1" "$2")
  drop_db "$b" "$2"
  [[ $b == sqlite ]] || echo "CREATE DATABASE $2;" | history_sql "${URL[$b]}"
  "$Q" --db "$u" -q migrate
  fill_history "$b" "$u" "$3" >&2
  "$Q" --db "$u" -q enqueue q0 --from "$TMP/burst.ndjson" >/dev/null
  echo "${ANALYZE[$b]}" | history_sql "$u"
}
declare -A ANALYZE=([sqlite]="ANALYZE;" [postgresql]="ANALYZE job_queue;"
  [mysql]="ANALYZE TABLE job_queue;")
if [[ $PARTS == *latency* ]]; then
  echo
  echo "| claim(1) + ack through the library, $((ROUNDS * SAMPLES)) samples | done jobs | p50 ms | p99 ms | p50 ms at the smallest | p99 ms at the smallest | p50 / smallest | p99 / smallest |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|"
  for b in $BACKENDS; do
    max=$SQLITE_MAX
    [[ $b == sqlite ]] || max=1e18
    mapfile -t sizes < <(tr ' ' '\n' <<<"$SIZES" | awk -v m="$max" 'NF && $1 <= m + 0' | sort -n)
    ((${#sizes[@]})) || continue
    ndjson "${BURST:-$((ROUNDS * SAMPLES * ${#sizes[@]} + 10 * ${#sizes[@]} + 100))}" "$TMP/burst.ndjson"
    say "latency: $b, the reference at ${sizes[0]} done jobs"
    make_history "$b" queuectl_scale_ref "${sizes[0]}"
    ref=$(db_url "$b" queuectl_scale_ref)
    for s in "${sizes[@]}"; do
      u=$ref
      if ((s != sizes[0])); then
        say "latency: $b, $s done jobs"
        make_history "$b" queuectl_scale_hist "$s"
        u=$(db_url "$b" queuectl_scale_hist)
      fi
      args=(--db "$u" --queue q0 --samples $((ROUNDS * SAMPLES)))
      [[ $u == "$ref" ]] || args+=(--db2 "$ref")
      out=$("$CL" "${args[@]}") || die "claim_latency failed on $u"
      p50=$(field "$(grep 'db=1' <<<"$out")" p50_ms) p99=$(field "$(grep 'db=1' <<<"$out")" p99_ms)
      r50=$p50 r99=$p99
      if [[ $u != "$ref" ]]; then
        r50=$(field "$(grep 'db=2' <<<"$out")" p50_ms) r99=$(field "$(grep 'db=2' <<<"$out")" p99_ms)
      fi
      echo "backend=$b done=$s p50=$p50 p99=$p99 ref_p50=$r50 ref_p99=$r99" >&2
      echo "| $b | $s | $p50 | $p99 | $r50 | $r99 | $(ratio "$p50" "$r50")x | $(ratio "$p99" "$r99")x |"
      [[ $u == "$ref" ]] || drop_db "$b" queuectl_scale_hist
    done
    drop_db "$b" queuectl_scale_ref
  done
fi
