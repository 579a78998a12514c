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
-- All NULL until set; none is indexed. Adding nullable columns without a default is a
-- catalog change only: no table rewrite.
ALTER TABLE job_queue
  ADD COLUMN trace_parent  TEXT,
  ADD COLUMN trace_state   TEXT,
  ADD COLUMN progress      SMALLINT,
  ADD COLUMN progress_note TEXT,
  ADD COLUMN checkpoint    JSONB;
