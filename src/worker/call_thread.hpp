// Runs one call at a time on a thread of its own: the worker's claims and acks, so that
// while one waits for the database the worker's loop goes on reaping finished commands
// and starting the jobs it already holds (issue 13: `work` was latency-bound, its loop
// blocked in database round trips half of the time).
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace queuectl {

class CallThread {
 public:
  // `wake` is called from the thread each time a call has returned.
  explicit CallThread(std::function<void()> wake);
  // Waits for the call in progress, if any, then ends the thread.
  ~CallThread();
  CallThread(const CallThread&) = delete;
  CallThread& operator=(const CallThread&) = delete;

  // Runs `call` on the thread; only while idle(). What it throws is the caller's to catch
  // inside `call`: the thread ignores it.
  void start(std::function<void()> call);
  // No call started since the last one was taken.
  bool idle() const { return !started_; }
  // True once the started call has returned (and idle from then on). What the call wrote
  // is visible to the caller from here.
  bool take_finished();

 private:
  void loop();

  std::function<void()> wake_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::function<void()> call_;  // to run; empty while none waits
  bool finished_ = false;
  bool quit_ = false;
  bool started_ = false;  // the owner's thread only
  std::thread thread_;
};

}  // namespace queuectl
