#include "worker/heartbeat.hpp"

#include <memory>
#include <vector>

#include "core/errors.hpp"
#include "db/job_repository.hpp"

namespace queuectl {

Heartbeat::Heartbeat(DbUrl url, Duration lease, std::function<void()> wake,
                     std::function<void(const std::string&)> log)
    : url_(std::move(url)), lease_(lease), wake_(std::move(wake)), log_(std::move(log)) {
  thread_ = std::thread([this] { loop(); });
}

Heartbeat::~Heartbeat() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Heartbeat::track(std::int64_t id, const std::string& token) {
  std::lock_guard<std::mutex> lock(mutex_);
  tokens_[id] = token;
}

void Heartbeat::untrack(std::int64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  tokens_.erase(id);
}

std::set<std::int64_t> Heartbeat::take_lost() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::set<std::int64_t> out;
  out.swap(lost_);
  return out;
}

void Heartbeat::loop() {
  std::unique_ptr<Database> db;
  const auto interval = std::max(std::chrono::milliseconds(50), lease_.chrono() / 3);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!cv_.wait_for(lock, interval, [this] { return stop_; })) {
    std::vector<std::pair<std::int64_t, std::string>> batch(tokens_.begin(), tokens_.end());
    if (batch.empty()) continue;
    lock.unlock();
    std::set<std::int64_t> lost;
    try {
      if (!db) {
        db = std::make_unique<Database>(url_);
        // Shutting down: no more retries (the worker waits for this thread to end).
        db->give_up = [this] {
          std::lock_guard<std::mutex> guard(mutex_);
          return stop_;
        };
      }
      JobRepository repo(*db);
      for (const auto& [id, token] : batch) {
        try {
          repo.extend(id, token, lease_);
        } catch (const LeaseLost&) {
          lost.insert(id);
        } catch (const NotFound&) {
          lost.insert(id);  // deleted meanwhile (purged): lost as well; the others still beat
        }
      }
    } catch (const std::exception& e) {
      // Connection trouble: drop the connection and try again at the next beat; the lease
      // has two more beats before it runs out.
      db.reset();
      log_(std::string("heartbeat: ") + e.what() + "; retrying");
    }
    lock.lock();
    for (auto id : lost) {
      if (tokens_.erase(id)) lost_.insert(id);
    }
    if (!lost.empty()) wake_();
  }
}

}  // namespace queuectl
