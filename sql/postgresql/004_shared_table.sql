-- One table, many writers. Applications write this table with their own SQL (the
-- outbox, a worker of their own); what they write must mean what queuectl's writes mean.
-- (Times need nothing here: timestamptz is right in every session's time zone.)
--
-- Attempts are counted when a job enters processing, whoever claims it: a claim that
-- does not count (the articles' claim) is counted here, one that does is not counted
-- twice. A fail that counts again on leaving processing (the articles' fail:
-- attempts + 1, and FAILED once attempts + 1 reaches max_attempts) has its extra count
-- dropped, and goes back to ready if the job still has attempts left. Without this, a
-- mixed fleet looped forever on a poison job, or gave up after one attempt of two.
-- queuectl's own writes never match the WHEN clause, so they do not call the function.
CREATE OR REPLACE FUNCTION queuectl_count_attempts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status = 1 THEN
    NEW.attempts := OLD.attempts + 1;
  ELSE
    IF NEW.status = 3 AND OLD.attempts < NEW.max_attempts THEN
      NEW.status := 0;
      NEW.finished_at := NULL;
    END IF;
    NEW.attempts := OLD.attempts;
  END IF;
  RETURN NEW;
END
$$;

CREATE TRIGGER job_queue_count_attempts
  BEFORE UPDATE OF status ON job_queue
  FOR EACH ROW WHEN ((OLD.status <> 1 AND NEW.status = 1 AND NEW.attempts <> OLD.attempts + 1)
                     OR (OLD.status = 1 AND NEW.status IN (0, 3)
                         AND NEW.attempts = OLD.attempts + 1))
  EXECUTE FUNCTION queuectl_count_attempts();
