-- Queue names: the table refuses what the command line cannot name. An application that
-- writes job_queue itself (an outbox INSERT) could store a queue name with control
-- characters or spaces ("evil\x1b[2J"), which no queuectl command accepts, so its jobs
-- could be neither listed nor worked. A name is 1 to 64 characters of A-Z a-z 0-9 . _ : -,
-- as every command checks.
-- NOT VALID: the check applies to every row inserted or updated from now on, without
-- reading the existing rows (instant on a large table). A row stored before with such a
-- name cannot be updated until its queue is renamed: UPDATE job_queue SET queue = 'q2'
-- WHERE queue = ... (find them with: SELECT DISTINCT queue FROM job_queue WHERE queue !~
-- '^[A-Za-z0-9._:-]{1,64}$').
ALTER TABLE job_queue
  ADD CONSTRAINT job_queue_queue_name
  CHECK (char_length(queue) BETWEEN 1 AND 64 AND queue !~ '[^A-Za-z0-9._:-]') NOT VALID;
