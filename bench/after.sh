#!/usr/bin/env bash
# bench/after.sh — what `enqueue --after` costs against a plain enqueue, on PostgreSQL,
# MariaDB and SQLite; and what a parent's ack costs against a plain ack.
#
#   bash bench/after.sh            # from the repository root (or anywhere); ~3 minutes
#
# Starts throwaway PostgreSQL and MariaDB servers with scripts/test-servers.sh in a temporary
# directory (stopped and removed on exit). For each backend, in one run, alternately $REPEAT
# times:
#   one-by-one  N `queuectl enqueue Q '{}'` processes, against N `... --after P` (P a job
#               not yet done, so that each new job waits and P gains a dependent);
#   --from      one `enqueue --from` of $LINES lines, against the same lines each with
#               "after":[P];
#   ack         `claim --limit $ACKS` then one `ack --from` of them all: plain jobs, against
#               jobs that others wait for (each with one waiting child to release).
# Each figure is the ratio (with --after) / (plain) of jobs per second, the median over the
# runs: read the ratios, not the absolute figures (this machine is shared and noisy).
# Nothing is asserted.
#
# Knobs (environment): QUEUECTL (build/queuectl), BACKENDS ("postgresql mysql sqlite"), N
# (200), LINES (2000), ACKS (500), REPEAT (3), PG_URL and MYSQL_URL (servers already running;
# the database name must contain "bench" or "test").
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
QUEUECTL=${QUEUECTL:-$ROOT/build/queuectl}
BACKENDS=${BACKENDS:-postgresql mysql sqlite}
N=${N:-200}
LINES=${LINES:-2000}
ACKS=${ACKS:-500}
REPEAT=${REPEAT:-3}

say() { printf '== %s\n' "$*" >&2; }
die() { echo "bench/after.sh: $*" >&2; exit 1; }
median() { sort -g | awk 'NF { v[++n] = $1 } END { if (n == 0) print ""; else if (n % 2) print v[(n + 1) / 2]; else printf "%.6g\n", (v[n / 2] + v[n / 2 + 1]) / 2 }'; }
now() { date +%s.%N; }
[[ -x $QUEUECTL ]] || die "no queuectl at $QUEUECTL (build first, or set QUEUECTL)"

TMP=$(mktemp -d /tmp/qafter.XXXXXX)
STARTED=0
cleanup() {
  local rc=$?
  ((STARTED)) && { "$ROOT/scripts/test-servers.sh" stop "$TMP" >/dev/null 2>&1 || true; }
  rm -rf -- "$TMP"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [[ -z ${PG_URL:-} || -z ${MYSQL_URL:-} ]] && [[ $BACKENDS == *postgresql* || $BACKENDS == *mysql* ]]; then
  say "starting throwaway PostgreSQL and MariaDB in $TMP"
  STARTED=1
  server_env=$("$ROOT/scripts/test-servers.sh" start "$TMP") || die "the servers did not start"
  eval "$server_env"
fi
PG_URL=${PG_URL:-${QUEUECTL_TEST_PG_URL:-}}
MYSQL_URL=${MYSQL_URL:-${QUEUECTL_TEST_MYSQL_URL:-}}

q() { "$QUEUECTL" --db "$url" "$@"; }
# Seconds for $1 jobs of "$@" run one process at a time.
one_by_one() {
  local n=$1; shift
  local t0; t0=$(now)
  for ((i = 0; i < n; i++)); do q "$@" >/dev/null; done
  awk -v a="$t0" -v b="$(now)" -v n="$n" 'BEGIN { printf "%.3f", n / (b - a) }'
}
rate_of() {  # jobs, seconds of the command "$@"
  local n=$1; shift
  local t0; t0=$(now)
  "$@" >/dev/null
  awk -v a="$t0" -v b="$(now)" -v n="$n" 'BEGIN { printf "%.3f", n / (b - a) }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

printf '| with --after / plain: jobs/s ratio (median of %s runs) |' "$REPEAT"
for b in $BACKENDS; do printf ' %s |' "$b"; done
printf '\n|---|'
for b in $BACKENDS; do printf -- '---:|'; done
printf '\n'
declare -A fig
for b in $BACKENDS; do
  case $b in
    postgresql) url=$PG_URL ;;
    mysql) url=$MYSQL_URL ;;
    sqlite) url="sqlite://$TMP/queuectl_bench.db" ;;
  esac
  q migrate >/dev/null
  single="" bulk="" acks=""
  for ((r = 1; r <= REPEAT; r++)); do
    q purge --older-than 0s --status done,failed,canceled >/dev/null 2>&1 || true
    parent=$(q enqueue hold '{}' --field id)
    plain=$(one_by_one "$N" enqueue bench '{}')
    after=$(one_by_one "$N" enqueue bench '{}' --after "$parent")
    say "$b one-by-one: plain $plain/s, --after $after/s"
    single+=$(ratio "$after" "$plain")$'\n'
    awk -v n="$LINES" 'BEGIN { for (i = 0; i < n; i++) print "{\"queue\":\"bulk\"}" }' >"$TMP/plain.ndjson"
    awk -v n="$LINES" -v p="$parent" 'BEGIN { for (i = 0; i < n; i++) print "{\"queue\":\"bulk\",\"after\":[" p "]}" }' >"$TMP/after.ndjson"
    plain=$(rate_of "$LINES" q enqueue --from "$TMP/plain.ndjson")
    after=$(rate_of "$LINES" q enqueue --from "$TMP/after.ndjson")
    say "$b --from: plain $plain/s, --after $after/s"
    bulk+=$(ratio "$after" "$plain")$'\n'
    # Acks: $ACKS plain jobs, then $ACKS jobs each with one waiting child.
    q cancel --force $(q list bench --status ready,processing --limit 100000 --field id | tr '\n' ' ') >/dev/null 2>&1 || true
    awk -v n="$ACKS" 'BEGIN { for (i = 0; i < n; i++) print "{\"queue\":\"acks\"}" }' | q enqueue --from - >/dev/null
    q claim acks --limit "$ACKS" --field id,lock_token 2>/dev/null |
      awk -F'\t' '{ printf "{\"id\":%s,\"token\":\"%s\"}\n", $1, $2 }' >"$TMP/acks.ndjson"
    plain=$(rate_of "$ACKS" q ack --from "$TMP/acks.ndjson")
    awk -v n="$ACKS" 'BEGIN { for (i = 0; i < n; i++) print "{\"queue\":\"parents\"}" }' | q enqueue --from - >/dev/null
    q list parents --status ready --limit "$ACKS" --field id |
      awk '{ print "{\"queue\":\"children\",\"after\":[" $1 "]}" }' | q enqueue --from - >/dev/null
    q claim parents --limit "$ACKS" --field id,lock_token 2>/dev/null |
      awk -F'\t' '{ printf "{\"id\":%s,\"token\":\"%s\"}\n", $1, $2 }' >"$TMP/parents.ndjson"
    after=$(rate_of "$ACKS" q ack --from "$TMP/parents.ndjson")
    say "$b ack: plain $plain/s, parents $after/s"
    acks+=$(ratio "$after" "$plain")$'\n'
    q cancel --force "$parent" >/dev/null 2>&1 || true
  done
  fig[$b,single]=$(median <<<"$single" | awk '{ printf "%.2f", $1 }')
  fig[$b,bulk]=$(median <<<"$bulk" | awk '{ printf "%.2f", $1 }')
  fig[$b,acks]=$(median <<<"$acks" | awk '{ printf "%.2f", $1 }')
done
for kind in single bulk acks; do
  case $kind in
    single) label="enqueue one by one ($N processes), --after P / plain" ;;
    bulk) label="enqueue --from ($LINES lines), \"after\":[P] / plain" ;;
    acks) label="ack --from ($ACKS jobs), each with a waiting child / plain" ;;
  esac
  row="| $label |"
  for b in $BACKENDS; do row+=" ${fig[$b,$kind]} |"; done
  echo "$row"
done
