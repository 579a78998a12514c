#!/usr/bin/env bash
# WAL bytes, full-page images and commits per job on PostgreSQL, for enqueue + claim + ack,
# batched and one at a time (issue 34), against a bare-SQL floor in the same run.
#
#   bash bench/wal.sh                 # N=5000 jobs batched (B=100 a claim), N1=300 one at a time
#   N=20000 B=100 N1=500 bash bench/wal.sh
#
# Throwaway servers (bench/servers.sh), with full_page_writes turned back on so that the
# figures include the full-page images a durable server writes; each phase starts after a
# VACUUM and a CHECKPOINT (autovacuum is off for the two tables, so that its WAL is not counted
# in a phase), so every page's first change in a phase costs its image, as right after a
# checkpoint on a real server (the worst case; the images per job are shown beside it).
#
# queuectl: `enqueue --from` of N lines, then `claim --limit B -o ndjson | ack --from -` until
# the queue is empty; one at a time, N1 `enqueue` processes, then N1 rounds of `claim --limit 1
# | ack --from -`. The floor: the same table's shape (a copy of job_queue with all its indexes,
# CREATE TABLE ... (LIKE job_queue INCLUDING ALL)) written by the bare statements of the
# articles queuectl comes from: one INSERT ... SELECT of N rows; then, per claim, an UPDATE of
# up to B rows picked with FOR UPDATE SKIP LOCKED, and an UPDATE that marks them done, each its
# own transaction (psql). Commits are counted from pg_stat_database.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
die() {
  echo "wal.sh: $*" >&2
  exit 1
}
Q=${QUEUECTL:-$ROOT/build/queuectl}
N=${N:-5000}
B=${B:-100}
N1=${N1:-300}
[[ -x $Q ]] || die "$Q is not built (cmake --build build)"
# shellcheck source=bench/servers.sh
source "$ROOT/bench/servers.sh"
# shellcheck source=bench/pg_claim_ack.sh
source "$ROOT/bench/pg_claim_ack.sh"
bench_servers qwal
URL=$QUEUECTL_TEST_PG_URL
pg_env_from_url "$URL"
PG_BIN=$(dirname "$(command -v pgbench || echo /usr/lib/postgresql/15/bin/pgbench)")
[[ -x $PG_BIN/pgbench ]] || PG_BIN=/usr/lib/postgresql/15/bin
sql() { "$PG_BIN/psql" -qAtX -v ON_ERROR_STOP=1 "$@"; }

sql -c "ALTER SYSTEM SET full_page_writes = on" >/dev/null
sql -c "SELECT pg_reload_conf()" >/dev/null
"$Q" --db "$URL" -q migrate
sql -c "CREATE TABLE floor_q (LIKE job_queue INCLUDING ALL)"
# Autovacuum would run in the middle of a phase and count its own WAL there: off for both
# tables; each phase starts after a VACUUM instead.
sql -c "ALTER TABLE job_queue SET (autovacuum_enabled = off)"
sql -c "ALTER TABLE floor_q SET (autovacuum_enabled = off)"

# WAL position, full-page images and commits so far (the reading itself is one commit).
reading() {
  sql -c "SELECT pg_current_wal_insert_lsn(), (SELECT wal_fpi FROM pg_stat_wal),
                 (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())"
}
START=""
begin_phase() {
  sql -c "VACUUM job_queue" -c "VACUUM floor_q" >/dev/null
  sql -c "CHECKPOINT" >/dev/null
  sleep 1.1  # backends flush their counters at least every second, and at exit
  START=$(reading)
}
# Prints "bytes fpi commits" per job for the phase begun last, over $1 jobs.
end_phase() {
  sleep 1.1
  local now jobs=$1
  now=$(reading)
  IFS='|' read -r lsn0 fpi0 commits0 <<<"$START"
  IFS='|' read -r lsn1 fpi1 commits1 <<<"$now"
  local bytes
  bytes=$(sql -c "SELECT pg_wal_lsn_diff('$lsn1', '$lsn0')")
  # Each reading is a commit of its own; a CHECKPOINT is none.
  awk -v b="$bytes" -v f="$((fpi1 - fpi0))" -v c="$((commits1 - commits0 - 1))" -v n="$jobs" \
    'BEGIN { printf "%.0f %.2f %.2f\n", b / n, f / n, c / n }'
}

lines=$TMP/jobs.ndjson
for ((i = 1; i <= N; i++)); do printf '{"queue":"w","payload":{"n":%d}}\n' "$i"; done >"$lines"

# ---- queuectl, batched
begin_phase
"$Q" --db "$URL" -q enqueue --from "$lines"
q_enq=$(end_phase "$N")
begin_phase
while :; do
  got=$("$Q" --db "$URL" -o ndjson claim w --limit "$B" --lease 5m --worker wal | tee "$TMP/c")
  [[ -n $got ]] || break
  "$Q" --db "$URL" -q ack --from "$TMP/c"
done
q_ca=$(end_phase "$N")

# ---- floor, batched
cat >"$TMP/floor_claim.sql" <<SQL
UPDATE floor_q f SET status = 1, attempts = f.attempts + 1, locked_by = 'wal',
       lock_token = 't', locked_at = now(), lock_until = now() + interval '5 minutes',
       updated_at = now()
 WHERE f.id IN (SELECT id FROM floor_q WHERE queue = 'w' AND status = 0 AND run_at <= now()
                 ORDER BY priority DESC, run_at, id LIMIT :lim FOR UPDATE SKIP LOCKED);
SQL
cat >"$TMP/floor_ack.sql" <<'SQL'
UPDATE floor_q SET status = 2, lock_token = NULL, lock_until = NULL, finished_at = now(),
       updated_at = now()
 WHERE status = 1 AND lock_token = 't';
SQL
begin_phase
sql -c "INSERT INTO floor_q (queue, payload)
        SELECT 'w', jsonb_build_object('n', g) FROM generate_series(1, $N) g"
f_enq=$(end_phase "$N")
begin_phase
# Two transactions a round, as queuectl's claim and ack.
for ((r = 0; r < N / B; r++)); do
  sql -c "$(sed "s/:lim/$B/" "$TMP/floor_claim.sql")" -c "$(cat "$TMP/floor_ack.sql")"
done
f_ca=$(end_phase "$N")

# ---- one at a time
begin_phase
for ((i = 1; i <= N1; i++)); do "$Q" --db "$URL" -q enqueue w1 "{\"n\":$i}" >/dev/null; done
q1_enq=$(end_phase "$N1")
begin_phase
for ((i = 1; i <= N1; i++)); do
  "$Q" --db "$URL" -o ndjson claim w1 --limit 1 --lease 5m --worker wal >"$TMP/c1"
  "$Q" --db "$URL" -q ack --from "$TMP/c1"
done
q1_ca=$(end_phase "$N1")
begin_phase
for ((i = 1; i <= N1; i++)); do
  sql -c "INSERT INTO floor_q (queue, payload) VALUES ('w1', '{\"n\": $i}')"
done
f1_enq=$(end_phase "$N1")
begin_phase
for ((i = 1; i <= N1; i++)); do
  sql -c "$(sed "s/:lim/1/; s/'w'/'w1'/" "$TMP/floor_claim.sql")" -c "$(cat "$TMP/floor_ack.sql")"
done
f1_ca=$(end_phase "$N1")

left=$(sql -c "SELECT count(*) FROM job_queue WHERE status <> 2")
fleft=$(sql -c "SELECT count(*) FROM floor_q WHERE status <> 2")
[[ $left == 0 && $fleft == 0 ]] || die "jobs left undone: queuectl $left, floor $fleft"

printf '\nPostgreSQL, full_page_writes on, a CHECKPOINT before each phase; per job:\n'
fmt='%-30s %10s %6s %8s %12s %6s\n'
# shellcheck disable=SC2059
printf "$fmt" phase "WAL bytes" FPI commits "floor bytes" ratio
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
row() {
  local qb qf qc fb
  read -r qb qf qc <<<"$2"
  read -r fb _ _ <<<"$3"
  # shellcheck disable=SC2059
  printf "$fmt" "$1" "$qb" "$qf" "$qc" "$fb" "$(ratio "$qb" "$fb")"
}
sum() { awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " "); printf "%.0f %.2f %.2f", x[1] + y[1], x[2] + y[2], x[3] + y[3] }'; }
row "enqueue --from ($N)" "$q_enq" "$f_enq"
row "claim+ack, $B a claim" "$q_ca" "$f_ca"
row "total, batched" "$(sum "$q_enq" "$q_ca")" "$(sum "$f_enq" "$f_ca")"
row "enqueue, a process each ($N1)" "$q1_enq" "$f1_enq"
row "claim+ack, 1 a claim" "$q1_ca" "$f1_ca"
row "total, one at a time" "$(sum "$q1_enq" "$q1_ca")" "$(sum "$f1_enq" "$f1_ca")"
