-- Queues that keep no done job (issue 34; `queue QUEUE --keep-done off`): an ack deletes its
-- job instead of writing it done. Failed and canceled jobs are kept as before.
ALTER TABLE queuectl_queues ADD COLUMN IF NOT EXISTS keep_done BOOLEAN NOT NULL DEFAULT TRUE;
