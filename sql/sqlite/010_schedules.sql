-- Recurring schedules (queuectl cron). One row per schedule, fired by any number of
-- processes at once without a leader. The row carries the guarantee that each tick makes
-- one job. A firer takes the write lock (BEGIN IMMEDIATE), inserts the jobs, and moves
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
  name          TEXT PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 64),
  queue         TEXT NOT NULL CHECK (length(queue) BETWEEN 1 AND 64),
  payload       TEXT NOT NULL DEFAULT '{}',
  priority      INTEGER NOT NULL DEFAULT 0,
  max_attempts  INTEGER NOT NULL DEFAULT 25 CHECK (max_attempts > 0),
  group_key     TEXT,
  schedule      TEXT NOT NULL,
  time_zone     TEXT NOT NULL DEFAULT 'UTC',
  misfire       TEXT NOT NULL DEFAULT 'once' CHECK (misfire IN ('once', 'skip', 'all')),
  misfire_limit INTEGER NOT NULL DEFAULT 100 CHECK (misfire_limit > 0),
  misfire_after INTEGER NOT NULL DEFAULT 60 CHECK (misfire_after > 0),
  overlap       TEXT NOT NULL DEFAULT 'allow' CHECK (overlap IN ('allow', 'skip')),
  paused        INTEGER NOT NULL DEFAULT 0,
  next_fire     INTEGER NOT NULL,
  last_fire     INTEGER,
  last_job_id   INTEGER,
  fired         INTEGER NOT NULL DEFAULT 0,
  missed        INTEGER NOT NULL DEFAULT 0,
  skipped       INTEGER NOT NULL DEFAULT 0,
  seq           INTEGER NOT NULL DEFAULT 0,
  created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  updated_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now'))
);

-- What a firer asks every second, for its queue or for all.
CREATE INDEX IF NOT EXISTS queuectl_schedules_due
  ON queuectl_schedules (queue, next_fire) WHERE paused = 0;

-- The recent fires of each schedule (the last 100 are kept): the tick (NULL for a fire by
-- hand, cron trigger), the job it made (NULL when overlap skipped it), and how many missed
-- ticks it stood for. A tick is written once, which the unique key holds even against a
-- firer that ignored the rules (NULL ticks are all distinct).
CREATE TABLE IF NOT EXISTS queuectl_schedule_fires (
  name      TEXT NOT NULL,
  seq       INTEGER NOT NULL,
  tick      INTEGER,
  job_id    INTEGER,
  missed    INTEGER NOT NULL DEFAULT 0,
  fired_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  PRIMARY KEY (name, seq),
  UNIQUE (name, tick)
);

-- Retention of a queue's finished jobs (queue Q --retain 14d), in milliseconds; workers
-- delete done, failed and canceled jobs older than this. NULL keeps them.
ALTER TABLE queuectl_queues ADD COLUMN retain_ms INTEGER CHECK (retain_ms > 0);
