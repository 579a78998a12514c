-- queuectl top reads the newest failures and counts failed jobs per queue. Failed rows
-- are few beside done ones, so this index over failed rows only, newest first by
-- finished_at, serves both without reading a done row. (Jobs done in the last minute are
-- counted per queue through job_queue_finished.)
-- (Version 7 on every backend. 005 and 006 are taken by other changes.)
CREATE INDEX IF NOT EXISTS job_queue_failed ON job_queue (finished_at, queue) WHERE status = 3;
