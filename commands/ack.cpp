// queuectl ack: finish a claimed job (or many from NDJSON) under its token.
#include <future>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "cli/views.hpp"
#include "core/errors.hpp"
#include "core/validate.hpp"
#include "db/admin_repository.hpp"
#include "db/job_repository.hpp"

namespace queuectl {
namespace {

struct AckOptions {
  std::string id;
  std::string token;
  std::string result;
  std::string from;
};

AckItem item_from_line(const std::string& line, std::size_t number, const char* unit,
                       std::size_t max_payload) {
  try {
    // Lines of `claim -o ndjson` may be fed straight back: the other job fields are checked
    // as JSON and ignored, never built.
    const auto doc = parse_line_object(line, {"id", "token", "lock_token", "result", "queue"});
    AckItem item;
    for (const auto& [key, value] : doc.items()) {
      if (key == "id") {
        item.id = value.is_number_integer() ? value.get<long long>()
                  : value.is_string()       ? parse_job_id(value.get<std::string>())
                                            : 0;
        if (item.id <= 0) throw UsageError("\"id\" must be a positive integer");
      } else if (key == "token" || key == "lock_token") {
        if (!value.is_string()) throw UsageError("\"token\" must be a string");
        item.token = value.get<std::string>();
      } else if (key == "result") {
        // `claim -o ndjson` prints "result":null on every line: no result, the same as no
        // key, so that such lines are acked many to a statement rather than one by one.
        if (!value.is_null()) item.result = validate_json(value.text(), "result", max_payload);
      } else if (key == "queue" && value.is_string()) {
        // Only a hint (`claim -o ndjson` names it): a queue that keeps its done jobs is acked
        // without trying a delete. A wrong one cannot delete a job whose queue keeps it.
        item.queue = value.get<std::string>();
      }
    }
    if (item.id <= 0) throw UsageError("no \"id\"");
    if (item.token.empty()) throw UsageError("no \"token\"");
    validate_token(item.token, "\"token\"");
    return item;
  } catch (const UsageError& e) {
    throw UsageError(std::string(unit) + " " + std::to_string(number) + ": " + e.what());
  }
}

// Whether job `id` is done and was finished under `token` (an ack keeps the token).
bool done_with_token(JobRepository& repo, std::int64_t id, const std::string& token) {
  const auto job = repo.find(id);
  return job && job->status == Status::done && job->lock_token == token;
}

std::string id_list(const std::vector<std::int64_t>& ids) {
  std::string s;
  for (auto id : ids) s += (s.empty() ? "" : ", ") + std::to_string(id);
  return s;
}

Output run_ack(Context& ctx, const AckOptions& o) {
  if (!o.from.empty()) {
    if (!o.id.empty() || !o.token.empty())
      throw UsageError("ack --from takes ids and tokens from its input, not from arguments");
    if (!o.result.empty())
      throw UsageError("--result and --from exclude each other (give \"result\" on each line)");
    // A server connection (authentication, session setup, the schema check) takes a few
    // round trips: made while the input is read, as in `claim ... | ack --from -`, where
    // the input comes only when claim is done. Only the statements that write wait for the
    // input to be whole and valid; bad input still exits 2 with nothing written, and empty
    // input ignores whatever the connection met.
    std::future<void> connected;
    bool server = false;
    try {
      server = ctx.url().backend != Backend::sqlite;
    } catch (const std::exception&) {
      // A bad URL is reported when the database is needed, as before.
    }
    if (server) connected = std::async(std::launch::async, [&ctx] { ctx.migrated_db(); });
    const InputRecords input = read_records(o.from);
    // Read side by side in slices from 250 lines a slice (a line of claim's output takes
    // some 18 µs to read).
    std::vector<AckItem> read = parse_in_slices<AckItem>(
        input.items, 250, " \t\r\n", [&](const std::string& line, std::size_t n) {
          return item_from_line(line, n, input.unit, ctx.options.max_payload);
        });
    // The same job and token twice (a line repeated by a retrying pipe) is one ack, not
    // an ack and then a lost lease.
    std::vector<AckItem> items;
    items.reserve(read.size());
    std::set<std::pair<std::int64_t, std::string>> seen;
    for (AckItem& item : read)
      if (seen.insert({item.id, item.token}).second) items.push_back(std::move(item));
    // Empty input (an idle `claim -o ndjson` upstream) acks nothing and is not an error;
    // the database is not even opened.
    std::vector<std::int64_t> lost, not_found, already_done, acked_ids;
    const std::size_t given = items.size();
    if (!items.empty()) {
      if (connected.valid()) connected.get();  // what connecting threw, if anything
      Database& db = ctx.migrated_db();
      JobRepository repo(db);
      // A job named again with another token (a stale line beside the current one): each
      // round acks one line of a job, so that each line is counted by its own token. Nearly
      // always one round.
      std::vector<std::vector<AckItem>> rounds;
      std::map<std::int64_t, std::size_t> times_seen;
      for (AckItem& item : items) {
        const std::size_t round = times_seen[item.id]++;
        if (round == rounds.size()) rounds.emplace_back();
        rounds[round].push_back(std::move(item));
      }
      for (const std::vector<AckItem>& round : rounds) {
        const std::vector<std::int64_t> failed = repo.ack_many(round);
        const std::set<std::int64_t> failed_ids(failed.begin(), failed.end());
        // Only on the failure path: tell ids that do not exist (4) from lost leases (3), and
        // those from jobs this very token finished before (an ack repeated: done, exit 0).
        std::set<std::int64_t> missing;
        if (!failed.empty()) {
          const std::vector<std::int64_t> gone = AdminRepository(db).missing_ids(failed);
          missing.insert(gone.begin(), gone.end());
        }
        for (const AckItem& item : round) {
          if (!failed_ids.count(item.id))
            acked_ids.push_back(item.id);
          else if (missing.count(item.id))
            not_found.push_back(item.id);
          else if (done_with_token(repo, item.id, item.token))
            already_done.push_back(item.id);
          else
            lost.push_back(item.id);
        }
      }
    }
    const std::size_t acked = acked_ids.size();
    // Every report has the same shape: a count under the outcome's name, its ids beside it.
    Output out;
    out.document = {{"acked", acked},
                    {"acked_ids", acked_ids},
                    {"already_done", already_done.size()},
                    {"already_done_ids", already_done},
                    {"lost", lost.size()},
                    {"lost_ids", lost},
                    {"not_found", not_found.size()},
                    {"not_found_ids", not_found}};
    out.lines.push_back("acked " + std::to_string(acked) + " job(s)" +
                        (already_done.empty()
                             ? std::string()
                             : "; " + std::to_string(already_done.size()) +
                                   " already done with the same token: " + id_list(already_done)));
    for (auto id : lost)
      ctx.note("queuectl: error: lease lost on job " + std::to_string(id) + ": not acked");
    for (auto id : not_found)
      ctx.note("queuectl: error: job " + std::to_string(id) + " not found: not acked");
    ctx.print_report(out);
    // One exit code for the run: a lost lease (3) wins over an unknown id (4).
    if (!lost.empty())
      throw LeaseLost(
          std::to_string(lost.size()) + " of " + std::to_string(given) + " acks lost their lease" +
          (not_found.empty() ? std::string()
                             : "; " + std::to_string(not_found.size()) + " job(s) not found"));
    if (!not_found.empty())
      throw NotFound(std::to_string(not_found.size()) + " of " + std::to_string(given) +
                     " acks name no such job: " + id_list(not_found));
    return {};
  }
  if (o.id.empty()) throw UsageError("ack needs a job ID and --token (or --from FILE)");
  AckItem item;
  item.id = parse_job_id(o.id);
  if (o.token.empty()) throw UsageError("ack needs --token (the lock_token from claim)");
  validate_token(o.token);
  item.token = o.token;
  if (!o.result.empty()) item.result = validate_json(o.result, "--result", ctx.options.max_payload);
  JobRepository repo(ctx.migrated_db());
  bool again = false;
  try {
    repo.ack(item);
  } catch (const LeaseLost&) {
    // The same ack again (a CI step retried after a timeout): done, as SQS's DeleteMessage
    // of a message already deleted succeeds. Any other token on a done job is a lost lease.
    if (!done_with_token(repo, item.id, item.token)) throw;
    again = true;
  }
  Output out;
  out.document = {{"id", item.id}, {"status", "done"}, {"already_done", again}};
  out.lines.push_back("job " + std::to_string(item.id) +
                      (again ? " already done (acked before with this token)" : " done"));
  ctx.print_report(out);
  return {};
}

}  // namespace

void setup_ack(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<AckOptions>();
  auto* sub = app.add_subcommand("ack", "Mark a claimed job done (needs its lock token)");
  sub->add_option("ID", o->id, "Job id");
  sub->add_option("--token", o->token,
                  "The lock_token claim returned (required with ID; --from gives each line its "
                  "own)");
  sub->add_option("--result", o->result, "Result to store, as JSON");
  sub->add_option("--from", o->from,
                  "Ack many from FILE or - (NDJSON lines, or one JSON array, of objects with id, "
                  "token, result)")
      ->type_name("FILE");
  sub->footer(
      "Exit 3 when the lease was lost (token wrong, job reaped or no longer processing), 4 when\n"
      "the job does not exist. --from acks every line it can in one transaction and reports\n"
      "the rest (\"lost_ids\", \"not_found_ids\"); its exit code is 3 if any lease was lost, else "
      "4 if\n"
      "any id does not exist (3 wins over 4). Empty input acks nothing and exits 0.\n"
      "Examples:\n"
      "  queuectl ack 42 --token 1b4e28ba-2fa1-4d3b-a3f5-ef19a1f3c2d0 --result '{\"ok\":true}'\n"
      "  queuectl claim emails --limit 100 -o ndjson | ./send | queuectl ack --from -\n"
      "  queuectl claim emails --limit 10 -o json | queuectl ack --from -");
  sub->callback([&ctx, o] { run_ack(ctx, *o); });
}

}  // namespace queuectl
