#include "db/dialects/keda_sql.hpp"

#include "core/validate.hpp"

namespace queuectl {
namespace {

// What the queries of the two scalers differ in.
struct Parts {
  // job_queue as each count reads it. PostgreSQL picks its partial indexes by itself (status
  // = 0: job_queue_claim; status = 1: job_queue_processing_groups or job_queue_leases), as
  // stats_ready and stats_processing do. MySQL/MariaDB is told to read the claim index
  // (queue, status, ...), as the claim and stats_ready are: one range per count, and from
  // the index alone; the lease index (status, lock_until) of stats_processing would read
  // the processing jobs of every queue.
  std::string table;
  // The database's clock. On MySQL/MariaDB NOW(6) is right in any session time zone (KEDA's
  // is the server's default, not queuectl's UTC): the time columns are TIMESTAMP(6),
  // converted to the session's zone as NOW(6) is (migration 4).
  std::string now;
};

Parts parts_for(Backend backend) {
  if (backend == Backend::mysql) return {"job_queue FORCE INDEX (ix_job_queue_claim)", "NOW(6)"};
  return {"job_queue", "now()"};
}

// Ready means what a claim could take now: status 0 and due (run_at <= now), so neither a
// job scheduled later, nor one waiting out a retry's backoff, nor one waiting for other jobs
// (its run_at is the far end of the column's range) counts. A paused queue has none: its
// pods have nothing to claim, and a ScaledObject scales down to the jobs still processing,
// then to zero. The pause is one primary-key read of queuectl_queues, once per query.
// Ordered groups, a concurrency limit or a rate limit may hold some ready jobs back; they
// are counted all the same (cap the pods with maxReplicaCount).
KedaScaler make_scaler(const Parts& p) {
  KedaScaler s;
  s.ready = "SELECT COUNT(*) FROM " + p.table +
            "\n WHERE queue = {queue} AND status = 0 AND run_at <= " + p.now +
            "\n   AND NOT EXISTS (SELECT 1 FROM queuectl_queues p"
            "\n                    WHERE p.queue = {queue} AND p.paused_at IS NOT NULL)";
  s.ready_and_processing =
      "SELECT (SELECT COUNT(*) FROM " + p.table +
      "\n         WHERE queue = {queue} AND status = 0 AND run_at <= " + p.now +
      "\n           AND NOT EXISTS (SELECT 1 FROM queuectl_queues p"
      "\n                            WHERE p.queue = {queue} AND p.paused_at IS NOT NULL))"
      "\n     + (SELECT COUNT(*) FROM " +
      p.table + "\n         WHERE queue = {queue} AND status = 1)";
  return s;
}

// KEDA's postgresql scaler (pgx): the connection is host, port, userName, dbName and sslmode
// (each required), the password from an environment variable (passwordFromEnv).
KedaScaler postgresql_scaler() {
  KedaScaler s = make_scaler(parts_for(Backend::postgresql));
  s.type = "postgresql";
  s.user_key = "userName";
  s.target_key = "targetQueryValue";
  s.activation_key = "activationTargetQueryValue";
  s.sslmode_key = "sslmode";
  s.default_port = 5432;
  return s;
}

// KEDA's mysql scaler (go-sql-driver), which serves MariaDB too: host, port, username,
// dbName, passwordFromEnv; no TLS setting (connectionStringFromEnv takes a DSN with one).
KedaScaler mysql_scaler() {
  KedaScaler s = make_scaler(parts_for(Backend::mysql));
  s.type = "mysql";
  s.user_key = "username";
  s.target_key = "queryValue";
  s.activation_key = "activationQueryValue";
  s.default_port = 3306;
  return s;
}

// `text` as an SQL string literal: in single quotes, each single quote doubled. Only ever
// given a valid queue name, which has neither quotes nor backslashes (a backslash would be
// an escape on MySQL/MariaDB unless NO_BACKSLASH_ESCAPES); the doubling keeps even a name
// the check let through by mistake a literal.
std::string sql_literal(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

}  // namespace

const KedaScaler* keda_scaler(Backend backend) {
  static const KedaScaler pg = postgresql_scaler();
  static const KedaScaler my = mysql_scaler();
  switch (backend) {
    case Backend::postgresql:
      return &pg;
    case Backend::mysql:
      return &my;
    case Backend::sqlite:
      break;
  }
  return nullptr;  // KEDA has no SQLite scaler
}

std::string keda_query(const KedaScaler& scaler, KedaScale scale, std::string_view queue) {
  validate_queue_name(queue);
  const std::string literal = sql_literal(queue);
  std::string sql = scale == KedaScale::object ? scaler.ready_and_processing : scaler.ready;
  const std::string marker = "{queue}";
  for (auto at = sql.find(marker); at != std::string::npos;
       at = sql.find(marker, at + literal.size()))
    sql.replace(at, marker.size(), literal);
  return sql;
}

}  // namespace queuectl
