-- Trace context and progress (issue 31).
--   trace_parent   the W3C traceparent of whoever enqueued the job (enqueue reads
--                  TRACEPARENT); `work` hands it to the job's first attempt
--   trace_state    the W3C tracestate that came with it (TRACESTATE)
--   progress       0-100, as the lease holder last reported it (extend --progress); each
--                  claim clears it, so it is always the current attempt's
--   progress_note  a line of text the lease holder last reported (extend --note); cleared
--                  by each claim too
--   checkpoint     a JSON document the lease holder last saved (extend --checkpoint); kept
--                  across retries and reaps, so that the next attempt can resume from it
-- All NULL until set; none is indexed. Nullable columns added at the end: InnoDB adds them
-- in place (ALGORITHM=INSTANT on MariaDB 10.3+ and MySQL 8.0.12+), without a table copy.
ALTER TABLE job_queue
  ADD COLUMN trace_parent  VARCHAR(55),
  ADD COLUMN trace_state   VARCHAR(512),
  ADD COLUMN progress      SMALLINT,
  ADD COLUMN progress_note TEXT,
  ADD COLUMN checkpoint    JSON;
