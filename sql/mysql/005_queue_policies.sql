-- Queue policies, kept beside the pause flag and strict mode.
--   dead_letter     where a job goes when it gives up (out of attempts, or failed for
--                   good), instead of staying failed in its queue
--   max_processing  at most this many jobs of the queue processing at once, across every
--                   worker and host (NULL, the default, is no limit)
ALTER TABLE queuectl_queues
  ADD COLUMN dead_letter VARCHAR(64) NULL,
  ADD COLUMN max_processing INT NULL,
  ADD CONSTRAINT ck_queuectl_queues_max_processing CHECK (max_processing > 0);

-- A dead letter keeps its id, payload, group key and last error; dead_from names the
-- queue it gave up in, until queuectl move sends it back. (The limit counts processing
-- jobs through ix_job_queue_claim, which starts with queue and status.)
ALTER TABLE job_queue ADD COLUMN dead_from VARCHAR(64) NULL;

-- Giving up moves the job in the same statement that fails it, whoever fails it (fail,
-- the reaper, an application of its own): the job leaves processing as failed, and if
-- its queue names a dead-letter queue it becomes a ready job there instead, attempts
-- from 0, its dedupe key given up (the key may be taken in the other queue; the producer
-- may enqueue it again, as after a purge). FOLLOWS: after job_queue_count_attempts, so a
-- fail that still had attempts left is already back to ready and not moved.
DROP TRIGGER IF EXISTS job_queue_dead_letter;

CREATE TRIGGER job_queue_dead_letter BEFORE UPDATE ON job_queue FOR EACH ROW
  FOLLOWS job_queue_count_attempts
BEGIN
  DECLARE target VARCHAR(64) DEFAULT NULL;
  IF OLD.status = 1 AND NEW.status = 3 THEN
    SET target = (SELECT p.dead_letter FROM queuectl_queues p WHERE p.queue = OLD.queue);
    IF target IS NOT NULL AND target <> OLD.queue THEN
      SET NEW.dead_from = OLD.queue, NEW.queue = target, NEW.status = 0, NEW.attempts = 0,
          NEW.run_at = CURRENT_TIMESTAMP(6), NEW.finished_at = NULL, NEW.dedupe_key = NULL;
    END IF;
  END IF;
END;

-- queuectl move reads the dead letters of all queues by id (those of one queue through
-- ix_job_queue_claim).
ALTER TABLE job_queue ADD KEY ix_job_queue_dead_letters (dead_from, id);
