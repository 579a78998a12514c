#include "cli/child.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "core/errors.hpp"
#include "core/subprocess.hpp"

namespace queuectl {
namespace {

// Read by the signal handler: lock-free atomics are safe there, and stay correct should a
// thread queuectl did not start (a library's) take the signal.
std::atomic<pid_t> g_group{0};
std::atomic<int> g_pending{0};  // a signal that came before the command's group was known
static_assert(std::atomic<pid_t>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "the signal handler needs lock-free atomics");

// To the command's whole process group, as timeout(1) does: a shell script and what it
// started hear the signal alike.
void forward(int sig) {
  const pid_t group = g_group.load();
  if (group > 0)
    kill(-group, sig);
  else
    g_pending.store(sig);
}

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
constexpr std::size_t kForwardedCount = sizeof kForwarded / sizeof kForwarded[0];

// Installs `forward` for the forwarded signals, which stay blocked in this thread until
// `start_forwarding` (so that none sent before the command's group is known is lost: it is
// delivered, and forwarded, once they are unblocked). Puts everything back when destroyed,
// also when waiting for the command throws.
class Forwarding {
 public:
  Forwarding() {
    sigset_t forwarded;
    sigemptyset(&forwarded);
    for (int sig : kForwarded) sigaddset(&forwarded, sig);
    pthread_sigmask(SIG_BLOCK, &forwarded, &mask_);
    g_group = 0;
    g_pending = 0;
    struct sigaction sa {};
    sa.sa_handler = forward;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (std::size_t i = 0; i < kForwardedCount; ++i) sigaction(kForwarded[i], &sa, &old_[i]);
  }
  ~Forwarding() {
    g_group = 0;
    pthread_sigmask(SIG_SETMASK, &mask_, nullptr);
    for (std::size_t i = 0; i < kForwardedCount; ++i) sigaction(kForwarded[i], &old_[i], nullptr);
  }
  Forwarding(const Forwarding&) = delete;
  Forwarding& operator=(const Forwarding&) = delete;

  // The forwarded signals that were ignored when queuectl started (nohup, a shell's `&`):
  // the command starts with them ignored too, as it would have without queuectl.
  std::vector<int> ignored() const {
    std::vector<int> out;
    for (std::size_t i = 0; i < kForwardedCount; ++i)
      if (!(old_[i].sa_flags & SA_SIGINFO) && old_[i].sa_handler == SIG_IGN)
        out.push_back(kForwarded[i]);
    return out;
  }

  // From now on signals go to `child`'s group; one that came meanwhile is passed on now.
  void start_forwarding(Subprocess& child) {
    g_group = child.pid();
    pthread_sigmask(SIG_SETMASK, &mask_, nullptr);
    if (int sig = g_pending.exchange(0)) child.signal(sig);
  }

 private:
  sigset_t mask_;
  struct sigaction old_[kForwardedCount];
};

}  // namespace

int run_forwarding_signals(const std::vector<std::string>& argv,
                           const std::function<bool()>& keep_going, int kill_after_ms) {
  Forwarding forwarding;
  Subprocess::Options options;
  options.argv = argv;
  options.take_terminal = true;
  options.to_ignore = forwarding.ignored();
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
  forwarding.start_forwarding(*child);
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
