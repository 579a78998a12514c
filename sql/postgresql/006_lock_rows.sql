-- Named locks as rows (`queuectl lock` with QUEUECTL_NAMED_LOCKS=row): a row held until
-- expires_at, which the holder's heartbeat keeps pushing forward; a dead holder's row
-- simply expires. Unlike an advisory lock, a row written on the primary is on its
-- standby too, so it outlives a failover.
CREATE TABLE IF NOT EXISTS queuectl_locks (
  name       TEXT PRIMARY KEY,
  token      TEXT NOT NULL,
  expires_at TIMESTAMPTZ NOT NULL
);
