-- Ordered groups. Jobs of one queue with the same group_key run one at a time, in id
-- order. A ready job with a group key may be claimed only when no job of its group is
-- processing and no older job of its group is ready (waiting out a backoff, say), or, in
-- strict mode, failed. The claim probes this index for each grouped candidate, one
-- status at a time. It holds only the rows that can block a group, so finished jobs and
-- ungrouped ones never enter it (the statements repeat its WHERE terms, as SQLite needs).
-- (Version 3 on every backend. 002 exists on PostgreSQL only.)
CREATE INDEX job_queue_groups ON job_queue (queue, group_key, status, id)
  WHERE group_key IS NOT NULL AND status IN (0, 1, 3);

-- Strict mode, per queue, beside the pause flag. A failed head then blocks its group
-- until it is retried, canceled or purged.
ALTER TABLE queuectl_queues ADD COLUMN strict_groups INTEGER NOT NULL DEFAULT 0;
