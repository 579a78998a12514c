-- Queues that keep no done job (issue 34; `queue QUEUE --keep-done off`): an ack deletes its
-- job instead of writing it done. Failed and canceled jobs are kept as before.
ALTER TABLE queuectl_queues ADD COLUMN keep_done INTEGER NOT NULL DEFAULT 1 CHECK (keep_done IN (0, 1));
