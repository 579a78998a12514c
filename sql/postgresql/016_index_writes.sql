-- Fewer index entries for each change of a job (issue 34, WAL per job). An UPDATE that
-- changes an indexed column (a claim and an ack change `status`) writes a new entry in
-- every index whose predicate the new row version meets. The dedupe index took one from
-- every version of every job, though only jobs enqueued with a dedupe key need it: it now
-- holds those alone, and keeps the same uniqueness (NULL keys never conflicted). Inserts
-- name it as ON CONFLICT (queue, dedupe_key) WHERE dedupe_key IS NOT NULL, which the old
-- index answers as well. The distinct queues (kQueuesOfJobs), which it used to give, now
-- come from the claim, processing and finished indexes, which together hold every job.
-- A claim and an ack of 100 at a time wrote about 230 bytes of WAL a job less in
-- bench/wal.sh. On a large busy table a DBA may build job_queue_dedupe_key first with
-- CREATE UNIQUE INDEX CONCURRENTLY (same name and shape); this migration then keeps it.
CREATE UNIQUE INDEX IF NOT EXISTS job_queue_dedupe_key ON job_queue (queue, dedupe_key)
  WHERE dedupe_key IS NOT NULL;
DROP INDEX IF EXISTS job_queue_dedupe;
