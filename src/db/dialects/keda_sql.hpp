// What KEDA (keda.sh) needs to scale a queue's workers on Kubernetes, per backend: its
// scaler's type and the names that scaler gives its settings, and the query it runs to count
// a queue's jobs. `queuectl keda` prints them; queuectl itself never runs the query.
//
// KEDA runs the query as it is, with no bound values, so the queue is written into the text
// as an SQL string literal: the one statement whose text holds input. The name is checked
// first (validate_queue_name: A-Z a-z 0-9 . _ : -, no quote, no backslash) and its quotes
// doubled all the same. The query reads through the same indexes as `stats`, which never grow
// with finished jobs (tests/cli/test_keda_cli.cpp EXPLAINs it among thousands of done rows).
#pragma once

#include <string>
#include <string_view>

#include "core/db_url.hpp"

namespace queuectl {

// What the count is for.
enum class KedaScale {
  // A ScaledObject: a Deployment of workers. Jobs ready now plus jobs processing, since a
  // pod running a job is still needed.
  object,
  // A ScaledJob: a Kubernetes Job started per counted item, running ones left alone. Jobs
  // ready now only: a claimed job counted again would start a Job with nothing to claim.
  job,
};

struct KedaScaler {
  std::string type;            // the trigger's type: postgresql, mysql
  std::string user_key;        // the setting of the user name: userName, username
  std::string target_key;      // of the value per replica: targetQueryValue, queryValue
  std::string activation_key;  // of the activation threshold
  std::string sslmode_key;     // of the TLS mode; empty where the scaler has none (mysql)
  int default_port = 0;
  // The queries, with {queue} where the queue's literal goes (keda_query fills it in).
  std::string ready;                 // jobs a claim could take now
  std::string ready_and_processing;  // the same plus the jobs processing
};

// The KEDA scaler for `backend`'s database; nullptr where KEDA has none (SQLite).
const KedaScaler* keda_scaler(Backend backend);

// The query of `scaler` counting `queue`'s jobs for `scale`: one row, one integer. Throws
// UsageError for a queue name that is not valid.
std::string keda_query(const KedaScaler& scaler, KedaScale scale, std::string_view queue);

}  // namespace queuectl
