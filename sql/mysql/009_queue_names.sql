-- Queue names: the table refuses what the command line cannot name. An application that
-- writes job_queue itself (an outbox INSERT) could store a queue name with control
-- characters or spaces ("evil\x1b[2J"), which no queuectl command accepts, so its jobs
-- could be neither listed nor worked. A name is 1 to 64 characters of A-Z a-z 0-9 . _ : -,
-- as every command checks.
-- Triggers, not a CHECK constraint: adding a CHECK makes InnoDB copy the whole table,
-- writes blocked meanwhile; a trigger is added at once. Rows stored before keep their
-- names. The name test looks for a character outside the set ([^...]), not for a match
-- of the whole name: REGEXP's $ also matches before a final newline. The colon is
-- CHAR(58) here: a migration statement holds no colon, which SOCI's MySQL backend would
-- read as a placeholder.
--
-- An INSERT: a trigger of its own.
DROP TRIGGER IF EXISTS job_queue_queue_name;

CREATE TRIGGER job_queue_queue_name BEFORE INSERT ON job_queue FOR EACH ROW
BEGIN
  IF NEW.queue IS NULL OR CHAR_LENGTH(NEW.queue) NOT BETWEEN 1 AND 64
     OR REPLACE(NEW.queue, CHAR(58), '.') REGEXP '[^A-Za-z0-9._-]' THEN
    SIGNAL SQLSTATE '45000'
      SET MESSAGE_TEXT = 'job_queue.queue - a queue name is 1 to 64 characters of A-Z a-z 0-9 . _ - and the colon';
  END IF;
END;

-- An UPDATE that renames a queue: the check joins the rules of job_queue_transitions
-- (migration 8), as one trigger again, job_queue_rules: each BEFORE UPDATE trigger costs
-- its set-up on every row a claim or an ack changes. The rules are those of migration 8,
-- word for word. The new trigger is created before the old one is dropped, so that no
-- update runs without the rules; with both in place each rule still applies once (every
-- value is computed from OLD, and a dead letter already moved is status 0).
DROP TRIGGER IF EXISTS job_queue_rules;

CREATE TRIGGER job_queue_rules BEFORE UPDATE ON job_queue FOR EACH ROW
BEGIN
  IF NEW.queue <> OLD.queue AND (CHAR_LENGTH(NEW.queue) NOT BETWEEN 1 AND 64
                                 OR REPLACE(NEW.queue, CHAR(58), '.') REGEXP '[^A-Za-z0-9._-]') THEN
    SIGNAL SQLSTATE '45000'
      SET MESSAGE_TEXT = 'job_queue.queue - a queue name is 1 to 64 characters of A-Z a-z 0-9 . _ - and the colon';
  END IF;
  IF NEW.status <> OLD.status THEN
    IF NEW.status = 1 THEN
      SET NEW.attempts = OLD.attempts + 1;
    ELSEIF OLD.status = 1 AND NEW.status IN (0, 3) AND NEW.attempts = OLD.attempts + 1 THEN
      IF NEW.status = 3 AND OLD.attempts < NEW.max_attempts THEN
        SET NEW.finished_at = NULL, NEW.status = 0;
      END IF;
      SET NEW.attempts = OLD.attempts;
    END IF;
    IF OLD.status = 1 AND NEW.status = 3
       AND EXISTS (SELECT 1 FROM queuectl_queues p
                    WHERE p.queue = OLD.queue AND p.dead_letter IS NOT NULL
                      AND p.dead_letter <> OLD.queue) THEN
      SET NEW.dead_from = OLD.queue,
          NEW.queue = (SELECT p.dead_letter FROM queuectl_queues p WHERE p.queue = OLD.queue),
          NEW.status = 0, NEW.attempts = 0, NEW.run_at = CURRENT_TIMESTAMP(6),
          NEW.finished_at = NULL, NEW.dedupe_key = NULL;
    END IF;
  END IF;
END;

DROP TRIGGER IF EXISTS job_queue_transitions;
