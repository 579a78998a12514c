// queuectl top: a live view of the queues, the busiest workers and the newest failures.
// Full-screen on a terminal, a plain frame every interval otherwise, one frame with --once.
// It only reads: the schema must be current (it never migrates) and every frame is one
// read-only snapshot.
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "cli/commands.hpp"
#include "cli/screen.hpp"
#include "cli/terminal.hpp"
#include "cli/top_view.hpp"
#include "core/duration.hpp"
#include "core/errors.hpp"
#include "db/top_repository.hpp"

namespace queuectl {
namespace {

struct TopOptions {
  bool once = false;
  std::string interval = "1s";
};

constexpr std::int64_t kShortestIntervalMs = 100;
constexpr std::size_t kPlainWidth = 80;

TopSnapshot read_frame(TopRepository& repo) {
  return repo.read(kTopWorkers, kTopFailures);
}

// Full-screen until q, Ctrl-C or a signal; the screen is given back on every way out.
void run_screen(TopRepository& repo, TopFrameInfo info, Duration interval) {
  Screen screen(STDIN_FILENO, STDOUT_FILENO);
  info.keys = true;
  TopSnapshot snap = read_frame(repo);
  for (;;) {
    screen.draw(render_top(snap, info, screen.columns(), screen.rows()));
    const Screen::Event event = screen.wait(interval.chrono());
    if (event == Screen::Event::quit) return;
    if (event == Screen::Event::resize) continue;  // the same data, drawn to the new size
    snap = read_frame(repo);
  }
}

// Output that is not a terminal: a plain frame (no escape codes) every interval, a blank
// line between frames, until SIGINT, SIGTERM or SIGHUP, or until stdout is closed.
void run_plain(Context& ctx, TopRepository& repo, const TopFrameInfo& info, Duration interval) {
  ViewSignals signals;
  const std::size_t width = output_width(STDOUT_FILENO).value_or(kPlainWidth);
  for (bool first = true;; first = false) {
    const TopSnapshot snap = read_frame(repo);
    std::ostream& out = *ctx.out;
    if (!first) out << "\n";
    for (const std::string& line : render_top(snap, info, width, std::nullopt)) out << line << "\n";
    out.flush();
    if (!out) return;
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

  Database& db = ctx.migrated_db();
  TopRepository repo(db);
  TopFrameInfo info{db.url().redacted(), o.once ? std::string() : interval.str(), false};
  if (o.once) {
    const TopSnapshot snap = read_frame(repo);
    Output out;
    out.document = top_json(snap);
    out.lines =
        render_top(snap, info, output_width(STDOUT_FILENO).value_or(kPlainWidth), std::nullopt);
    ctx.print(out);
    return;
  }
  if (ctx.out == &std::cout && ::isatty(STDOUT_FILENO))
    run_screen(repo, info, interval);
  else
    run_plain(ctx, repo, info, interval);
}

}  // namespace

void setup_top(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<TopOptions>();
  auto* sub =
      app.add_subcommand("top", "Live view: queues, busiest workers, newest failures (q quits)");
  sub->add_flag("--once", o->once, "Print one frame and exit (also -o json)");
  sub->add_option("--interval", o->interval, "Time between frames (default 1s, at least 100ms)")
      ->type_name("DUR");
  sub->footer(
      "On a terminal, top takes the whole screen and redraws it every --interval; q or\n"
      "Ctrl-C quits (r redraws at once) and the terminal is left as it was. Per queue:\n"
      "READY (due now), SCHED (scheduled), PROC (processing), EXPIRED (leases that have\n"
      "lapsed), FAILED, DONE/M (done in the last minute), OLDEST (age of the oldest due\n"
      "job), FLAGS (P paused, S strict groups, L concurrency limit); then the workers\n"
      "holding the most leases and the newest failures with their error's first line.\n"
      "Queues with nothing ready, running, failed or done in the last minute, and no\n"
      "setting, are left out (`queuectl stats` counts every job). When stdout is not a\n"
      "terminal, a plain frame is printed every interval, with a blank line between\n"
      "frames, until SIGINT or SIGTERM. top only reads, each frame in one snapshot, and\n"
      "its statements read no done job older than a minute: cheap on a large table.\n"
      "Examples:\n"
      "  queuectl top\n"
      "  queuectl top --interval 5s\n"
      "  queuectl top --once\n"
      "  queuectl top --once -o json | jq '.queues[] | {queue, ready, failed}'");
  sub->callback([&ctx, o] { run_top(ctx, *o); });
}

}  // namespace queuectl
