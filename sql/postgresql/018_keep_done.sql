-- Queues that keep no done job (issue 34; `queue QUEUE --keep-done off`): an ack deletes its
-- job instead of writing it done, as graphile-worker completes a job, Amazon SQS deletes a
-- message and Solid Queue drops a finished job with preserve_finished_jobs off. A DELETE writes
-- no new version of the row and no index entry; an ack that keeps the job writes both.
-- Failed and canceled jobs are kept as before (and the retention applies to them).
ALTER TABLE queuectl_queues ADD COLUMN IF NOT EXISTS keep_done BOOLEAN NOT NULL DEFAULT true;
