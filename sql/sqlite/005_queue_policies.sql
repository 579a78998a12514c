-- Queue policies, kept beside the pause flag and strict mode.
--   dead_letter     where a job goes when it gives up (out of attempts, or failed for
--                   good), instead of staying failed in its queue
--   max_processing  at most this many jobs of the queue processing at once (NULL, the
--                   default, is no limit)
ALTER TABLE queuectl_queues ADD COLUMN dead_letter TEXT
  CHECK (dead_letter IS NULL OR length(dead_letter) BETWEEN 1 AND 64);
ALTER TABLE queuectl_queues ADD COLUMN max_processing INTEGER
  CHECK (max_processing IS NULL OR max_processing > 0);

-- A dead letter keeps its id, payload, group key and last error; dead_from names the
-- queue it gave up in, until queuectl move sends it back.
ALTER TABLE job_queue ADD COLUMN dead_from TEXT;

-- The limit counts the processing jobs of one queue. Only processing rows enter it.
CREATE INDEX IF NOT EXISTS job_queue_processing ON job_queue (queue) WHERE status = 1;

-- Giving up moves the job in the same statement that fails it, whoever fails it (fail,
-- the reaper, an application of its own): the job leaves processing as failed, and if
-- its queue names a dead-letter queue it becomes a ready job there instead, attempts
-- from 0, its dedupe key given up (the key may be taken in the other queue; the producer
-- may enqueue it again, as after a purge). SQLite's triggers cannot change NEW and their
-- order is not defined, so the attempt counting of 004 and the move are one trigger, in
-- that order: a fail that still had attempts left is back to ready before the move looks.
DROP TRIGGER IF EXISTS job_queue_count_attempts;

CREATE TRIGGER job_queue_count_attempts
  AFTER UPDATE OF status ON job_queue
  FOR EACH ROW WHEN (OLD.status <> 1 AND NEW.status = 1 AND NEW.attempts <> OLD.attempts + 1)
                 OR (OLD.status = 1 AND NEW.status IN (0, 3) AND NEW.attempts = OLD.attempts + 1)
                 OR (OLD.status = 1 AND NEW.status = 3)
BEGIN
  UPDATE job_queue
     SET attempts = CASE WHEN NEW.status = 1 THEN OLD.attempts + 1 ELSE OLD.attempts END,
         finished_at = CASE WHEN NEW.status = 3 AND OLD.attempts < NEW.max_attempts
                            THEN NULL ELSE NEW.finished_at END,
         status = CASE WHEN NEW.status = 3 AND OLD.attempts < NEW.max_attempts
                       THEN 0 ELSE NEW.status END
   WHERE id = NEW.id
     AND ((OLD.status <> 1 AND NEW.status = 1 AND NEW.attempts <> OLD.attempts + 1)
          OR (OLD.status = 1 AND NEW.status IN (0, 3) AND NEW.attempts = OLD.attempts + 1));
  UPDATE job_queue
     SET dead_from = OLD.queue,
         queue = (SELECT p.dead_letter FROM queuectl_queues p WHERE p.queue = OLD.queue),
         status = 0, attempts = 0, run_at = strftime('%Y-%m-%d %H:%M:%f', 'now'),
         finished_at = NULL, dedupe_key = NULL
   WHERE id = NEW.id AND status = 3 AND OLD.status = 1
     AND (SELECT p.dead_letter FROM queuectl_queues p WHERE p.queue = OLD.queue) IS NOT NULL
     AND (SELECT p.dead_letter FROM queuectl_queues p WHERE p.queue = OLD.queue) <> OLD.queue; END;

-- queuectl move reads the dead letters of a queue (or of all queues) by id.
CREATE INDEX IF NOT EXISTS job_queue_dead_letters ON job_queue (queue, id)
  WHERE dead_from IS NOT NULL;
