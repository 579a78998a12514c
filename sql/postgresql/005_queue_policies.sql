-- Queue policies, kept beside the pause flag and strict mode.
--   dead_letter     where a job goes when it gives up (out of attempts, or failed for
--                   good), instead of staying failed in its queue
--   max_processing  at most this many jobs of the queue processing at once, across every
--                   worker and host (NULL, the default, is no limit)
ALTER TABLE queuectl_queues
  ADD COLUMN dead_letter TEXT CHECK (char_length(dead_letter) BETWEEN 1 AND 64),
  ADD COLUMN max_processing INTEGER CHECK (max_processing > 0);

-- A dead letter keeps its id, payload, group key and last error; dead_from names the
-- queue it gave up in, until queuectl move sends it back.
ALTER TABLE job_queue ADD COLUMN dead_from TEXT;

-- The limit counts the processing jobs of one queue. Only processing rows enter it.
CREATE INDEX IF NOT EXISTS job_queue_processing ON job_queue (queue) WHERE status = 1;

-- Giving up moves the job in the same statement that fails it, whoever fails it (fail,
-- the reaper, an application of its own): the job leaves processing as failed, and if
-- its queue names a dead-letter queue it becomes a ready job there instead, attempts
-- from 0, its dedupe key given up (the key may be taken in the other queue; the
-- producer may enqueue it again, as after a purge). Runs after
-- job_queue_count_attempts (triggers fire in name order), so a fail that still had
-- attempts left is already back to ready and not moved.
CREATE OR REPLACE FUNCTION queuectl_dead_letter() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  target text;
BEGIN
  SELECT p.dead_letter INTO target FROM queuectl_queues p WHERE p.queue = OLD.queue;
  IF target IS NOT NULL AND target <> OLD.queue THEN
    NEW.dead_from := OLD.queue;
    NEW.queue := target;
    NEW.status := 0;
    NEW.attempts := 0;
    NEW.run_at := now();
    NEW.finished_at := NULL;
    NEW.dedupe_key := NULL;
  END IF;
  RETURN NEW;
END
$$;

CREATE TRIGGER job_queue_dead_letter
  BEFORE UPDATE OF status ON job_queue
  FOR EACH ROW WHEN (OLD.status = 1 AND NEW.status = 3)
  EXECUTE FUNCTION queuectl_dead_letter();

-- How many jobs a claim of `wanted` may take from `q` now. Without a limit, all of them.
-- With one, the queue row is locked first, so claimers of a limited queue take turns
-- until each commits, and the processing jobs are counted after the lock is held: a
-- function reads with a snapshot of its own, taken then, so it sees every claim
-- committed before it. (The claim statement itself reads with the snapshot it started
-- with; its SKIP LOCKED read still re-checks each row it takes.)
CREATE OR REPLACE FUNCTION queuectl_claim_slots(q text, wanted integer) RETURNS integer
  LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  cap integer;
  busy integer;
BEGIN
  SELECT p.max_processing INTO cap FROM queuectl_queues p
   WHERE p.queue = q AND p.max_processing IS NOT NULL
     FOR UPDATE;
  IF cap IS NULL THEN
    RETURN wanted;
  END IF;
  SELECT count(*) INTO busy FROM job_queue j WHERE j.queue = q AND j.status = 1;
  RETURN GREATEST(LEAST(wanted, cap - busy), 0);
END
$$;

-- queuectl move reads the dead letters of a queue (or of all queues) by id.
CREATE INDEX IF NOT EXISTS job_queue_dead_letters ON job_queue (queue, id)
  WHERE dead_from IS NOT NULL;

-- A ready job that moves to another queue (a dead letter, or one sent back by move) wakes
-- that queue's idle workers, as any job that becomes ready does.
CREATE TRIGGER job_queue_notify_moved
  AFTER UPDATE OF queue ON job_queue
  FOR EACH ROW WHEN (NEW.status = 0 AND OLD.queue <> NEW.queue AND NEW.run_at <= now())
  EXECUTE FUNCTION queuectl_notify_queue();
