-- The group probes, re-cut so that a claim and an ack touch small indexes. Until now one
-- index, job_queue_groups (queue, group_key, status, id), held every ready, processing and
-- failed grouped job: each claim moved its jobs' entries from status 0 to 1 and each ack
-- deleted them again, two writes to a large index scattered over its pages for each job,
-- which left grouped claim+ack at about 0.6x of ungrouped. Now:
--   * processing jobs, grouped or not, by (queue, group_key, id): small (only what is
--     leased), hot in the page cache; it answers "is a job of this group processing?" and
--     counts a queue's processing jobs for its concurrency limit (so job_queue_processing
--     of migration 5 goes, as it did on PostgreSQL in its migration 8);
--   * ready grouped jobs by (queue, group_key, id): "is an older job of this group ready?";
--     the claim leaves it once per job, the ack not at all;
--   * failed grouped jobs by (queue, group_key, id): strict mode's "did an older job of
--     this group fail?".
-- The statements name these indexes (INDEXED BY) and repeat their WHERE terms, as SQLite
-- needs to use a partial index. Binaries older than this migration name job_queue_groups
-- in their claim, and cannot claim from a schema migrated to version 8.
CREATE INDEX IF NOT EXISTS job_queue_processing_groups ON job_queue (queue, group_key, id)
  WHERE status = 1;
CREATE INDEX IF NOT EXISTS job_queue_ready_groups ON job_queue (queue, group_key, id)
  WHERE status = 0 AND group_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS job_queue_failed_groups ON job_queue (queue, group_key, id)
  WHERE status = 3 AND group_key IS NOT NULL;
DROP INDEX IF EXISTS job_queue_groups;
DROP INDEX IF EXISTS job_queue_processing;
