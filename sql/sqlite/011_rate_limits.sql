-- Rate limits (queue Q --rate 20/s --burst 10 [--rate-per-key on]): a token bucket per queue,
-- and one per group key when rate_per_key is on. A claim takes a token for each job it
-- starts; tokens come back at rate_count per rate_period_ms, up to rate_burst. The bucket
-- is refilled when it is read, never by a background task: tokens and the time they were
-- counted (epoch milliseconds of the database clock) are enough. Claims hold the write lock
-- (BEGIN IMMEDIATE), so they take turns on the buckets.
--   rate_count, rate_period_ms  the rate: rate_count jobs per rate_period_ms (1000, 60000
--                  or 3600000); NULL: no limit
--   rate_burst     at most this many tokens saved up (jobs started at once after a lull)
--   rate_per_key   each group key has its own bucket; jobs without a key share the queue's
--   rate_tokens, rate_refreshed_ms  the queue's bucket as last counted
ALTER TABLE queuectl_queues ADD COLUMN rate_count INTEGER CHECK (rate_count > 0);
ALTER TABLE queuectl_queues ADD COLUMN rate_period_ms INTEGER CHECK (rate_period_ms > 0);
ALTER TABLE queuectl_queues ADD COLUMN rate_burst INTEGER CHECK (rate_burst > 0);
ALTER TABLE queuectl_queues ADD COLUMN rate_per_key INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queuectl_queues ADD COLUMN rate_tokens REAL;
ALTER TABLE queuectl_queues ADD COLUMN rate_refreshed_ms INTEGER;

-- The bucket of each group key of a queue with rate_per_key, made by its first claim. A
-- group runs one job at a time (ordered groups), so a claim takes at most one token of a key.
CREATE TABLE IF NOT EXISTS queuectl_rate_keys (
  queue        TEXT NOT NULL,
  group_key    TEXT NOT NULL,
  tokens       REAL NOT NULL,
  refreshed_ms INTEGER NOT NULL,
  PRIMARY KEY (queue, group_key)
);
