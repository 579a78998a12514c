-- queuectl schema for MySQL 8.0.1+ and MariaDB 10.6+ (InnoDB, utf8mb4).
-- Times are DATETIME(6) holding UTC, because queuectl sets the session time zone to
-- UTC on every connection and takes every time from NOW(6), the database clock.
-- Text compares byte for byte (utf8mb4_bin), as on PostgreSQL and SQLite.
-- MySQL commits after each CREATE TABLE, so a migration cannot be rolled back as a
-- whole. IF NOT EXISTS lets a run that stopped half way simply be run again.
CREATE TABLE IF NOT EXISTS job_queue (
  id           BIGINT         NOT NULL AUTO_INCREMENT,
  queue        VARCHAR(64)    NOT NULL,
  status       TINYINT        NOT NULL DEFAULT 0,
  priority     INT            NOT NULL DEFAULT 0,
  run_at       DATETIME(6)    NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  attempts     INT            NOT NULL DEFAULT 0,
  max_attempts INT            NOT NULL DEFAULT 25,
  payload      JSON           NOT NULL,
  result       JSON           NULL,
  last_error   TEXT           NULL,
  locked_by    VARCHAR(128)   NULL,
  lock_token   CHAR(36)       NULL,
  locked_at    DATETIME(6)    NULL,
  lock_until   DATETIME(6)    NULL,
  dedupe_key   VARBINARY(255) NULL,
  group_key    VARBINARY(255) NULL,
  created_at   DATETIME(6)    NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at   DATETIME(6)    NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  finished_at  DATETIME(6)    NULL,
  PRIMARY KEY (id),
  -- A dedupe key is unique per queue across all statuses until the job is purged.
  -- VARBINARY, not VARCHAR, so that 'k' and 'k ' are two keys (utf8mb4_bin pads).
  UNIQUE KEY uq_job_queue_dedupe (queue, dedupe_key),
  -- The claim names this index (FORCE INDEX). Its rows come in claim order, so the
  -- locking read stops after LIMIT rows and locks only those. With run_at before
  -- priority it would sort, and lock, every due row of the queue first. MariaDB
  -- before 10.8 ignores DESC and sorts anyway (still correct, only slower).
  KEY ix_job_queue_claim (queue, status, priority DESC, run_at, id),
  -- The reaper and the lease listing, by lease expiry.
  KEY ix_job_queue_lease (status, lock_until),
  CONSTRAINT ck_job_queue_status CHECK (status BETWEEN 0 AND 4)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Per-queue settings. A queue is paused while paused_at is set.
-- Named locks need no table here. GET_LOCK holds them on the session.
CREATE TABLE IF NOT EXISTS queuectl_queues (
  queue     VARCHAR(64) NOT NULL,
  paused_at DATETIME(6) NULL,
  PRIMARY KEY (queue)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
