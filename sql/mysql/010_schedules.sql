-- Recurring schedules (queuectl cron). One row per schedule, fired by any number of
-- processes at once without a leader. The row carries the guarantee that each tick makes
-- one job. A firer locks the due rows it picks (SKIP LOCKED where the server has it), inserts the jobs, and moves
-- next_fire on with an UPDATE whose WHERE names the next_fire it read. Jobs and that
-- UPDATE commit together, so a tick another firer took changes no row and inserts nothing.
-- Times of the schedule are whole seconds since 1970-01-01 UTC (BIGINT), read from the
-- database clock. The schedule text and its IANA time zone are kept as entered. queuectl
-- computes each next tick from the previous one.
--   misfire        once (ticks missed during downtime make one job), skip (none), all
--                  (each, at most misfire_limit of the latest); a tick is missed when it
--                  is more than misfire_after seconds late, and a later one runs anyway
--   overlap        allow, or skip (no job while the last one is ready or processing)
--   fired, missed, skipped  counts of ticks that made a job, were lost to downtime, or
--                  were skipped because the last job was unfinished
--   seq            the number of rows this schedule has written to queuectl_schedule_fires
CREATE TABLE IF NOT EXISTS queuectl_schedules (
  name          VARCHAR(64) NOT NULL,
  queue         VARCHAR(64) NOT NULL,
  payload       LONGTEXT NOT NULL,
  priority      INT NOT NULL DEFAULT 0,
  max_attempts  INT NOT NULL DEFAULT 25,
  group_key     VARCHAR(255) NULL,
  schedule      VARCHAR(255) NOT NULL,
  time_zone     VARCHAR(64) NOT NULL DEFAULT 'UTC',
  misfire       VARCHAR(8) NOT NULL DEFAULT 'once',
  misfire_limit INT NOT NULL DEFAULT 100,
  misfire_after INT NOT NULL DEFAULT 60,
  overlap       VARCHAR(8) NOT NULL DEFAULT 'allow',
  paused        TINYINT NOT NULL DEFAULT 0,
  next_fire     BIGINT NOT NULL,
  last_fire     BIGINT NULL,
  last_job_id   BIGINT NULL,
  fired         BIGINT NOT NULL DEFAULT 0,
  missed        BIGINT NOT NULL DEFAULT 0,
  skipped       BIGINT NOT NULL DEFAULT 0,
  seq           BIGINT NOT NULL DEFAULT 0,
  created_at    DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at    DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  PRIMARY KEY (name),
  KEY ix_queuectl_schedules_due (queue, paused, next_fire),
  CONSTRAINT ck_queuectl_schedules_misfire CHECK (misfire IN ('once', 'skip', 'all')),
  CONSTRAINT ck_queuectl_schedules_overlap CHECK (overlap IN ('allow', 'skip')),
  CONSTRAINT ck_queuectl_schedules_limits CHECK (max_attempts > 0 AND misfire_limit > 0 AND misfire_after > 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The recent fires of each schedule (the last 100 are kept): the tick (NULL for a fire by
-- hand, cron trigger), the job it made (NULL when overlap skipped it), and how many missed
-- ticks it stood for. A tick is written once, which the unique key holds even against a
-- firer that ignored the rules (NULL ticks are all distinct).
CREATE TABLE IF NOT EXISTS queuectl_schedule_fires (
  name      VARCHAR(64) NOT NULL,
  seq       BIGINT NOT NULL,
  tick      BIGINT NULL,
  job_id    BIGINT NULL,
  missed    INT NOT NULL DEFAULT 0,
  fired_at  DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (name, seq),
  UNIQUE KEY ux_queuectl_schedule_fires_tick (name, tick)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Retention of a queue's finished jobs (queue Q --retain 14d), in milliseconds; workers
-- delete done, failed and canceled jobs older than this. NULL keeps them.
ALTER TABLE queuectl_queues
  ADD COLUMN retain_ms BIGINT NULL,
  ADD CONSTRAINT ck_queuectl_queues_retain CHECK (retain_ms > 0);
