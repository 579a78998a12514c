// What happens to each job the worker holds: the outcome of a finished command, a lease
// the heartbeat gave up, the acks of a turn, and the queued fails and releases written.
#include <signal.h>

#include <algorithm>

#include "core/errors.hpp"
#include "core/validate.hpp"
#include "worker/worker_loop.hpp"

namespace queuectl::worker_detail {

void Worker::finish(Running& r) {
  const Job job = r.job;
  const std::string token = job.lock_token.value_or("");
  const std::string head = "job " + std::to_string(job.id) + " attempt " +
                           std::to_string(job.attempts) + "/" + std::to_string(job.max_attempts);
  const Clock::duration ran = Clock::now() - r.started;
  const std::string took = took_text(ran);
  pacing_.job_ran(ran);
  const int code = r.child->exit_code();
  std::function<void()> write;
  const auto fail_write = [this, job, token, head](std::string error, std::string what) {
    return [this, job, token, head, error, what] {
      Job after = repo().fail({job.id, token, error, std::nullopt, false, {}});
      ++summary_.failed;
      // Where the job went: a job out of attempts whose queue names a dead-letter queue is
      // ready there now (dead_from names this queue), not waiting for a retry here.
      std::string next;
      if (after.status == Status::failed)
        next = "failed for good";
      else if (after.dead_from && after.queue != job.queue)
        next = "gave up; moved to dead-letter queue " + after.queue + " as job " +
               std::to_string(after.id);
      else
        next = "retry at " + after.run_at;
      log_(head + ": " + what + ", " + next);
    };
  };
  if (r.lease_lost) {
    heartbeat_->untrack(job.id);
    ++summary_.lost;
    log_(head + (r.lease_unconfirmed
                     ? ": stopped before its lease could end unconfirmed, not acked (" + took +
                           "); the reaper returns it"
                     : ": lease lost while running; stopped, not acked (" + took + ")"));
    return;
  }
  if (r.release_on_exit) {
    write = [this, job, token, head, took] {
      repo().release(job.id, token);
      ++summary_.released;
      log_(head + ": released at shutdown (" + took + ")");
    };
  } else if (r.wait_error) {
    // It ran, but how it ended is unknown: not a success. Failing it counts the attempt, so
    // that a job cannot come back forever.
    write = fail_write("exit status unknown: " + *r.wait_error,
                       "exit status unknown (" + *r.wait_error + ") (" + took + ")");
  } else if (r.timed_out) {
    // What the command last said is often why it hung.
    std::string error = "timed out after " + o_.timeout->str() + "; stopped";
    if (std::string tail = r.child->err_tail(); !tail.empty()) error += ": " + tail;
    write = [this, job, token, head, took, error] {
      Job after = repo().fail({job.id, token, error, std::nullopt, false, {}});
      ++summary_.timed_out;
      log_(head + ": timed out (" + took + "), " +
           (after.status == Status::failed ? "failed for good" : "will retry"));
    };
  } else if (code == 0) {
    // stdout becomes the result when it is one JSON document queuectl could store (the
    // same check as `ack --result`); anything else acks the job without a result.
    // Output that is not stored is said so in the job's line, not dropped unseen.
    std::optional<std::string> result;
    std::string unstored;
    const std::string& out = r.child->out();
    if (r.child->out_truncated()) {
      unstored = "; its stdout is over " + std::to_string(Subprocess::kMaxStdout) +
                 " bytes: not stored as the result";
    } else if (!out.empty()) {
      try {
        result = validate_json(out, "result", Subprocess::kMaxStdout);
      } catch (const Error&) {
        unstored = "; its stdout (" + std::to_string(out.size()) +
                   " bytes) is not one JSON document: not stored as the result";
      }
    }
    writes_.push_ack({{job.id, token, result, job.queue},
                      head,
                      head + ": done (" + took + ")" + unstored,
                      Clock::now()});
    return;  // written with the other acks of a turn (start_turn)
  } else {
    std::string error = (code > 128 ? "killed by signal " + std::to_string(code - 128)
                                    : "exit code " + std::to_string(code));
    std::string tail = r.child->err_tail();
    if (!tail.empty()) error += ": " + tail;
    write = fail_write(error, "failed with " +
                                  (code > 128 ? "signal " + std::to_string(code - 128)
                                              : "exit " + std::to_string(code)) +
                                  " (" + took + ")");
  }
  // The lease stays tracked (and extended) until the finishing write has landed.
  writes_.push({job.id, head, r.release_on_exit ? "released" : "recorded", write});
}

void Worker::give_back(const Job& job, const std::string& why) {
  const std::string token = job.lock_token.value_or("");
  const std::string head = "job " + std::to_string(job.id);
  writes_.push({job.id, head, "released", [this, job, token, head, why] {
                  repo().release(job.id, token);
                  ++summary_.released;
                  log_(head + ": released, " + why);
                }});
}

void Worker::lease_ended(std::int64_t id, Heartbeat::Lapse lapse, Clock::time_point now) {
  const bool unconfirmed = lapse == Heartbeat::Lapse::unconfirmed;
  if (Running* r = children_.find(id)) {
    // Ended, and held only until its last report is written: its outcome is queued as any
    // other's, and written if the lease is still its own when the database answers.
    if (r->child->reaped()) return;
    if (!r->lease_lost) {
      r->lease_lost = true;
      r->lease_unconfirmed = unconfirmed;
      children_.stop(*r, SIGTERM, now);
    }
    return;
  }
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it)
    if (it->id == id) {
      ++summary_.lost;
      log_("job " + std::to_string(id) +
           (unconfirmed ? ": its lease could not be extended in time; not run, the reaper "
                          "returns it"
                        : ": lease lost before it started; not run"));
      waiting_.erase(it);
      return;
    }
  // Its command has ended and its outcome waits in a queue: said now, so that the line
  // written when the outcome lands (or is refused) follows a true account.
  if (!unconfirmed) return;  // the finishing write will find the loss and say so
  std::string head = writes_.head_of(id);
  if (turn_)  // out on the call thread, which only reads them too
    for (const PendingAck& a : turn_->acks)
      if (a.item.id == id) head = a.head;
  if (head.empty()) return;
  log_(head +
       ": its command has ended, but its lease could not be extended and may run out "
       "before its outcome is written; written if the lease is still its own when the "
       "database answers, else the reaper returns it");
}

void Worker::report_lost(const std::string& head, const std::string& verb, bool not_found) {
  ++summary_.lost;
  if (not_found)
    log_(head + ": gone (deleted meanwhile) before it could be " + verb);
  else
    log_(head + ": lease lost before it could be " + verb + "; another worker may run it");
}

void Worker::acks_landed(Turn& turn, Clock::time_point now) {
  std::vector<PendingAck>& due = turn.acks;
  if (turn.ack_error) {
    try {
      std::rethrow_exception(turn.ack_error);
    } catch (const TemporaryError& e) {
      // Nothing was written (one transaction): all of them wait for the next turn, before
      // those that finished meanwhile.
      writes_.put_back(std::move(due));
      connection_trouble(e);
      if (abandon_) abandon_writes();
      writes_.result(false, now);
    } catch (const std::exception&) {
      // The database refused the transaction itself: one ack at a time instead, so that only
      // the job it refuses is left to the reaper and the others are done.
      for (PendingAck& a : due) {
        writes_.push({a.item.id, a.head, "recorded", [this, item = a.item, done = a.done] {
                        repo().ack(item);
                        ++summary_.done;
                        log_(done);
                      }});
      }
    }
    return;
  }
  writes_.result(true, now);
  connection_back();
  std::vector<std::int64_t>& lost = turn.lost;
  std::sort(lost.begin(), lost.end());
  for (const PendingAck& a : due) {
    if (std::binary_search(lost.begin(), lost.end(), a.item.id)) {
      // Only on the failure path: one read tells a deleted job from a lost lease.
      bool gone = false;
      try {
        gone = !repo().find(a.item.id).has_value();
      } catch (const std::exception&) {
      }
      report_lost(a.head, "recorded", gone);
    } else {
      ++summary_.done;
      log_(a.done);
    }
    heartbeat_->untrack(a.item.id);
  }
}

bool Worker::flush_writes() {
  std::deque<PendingWrite>& writes = writes_.writes();
  while (!writes.empty()) {
    PendingWrite& p = writes.front();
    try {
      p.write();
    } catch (const TemporaryError& e) {
      // Contention or a lost connection: this write and those after it wait for the next
      // turn, with the leases still kept alive, unless a second signal said to stop now.
      connection_trouble(e);
      if (abandon_) abandon_writes();
      return false;
    } catch (const LeaseLost&) {
      report_lost(p.head, p.verb, false);
    } catch (const NotFound&) {
      report_lost(p.head, p.verb, true);
    } catch (const std::exception& e) {
      // The database refused the write itself: retrying cannot help. The lease runs out and
      // the reaper hands the job out again; the other jobs' writes go on.
      ++summary_.lost;
      log_(p.head + ": could not be " + p.verb + " (" + e.what() + "); left to the reaper");
    }
    heartbeat_->untrack(p.id);
    writes.pop_front();
  }
  return true;
}

void Worker::abandon_writes() {
  const std::vector<std::int64_t> ids = writes_.drop_all();
  summary_.lost += static_cast<std::int64_t>(ids.size());
  log_("stopping at once: " + std::to_string(ids.size()) +
       " job outcome(s) not recorded; their leases run out and the reaper returns them");
  for (const std::int64_t id : ids) heartbeat_->untrack(id);
}

}  // namespace queuectl::worker_detail
