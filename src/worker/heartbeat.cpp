#include "worker/heartbeat.hpp"

#include <memory>
#include <vector>

#include "core/errors.hpp"
#include "core/process.hpp"
#include "db/job_repository.hpp"

namespace queuectl {

Heartbeat::Heartbeat(DbUrl url, Duration lease, std::function<void()> wake,
                     std::function<void(const std::string&)> log)
    : url_(std::move(url)), lease_(lease), wake_(std::move(wake)), log_(std::move(log)) {
  thread_ = start_helper_thread([this] { loop(); });
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
  tokens_[id] = {token, std::chrono::steady_clock::now()};
}

void Heartbeat::untrack(std::int64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  tokens_.erase(id);
  reports_.erase(id);
}

void Heartbeat::report(std::int64_t id, const JobReport& report) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!tokens_.count(id)) return;
    reports_[id].merge(report);
    reported_ = true;
  }
  cv_.notify_all();
}

bool Heartbeat::reporting(std::int64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  return reports_.count(id) > 0 || writing_.count(id) > 0;
}

std::map<std::int64_t, Heartbeat::Lapse> Heartbeat::take_lost() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::map<std::int64_t, Lapse> out;
  out.swap(lost_);
  return out;
}

void Heartbeat::loop() {
  using Clock = std::chrono::steady_clock;
  std::unique_ptr<Database> db;
  const auto interval = std::max(std::chrono::milliseconds(50), lease_.chrono() / 3);
  // An extend waits at most half a beat for a lock (a row held elsewhere; on SQLite the
  // database's write lock), never the 2 s of other commands: with a 3 s lease a blocked
  // extend used to wait 2 s, so the worker learned it had no lease at the lease's very end
  // and the command ran on past it. The give-up rule below counts that wait, and half a
  // beat for the worker to stop the command.
  const auto extend_wait =
      std::min(std::chrono::duration_cast<std::chrono::milliseconds>(kLockWait), interval / 2);
  // MySQL/MariaDB count lock waits in whole seconds, at least 1.
  const auto counted_wait =
      url_.backend == Backend::mysql
          ? std::chrono::ceil<std::chrono::seconds>(std::max(extend_wait, interval / 2))
          : extend_wait;
  // A connection that keeps failing is said once, not at every beat (the worker's own
  // lines tell the outage and its end).
  bool connection_failing = false;
  std::unique_lock<std::mutex> lock(mutex_);
  auto next_beat = Clock::now() + interval;
  auto last_reports = Clock::now() - kReportGap;
  while (true) {
    // Until the beat, or a report (not sooner than kReportGap after the last ones written,
    // so that a command reporting in a tight loop costs a few statements a second).
    if (cv_.wait_until(lock, next_beat, [this] { return stop_ || reported_; })) {
      if (stop_) break;
      if (cv_.wait_until(lock, std::min(next_beat, last_reports + kReportGap),
                         [this] { return stop_; }))
        break;
    }
    const bool beat = Clock::now() >= next_beat;
    if (beat) next_beat = Clock::now() + interval;
    reported_ = false;
    // While the database does not answer, reports wait for the beat's one try.
    if (!beat && connection_failing) continue;
    // The beat extends every lease; between beats, only the leases with a report.
    struct Item {
      std::int64_t id;
      std::string token;
      JobReport report;
    };
    std::vector<Item> batch;
    for (const auto& [id, t] : tokens_) {
      auto r = reports_.find(id);
      if (!beat && r == reports_.end()) continue;
      batch.push_back({id, t.token, r == reports_.end() ? JobReport{} : r->second});
    }
    // Taken: a report that cannot be written now is put back (under what came since).
    for (const Item& item : batch)
      if (reports_.erase(item.id)) writing_.insert(item.id);
    if (batch.empty()) continue;
    if (!beat) last_reports = Clock::now();
    lock.unlock();
    bool wrote_reports = false;
    // The reports taken, until written (or their lease is found lost).
    std::map<std::int64_t, JobReport> unwritten;
    for (const Item& item : batch)
      if (!item.report.empty()) unwritten[item.id] = item.report;
    std::set<std::int64_t> lost;
    std::map<std::int64_t, Clock::time_point> confirmed;
    try {
      if (!db) {
        db = std::make_unique<Database>(url_);
        // One try per beat (the next beat is the retry), so that one blocked extend does
        // not hold up the others for a whole retry series; none when shutting down.
        db->max_attempts = 1;
        db->set_lock_wait(extend_wait);
        db->give_up = [this] {
          std::lock_guard<std::mutex> guard(mutex_);
          return stop_;
        };
      }
      JobRepository repo(*db);
      connection_failing = false;
      for (const Item& item : batch) {
        const std::int64_t id = item.id;
        const auto sent = Clock::now();
        try {
          repo.extend(id, item.token, lease_, item.report);
          unwritten.erase(id);
          if (!item.report.empty()) wrote_reports = true;
          confirmed[id] = sent;
        } catch (const LeaseLost&) {
          unwritten.erase(id);
          lost.insert(id);
        } catch (const NotFound&) {
          unwritten.erase(id);
          lost.insert(id);  // deleted meanwhile (purged): lost as well; the others still beat
        } catch (const ConnectionLost&) {
          throw;  // ends the beat: the connection is made again at the next one
        } catch (const TemporaryError& e) {
          // A row lock held elsewhere (the lock wait ran out) or contention: this job waits
          // for the next beat, the others go on now.
          log_("heartbeat: job " + std::to_string(id) + ": " + e.what());
        }
      }
    } catch (const std::exception& e) {
      // Connection trouble: drop the connection and try again at the next beat.
      db.reset();
      if (!connection_failing)
        log_(std::string("heartbeat: ") + e.what() + "; retrying at every beat");
      connection_failing = true;
    }
    lock.lock();
    writing_.clear();
    for (auto& [id, report] : unwritten) {
      if (report.empty() || !tokens_.count(id)) continue;
      auto& pending = reports_[id];
      report.merge(pending);
      pending = report;
    }
    const auto now = Clock::now();
    std::set<std::int64_t> unconfirmed;
    for (auto& [id, t] : tokens_) {
      auto it = confirmed.find(id);
      if (it != confirmed.end()) t.confirmed = it->second;
      // Judged at beats only: a pass that wrote some jobs' reports extended no other lease,
      // and the rule counts on a beat's extend of each.
      else if (!beat)
        continue;
      // Unconfirmed for so long that the lease may end before the next beat has had its
      // chance: less left than a beat, its lock wait, and half a beat to stop the command.
      // Give it up now, while it is still ours. The worker says what that means for the
      // job (stopped, not run, or its outcome still waiting to be written).
      else if (t.confirmed + lease_.chrono() < now + interval + counted_wait + interval / 2 &&
               !lost.count(id))
        unconfirmed.insert(id);
    }
    for (auto id : lost) {
      reports_.erase(id);
      if (tokens_.erase(id)) lost_[id] = Lapse::refused;
    }
    for (auto id : unconfirmed) {
      reports_.erase(id);
      if (tokens_.erase(id)) lost_[id] = Lapse::unconfirmed;
    }
    // The worker may be holding a finished job until its report is written.
    if (!lost.empty() || !unconfirmed.empty() || wrote_reports) wake_();
  }
}

}  // namespace queuectl
