// queuectl keda: a KEDA trigger (YAML) that scales a queue's workers on Kubernetes, for the
// backend of --db: the postgresql or mysql scaler, its connection taken from the URL (never
// its password), and the query that counts the queue's jobs (db/dialects/keda_sql.*).
//
// It connects to nothing: the URL's host is often a cluster Service name that resolves only
// inside the cluster, where KEDA runs, and a manifest may be written in CI. So it neither
// checks the schema nor that the queue has jobs.
#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.hpp"
#include "core/errors.hpp"
#include "core/validate.hpp"
#include "db/dialects/keda_sql.hpp"

namespace queuectl {
namespace {

// The variable KEDA reads the password from (passwordFromEnv: a variable of the scale
// target's container). queuectl reads the same one, so one Secret serves both.
constexpr const char* kPasswordVariable = "QUEUECTL_DB_PASSWORD";

struct KedaOptions {
  std::string queue;
  int per_pod = 1;
  bool scaled_job = false;
};

// One setting of the trigger's metadata, and a comment to print above it (when not empty).
struct Setting {
  std::string key;
  std::string value;
  std::string note;
};

// A YAML double-quoted scalar. Every value is quoted: KEDA's metadata holds strings only,
// so a bare 5432 would be refused as a number. Backslash and double quote are escaped, and
// control characters written as \xNN, so that a value from the URL cannot end the string,
// start a new key or drive a terminal.
std::string yaml_string(std::string_view text) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

// A host KEDA cannot reach as written: KEDA connects from a pod of its own, over TCP.
bool is_local_host(const std::string& host) {
  return host.empty() || host.front() == '/' || host == "localhost" || host == "::1" ||
         host.rfind("127.", 0) == 0;
}

// The connection settings from the URL: host, port, user, database, TLS mode, and where the
// password comes from. Nothing else of the URL (its password, or ?password=) is read.
std::vector<Setting> connection_settings(const DbUrl& url, const KedaScaler& scaler) {
  std::vector<Setting> out;
  // Several PostgreSQL hosts: comma lists of hosts and ports, which pgx (KEDA's driver)
  // tries in turn. KEDA's query only reads, so any of them, a standby too, answers it.
  std::string hosts, ports;
  std::vector<std::pair<std::string, int>> list = url.hosts;
  if (list.empty()) {
    // A PostgreSQL URL may name its host, a socket folder for one, as ?host=.
    const auto param = url.params.find("host");
    // (MySQL/MariaDB URLs take no ?host=; their socket is ?socket=.)
    const bool in_param = url.host.empty() && param != url.params.end();
    list.emplace_back(in_param ? param->second : url.host, url.port);
  }
  bool local = false;
  for (const auto& [host, port] : list) {
    hosts += (hosts.empty() ? "" : ",") + host;
    ports += (ports.empty() ? "" : ",") + std::to_string(port ? port : scaler.default_port);
    local = local || is_local_host(host);
  }
  out.push_back({"host", hosts,
                 local ? "host: KEDA connects from its own pod, over TCP: name the database's "
                         "Service here"
                 : list.size() > 1 ? "host: tried in turn; the query only reads, so a standby "
                                     "answers it too"
                                   : ""});
  out.push_back({"port", ports, ""});
  out.push_back(
      {scaler.user_key, url.user,
       url.user.empty() ? scaler.user_key + ": the URL names no user; KEDA needs one" : ""});
  out.push_back({"dbName", url.database, ""});
  if (!scaler.sslmode_key.empty()) {
    const auto mode = url.params.find("sslmode");
    out.push_back({scaler.sslmode_key, mode == url.params.end() ? "prefer" : mode->second, ""});
  }
  out.push_back({"passwordFromEnv", kPasswordVariable, ""});
  return out;
}

void run_keda(Context& ctx, const KedaOptions& o) {
  validate_queue_name(o.queue);
  validate_positive(o.per_pod, "--per-pod");
  const DbUrl url = ctx.url();
  const KedaScaler* scaler = keda_scaler(url.backend);
  if (!scaler)
    throw UsageError(
        "keda needs PostgreSQL or MySQL/MariaDB: KEDA has no SQLite scaler, and an SQLite file "
        "serves one host, not pods across a cluster");
  const KedaScale scale = o.scaled_job ? KedaScale::job : KedaScale::object;
  const std::string query = keda_query(*scaler, scale, o.queue);
  const std::string per_pod = std::to_string(o.per_pod);
  const std::string kind = o.scaled_job ? "ScaledJob" : "ScaledObject";

  std::vector<Setting> settings = connection_settings(url, *scaler);
  settings.push_back({scaler->target_key, per_pod, ""});
  settings.push_back({scaler->activation_key, "0", ""});

  // The comments say why the count is what it is: a manifest outlives the command.
  std::vector<std::string> lines = {"# KEDA trigger for queue " + o.queue + ", for a " + kind +
                                    ": put these lines under its spec:"};
  if (o.scaled_job) {
    lines.insert(lines.end(),
                 {"# (its jobTargetRef runs `queuectl work " + o.queue + " --max-jobs " + per_pod +
                      " --drain -- CMD`).",
                  "# Counted: the jobs a claim could take now (ready and due, queue not paused),",
                  "# not those processing. A ScaledJob starts a Kubernetes Job per item counted",
                  "# and leaves running ones alone: a claimed job counted again would start a",
                  "# Job with nothing to claim. Strategy accurate: KEDA then subtracts only the",
                  "# Jobs not yet running, as the count already leaves out the jobs being run.",
                  "# " + scaler->target_key + " " + per_pod +
                      " (--per-pod): jobs one Kubernetes Job takes, its `work --max-jobs`."});
  } else {
    lines.insert(lines.end(),
                 {"# (its scaleTargetRef is the Deployment running `queuectl work " + o.queue +
                      " --concurrency " + per_pod + " -- CMD`).",
                  "# Counted: the jobs a claim could take now (ready and due, queue not paused)",
                  "# plus those processing: a pod running a job is still needed.",
                  "# " + scaler->target_key + " " + per_pod +
                      " (--per-pod): jobs one pod runs at once, its `work --concurrency`."});
  }
  lines.insert(lines.end(),
               {"# " + scaler->activation_key + " 0: active, and scaled up from zero, at one job.",
                "# No password here: KEDA reads it from " + std::string(kPasswordVariable) +
                    " in the container it scales",
                "# (set it from a Secret; queuectl reads the same variable)."});
  // KEDA's PostgreSQL driver (pgx) prepares its statements by name, which a transaction
  // pooler carries from one transaction to the next only from PgBouncer 1.21 on.
  if (url.pooling() == Pooling::transaction)
    lines.insert(lines.end(),
                 {"# The URL goes through a pooler in transaction mode (?pooling=transaction):",
                  "# KEDA's driver prepares statements by name, which needs PgBouncer 1.21 or",
                  "# later with max_prepared_statements set; or name the server's own host."});
  // The URL's TLS files are paths on this host, which the trigger cannot carry: said, so
  // that a verify-full or a MySQL TLS connection does not quietly lose them in KEDA.
  std::string tls_files;
  for (const char* key : {"sslrootcert", "sslcert", "sslkey", "sslcrl", "sslca"})
    if (url.params.count(key)) tls_files += (tls_files.empty() ? "" : ", ") + std::string(key);
  if (!tls_files.empty())
    lines.insert(lines.end(),
                 {"# The URL's TLS files (" + tls_files + ") are not in this trigger: they are",
                  "# paths on this host. Give KEDA's scaler the same TLS settings (see its docs),",
                  "# or it connects without them."});
  if (o.scaled_job) lines.insert(lines.end(), {"scalingStrategy:", "  strategy: accurate"});
  lines.insert(lines.end(), {"triggers:", "  - type: " + scaler->type, "    metadata:"});
  for (const Setting& s : settings) {
    if (!s.note.empty()) lines.push_back("      # " + s.note);
    lines.push_back("      " + s.key + ": " + yaml_string(s.value));
  }
  // A literal block: the query as it is, quotes and line ends included, with no escaping.
  lines.push_back("      query: |-");
  for (std::size_t start = 0; start <= query.size();) {
    const std::size_t end = std::min(query.find('\n', start), query.size());
    lines.push_back("        " + query.substr(start, end - start));
    start = end + 1;
  }

  nlohmann::ordered_json metadata = nlohmann::ordered_json::object();
  for (const Setting& s : settings) metadata[s.key] = s.value;
  metadata["query"] = query;
  Output out;
  out.document = {{"queue", o.queue},
                  {"kind", kind},
                  {"type", scaler->type},
                  {"query", query},
                  {"target", o.per_pod},
                  {"activation", 0},
                  {"scaling_strategy",
                   o.scaled_job ? nlohmann::ordered_json("accurate") : nlohmann::ordered_json()},
                  {"metadata", metadata}};
  out.lines = std::move(lines);
  ctx.print(out);
}

}  // namespace

void setup_keda(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<KedaOptions>();
  auto* sub = app.add_subcommand(
      "keda", "Print a KEDA trigger (YAML) that scales the workers of a queue on Kubernetes");
  sub->add_option("QUEUE", o->queue, "Queue name")->required();
  sub->add_option("--per-pod", o->per_pod,
                  "Jobs one pod takes: its work --concurrency, or with --scaled-job its "
                  "--max-jobs (default 1)");
  sub->add_flag("--scaled-job", o->scaled_job,
                "For a ScaledJob (a Kubernetes Job per job) instead of a ScaledObject");
  sub->footer(
      "For the database of --db (or $QUEUECTL_DB): KEDA's postgresql or mysql scaler, with\n"
      "the URL's host, port, user and database, and the password read from the variable\n"
      "QUEUECTL_DB_PASSWORD of the scaled container: no password is printed. Nothing is\n"
      "connected to. SQLite is refused (exit 2): KEDA has no scaler for it.\n"
      "The query counts the queue's jobs ready now (due, the queue not paused), plus, for a\n"
      "ScaledObject, those processing; KEDA runs ceil(count / --per-pod) pods. A ScaledJob\n"
      "counts ready jobs only, since KEDA leaves its running Jobs alone (strategy accurate).\n"
      "-o json has the query, target and metadata for templating.\n"
      "Examples:\n"
      "  queuectl keda emails --per-pod 4 > keda-trigger.yaml\n"
      "  queuectl keda reports --scaled-job\n"
      "  queuectl keda emails -o json");
  sub->callback([&ctx, o] { run_keda(ctx, *o); });
}

}  // namespace queuectl
