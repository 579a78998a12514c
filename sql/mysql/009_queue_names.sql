-- Queue names: the table refuses what the command line cannot name. An application that
-- writes job_queue itself (an outbox INSERT) could store a queue name with control
-- characters or spaces ("evil\x1b[2J"), which no queuectl command accepts, so its jobs
-- could be neither listed nor worked. A name is 1 to 64 characters of A-Z a-z 0-9 . _ : -,
-- as every command checks; the constraint holds for an INSERT and for an UPDATE alike.
-- A CHECK constraint, not a trigger: a BEFORE INSERT trigger with the same REGEXP cost a
-- bulk INSERT a third of its speed (bench/queue_names.sh), the constraint nothing
-- measurable. MariaDB adds a CHECK by copying the table (writes wait meanwhile, once);
-- with check_constraint_checks off for that statement, rows stored before keep their
-- names instead of failing the migration. The name test looks for a character outside
-- the set ([^...]), not for a match of the whole name: REGEXP's $ also matches before a
-- final newline. The colon is CHAR(58) here: a migration statement holds no colon, which
-- SOCI's MySQL backend would read as a placeholder.
SET SESSION check_constraint_checks = 0;

ALTER TABLE job_queue
  ADD CONSTRAINT job_queue_queue_name
  CHECK (CHAR_LENGTH(queue) BETWEEN 1 AND 64
         AND REPLACE(queue, CHAR(58), '.') NOT REGEXP '[^A-Za-z0-9._-]');

SET SESSION check_constraint_checks = 1;
