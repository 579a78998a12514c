-- Jobs that wait for other jobs (enqueue --after ID,...), and batches with a callback.
-- A waiting job is a ready job (status 0) whose run_at is beyond any claim (9999-12-31;
-- MySQL/MariaDB: the end of TIMESTAMP(6)); the transaction that finishes its last parent sets
-- run_at to now.
--   job_queue.has_dependents  1 once a job has been named by an --after: its ack then takes
--                  the path that releases the jobs waiting for it (a plain ack refuses it)
--   queuectl_job_deps  one row for each (parent, child); state 0 the child still waits for
--                  this parent, 1 the parent is done, 2 the parent failed for good or was
--                  canceled and the child's policy was applied
--   queuectl_job_waits  one row for each job enqueued with --after: how many of its parents
--                  are not yet settled, and what a parent's failure does to it
--                  (on_parent_failure 0 cancel, 1 run, 2 wait)
ALTER TABLE job_queue ADD COLUMN has_dependents SMALLINT NOT NULL DEFAULT 0;

CREATE TABLE IF NOT EXISTS queuectl_job_deps (
  parent_id BIGINT   NOT NULL,
  child_id  BIGINT   NOT NULL,
  state     SMALLINT NOT NULL DEFAULT 0,
  PRIMARY KEY (parent_id, child_id)
);
CREATE INDEX IF NOT EXISTS queuectl_job_deps_child ON queuectl_job_deps (child_id);

CREATE TABLE IF NOT EXISTS queuectl_job_waits (
  child_id          BIGINT   PRIMARY KEY,
  pending           INTEGER  NOT NULL,
  on_parent_failure SMALLINT NOT NULL DEFAULT 0
);

-- Batches (batch create / enqueue --batch / batch close): when every member has finished and
-- the batch is closed, the transaction that saw it so enqueues the one callback job.
--   total, pending    members added, and those not yet finished (done, failed for good or
--                     canceled)
--   done, failed, canceled  how the finished members ended
--   on_success_*, on_failure_*  the callback's queue and payload (a JSON object) when every
--                     member is done, or when one is not; NULL: no job for that outcome
--   callback_job_id   the job it enqueued
CREATE TABLE IF NOT EXISTS queuectl_batches (
  id                 BIGSERIAL   PRIMARY KEY,
  total              INTEGER     NOT NULL DEFAULT 0,
  pending            INTEGER     NOT NULL DEFAULT 0,
  done               INTEGER     NOT NULL DEFAULT 0,
  failed             INTEGER     NOT NULL DEFAULT 0,
  canceled           INTEGER     NOT NULL DEFAULT 0,
  on_success_queue   TEXT,
  on_success_payload TEXT,
  on_failure_queue   TEXT,
  on_failure_payload TEXT,
  callback_job_id    BIGINT,
  created_at         TIMESTAMPTZ NOT NULL DEFAULT now(),
  closed_at          TIMESTAMPTZ,
  finished_at        TIMESTAMPTZ
);

-- One row per member; settled once its end has been counted.
CREATE TABLE IF NOT EXISTS queuectl_batch_jobs (
  job_id   BIGINT   PRIMARY KEY,
  batch_id BIGINT   NOT NULL,
  settled  SMALLINT NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS queuectl_batch_jobs_batch ON queuectl_batch_jobs (batch_id);
