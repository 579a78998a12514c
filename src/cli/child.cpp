#include "cli/child.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "core/errors.hpp"
#include "core/signal_scope.hpp"
#include "core/subprocess.hpp"

namespace queuectl {
namespace {

// Forwarded to the command's whole process group, as timeout(1) does.
const std::vector<int> kForwarded = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

}  // namespace

int run_forwarding_signals(const std::vector<std::string>& argv,
                           const std::function<bool()>& keep_going, int kill_after_ms) {
  // Blocked until the command's group is known, so that none sent before is lost: it is
  // delivered, and forwarded, once they are unblocked. Put back when this returns or throws.
  SignalScope forwarding = SignalScope::forwarding(kForwarded);
  Subprocess::Options options;
  options.argv = argv;
  options.take_terminal = true;
  options.to_ignore = forwarding.ignored_before();
  std::unique_ptr<Subprocess> child;
  try {
    child = Subprocess::start(std::move(options));
  } catch (const Error& e) {
    std::fprintf(stderr, "queuectl: error: %s\n", e.what());
    return 127;
  }
  if (child->exec_error()) {
    std::fprintf(stderr, "queuectl: error: %s\n", child->exec_error_text().c_str());
    return child->exit_code();
  }
  forwarding.forward_to(child->pid());
  bool stopping = false;
  auto kill_at = std::chrono::steady_clock::time_point::max();
  while (!child->reap()) {
    if (!stopping && keep_going && !keep_going()) {
      stopping = true;
      child->signal(SIGTERM);
      kill_at = std::chrono::steady_clock::now() + std::chrono::milliseconds(kill_after_ms);
    }
    if (stopping && std::chrono::steady_clock::now() >= kill_at) {
      child->signal(SIGKILL);
      kill_at = std::chrono::steady_clock::time_point::max();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return child->exit_code();
}

}  // namespace queuectl
