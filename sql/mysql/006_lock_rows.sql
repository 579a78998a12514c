-- Named locks as rows (`queuectl lock`), where the server's own lock cannot be used: on
-- MariaDB Galera GET_LOCK holds on one node only (or is refused), while a row is
-- replicated and certified like any write, so two nodes cannot both take it. A row is
-- held until expires_at, which the holder's heartbeat keeps pushing forward; a dead
-- holder's row simply expires. QUEUECTL_NAMED_LOCKS=row uses these on any server.
CREATE TABLE IF NOT EXISTS queuectl_locks (
  name       VARCHAR(255) NOT NULL,
  token      CHAR(36)     NOT NULL,
  expires_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
