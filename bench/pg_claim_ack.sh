# Sourced by bench/run.sh and bench/pipe.sh: the PostgreSQL bare-SQL floor.
#
# pg_env_from_url URL: exports PGUSER, PGPASSWORD, PGHOST, PGPORT and PGDATABASE from a
#   postgresql://user:pass@host:port/db URL, for psql and pgbench.
# write_claim_ack_sql QUEUE_BENCH URL FILE: writes a pgbench script that runs the PostgreSQL
#   dialect's own claim statement (as queuectl runs it; queue_bench prints it) with the same
#   :name parameters, then one UPDATE that acks the ids it claimed. pgbench -M prepared binds
#   them as untyped parameters of a prepared statement, as SOCI does. The claim's to_char
#   formats spell their colons chr(58), because pgbench takes any ":MI" for a variable, even
#   in a literal (chr is immutable: the planner folds the concatenation back into the same
#   constant). The outer SELECT passes the ids on to the ack through \gset instead of
#   shipping the rows; the RETURNING columns are still computed. Run it with
#   -D queue=... -D worker=... -D limit=B -D lease_ms=...

pg_env_from_url() {
  local rest=${1#*://}
  export PGUSER=${rest%%:*}
  rest=${rest#*:}
  export PGPASSWORD=${rest%%@*}
  rest=${rest#*@}
  export PGHOST=${rest%%:*}
  rest=${rest#*:}
  export PGPORT=${rest%%/*}
  export PGDATABASE=${rest#*/}
}

write_claim_ack_sql() {
  local qb=$1 url=$2 file=$3 claim_sql stray
  claim_sql=$("$qb" --db "$url" --print-claim-sql |
              sed "s/HH24:MI:SS/HH24' || chr(58) || 'MI' || chr(58) || 'SS/g")
  stray=$(grep -o ':[A-Za-z_][A-Za-z0-9_]*' <<<"$claim_sql" | sort -u |
          grep -vx -e :queue -e :limit -e :worker -e :token -e :lease_ms || true)
  if [[ -n $stray ]]; then
    echo "the claim statement has placeholders pgbench is not given: $stray" >&2
    return 1
  fi
  cat >"$file" <<SQL
\\set token random(1, 9223372036854775806)
WITH claimed AS (
$claim_sql)
SELECT '{' || string_agg(CAST(id AS text), ',') || '}' AS ids, count(*) AS claimed FROM claimed
\\gset
UPDATE job_queue
   SET status = 2, result = CAST(NULL AS jsonb), lock_token = NULL, lock_until = NULL,
       finished_at = now(), updated_at = now()
 WHERE id = ANY(CAST(:ids AS bigint[])) AND status = 1 AND lock_token = CAST(:token AS text);
SQL
}
