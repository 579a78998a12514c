#include "worker/writes.hpp"

namespace queuectl {

void WriteQueue::put_back(std::vector<PendingAck> acks) {
  acks.insert(acks.end(), std::make_move_iterator(acks_.begin()),
              std::make_move_iterator(acks_.end()));
  acks_.swap(acks);
}

std::string WriteQueue::head_of(std::int64_t id) const {
  for (const PendingAck& a : acks_)
    if (a.item.id == id) return a.head;
  for (const PendingWrite& w : writes_)
    if (w.id == id) return w.head;
  return {};
}

bool WriteQueue::all_acks_due(Clock::time_point now, bool all) const {
  return all || (!acks_.empty() && now >= acks_.front().queued + kAckWait);
}

bool WriteQueue::due(Clock::time_point now, bool all,
                     const std::function<bool(const std::string&)>& running) const {
  if (!writes_.empty()) return true;
  if (acks_.empty()) return false;
  if (all_acks_due(now, all)) return true;
  for (const PendingAck& a : acks_)
    if (!running(a.item.token)) return true;
  return false;
}

std::vector<PendingAck> WriteQueue::take_due_acks(
    Clock::time_point now, bool all, const std::function<bool(const std::string&)>& running) {
  std::vector<PendingAck> due, later;
  if (acks_.empty()) return due;
  if (all_acks_due(now, all)) {
    due.swap(acks_);
  } else {
    // Those due go now; the others (their claim still running) keep their order.
    for (PendingAck& a : acks_) (running(a.item.token) ? later : due).push_back(std::move(a));
    acks_.swap(later);
  }
  return due;
}

std::optional<WriteQueue::Clock::time_point> WriteQueue::ack_deadline() const {
  if (acks_.empty()) return std::nullopt;
  return acks_.front().queued + kAckWait;
}

void WriteQueue::result(bool ok, Clock::time_point now) {
  failing_ = !ok && !empty();
  if (failing_) retry_at_ = now + kRetry;
}

std::vector<std::int64_t> WriteQueue::drop_all() {
  std::vector<std::int64_t> ids;
  for (const PendingWrite& w : writes_) ids.push_back(w.id);
  for (const PendingAck& a : acks_) ids.push_back(a.item.id);
  writes_.clear();
  acks_.clear();
  return ids;
}

}  // namespace queuectl
