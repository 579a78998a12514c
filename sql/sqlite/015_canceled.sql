-- `list --status canceled` of every queue (the web view's jobs filtered on canceled) reads
-- the canceled jobs in id order through this index: without it, PostgreSQL read the whole
-- finished index and SQLite every job. A partial index takes entries only from rows that
-- are canceled, so claims and acks never write it, and canceled rows are few beside done
-- ones. (A queue's canceled jobs are found through job_queue_finished, whose first column
-- is the queue. MySQL/MariaDB have no partial indexes: there the listing reads
-- ix_job_queue_lease, whose first column is the status, and has no migration 15.) On a
-- large busy table a DBA may build it first (on PostgreSQL with CREATE INDEX CONCURRENTLY),
-- with the same name and shape; this migration then keeps it.
CREATE INDEX IF NOT EXISTS job_queue_canceled ON job_queue (id) WHERE status = 4;
