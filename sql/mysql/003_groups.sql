-- Ordered groups. Jobs of one queue with the same group_key run one at a time, in id
-- order. A ready job with a group key may be claimed only when no job of its group is
-- processing and no older job of its group is ready (waiting out a backoff, say), or, in
-- strict mode, failed. The claim probes this index for each grouped candidate, one
-- status at a time, so finished rows in it are never read.
-- (Version 3 on every backend. 002 exists on PostgreSQL only.)
ALTER TABLE job_queue ADD KEY ix_job_queue_groups (queue, group_key, status, id);

-- Strict mode, per queue, beside the pause flag. A failed head then blocks its group
-- until it is retried, canceled or purged.
ALTER TABLE queuectl_queues ADD COLUMN strict_groups TINYINT(1) NOT NULL DEFAULT 0;
