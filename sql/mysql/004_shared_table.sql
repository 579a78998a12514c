-- One table, many writers. Applications write this table with their own SQL (the
-- outbox, a worker of their own); what they write must mean what queuectl's writes mean.
--
-- Times: TIMESTAMP(6), not DATETIME(6). A DATETIME holds whatever the writing session's
-- clock said, so an application whose session runs at +09:00 wrote NOW(6) nine hours
-- ahead of queuectl's UTC: its jobs waited nine hours and its reaper took back live
-- leases. A TIMESTAMP is stored as UTC and converted to and from each session's time
-- zone, so NOW(6), comparisons and literals agree in every session. The price: it ends at
-- 2038-01-19 03:14:07 UTC on MariaDB before 11.5 and on MySQL 8 (queuectl refuses a later
-- run_at or lease with exit 2); MariaDB 11.5+ reaches 2106 with no change here.
-- This rebuilds the table (ALTER TABLE ... MODIFY): on a large table, run it off-peak.
-- The conversion reads the existing values in this session's zone, UTC, as written.
ALTER TABLE job_queue
  MODIFY run_at      TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  MODIFY locked_at   TIMESTAMP(6) NULL DEFAULT NULL,
  MODIFY lock_until  TIMESTAMP(6) NULL DEFAULT NULL,
  MODIFY created_at  TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  MODIFY updated_at  TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
                     ON UPDATE CURRENT_TIMESTAMP(6),
  MODIFY finished_at TIMESTAMP(6) NULL DEFAULT NULL;

ALTER TABLE queuectl_queues MODIFY paused_at TIMESTAMP(6) NULL DEFAULT NULL;

-- Attempts are counted when a job enters processing, whoever claims it: a claim that
-- does not count (the articles' claim) is counted here, one that does is not counted
-- twice. A fail that counts again on leaving processing (the articles' fail:
-- attempts + 1, and FAILED once attempts + 1 reaches max_attempts) has its extra count
-- dropped, and goes back to ready if the job still has attempts left. Without this, a
-- mixed fleet looped forever on a poison job, or gave up after one attempt of two.
-- Assignments run left to right: finished_at and status read NEW.status before it
-- changes, attempts after.
-- (MySQL commits each DDL statement: DROP first makes a re-run after a failure safe.)
DROP TRIGGER IF EXISTS job_queue_count_attempts;

CREATE TRIGGER job_queue_count_attempts BEFORE UPDATE ON job_queue FOR EACH ROW
  SET NEW.finished_at = IF(OLD.status = 1 AND NEW.status = 3
                             AND NEW.attempts = OLD.attempts + 1
                             AND OLD.attempts < NEW.max_attempts, NULL, NEW.finished_at),
      NEW.status = IF(OLD.status = 1 AND NEW.status = 3
                        AND NEW.attempts = OLD.attempts + 1
                        AND OLD.attempts < NEW.max_attempts, 0, NEW.status),
      NEW.attempts = CASE
        WHEN OLD.status <> 1 AND NEW.status = 1 THEN OLD.attempts + 1
        WHEN OLD.status = 1 AND NEW.status IN (0, 3) AND NEW.attempts = OLD.attempts + 1
          THEN OLD.attempts
        ELSE NEW.attempts
      END;
