// queuectl top: a live view of the queues, the busiest workers and the newest failures.
// Full-screen on a terminal, a plain frame every interval otherwise, one frame with --once.
// It only reads: the schema must be current (it never migrates) and every frame is one
// read-only snapshot.
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "cli/screen.hpp"
#include "cli/terminal.hpp"
#include "cli/top_view.hpp"
#include "core/duration.hpp"
#include "core/errors.hpp"
#include "core/human_time.hpp"
#include "core/signal_scope.hpp"
#include "db/top_repository.hpp"

namespace queuectl {
namespace {

struct TopOptions {
  bool once = false;
  std::string interval = "1s";
  int failures = kTopFailures;
  bool failures_given = false;  // given at all: the default's value given is still refused
};

constexpr std::int64_t kShortestIntervalMs = 100;
constexpr std::size_t kPlainWidth = 80;

TopSnapshot read_frame(TopRepository& repo, int failures = kTopFailures) {
  return repo.read(kTopWorkers, failures);
}

// The frames of a live view. A lost connection (or a server that stays busy) does not end
// top, exactly when an operator watches an incident: the last data stays on screen, a line
// under the title says since when the database has not answered and why, and each frame
// tries a new connection until one works.
class LiveFrames {
 public:
  LiveFrames(Database& first, Duration interval)
      : db_(&first), url_(first.url()), interval_(interval) {}

  // The data of the next frame, and `info.trouble` set or cleared.
  const TopSnapshot& next(TopFrameInfo& info) {
    try {
      if (!db_) {
        own_ = std::make_unique<Database>(url_, CreateFile::no, Access::read);
        db_ = own_.get();
      }
      TopRepository repo(*db_);
      snap_ = read_frame(repo);
      down_since_.reset();
      info.trouble.clear();
    } catch (const Error& e) {
      // Any failure, not only a lost connection: after an outage a login may be refused
      // for a while (a server starting up, an account locked by the operator), and the
      // view is there to be watched until it answers again.
      if (!down_since_) down_since_ = std::chrono::steady_clock::now();
      db_ = nullptr;
      own_.reset();
      const double down =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - *down_since_).count();
      const std::string reason = e.what();
      info.trouble = "no answer from the database for " + human_duration(down) +
                     " (the last data read, as of the title's clock); trying again every " +
                     interval_.str() + ": " + reason.substr(0, reason.find('\n'));
    }
    if (!snap_) snap_ = TopSnapshot{};
    return *snap_;
  }

 private:
  Database* db_;  // the connection in use; null after one was lost
  std::unique_ptr<Database> own_;
  DbUrl url_;
  Duration interval_;
  std::optional<TopSnapshot> snap_;
  std::optional<std::chrono::steady_clock::time_point> down_since_;
};

// Full-screen until q, Ctrl-C or a signal; the screen is given back on every way out.
void run_screen(LiveFrames& frames, TopFrameInfo info, Duration interval) {
  Screen screen(STDIN_FILENO, STDOUT_FILENO);
  info.keys = true;
  const TopSnapshot* snap = &frames.next(info);
  for (;;) {
    screen.draw(render_top(*snap, info, screen.columns(), screen.rows()));
    const Screen::Event event = screen.wait(interval.chrono());
    if (event == Screen::Event::quit) return;
    if (event == Screen::Event::resize) continue;  // the same data, drawn to the new size
    snap = &frames.next(info);
  }
}

// Output that is not a terminal: a plain frame (no escape codes) every interval, a blank
// line between frames, until SIGINT, SIGTERM or SIGHUP, or until stdout is closed.
void run_plain(Context& ctx, LiveFrames& frames, TopFrameInfo info, Duration interval) {
  SignalScope signals({SIGINT, SIGTERM, SIGHUP, SIGWINCH});
  const std::size_t width = output_width(STDOUT_FILENO).value_or(kPlainWidth);
  for (bool first = true;; first = false) {
    const TopSnapshot& snap = frames.next(info);
    std::string frame = first ? "" : "\n";
    for (const std::string& line : render_top(snap, info, width, std::nullopt))
      frame += line + "\n";
    if (!ctx.print_text(frame)) return;
    const auto deadline = std::chrono::steady_clock::now() + interval.chrono();
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd fd{signals.fd(), POLLIN, 0};
      if (::poll(&fd, 1, static_cast<int>(left.count())) > 0)
        for (int sig : signals.take())
          if (sig != SIGWINCH) return;
    }
  }
}

void run_top(Context& ctx, const TopOptions& o) {
  const Duration interval = Duration::parse(o.interval, "--interval");
  if (interval.ms() < kShortestIntervalMs)
    throw UsageError("--interval must be at least 100ms (got " + o.interval + ")");
  const Format format = ctx.format();
  if (format != Format::table && format != Format::prometheus && !o.once)
    throw UsageError("top -o " + ctx.options.format +
                     " prints one frame: add --once (the live view is for people)");
  if (!ctx.options.fields.empty())
    throw UsageError("--field does not apply to top: use `top --once -o json`");
  if (o.failures_given && !o.once)
    throw UsageError("--failures is for `top --once` (the screen has room for " +
                     std::to_string(kTopFailures) + ")");

  Database& db = ctx.migrated_db();
  TopRepository repo(db);
  TopFrameInfo info{db.url().redacted(), o.once ? std::string() : interval.str(), false, {}};
  if (o.once) {
    const TopSnapshot snap = read_frame(repo, o.failures);
    Output out;
    out.document = top_json(snap);
    out.lines =
        render_top(snap, info, output_width(STDOUT_FILENO).value_or(kPlainWidth), std::nullopt);
    ctx.print(out);
    return;
  }
  LiveFrames frames(db, interval);
  if (ctx.stdout_is_terminal())
    run_screen(frames, info, interval);
  else
    run_plain(ctx, frames, info, interval);
}

}  // namespace

void setup_top(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<TopOptions>();
  auto* sub =
      app.add_subcommand("top", "Live view: queues, busiest workers, newest failures (q quits)");
  sub->add_flag("--once", o->once, "Print one frame and exit (also -o json)");
  sub->add_option("--interval", o->interval, "Time between frames (default 1s, at least 100ms)")
      ->type_name("DUR");
  sub->add_option("--failures", o->failures,
                  "With --once: list the N newest failures (default 5; JSON has them all)")
      ->check(CLI::Range(1, 1000))
      ->type_name("N");
  sub->footer(
      "On a terminal, top takes the whole screen and redraws it every --interval; q or\n"
      "Ctrl-C quits (r redraws at once) and the terminal is left as it was. Per queue:\n"
      "READY (due now), SCHED (scheduled), PROC (processing), EXPIRED (leases that have\n"
      "lapsed), FAILED, DONE/M (done in the last minute), OLDEST (age of the oldest due\n"
      "job), FLAGS (P paused, S strict, L concurrency limit, R rate limit, T retention,\n"
      "N done jobs not kept); then the workers holding the most leases and the newest\n"
      "failures with their error's first line.\n"
      "Queues with nothing ready, running, failed or done in the last minute, and no\n"
      "setting, are left out (`queuectl stats` lists every queue). When stdout is not a\n"
      "terminal, a plain frame is printed every interval, with a blank line between\n"
      "frames, until SIGINT or SIGTERM. top only reads, each frame in one snapshot, and\n"
      "its statements read no done job older than a minute: cheap on a large table.\n"
      "A lost connection does not end top: the last frame stays, a line under the title\n"
      "says for how long the database has not answered and why, and every interval it\n"
      "tries again, carrying on when the database is back.\n"
      "Examples:\n"
      "  queuectl top\n"
      "  queuectl top --interval 5s\n"
      "  queuectl top --once\n"
      "  queuectl top --once -o json | jq '.queues[] | {queue, ready, failed}'");
  sub->callback([&ctx, o, sub] {
    o->failures_given = sub->count("--failures") > 0;
    run_top(ctx, *o);
  });
}

}  // namespace queuectl
