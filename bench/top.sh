#!/usr/bin/env bash
# bench/top.sh — `queuectl top --once` on a table with 1,000,000 done jobs: what a frame
# costs, as a ratio against floors measured in the same run (issue 17).
#
#   bash bench/top.sh                      # from the repository root (or anywhere)
#   BACKENDS="sqlite postgresql" bash bench/top.sh
#
# Builds queuectl in $BUILD_DIR (default: build), starts throwaway servers (bench/servers.sh:
# in a temporary directory, stopped and removed on exit), migrates, and fills each backend
# (bench/history.sh) by the database's own row generator (generate_series, a recursive
# CTE, a cross join of digits) with 1,000,000 done jobs in 10 queues, finished over the last
# 24 hours (so about 700 in the last minute), 1,000 failed ones, 100 ready and 20
# processing. Then $ROUNDS rounds; each times $N runs, one after the other, of:
#   version  queuectl --version    (process start: the floor)
#   claim    queuectl claim none   (an empty queue: connect, session setup, schema check,
#                                   one indexed statement: the floor of any command)
#   top      queuectl top --once   (one frame: eight statements in one snapshot)
#   stats    queuectl stats        (done, failed, canceled counted up to 100,000 a queue)
#   exact    queuectl stats --exact (for comparison: it counts every done job)
#   overview what the page of `queuectl serve` asks every 2 s: GET /api/stats and /api/top,
#            with curl, from a server started on the same database
#   list     queuectl list --status failed (a page of 100 of the 1,000 failed jobs, oldest
#            first, among the million done ones: the jobs view filtered on failed), through
#            the failed jobs' index; and `list --status failed,canceled`, the same page
#            through the general listing, which reads the history in id order
#            (failed,canceled: two statuses take it; there are no canceled jobs)
#   small    queuectl list small (every status of a queue of 3 ready jobs enqueued after
#            the rest: the jobs view of one queue with no status chosen)
# and reports ms per run and ratios: top against version and against claim; stats and
# exact against claim; the overview against stats (issue 32: the web view on a large table). Medians of the rounds go to the table. Nothing asserts a time: the machine is
# shared and noisy.
#
# Knobs: BUILD_DIR, BACKENDS ("sqlite postgresql mysql"), ROWS (1000000), N (20),
# ROUNDS (3), KEEP_TMP=1, SKIP_BUILD=1 (use the queuectl already built in $BUILD_DIR).
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
BACKENDS=${BACKENDS:-sqlite postgresql mysql}
ROWS=${ROWS:-1000000}
N=${N:-20}
ROUNDS=${ROUNDS:-3}

say() { printf '== %s\n' "$*" >&2; }
die() { echo "bench/top.sh: $*" >&2; exit 1; }

source "$ROOT/bench/servers.sh"
bench_build queuectl
Q=$BUILD_DIR/queuectl
source "$ROOT/bench/history.sh"
bench_servers queuectl-top-bench  # TMP, the servers in it, their URLs
declare -A URL=([sqlite]="sqlite://$TMP/q.db" [postgresql]=$QUEUECTL_TEST_PG_URL
  [mysql]=$QUEUECTL_TEST_MYSQL_URL)

for b in $BACKENDS; do
  "$Q" --db "${URL[$b]}" -q migrate
  fill_history "$b" "${URL[$b]}" "$ROWS"
  for _ in 1 2 3; do "$Q" --db "${URL[$b]}" -q enqueue small >/dev/null; done
done

# The overview's poll: both routes, one after the other, as the page asks them.
overview() { curl -sf "$1/api/stats" >/dev/null && curl -sf "$1/api/top" >/dev/null; }

echo
echo "| backend | version ms | claim ms | top --once ms | stats ms | stats --exact ms | overview ms | list failed ms | list failed,canceled ms | list small ms | top / claim | stats / claim | exact / claim | overview / stats | list / claim | small / claim |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for b in $BACKENDS; do
  u=${URL[$b]}
  "$Q" --db "$u" serve --listen 127.0.0.1:0 2>"$TMP/serve-$b.log" &
  serve_pid=$!
  for _ in $(seq 100); do grep -q listening "$TMP/serve-$b.log" && break; sleep 0.1; done
  web=$(grep -o 'http://127.0.0.1:[0-9]*' "$TMP/serve-$b.log")
  "$Q" --db "$u" top --once >/dev/null  # warm the caches once
  overview "$web"
  v=() c=() t=() s=() e=() o=() l=() g=() m=() tc=() sc=() ec=() os=() lc=() mc=()
  for ((r = 1; r <= ROUNDS; r++)); do
    vr=$(per_run_ms "$Q" --version)
    cr=$(per_run_ms "$Q" --db "$u" claim none)
    tr=$(per_run_ms "$Q" --db "$u" top --once)
    sr=$(per_run_ms "$Q" --db "$u" stats)
    er=$(per_run_ms "$Q" --db "$u" stats --exact)
    or=$(per_run_ms overview "$web")
    lr=$(per_run_ms "$Q" --db "$u" list --status failed)
    gr=$(per_run_ms "$Q" --db "$u" list --status failed,canceled)
    mr=$(per_run_ms "$Q" --db "$u" list small)
    echo "round=$r backend=$b version=$vr claim=$cr top=$tr stats=$sr exact=$er overview=$or list=$lr general=$gr small=$mr" >&2
    v+=("$vr") c+=("$cr") t+=("$tr") s+=("$sr") e+=("$er") o+=("$or") l+=("$lr") g+=("$gr") m+=("$mr")
    lc+=("$(ratio "$lr" "$cr")") mc+=("$(ratio "$mr" "$cr")")
    tc+=("$(ratio "$tr" "$cr")") sc+=("$(ratio "$sr" "$cr")") ec+=("$(ratio "$er" "$cr")")
    os+=("$(ratio "$or" "$sr")")
  done
  kill "$serve_pid"; wait "$serve_pid" || true
  echo "| $b | $(median "${v[@]}") | $(median "${c[@]}") | $(median "${t[@]}") | $(median "${s[@]}") | $(median "${e[@]}") | $(median "${o[@]}") | $(median "${l[@]}") | $(median "${g[@]}") | $(median "${m[@]}") | $(median "${tc[@]}")x | $(median "${sc[@]}")x | $(median "${ec[@]}")x | $(median "${os[@]}")x | $(median "${lc[@]}")x | $(median "${mc[@]}")x |"
done
