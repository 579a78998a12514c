// queuectl groups: the ordered groups of a queue that hold their jobs back right now.
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "cli/views.hpp"
#include "core/errors.hpp"
#include "db/admin_repository.hpp"
#include "db/group_repository.hpp"
#include "db/job_repository.hpp"

namespace queuectl {
namespace {

struct GroupsOptions {
  std::string queue;
  bool blocked = false;
  int limit = 100;
};

Output run_groups(Context& ctx, const GroupsOptions& o) {
  validate_queue_name(o.queue);
  validate_positive(o.limit, "--limit");
  if (o.limit > 100000) throw UsageError("--limit " + std::to_string(o.limit) + " is over 100000");
  ctx.access = Access::read;
  Database& db = ctx.migrated_db();
  GroupFilter f;
  f.queue = o.queue;
  f.blocked_only = o.blocked;
  f.limit = o.limit;
  auto groups = GroupRepository(db).busy_groups(f);
  if (o.blocked && !AdminRepository(db).settings(o.queue).strict_groups)
    ctx.note("queue " + o.queue +
             " is not in strict mode: failed jobs do not block their groups (turn it on with "
             "`queuectl queue " +
             o.queue + " --strict-groups on`)");
  if (static_cast<int>(groups.size()) == f.limit)
    ctx.note("showing the first " + std::to_string(f.limit) + " groups: raise --limit for more");
  std::optional<std::string> now;
  if (ctx.format() == Format::table && !groups.empty()) now = JobRepository(db).now();
  return groups_view(groups, now);
}

}  // namespace

void setup_groups(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<GroupsOptions>();
  auto* sub =
      app.add_subcommand("groups", "Ordered groups that are busy or blocked, with their heads");
  sub->add_option("QUEUE", o->queue, "Queue name")->required();
  sub->add_flag("--blocked", o->blocked,
                "Only groups blocked by a failed head (strict mode); retry, cancel or purge "
                "the head to unblock");
  sub->add_option("--limit", o->limit, "At most this many groups (default 100)");
  sub->footer(
      "Jobs of one queue with the same --group-key run one at a time, in id order. A group\n"
      "is listed while its head (its oldest unfinished job) holds it:\n"
      "  processing  the head is running; the WAITING jobs behind it wait for its end\n"
      "  waiting     the head is not due before RUN_AT (a retry backoff, a delay), or it\n"
      "              waits for other jobs (enqueue --after; RUN_AT -)\n"
      "  blocked     the head failed and the queue is in strict mode\n"
      "Groups whose head can be claimed now are not listed.\n"
      "Examples:\n"
      "  queuectl groups orders\n"
      "  queuectl groups orders --blocked -o json\n"
      "  queuectl retry 42        (a blocked head: run it again)\n"
      "  queuectl cancel 42       (a blocked head: give up on it; the group moves on)");
  sub->callback([&ctx, o] { ctx.print(run_groups(ctx, *o)); });
}

}  // namespace queuectl
