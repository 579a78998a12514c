-- Queue names: the table refuses what the command line cannot name. An application that
-- writes job_queue itself (an outbox INSERT) could store a queue name with control
-- characters or spaces ("evil\x1b[2J"), which no queuectl command accepts, so its jobs
-- could be neither listed nor worked. A name is 1 to 64 characters of A-Z a-z 0-9 . _ : -,
-- as every command checks. SQLite cannot add a CHECK to an existing table: two triggers
-- do it, for an INSERT and for an UPDATE that sets queue (a claim or an ack does not, so
-- they cost those nothing). Rows stored before keep their names.
CREATE TRIGGER IF NOT EXISTS job_queue_queue_name
  BEFORE INSERT ON job_queue
  FOR EACH ROW WHEN typeof(NEW.queue) IS NOT 'text' OR length(NEW.queue) NOT BETWEEN 1 AND 64
                 OR NEW.queue GLOB '*[^A-Za-z0-9._:-]*'
BEGIN
  SELECT RAISE(ABORT, 'job_queue.queue: a queue name is 1 to 64 characters of A-Z a-z 0-9 . _ : -');
END;

CREATE TRIGGER IF NOT EXISTS job_queue_queue_rename
  BEFORE UPDATE OF queue ON job_queue
  FOR EACH ROW WHEN typeof(NEW.queue) IS NOT 'text' OR length(NEW.queue) NOT BETWEEN 1 AND 64
                 OR NEW.queue GLOB '*[^A-Za-z0-9._:-]*'
BEGIN
  SELECT RAISE(ABORT, 'job_queue.queue: a queue name is 1 to 64 characters of A-Z a-z 0-9 . _ : -');
END;
