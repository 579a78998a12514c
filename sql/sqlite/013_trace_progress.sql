-- Trace context and progress (issue 31).
--   trace_parent   the W3C traceparent of whoever enqueued the job (enqueue reads
--                  TRACEPARENT); `work` hands it to the job's first attempt
--   trace_state    the W3C tracestate that came with it (TRACESTATE)
--   progress       0-100, as the lease holder last reported it (extend --progress); each
--                  claim clears it, so it is always the current attempt's
--   progress_note  a line of text the lease holder last reported (extend --note); cleared
--                  by each claim too
--   checkpoint     a JSON document (text) the lease holder last saved (extend --checkpoint);
--                  kept across retries and reaps, so that the next attempt can resume from it
-- All NULL until set; none is indexed.
ALTER TABLE job_queue ADD COLUMN trace_parent TEXT;
ALTER TABLE job_queue ADD COLUMN trace_state TEXT;
ALTER TABLE job_queue ADD COLUMN progress INTEGER;
ALTER TABLE job_queue ADD COLUMN progress_note TEXT;
ALTER TABLE job_queue ADD COLUMN checkpoint TEXT;
