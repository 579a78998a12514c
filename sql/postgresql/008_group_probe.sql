-- The claim asks, for each grouped candidate, whether a job of its group is processing.
-- job_queue_processing (migration 5) held only the queue, and the planner could take it
-- for that probe because it is small: each probe then read every processing row of the
-- queue, so a claim of 100 with 200 jobs processing read 20,000 rows. This index answers
-- the probe from one entry, and still counts a queue's processing jobs for its
-- concurrency limit. On a large busy table a DBA may build it first with CREATE INDEX
-- CONCURRENTLY (same name and shape); this migration then keeps it. (Version 8 on
-- PostgreSQL only: SQLite's claim names the index its probes use, and MySQL/MariaDB's
-- probes force ix_job_queue_groups.)
CREATE INDEX IF NOT EXISTS job_queue_processing_groups ON job_queue (queue, group_key, id)
  WHERE status = 1;
DROP INDEX IF EXISTS job_queue_processing;
