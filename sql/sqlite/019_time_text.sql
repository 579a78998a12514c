-- Times as queuectl writes them: SQLite has no timestamp type, and the claim compares run_at
-- as text with strftime('%Y-%m-%d %H:%M:%f', 'now'). An application that writes job_queue
-- itself (an outbox INSERT) could store another form: an ISO 8601 'T...Z' sorts after every
-- 'YYYY-MM-DD HH:...' of that day, so the job looked due in `list` but was not claimed before
-- the next UTC day; a number sorts before all text, so it came first in every claim, could
-- not be read back, and held up its whole queue. Two triggers refuse any other form of
-- run_at on INSERT and on an UPDATE that sets it (a claim or an ack does not): 'YYYY-MM-DD
-- HH:MM:SS', a real date and time, with up to six digits of a second after a '.'. Rows stored
-- before keep their value.
CREATE TRIGGER IF NOT EXISTS job_queue_run_at_text
  BEFORE INSERT ON job_queue
  FOR EACH ROW WHEN typeof(NEW.run_at) IS NOT 'text' OR length(NEW.run_at) > 26
                 OR strftime('%Y-%m-%d %H:%M:%S', NEW.run_at) IS NOT substr(NEW.run_at, 1, 19)
                 OR NOT (length(NEW.run_at) = 19 OR (substr(NEW.run_at, 20, 1) = '.'
                         AND length(NEW.run_at) > 20 AND substr(NEW.run_at, 21) NOT GLOB '*[^0-9]*'))
BEGIN
  SELECT RAISE(ABORT, 'job_queue.run_at: write a UTC time as text YYYY-MM-DD HH:MM:SS[.ffffff], e.g. strftime(''%Y-%m-%d %H:%M:%f'', ''now'')');
END;

CREATE TRIGGER IF NOT EXISTS job_queue_run_at_change
  BEFORE UPDATE OF run_at ON job_queue
  FOR EACH ROW WHEN typeof(NEW.run_at) IS NOT 'text' OR length(NEW.run_at) > 26
                 OR strftime('%Y-%m-%d %H:%M:%S', NEW.run_at) IS NOT substr(NEW.run_at, 1, 19)
                 OR NOT (length(NEW.run_at) = 19 OR (substr(NEW.run_at, 20, 1) = '.'
                         AND length(NEW.run_at) > 20 AND substr(NEW.run_at, 21) NOT GLOB '*[^0-9]*'))
BEGIN
  SELECT RAISE(ABORT, 'job_queue.run_at: write a UTC time as text YYYY-MM-DD HH:MM:SS[.ffffff], e.g. strftime(''%Y-%m-%d %H:%M:%f'', ''now'')');
END;
