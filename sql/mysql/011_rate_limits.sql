-- Rate limits (queue Q --rate 20/s --burst 10 [--rate-per-key on]): a token bucket per queue,
-- and one per group key when rate_per_key is on. A claim takes a token for each job it
-- starts; tokens come back at rate_count per rate_period_ms, up to rate_burst. The bucket
-- is refilled when it is read, never by a background task: tokens and the time they were
-- counted (epoch milliseconds of the database clock) are enough. A claim of a limited queue
-- locks the queue's row (SELECT ... FOR UPDATE) before it counts the queue's tokens.
--   rate_count, rate_period_ms  the rate: rate_count jobs per rate_period_ms (1000, 60000
--                  or 3600000); NULL: no limit
--   rate_burst     at most this many tokens saved up (jobs started at once after a lull)
--   rate_per_key   each group key has its own bucket; jobs without a key share the queue's
--   rate_tokens, rate_refreshed_ms  the queue's bucket as last counted
ALTER TABLE queuectl_queues
  ADD COLUMN rate_count INT NULL,
  ADD COLUMN rate_period_ms BIGINT NULL,
  ADD COLUMN rate_burst INT NULL,
  ADD COLUMN rate_per_key TINYINT NOT NULL DEFAULT 0,
  ADD COLUMN rate_tokens DOUBLE NULL,
  ADD COLUMN rate_refreshed_ms BIGINT NULL,
  ADD CONSTRAINT ck_queuectl_queues_rate CHECK (rate_count > 0 AND rate_period_ms > 0 AND rate_burst > 0);

-- The bucket of each group key of a queue with rate_per_key, made by its first claim. A
-- group runs one job at a time (ordered groups), so a claim takes at most one token of a key.
CREATE TABLE IF NOT EXISTS queuectl_rate_keys (
  queue        VARCHAR(64) NOT NULL,
  group_key    VARBINARY(255) NOT NULL,
  tokens       DOUBLE NOT NULL,
  refreshed_ms BIGINT NOT NULL,
  PRIMARY KEY (queue, group_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
