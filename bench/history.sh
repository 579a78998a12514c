# bench/history.sh — sourced by the benchmarks that time commands on a long history
# (bench/top.sh, bench/stats_scale.sh): a table filled by each database's own row generator,
# and the timing helpers.
#
#   source "$ROOT/bench/history.sh"
#   fill_history sqlite "sqlite:///tmp/x/q.db" 1000000   # needs Q (the queuectl binary)
#   ms=$(per_run_ms "$Q" --db "$url" stats)             # needs N (runs in a row)

# SQL text on stdin, run on the database of URL $1 by the database's own client.
history_sql() {
  local url=$1
  case $url in
    sqlite://*) sqlite3 "${url#sqlite://}" ;;
    postgresql://*) psql -q -v ON_ERROR_STOP=1 "$url" >/dev/null ;;
    mysql://*)
      [[ $url =~ ^mysql://([^:]+):([^@]+)@([^:/]+):([0-9]+)/([^?]+) ]]
      mariadb -u "${BASH_REMATCH[1]}" -p"${BASH_REMATCH[2]}" -h "${BASH_REMATCH[3]}" \
        -P "${BASH_REMATCH[4]}" "${BASH_REMATCH[5]}" >/dev/null
      ;;
  esac
}

# Ten digits, for MariaDB's cross joins.
HISTORY_DIGITS="(SELECT 0 n UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"

# Done jobs $3 to $3 + $4 - 1 (at most 1,000,000) into backend $1's database at URL $2, in
# 10 queues (q0 to q9), finished over the last 24 hours.
fill_done_chunk() {
  local backend=$1 url=$2 from=$3 count=$4 d=$HISTORY_DIGITS
  case $backend in
    postgresql)
      history_sql "$url" <<SQL
INSERT INTO job_queue (queue, status, attempts, payload, created_at, updated_at, finished_at)
SELECT 'q' || (g % 10), 2, 1, '{}', t, t, t
  FROM generate_series($from, $from + $count - 1) g,
       LATERAL (SELECT now() - (g % 86400) * interval '1 second' AS t) x;
SQL
      ;;
    sqlite)
      history_sql "$url" <<SQL
WITH RECURSIVE c(n) AS (SELECT $from UNION ALL SELECT n + 1 FROM c WHERE n < $from + $count - 1)
INSERT INTO job_queue (queue, status, attempts, payload, created_at, updated_at, finished_at)
SELECT 'q' || (n % 10), 2, 1, '{}', t, t, t
  FROM (SELECT n, strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || (n % 86400) || ' seconds') AS t FROM c);
SQL
      ;;
    mysql)
      history_sql "$url" <<SQL
SET time_zone = '+00:00';
INSERT INTO job_queue (queue, status, attempts, payload, created_at, updated_at, finished_at)
SELECT CONCAT('q', g % 10), 2, 1, '{}', t, t, t
  FROM (SELECT g, NOW(6) - INTERVAL (g % 86400) SECOND AS t
          FROM (SELECT $from + a.n + 10 * b.n + 100 * c.n + 1000 * d.n + 10000 * e.n + 100000 * f.n AS g
                  FROM $d a, $d b, $d c, $d d, $d e, $d f) s
         WHERE g < $from + $count) x;
SQL
      ;;
  esac
}

# A long history in backend $1's migrated database at URL $2: $3 done jobs (a million per
# statement), 1,000 failed ones (two-line errors, failed over the last 1,000 minutes), 100
# ready and 20 processing, in 10 queues; then fresh statistics. Needs Q.
fill_history() {
  local backend=$1 url=$2 rows=$3 from count d=$HISTORY_DIGITS
  for ((from = 1; from <= rows; from += 1000000)); do
    count=$((rows - from + 1 < 1000000 ? rows - from + 1 : 1000000))
    printf '== %s: done jobs %d to %d of %d\n' "$backend" "$from" $((from + count - 1)) "$rows" >&2
    fill_done_chunk "$backend" "$url" "$from" "$count"
  done
  case $backend in
    postgresql)
      history_sql "$url" <<SQL
INSERT INTO job_queue (queue, status, attempts, payload, last_error, finished_at)
SELECT 'q' || (g % 10), 3, 25, '{}', 'error ' || g || E'\nat frame 2', now() - g * interval '1 minute'
  FROM generate_series(1, 1000) g;
INSERT INTO job_queue (queue, payload) SELECT 'q' || (g % 10), '{}' FROM generate_series(1, 100) g;
VACUUM ANALYZE job_queue;
SQL
      ;;
    sqlite)
      history_sql "$url" <<SQL
WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 1000)
INSERT INTO job_queue (queue, status, attempts, payload, last_error, finished_at)
SELECT 'q' || (n % 10), 3, 25, '{}', 'error ' || n || char(10) || 'at frame 2',
       strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || n || ' minutes') FROM c;
WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 100)
INSERT INTO job_queue (queue, payload) SELECT 'q' || (n % 10), '{}' FROM c;
ANALYZE;
SQL
      ;;
    mysql)
      history_sql "$url" <<SQL
SET time_zone = '+00:00';
INSERT INTO job_queue (queue, status, attempts, payload, last_error, finished_at)
SELECT CONCAT('q', g % 10), 3, 25, '{}', CONCAT('error ', g, '\nat frame 2'), NOW(6) - INTERVAL g MINUTE
  FROM (SELECT a.n + 10 * b.n + 100 * c.n AS g FROM $d a, $d b, $d c) s;
INSERT INTO job_queue (queue, payload)
SELECT CONCAT('q', g % 10), '{}' FROM (SELECT a.n + 10 * b.n AS g FROM $d a, $d b) s;
ANALYZE TABLE job_queue;
SQL
      ;;
  esac
  "$Q" --db "$url" claim q1 --limit 20 --worker bench-worker >/dev/null
}

# ms per run of "$@", $N runs in a row.
per_run_ms() {
  local start end i
  start=$(date +%s%N)
  for ((i = 0; i < N; i++)); do "$@" >/dev/null 2>&1 || true; done
  end=$(date +%s%N)
  awk -v s="$start" -v e="$end" -v n="$N" 'BEGIN { printf "%.2f", (e - s) / 1e6 / n }'
}
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
