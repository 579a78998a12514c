-- Ordered groups. Jobs of one queue with the same group_key run one at a time, in id
-- order. A ready job with a group key may be claimed only when no job of its group is
-- processing and no older job of its group is ready (waiting out a backoff, say), or, in
-- strict mode, failed. The claim probes this index for each grouped candidate. It holds
-- only the rows that can block a group, so finished jobs never enter it. On a large busy
-- table a DBA may build it first with CREATE INDEX CONCURRENTLY (same name and shape);
-- this migration then keeps it.
CREATE INDEX IF NOT EXISTS job_queue_groups ON job_queue (queue, group_key, status, id)
  WHERE group_key IS NOT NULL AND status IN (0, 1, 3);

-- Strict mode, per queue, beside the pause flag. A failed head then blocks its group
-- until it is retried, canceled or purged.
ALTER TABLE queuectl_queues ADD COLUMN strict_groups BOOLEAN NOT NULL DEFAULT false;

-- When a group head finishes (done, failed or canceled), the next job of its group may be
-- due: wake idle workers as for any job that becomes ready.
CREATE TRIGGER job_queue_notify_group_next
  AFTER UPDATE OF status ON job_queue
  FOR EACH ROW WHEN (NEW.group_key IS NOT NULL AND OLD.status IN (0, 1) AND NEW.status >= 2)
  EXECUTE FUNCTION queuectl_notify_queue();

-- Leaving strict mode unblocks every group with a failed head.
CREATE TRIGGER queuectl_queues_notify_unstrict
  AFTER UPDATE OF strict_groups ON queuectl_queues
  FOR EACH ROW WHEN (OLD.strict_groups AND NOT NEW.strict_groups)
  EXECUTE FUNCTION queuectl_notify_queue();
