-- Tokens taken ahead (issue 30): every claim of a rated queue wrote its bucket, the queue's
-- row, and held that row's lock until the claim committed. With durable commits
-- (synchronous_commit on, fsync) each claim waited on its WAL flush holding the lock, so the
-- claimers of the queue took turns through every flush: 8 workers claiming one job at a time
-- ran at 0.57x of the same queue without a rate. A claim of 100 jobs took the lock before it
-- marked its jobs, so two workers took turns over the marking too.
--
-- Now a server session that claims the queue again within 100 ms of its last claim, while
-- the bucket held more than half its burst plus 16 tokens a job after that claim, takes up
-- to 16 tokens a job beyond what the claim needs (never more than the rate refills in
-- 100 ms), and keeps them in the session (the setting queuectl.rate_lease) for 100 ms. Its
-- next claims of the queue spend them without touching the queue's row; tokens not spent by
-- then are dropped. A start is still never made without a token the bucket gave out: the
-- total of starts stays within burst + rate x time, and any window of length T holds at
-- most burst + rate x (T + 100 ms). A bucket at less than half its burst, a burst under 34,
-- a session's first claim (a `queuectl claim` command) and a rate under 10 a second never
-- take tokens ahead, so a throttled queue counts every start as before.
--
-- The session's lease is text: queue, tokens, until (epoch ms of the database clock), the
-- time of the session's last claim of the queue, and whether the bucket was plentiful
-- then ('1' or '0'). Queue names hold no spaces (validate_queue_name). A setting changed in
-- a transaction that rolls back is restored with it, as the bucket's row is.
CREATE OR REPLACE FUNCTION queuectl_rate_take(q text, want integer, keys text[])
  RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  clock_ms bigint := floor(extract(epoch FROM clock_timestamp()) * 1000);
  now_ms bigint := floor(extract(epoch FROM now()) * 1000);
  granted integer := 0;
  lease text[] := string_to_array(current_setting('queuectl.rate_lease', true), ' ');
  ahead integer := 0;
  took integer;
  left_over double precision;
  burst integer;
BEGIN
  IF want > 0 AND lease[1] = q THEN
    IF CAST(lease[2] AS integer) >= want AND CAST(lease[3] AS bigint) >= clock_ms THEN
      PERFORM set_config('queuectl.rate_lease',
                         concat_ws(' ', q, CAST(lease[2] AS integer) - want, lease[3], clock_ms,
                                   lease[5]),
                         false);
      granted := want;
    ELSIF lease[5] = '1' AND clock_ms - CAST(lease[4] AS bigint) <= 100 THEN
      ahead := 16 * want;
    END IF;
  END IF;
  IF want > 0 AND granted = 0 THEN
    UPDATE queuectl_queues p
       SET rate_granted = LEAST(want + LEAST(ahead, floor(CAST(p.rate_count AS double precision)
                                                        * 100 / p.rate_period_ms)),
             floor(LEAST(CAST(p.rate_burst AS double precision),
               COALESCE(p.rate_tokens, p.rate_burst)
               + GREATEST(0, clock_ms - COALESCE(p.rate_refreshed_ms, clock_ms))
                 * CAST(p.rate_count AS double precision) / p.rate_period_ms))),
           rate_tokens = LEAST(CAST(p.rate_burst AS double precision),
             COALESCE(p.rate_tokens, p.rate_burst)
             + GREATEST(0, clock_ms - COALESCE(p.rate_refreshed_ms, clock_ms))
               * CAST(p.rate_count AS double precision) / p.rate_period_ms)
             - LEAST(want + LEAST(ahead, floor(CAST(p.rate_count AS double precision)
                                               * 100 / p.rate_period_ms)),
                 floor(LEAST(CAST(p.rate_burst AS double precision),
                   COALESCE(p.rate_tokens, p.rate_burst)
                   + GREATEST(0, clock_ms - COALESCE(p.rate_refreshed_ms, clock_ms))
                     * CAST(p.rate_count AS double precision) / p.rate_period_ms))),
           rate_refreshed_ms = GREATEST(COALESCE(p.rate_refreshed_ms, 0), clock_ms)
     WHERE p.queue = q AND p.rate_count IS NOT NULL
       AND LEAST(CAST(p.rate_burst AS double precision),
             COALESCE(p.rate_tokens, p.rate_burst)
             + GREATEST(0, clock_ms - COALESCE(p.rate_refreshed_ms, clock_ms))
               * CAST(p.rate_count AS double precision) / p.rate_period_ms) >= 1
    RETURNING p.rate_granted, p.rate_tokens, p.rate_burst INTO took, left_over, burst;
    IF FOUND THEN
      granted := LEAST(want, took);
      PERFORM set_config('queuectl.rate_lease',
                         concat_ws(' ', q, took - granted, clock_ms + 100, clock_ms,
                                   CASE WHEN left_over - 16 * want >= burst / 2.0 THEN '1'
                                        ELSE '0' END),
                         false);
    ELSE
      -- Not a whole token (a throttled claim writes nothing, and locks nothing once the
      -- claimer before it has committed), or the rate was removed since the claim began.
      granted := CASE WHEN EXISTS (SELECT 1 FROM queuectl_queues p
                                    WHERE p.queue = q AND p.rate_count IS NOT NULL)
                      THEN 0 ELSE want END;
      PERFORM set_config('queuectl.rate_lease', concat_ws(' ', q, 0, 0, clock_ms, '0'), false);
    END IF;
  END IF;
  IF cardinality(keys) > 0 THEN
    INSERT INTO queuectl_rate_keys AS b (queue, group_key, tokens, refreshed_ms)
    SELECT q, k, p.rate_burst - 1, now_ms
      FROM unnest(keys) k JOIN queuectl_queues p ON p.queue = q AND p.rate_count IS NOT NULL
     WHERE k IS NOT NULL
    ON CONFLICT (queue, group_key) DO UPDATE
       SET tokens = LEAST(excluded.tokens + 1,
                          b.tokens + GREATEST(0, excluded.refreshed_ms - b.refreshed_ms)
                          * (SELECT CAST(p.rate_count AS double precision) / p.rate_period_ms
                               FROM queuectl_queues p WHERE p.queue = b.queue)) - 1,
           refreshed_ms = excluded.refreshed_ms;
  END IF;
  RETURN granted;
END
$$;
