-- One table, many writers. Applications write this table with their own SQL (the
-- outbox, a worker of their own); what they write must mean what queuectl's writes mean.
--
-- Attempts are counted when a job enters processing, whoever claims it: a claim that
-- does not count (the articles' claim) is counted here, one that does is not counted
-- twice. A fail that counts again on leaving processing (the articles' fail:
-- attempts + 1, and FAILED once attempts + 1 reaches max_attempts) has its extra count
-- dropped, and goes back to ready if the job still has attempts left. Without this, a
-- mixed fleet looped forever on a poison job, or gave up after one attempt of two.
-- queuectl's own writes never match the WHEN clause. SQLite's triggers cannot change
-- NEW, so this one writes the row again (recursive triggers are off: it fires once).
CREATE TRIGGER job_queue_count_attempts
  AFTER UPDATE OF status ON job_queue
  FOR EACH ROW WHEN (OLD.status <> 1 AND NEW.status = 1 AND NEW.attempts <> OLD.attempts + 1)
                 OR (OLD.status = 1 AND NEW.status IN (0, 3) AND NEW.attempts = OLD.attempts + 1)
BEGIN
  UPDATE job_queue
     SET attempts = CASE WHEN NEW.status = 1 THEN OLD.attempts + 1 ELSE OLD.attempts END,
         finished_at = CASE WHEN NEW.status = 3 AND OLD.attempts < NEW.max_attempts
                            THEN NULL ELSE NEW.finished_at END,
         status = CASE WHEN NEW.status = 3 AND OLD.attempts < NEW.max_attempts
                       THEN 0 ELSE NEW.status END
   WHERE id = NEW.id; END;
