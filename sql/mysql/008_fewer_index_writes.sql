-- Fewer writes per claim and ack. InnoDB has no partial indexes: every index whose key
-- holds status moved each job's entry at its claim (0 -> 1) and again at its ack (1 -> 2),
-- and every such move leaves a delete-marked entry for purge. Two of them need status only
-- for some rows:
--   ix_job_queue_groups, for jobs with a group key: it is now keyed on group_status, which
--     is status for a grouped job and NULL for the others, so a job without a key keeps
--     one entry from enqueue to purge;
--   ix_job_queue_finished, for done, failed and cancelled jobs: it is now keyed on
--     finished_status, status from 2 up and NULL before, so a claim leaves it alone and an
--     ack moves the entry once.
-- Both columns are VIRTUAL (computed, never stored) and INVISIBLE (SELECT * and an INSERT
-- without a column list do not see them). MariaDB reads the word from the comment marked
-- M!, MySQL 8.0.23+ from the other; MySQL before 8.0.23 has no invisible columns and
-- skips both, so there the columns show. A probe for group_key = K AND group_status = S
-- finds exactly the rows with status S of group K, as before; finished_status = S finds
-- the rows with status S >= 2.
--
-- The two BEFORE UPDATE triggers of migrations 4 and 5 become one, with the same rules:
-- each trigger costs its set-up on every row an UPDATE changes, and this one returns at
-- once when status does not change. The new trigger is created before the old ones are
-- dropped, so that no update runs without the rules while this migration runs; with all
-- three in place each rule still applies once (every value is computed from OLD, and the
-- old triggers have already turned a counted fail or a dead letter into status 0).
-- Rules, for a row whose status changes:
--   - entering processing (a claim, by anyone) counts one attempt: attempts = OLD + 1;
--   - leaving processing for ready or failed with attempts = OLD + 1 (a fail that counted
--     again) keeps OLD's count, and such a "failed" job with attempts left goes back to
--     ready (finished_at cleared);
--   - a job that leaves processing as failed moves to its queue's dead-letter queue, when
--     the queue names one, as a fresh ready job there (dead_from = the old queue).
DROP TRIGGER IF EXISTS job_queue_transitions;

CREATE TRIGGER job_queue_transitions BEFORE UPDATE ON job_queue FOR EACH ROW
BEGIN
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

DROP TRIGGER IF EXISTS job_queue_dead_letter;

DROP TRIGGER IF EXISTS job_queue_count_attempts;

-- One statement, so that it applies whole or not at all (a failed migrate runs this file
-- again from the top, and the trigger statements above allow that).
ALTER TABLE job_queue
  ADD COLUMN group_status TINYINT AS (IF(group_key IS NULL, NULL, status))
      VIRTUAL /*M!100303 INVISIBLE */ /*!80023 INVISIBLE */,
  ADD COLUMN finished_status TINYINT AS (IF(status >= 2, status, NULL))
      VIRTUAL /*M!100303 INVISIBLE */ /*!80023 INVISIBLE */,
  DROP KEY ix_job_queue_groups,
  ADD KEY ix_job_queue_groups (queue, group_key, group_status, id),
  DROP KEY ix_job_queue_finished,
  ADD KEY ix_job_queue_finished (finished_status, finished_at, queue);
