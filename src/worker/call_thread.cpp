#include "worker/call_thread.hpp"

#include "core/process.hpp"

namespace queuectl {

CallThread::CallThread(std::function<void()> wake) : wake_(std::move(wake)) {
  thread_ = start_helper_thread([this] { loop(); });
}

CallThread::~CallThread() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void CallThread::start(std::function<void()> call) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    call_ = std::move(call);
    finished_ = false;
  }
  started_ = true;
  cv_.notify_one();
}

bool CallThread::take_finished() {
  if (!started_) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!finished_) return false;
  finished_ = false;
  started_ = false;
  return true;
}

void CallThread::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    cv_.wait(lock, [this] { return quit_ || call_; });
    if (!call_) return;  // quit, nothing left to run
    std::function<void()> call = std::move(call_);
    call_ = nullptr;
    lock.unlock();
    try {
      call();
    } catch (...) {
      // The call keeps its own errors; nothing may leave the thread.
    }
    call = nullptr;
    lock.lock();
    finished_ = true;
    wake_();
  }
}

}  // namespace queuectl
