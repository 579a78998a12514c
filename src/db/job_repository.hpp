// The job queue as operations on jobs, tokens and durations. The only place that runs
// SQL; every statement comes from the dialect and binds its values.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/backoff.hpp"
#include "core/duration.hpp"
#include "core/job.hpp"
#include "core/rate_limit.hpp"
#include "db/database.hpp"

namespace queuectl {

struct NewJob {
  std::string queue;
  std::string payload = "{}";  // validated, compact JSON
  int priority = 0;
  Duration delay;                     // added to run_at (or to now)
  std::optional<std::string> run_at;  // "YYYY-MM-DD HH:MM:SS.ffffff" UTC, else now
  int max_attempts = 25;
  std::optional<std::string> dedupe_key;
  std::optional<std::string> group_key;
  // The W3C trace context of the enqueuer (validated; see core/trace_context).
  std::optional<std::string> trace_parent;
  std::optional<std::string> trace_state;
};

struct EnqueueResult {
  Job job;
  bool duplicate = false;  // the dedupe key matched an existing job, which is returned
};

struct BulkEnqueueResult {
  std::int64_t enqueued = 0;
  std::int64_t duplicates = 0;
};

struct ClaimRequest {
  std::string queue;
  int limit = 1;
  Duration lease = Duration::seconds(30);
  std::string worker;
};

// Where a pick-then-mark claim's pick starts its scan (ClaimPickThenMark::start). The
// default is before every job.
struct ClaimStart {
  int priority = 2147483647;
  std::string run_at = "1970-01-01 00:00:01.000000";  // UTC, the earliest TIMESTAMP
  long long id = 0;
};
// Reads the start for `queue` with the claim's `start` (nullopt: no job is due, so there is
// nothing to claim).
std::optional<ClaimStart> read_claim_start(Database& db, const ClaimPickThenMark& q,
                                           const std::string& queue);
// Binds the start's placeholders to a ClaimPickThenMark::pick statement. `start` must
// outlive the statement's execution.
void bind_claim_start(soci::statement& pick, ClaimStart& start);

struct AckItem {
  std::int64_t id = 0;
  std::string token;
  std::optional<std::string> result;  // validated JSON
  // The job's queue, when the caller knows it: the ack of a queue that keeps its done jobs
  // then tries no delete (ack_many), even while another queue keeps none.
  std::optional<std::string> queue;
};

struct FailRequest {
  std::int64_t id = 0;
  std::string token;
  std::string error;
  std::optional<Duration> retry_in;  // exact delay instead of the backoff policy
  bool permanent = false;
  BackoffPolicy backoff;
};

struct ListFilter {
  std::optional<std::string> queue;
  std::vector<Status> statuses;  // empty: all
  // Of the ready jobs (when ready is listed): those waiting for other jobs (enqueue
  // --after), the others (due or scheduled), or both.
  bool ready_now = true;
  bool waiting = true;
  std::int64_t after = 0;                 // ids above this (0: from the first)
  std::int64_t before = 0;                // ids below this (0: to the last)
  bool newest_first = false;              // highest id first
  std::optional<std::string> group_key;   // only jobs of this group key
  std::optional<std::string> error_text;  // only jobs whose last_error holds this text
  int limit = 100;
};

struct QueueStats {
  std::string queue;
  std::int64_t ready = 0;      // due now
  std::int64_t scheduled = 0;  // ready with a future run_at
  std::int64_t waiting = 0;    // ready, but waiting for parents (enqueue --after)
  std::int64_t processing = 0;
  std::int64_t expired = 0;  // processing with a lapsed lease
  // Processing without a lease (lock_until NULL, set by other code): no reaper returns
  // these by themselves (`reap --unleased --older-than DUR` does). Counted in processing too.
  std::int64_t unleased = 0;
  std::int64_t done = 0;
  std::int64_t failed = 0;
  std::int64_t canceled = 0;
  bool paused = false;
  bool strict_groups = false;
  std::optional<std::string> dead_letter;  // where jobs that give up go
  std::optional<int> max_processing;       // concurrency limit; none: no limit
  std::optional<RateLimit> rate;           // rate limit; none: no limit
  std::optional<Duration> retain;          // workers delete finished jobs older; none: keep
  bool keep_done = true;                   // false: an ack deletes its job
  std::optional<double> oldest_ready_age_seconds;
  // The finished counts (done, failed, canceled) that reached the cap stats() was given:
  // each is "at least" its number.
  std::vector<std::string> at_least;
};

struct RateRead;

// Inserts one row of `job` with enqueue.insert_job, in the caller's transaction; returns the
// rows it inserted (0: its dedupe key is taken, MySQL's IGNORE skipped it). What
// JobRepository::enqueue and a schedule's fire (ScheduleRepository) share.
long long insert_job_row(Database& db, const NewJob& job);

// Inserts `jobs` (none with a dedupe key) in as few statements as the dialect allows, in
// the caller's transaction; returns their ids in the same order. What a batch of schedule
// fires uses.
std::vector<std::int64_t> insert_job_rows(Database& db, const std::vector<NewJob>& jobs);

class JobRepository {
 public:
  explicit JobRepository(Database& db);
  ~JobRepository();
  JobRepository(const JobRepository&) = delete;
  JobRepository& operator=(const JobRepository&) = delete;

  // Inserts a job, or returns the existing one when its dedupe key is taken.
  EnqueueResult enqueue(const NewJob& job);
  // Inserts all jobs in one transaction with multi-row statements; all or none.
  BulkEnqueueResult enqueue_many(const std::vector<NewJob>& jobs);

  // Claims up to `limit` due jobs of an unpaused queue with SKIP LOCKED; each gets the
  // lease, the worker and one fresh token; attempts grows by one. Empty when none is due.
  // A job with a group key is taken only as its group's head, so at most one per group.
  std::vector<Job> claim(const ClaimRequest& request);

  // Marks the job done. Throws LeaseLost unless it is processing under `token`, NotFound
  // when there is no such job (likewise fail, extend and release).
  void ack(const AckItem& item);
  // Acks many in one transaction; returns the ids whose lease was lost (the rest are done).
  std::vector<std::int64_t> ack_many(const std::vector<AckItem>& items);
  // Fails the job: back to ready after the backoff, or failed when out of attempts or
  // permanent. Throws LeaseLost. Returns the job as it now is.
  Job fail(const FailRequest& request);
  // Extends a live lease to now + lease, and stores what `report` says in the same
  // statement. Throws LeaseLost (also for an expired lease).
  Job extend(std::int64_t id, const std::string& token, Duration lease,
             const JobReport& report = {});
  // Gives the job back: ready now, the attempt returned. Throws LeaseLost.
  Job release(std::int64_t id, const std::string& token);

  std::optional<Job> find(std::int64_t id);
  // Throws NotFound.
  Job get(std::int64_t id);
  std::vector<Job> list(const ListFilter& filter);
  // The ids `list` would return (for changing them a page at a time: no payload read).
  std::vector<std::int64_t> list_ids(const ListFilter& filter);
  // Per-queue counts; all queues when `queues` is empty.
  // `finished_cap` > 0: done, failed and canceled are each counted up to that many a queue
  // (db/dialects/count_sql.hpp), so that the time does not grow with the history; 0: exact.
  std::vector<QueueStats> stats(const std::vector<std::string>& queues,
                                std::int64_t finished_cap = 0);
  // The database's clock, RFC 3339.
  std::string now();

 private:
  using StatsEntry = std::function<QueueStats&(const std::string&)>;
  // stats(): done, failed and canceled of every queue exactly (the finished index, whole),
  // or of `queues` (all: those with finished jobs) each up to `cap`.
  void count_all_finished(const StatsEntry& entry);
  void count_finished(const std::vector<std::string>& queues, std::int64_t cap,
                      const StatsEntry& entry);
  // Runs `sql`, q.claim or q.claim_rated.
  std::vector<Job> claim_returning(const ClaimReturning& q, const std::string& sql,
                                   const ClaimRequest& request, const std::string& token);
  // How claim_pick_then_mark goes about a queue (see ClaimPickThenMark): `careful`, a rate's
  // bucket locked and read before the mark (else taken after it, rate_take); `ungrouped`,
  // picked without the checks of grouped jobs (pick_ungrouped). Each other way throws, when
  // it cannot serve the claim, an exception private to the claim (the transaction is rolled
  // back, and the claim made again the fuller way).
  struct ClaimWay {
    bool careful = false;
    bool ungrouped = true;
  };
  std::vector<Job> claim_pick_then_mark(const ClaimPickThenMark& q, const ClaimRequest& request,
                                        const std::string& token, ClaimWay way);
  // A claim's tokens taken from the rate limit's buckets (RateSteps): one of the queue's for
  // each job without a bucket of its own, one of its key's for each other.
  void spend_claimed(const RateSteps& q, const std::string& queue, const RateRead& rate,
                     double tokens, const std::vector<Job>& jobs);
  // `lost`, the ids of `items` the plain ack refused, acked again with their children's
  // release (Dependencies::ack_parents); returns those still refused.
  std::vector<std::int64_t> ack_declined(const std::vector<AckItem>& items,
                                         const std::vector<std::int64_t>& lost);
  // A guarded write changed nothing: throws NotFound when the job does not exist, else
  // LeaseLost (with `detail` appended to the message).
  // After a finish of job `id` under `token` matched no row: NotFound, or LeaseLost saying
  // whether the job is no longer processing, is held under another token, or its lease
  // ended (then `expired` is added).
  [[noreturn]] void throw_lease_lost(std::int64_t id, const std::string& token,
                                     const std::string& expired = "");

  // Whether this connection keeps a statement it runs again prepared (keeps_prepared): on
  // PostgreSQL when no pooler stands between (the server parses it once), and on SQLite (the
  // library compiles it once). MySQL's client library prepares nothing for SOCI.
  bool keeps_prepared() const;
  // The claim statements of ClaimReturning this connection has run, by their text's
  // address, and those it has prepared (where keeps_prepared; from a statement's second
  // run: see claim_returning); null: run once.
  struct PreparedClaim;
  // The claim statement `sql`, prepared on the server the first time (and its binds).
  PreparedClaim& prepared_claim(const std::string& sql, const ClaimReturning& q);
  // The ack of a chunk of ids held by one token (Statements::finish.ack_id_array, or
  // ack_id_one for one id); returns the ids it acked. Each statement a one-time statement at
  // its first run, prepared on the server from its second where claims are (PostgreSQL, no
  // pooler between): job_repository_detail.hpp.
  // `deleting`: ack_delete_array and ack_delete_one instead, which delete the jobs of queues
  // that keep no done job; the ids it deleted.
  std::vector<long long> ack_id_array(const std::vector<long long>& ids, const std::string& token,
                                      bool deleting = false);
  struct PreparedAck;
  // ack_many's acks marked done (the jobs kept, as on every queue that keeps its done jobs).
  std::vector<std::int64_t> ack_kept(const std::vector<AckItem>& items);
  // The queues that keep no done job (`queue QUEUE --keep-done off`), whose acks try
  // Statements::finish.ack_delete first: asked at this repository's first ack, and again
  // once a minute has passed (a worker sees the setting changed within a minute, as its
  // housekeeping sees a retention).
  const std::set<std::string>& deleting_queues();
  // The acks of `items` that ack_delete takes (their queue keeps no done job, the lease
  // still held, no group key, no job waiting for them), done by deleting the jobs; returns
  // the rest, for ack_kept.
  std::vector<AckItem> ack_deleting(const std::vector<AckItem>& items);

  // The statements a claim of `limit` jobs runs: `bound`, or its twin with that LIMIT
  // written in (ClaimReturning::with_limit), made once and kept here: for a claim of one
  // job, and from a size's second claim for up to kWrittenLimitMax where keeps_prepared, of
  // at most kWrittenLimitsKept sizes (each size kept prepared holds its plans in the server
  // session, about 200 KB a statement). Null: a size claimed once so far.
  const ClaimReturning& claim_statements(const ClaimReturning& bound, int limit);
  static constexpr std::size_t kWrittenLimitsKept = 16;

  Database& db_;
  // Before prepared_claims_, whose keys point into them: destroyed after it.
  std::map<int, std::unique_ptr<const ClaimReturning>> written_claims_;
  std::map<const std::string*, std::unique_ptr<PreparedClaim>> prepared_claims_;
  // The ack statements ack_id_array has run, by their text's address, and those it has
  // prepared on the server (null: run once), as prepared_claims_.
  std::map<const std::string*, std::unique_ptr<PreparedAck>> prepared_acks_;
  // deleting_queues(): the answer, and when it was asked (none yet: not asked).
  std::set<std::string> deleting_queues_;
  std::optional<std::chrono::steady_clock::time_point> deleting_queues_asked_;
  // Queues whose last claim came from a later statement of ClaimReturning's chain (claim,
  // claim_rated_simple, claim_rated: a rate limit), and its place in it: tried from there.
  // Only the order of trying: each statement takes nothing that is a later one's, and
  // `claim_rated` is right for any queue.
  std::map<std::string, std::size_t> claim_stage_;
  // Queues whose rate took the careful way of ClaimPickThenMark (the bucket had too few
  // tokens for the jobs picked), until a claim of theirs is not cut by it.
  std::set<std::string> rate_careful_;
  // Queues a claim of which picked a job with a group key: claimed with the full pick from
  // then on (ClaimPickThenMark::pick_ungrouped).
  std::set<std::string> grouped_queues_;
};

}  // namespace queuectl
