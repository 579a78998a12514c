-- Wakes idle workers as soon as a job is due, instead of at their next poll. A trigger
-- sends NOTIFY on the channel queuectl_jobs, with the queue name as payload, when jobs are
-- inserted (by queuectl enqueue or by an application, as in the outbox pattern), when a job
-- becomes ready again at once (release, retry, fail with no delay) and when a queue is
-- resumed. queuectl work listens on that channel; it still polls, so nothing depends on a
-- notification arriving. NOTIFY is sent at commit, so a rolled-back insert wakes nobody.
-- Claims and acks pass the WHEN tests below without calling any function.
CREATE OR REPLACE FUNCTION queuectl_notify_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('queuectl_jobs', n.queue)
     FROM (SELECT DISTINCT queue FROM queuectl_inserted WHERE run_at <= clock_timestamp()) n;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION queuectl_notify_queue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('queuectl_jobs', NEW.queue);
  RETURN NULL;
END
$$;

CREATE TRIGGER job_queue_notify_inserted
  AFTER INSERT ON job_queue
  REFERENCING NEW TABLE AS queuectl_inserted
  FOR EACH STATEMENT EXECUTE FUNCTION queuectl_notify_inserted();

CREATE TRIGGER job_queue_notify_ready
  AFTER UPDATE OF status ON job_queue
  FOR EACH ROW WHEN (NEW.status = 0 AND OLD.status <> 0 AND NEW.run_at <= now())
  EXECUTE FUNCTION queuectl_notify_queue();

CREATE TRIGGER queuectl_queues_notify_resumed
  AFTER UPDATE OF paused_at ON queuectl_queues
  FOR EACH ROW WHEN (OLD.paused_at IS NOT NULL AND NEW.paused_at IS NULL)
  EXECUTE FUNCTION queuectl_notify_queue();
