-- queuectl schema for SQLite 3.35+. Times are UTC text 'YYYY-MM-DD HH:MM:SS.SSS'.
CREATE TABLE job_queue (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  queue        TEXT    NOT NULL CHECK (length(queue) BETWEEN 1 AND 64),
  status       INTEGER NOT NULL DEFAULT 0 CHECK (status BETWEEN 0 AND 4),
  priority     INTEGER NOT NULL DEFAULT 0,
  run_at       TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  attempts     INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL DEFAULT 25,
  payload      TEXT    NOT NULL CHECK (json_valid(payload)),
  result       TEXT    CHECK (result IS NULL OR json_valid(result)),
  last_error   TEXT,
  locked_by    TEXT,
  lock_token   TEXT,
  locked_at    TEXT,
  lock_until   TEXT,
  dedupe_key   TEXT,
  group_key    TEXT,
  created_at   TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  updated_at   TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  finished_at  TEXT
);

-- A dedupe key is unique per queue across all statuses until the job is purged.
CREATE UNIQUE INDEX job_queue_dedupe ON job_queue (queue, dedupe_key);

-- The claim: only ready rows, in claim order. Finished rows never enter it.
CREATE INDEX job_queue_claim ON job_queue (queue, priority DESC, run_at, id) WHERE status = 0;

-- The reaper and `leases`: only processing rows, by lease expiry.
CREATE INDEX job_queue_leases ON job_queue (lock_until) WHERE status = 1;

-- Counting and purging finished jobs per queue.
CREATE INDEX job_queue_finished ON job_queue (queue, status, finished_at) WHERE status >= 2;

-- Per-queue settings: a queue is paused while paused_at is set.
CREATE TABLE queuectl_queues (
  queue     TEXT PRIMARY KEY,
  paused_at TEXT
);

-- Named locks (`queuectl lock`, the reaper): a row held until expires_at, which the
-- holder's heartbeat keeps pushing forward; a dead holder's row simply expires.
CREATE TABLE queuectl_locks (
  name       TEXT PRIMARY KEY,
  token      TEXT NOT NULL,
  expires_at TEXT NOT NULL
);
