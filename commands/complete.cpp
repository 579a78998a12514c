// queuectl __complete WHAT: hidden helper that feeds the shell completions in completions/.
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <memory>

#include "cli/commands.hpp"
#include "core/display_text.hpp"
#include "core/job_fields.hpp"
#include "db/admin_repository.hpp"
#include "db/migrations.hpp"
#include "db/schedule_repository.hpp"

namespace queuectl {
namespace {

// The longest a completion may keep the shell waiting, connection included.
constexpr long kDeadlineMs = 1500;

extern "C" void complete_deadline_passed(int) {
  _exit(0);  // no candidates, no message: the shell just offers nothing
}

// Ends the process with exit 0 when the deadline passes first: a server that does not
// answer (a dropped SYN, DNS, a listener that never speaks) bounds no single timeout.
class Deadline {
 public:
  explicit Deadline(long ms) {
    struct sigaction sa {};
    sa.sa_handler = complete_deadline_passed;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, nullptr);
    itimerval t{};
    t.it_value.tv_sec = ms / 1000;
    t.it_value.tv_usec = (ms % 1000) * 1000;
    setitimer(ITIMER_REAL, &t, nullptr);
  }
  ~Deadline() {
    itimerval off{};
    setitimer(ITIMER_REAL, &off, nullptr);
  }
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;
};

enum class Which { all, paused, unpaused };

// Queue names to offer: those with jobs or with a setting that is not the default; only
// the paused ones for `resume`, only the others for `pause`. Never creates an SQLite file
// (Database refuses a missing one), never waits much more than kDeadlineMs.
// Runs `read` on a read-only connection bounded by the deadline.
template <typename Read>
void with_completion_db(Context& ctx, Read read) {
  Deadline deadline(kDeadlineMs);
  Database db(ctx.url().with_connect_timeout(1), CreateFile::no, Access::read);
  db.max_attempts = 1;
  db.set_lock_wait(std::chrono::milliseconds(500));
  Migrator(db).require_current();
  read(db);
}

std::vector<std::string> queue_candidates(Context& ctx, Which which) {
  std::vector<std::string> out;
  std::vector<std::pair<std::string, bool>> named;
  with_completion_db(ctx, [&](Database& db) { named = AdminRepository(db).named_queues(); });
  for (const auto& [queue, paused] : named)
    if (which == Which::all || paused == (which == Which::paused)) out.push_back(queue);
  return out;
}

}  // namespace

void setup_complete(CLI::App& app, Context& ctx) {
  auto what = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("__complete", "Completion helper");
  sub->group("");  // hidden from --help
  sub->add_option("WHAT", *what,
                  "queues, paused-queues, unpaused-queues, schedules, statuses, commands or fields")
      ->required()
      ->check(CLI::IsMember({"queues", "paused-queues", "unpaused-queues", "schedules", "statuses",
                             "commands", "fields"}));
  sub->callback([&ctx, what, &app] {
    // The candidates, one a line.
    std::string text;
    if (*what == "fields") {
      // The job's fields for --field, from the one table of them (core/job_fields.hpp).
      for (const std::string& name : job_field_names()) text += name + "\n";
    } else if (*what == "statuses") {
      for (const char* s : {"ready", "waiting", "processing", "done", "failed", "canceled"})
        text += std::string(s) + "\n";
    } else if (*what == "commands") {
      for (const auto* c : app.get_subcommands({}))
        if (!c->get_group().empty()) text += c->get_name() + "\n";
    } else if (*what == "schedules") {
      try {
        with_completion_db(ctx, [&](Database& db) {
          for (const auto& name : ScheduleRepository(db).names()) text += visible_text(name) + "\n";
        });
      } catch (...) {
        text.clear();
      }
    } else {
      const Which which = *what == "paused-queues"     ? Which::paused
                          : *what == "unpaused-queues" ? Which::unpaused
                                                       : Which::all;
      // Completion must never print errors into the shell: stay silent on failure.
      try {
        // A name written by other SQL may hold control characters: offered escaped, as
        // every table shows it, so that a line is one name and nothing reaches the terminal.
        for (const auto& q : queue_candidates(ctx, which)) text += visible_text(q) + "\n";
      } catch (...) {
        text.clear();
      }
    }
    ctx.print_text(text);
  });
}

}  // namespace queuectl
