// queuectl batch: jobs enqueued together (enqueue --batch ID) and one callback job when the
// batch is closed and every member has finished.
#include <algorithm>
#include <memory>

#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "cli/views.hpp"
#include "core/errors.hpp"
#include "core/validate.hpp"
#include "db/batches.hpp"

namespace queuectl {
namespace {

struct CreateOptions {
  std::vector<std::string> on_success;  // QUEUE PAYLOAD
  std::vector<std::string> on_failure;
};

// A callback from `--on-success QUEUE PAYLOAD`: a valid queue and a JSON object without
// "batch", which the callback's payload gets from queuectl.
std::optional<BatchCallback> callback_option(const std::vector<std::string>& given,
                                             const std::string& option, std::size_t max_payload) {
  if (given.empty()) return std::nullopt;
  if (given.size() != 2) throw UsageError(option + " needs QUEUE and PAYLOAD");
  validate_queue_name(given[0]);
  std::string payload = validate_json(given[1], option + " payload", max_payload);
  const auto doc = [&] {
    try {
      return parse_line_object(payload);
    } catch (const UsageError& e) {
      throw UsageError(option + " payload: " + e.what() + " (a callback's payload is one)");
    }
  }();
  const bool has_batch = std::any_of(doc.items().begin(), doc.items().end(),
                                     [](const auto& m) { return m.first == "batch"; });
  if (has_batch)
    throw UsageError(option +
                     " payload must not have a \"batch\" field: queuectl adds it "
                     "(the batch's id and counts)");
  return BatchCallback{given[0], payload};
}

nlohmann::ordered_json callback_json(const std::optional<BatchCallback>& cb) {
  if (!cb) return nullptr;
  return {{"queue", cb->queue}, {"payload", nlohmann::ordered_json::parse(cb->payload)}};
}

Output batch_output(const Batch& b) {
  auto opt = [](const std::optional<std::string>& v) {
    return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
  };
  nlohmann::ordered_json doc = {
      {"id", b.id},
      {"state", b.finished_at ? "finished"
                : b.closed_at ? "closed"
                              : "open"},
      {"total", b.total},
      {"pending", b.pending},
      {"done", b.done},
      {"failed", b.failed},
      {"canceled", b.canceled},
      {"on_success", callback_json(b.on_success)},
      {"on_failure", callback_json(b.on_failure)},
      {"callback_job_id",
       b.callback_job_id ? nlohmann::ordered_json(*b.callback_job_id) : nlohmann::ordered_json()},
      {"created_at", b.created_at},
      {"closed_at", opt(b.closed_at)},
      {"finished_at", opt(b.finished_at)}};
  Output out = object_view(doc);
  out.items = nlohmann::ordered_json::array({doc});
  return out;
}

std::int64_t batch_id(const std::string& text) {
  try {
    return parse_job_id(text);
  } catch (const UsageError&) {
    throw UsageError("batch id '" + text.substr(0, 40) + "' is not a positive integer");
  }
}

}  // namespace

void setup_batch(CLI::App& app, Context& ctx) {
  auto* batch = app.add_subcommand(
      "batch", "Jobs enqueued together, and one callback job when all have finished");
  batch->require_subcommand(1);
  batch->footer(
      "A batch collects jobs (`enqueue --batch ID`). Once it is closed (`batch close ID`, no\n"
      "more jobs) and every member has finished (done, failed for good or canceled), exactly\n"
      "one callback job is enqueued, in the transaction that saw the last of them: the\n"
      "--on-success job when every member is done, else the --on-failure one. Its payload is\n"
      "the one given, with \"batch\": {id, total, done, failed, canceled} added.\n"
      "Examples:\n"
      "  id=$(queuectl batch create --on-success reports '{\"kind\":\"nightly\"}')\n"
      "  queuectl enqueue render '{\"page\":1}' --batch \"$id\"\n"
      "  queuectl batch close \"$id\"\n"
      "  queuectl batch show \"$id\"");
  {
    auto o = std::make_shared<CreateOptions>();
    auto* sub = batch->add_subcommand("create", "Open a new batch; prints its id");
    sub->add_option("--on-success", o->on_success,
                    "Callback when every member is done: its QUEUE and PAYLOAD (a JSON object)")
        ->expected(2)
        ->type_name("QUEUE PAYLOAD");
    sub->add_option("--on-failure", o->on_failure,
                    "Callback when a member failed for good or was canceled: QUEUE PAYLOAD")
        ->expected(2)
        ->type_name("QUEUE PAYLOAD");
    sub->footer(
        "Give at least one callback. The outcome without one enqueues nothing when the batch\n"
        "finishes. Exit 2 for a bad queue name or a payload that is not a JSON object.\n"
        "Example:\n"
        "  queuectl batch create --on-success publish '{}' --on-failure alerts '{\"to\":\"ops\"}'");
    sub->callback([&ctx, o] {
      auto success = callback_option(o->on_success, "--on-success", ctx.options.max_payload);
      auto failure = callback_option(o->on_failure, "--on-failure", ctx.options.max_payload);
      if (!success && !failure)
        throw UsageError("batch create needs --on-success or --on-failure (or both)");
      Output out = batch_output(Batches(ctx.migrated_db()).create(success, failure));
      out.table.reset();
      // The id alone, for `id=$(queuectl batch create ...)`; -o json has the whole batch.
      out.lines = {std::to_string(out.document["id"].get<std::int64_t>())};
      ctx.print(out);
    });
  }
  {
    auto id = std::make_shared<std::string>();
    auto* sub = batch->add_subcommand(
        "close", "Say no more jobs will join; calls back now if every member has finished");
    sub->add_option("ID", *id, "Batch id")->required();
    sub->footer(
        "Closing a closed batch changes nothing. A batch closed with no members calls back at\n"
        "once (its counts are all 0, so --on-success). Exit 4 when there is no such batch.");
    sub->callback([&ctx, id] {
      const std::int64_t bid = batch_id(*id);
      Batch b = Batches(ctx.migrated_db()).close(bid);
      Output out = batch_output(b);
      out.table.reset();
      out.lines = {
          "batch " + std::to_string(b.id) + " closed: " + std::to_string(b.total) + " job(s), " +
          std::to_string(b.pending) + " not finished" +
          (b.callback_job_id ? "; callback job " + std::to_string(*b.callback_job_id) : "")};
      ctx.print_report(out);
    });
  }
  {
    auto id = std::make_shared<std::string>();
    auto* sub = batch->add_subcommand("show", "A batch: its state, counts and callback");
    sub->add_option("ID", *id, "Batch id")->required();
    sub->footer("state is open, closed or finished. Exit 4 when there is no such batch.");
    sub->callback([&ctx, id] {
      const std::int64_t bid = batch_id(*id);
      ctx.access = Access::read;
      ctx.print(batch_output(Batches(ctx.migrated_db()).get(bid)));
    });
  }
}

}  // namespace queuectl
