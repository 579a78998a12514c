-- queuectl top counts the jobs done in the last minute and the failed jobs per queue, and
-- reads the newest failures. MySQL has no partial index, and no other index leads with
-- finished_at, so without this one each of those would read every done row. With it each
-- reads a range: status 2 since a minute ago, or status 3. It holds queue as well, so the
-- counts never visit the table rows. Adding it is an online operation in InnoDB.
-- (Version 7 on every backend. 005 and 006 are taken by other changes.)
ALTER TABLE job_queue ADD KEY ix_job_queue_finished (status, finished_at, queue);
