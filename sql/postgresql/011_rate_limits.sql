-- Rate limits (queue Q --rate 20/s --burst 10 [--rate-per-key on]): a token bucket per queue,
-- and one per group key when rate_per_key is on. A claim takes a token for each job it
-- starts; tokens come back at rate_count per rate_period_ms, up to rate_burst. The bucket
-- is refilled when it is read, never by a background task: tokens and the time they were
-- counted (epoch milliseconds of the database clock) are enough.
--   rate_count, rate_period_ms  the rate: rate_count jobs per rate_period_ms (1000, 60000
--                  or 3600000); NULL: no limit
--   rate_burst     at most this many tokens saved up (jobs started at once after a lull)
--   rate_per_key   each group key has its own bucket; jobs without a key share the queue's
--   rate_tokens, rate_refreshed_ms  the queue's bucket as last counted
ALTER TABLE queuectl_queues
  ADD COLUMN rate_count INTEGER CHECK (rate_count > 0),
  ADD COLUMN rate_period_ms BIGINT CHECK (rate_period_ms > 0),
  ADD COLUMN rate_burst INTEGER CHECK (rate_burst > 0),
  ADD COLUMN rate_per_key BOOLEAN NOT NULL DEFAULT false,
  ADD COLUMN rate_tokens DOUBLE PRECISION,
  ADD COLUMN rate_refreshed_ms BIGINT;

-- The bucket of each group key of a queue with rate_per_key, made by its first claim. A
-- group runs one job at a time (ordered groups), so a claim takes at most one token of a
-- key, and two claims never take the same key's token at once.
CREATE TABLE IF NOT EXISTS queuectl_rate_keys (
  queue        TEXT NOT NULL,
  group_key    TEXT NOT NULL,
  tokens       DOUBLE PRECISION NOT NULL,
  refreshed_ms BIGINT NOT NULL,
  PRIMARY KEY (queue, group_key)
);

-- How many jobs without their own bucket a claim of `q` may start now: the queue's bucket
-- refilled to now, rounded down (2147483647 when the queue has no rate). The queue's row
-- is locked first, so claimers of a limited queue take turns until each commits; the claim
-- statement then takes the tokens it used from the row it has locked. Reads with a
-- snapshot of its own, taken after the lock: it sees every claim committed before.
CREATE OR REPLACE FUNCTION queuectl_rate_grant(q text) RETURNS integer
  LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  r record;
  now_ms double precision := floor(extract(epoch FROM clock_timestamp()) * 1000);
  avail double precision;
BEGIN
  SELECT p.rate_count, p.rate_period_ms, p.rate_burst, p.rate_tokens, p.rate_refreshed_ms
    INTO r FROM queuectl_queues p
   WHERE p.queue = q AND p.rate_count IS NOT NULL
     FOR UPDATE;
  IF NOT FOUND THEN
    RETURN 2147483647;
  END IF;
  avail := LEAST(r.rate_burst::double precision,
                 COALESCE(r.rate_tokens, r.rate_burst) +
                   GREATEST(0, now_ms - COALESCE(r.rate_refreshed_ms, now_ms)) *
                   r.rate_count / r.rate_period_ms);
  RETURN GREATEST(0, floor(avail))::integer;
END
$$;
