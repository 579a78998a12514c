#include "bench/client.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <thread>

#include "db/job_repository.hpp"
#include "db/row_reader.hpp"

namespace queuectl::bench {
namespace {

using soci::use;

// Thrown out of a transaction to roll it back when the run is told to stop.
struct Stopped {};

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// The work on `n` jobs (the article's sleep), in short slices so that a stop is seen soon.
void simulate_work(Duration per_job, std::size_t n, const RunControl& control) {
  const auto end = Clock::now() + per_job.chrono() * static_cast<long>(n);
  while (true) {
    if (control.stop) throw Stopped{};
    const auto now = Clock::now();
    if (now >= end) return;
    std::this_thread::sleep_for(
        std::min<Clock::duration>(end - now, std::chrono::milliseconds(10)));
  }
}

class Client {
 public:
  Client(const ClientPlan& plan, RunControl& control, ClientStats& stats)
      : plan_(plan), control_(control), stats_(stats) {
    db_ = plan.claim_sql ? std::make_unique<Database>(plan.url, *plan.claim_sql)
                         : std::make_unique<Database>(plan.url);
    db_->set_lock_wait(plan.lock_wait);
    // Asked before each retry of contention: counts it, and gives up once told to stop.
    db_->give_up = [this] {
      ++stats_.retries;
      return control_.stop.load();
    };
    const BenchSql& sql = *plan.sql;
    const ScratchTables& t = plan.tables;
    pick_sql_ = t.render(sql.pick);
    if (plan.strategy == Strategy::for_update) pick_sql_ += sql.for_update;
    if (plan.strategy == Strategy::skip_locked) pick_sql_ += sql.skip_locked;
    left_sql_ = t.render(plan.strategy == Strategy::claim ? sql.ready : sql.unassigned);
    if (plan.strategy == Strategy::claim) {
      repo_.emplace(*db_);
      request_.queue = "bench";
      request_.limit = plan.batch;
      request_.lease = plan.lease;
      request_.worker = "bench-client-" + std::to_string(plan.number);
    }
  }

  void run() {
    asked_ = Clock::now();
    while (!control_.stop && (plan_.strategy == Strategy::claim ? claim_round() : seed_round())) {
    }
  }

 private:
  // Seed 001's strategies, one claim of up to `batch` jobs. naive reads without a lock and
  // writes after the work; the others lock what they read and hold it through the work,
  // in one transaction. False once no job is left.
  bool seed_round() {
    std::vector<long long> ids;
    double latency = 0;
    if (plan_.strategy == Strategy::naive) {
      db_->retrying([&] { ids = pick(); });
      latency = ms_since(asked_);
      if (!ids.empty()) {
        simulate_work(plan_.work, ids.size(), control_);
        db_->transaction([&] {
          record(ids);
          mark(ids);
        });
      }
    } else {
      db_->transaction([&] {
        ids = pick();
        if (ids.empty()) return;
        latency = ms_since(asked_);
        simulate_work(plan_.work, ids.size(), control_);
        record(ids);
        mark(ids);
      });
    }
    return after_round(ids.size(), latency);
  }

  // queuectl's own claim, the work, the ledger, then one ack for the batch.
  bool claim_round() {
    std::vector<Job> jobs = repo_->claim(request_);
    const double latency = ms_since(asked_);
    if (!jobs.empty()) {
      simulate_work(plan_.work, jobs.size(), control_);
      std::vector<long long> ids;
      std::vector<AckItem> acks;
      for (const Job& j : jobs) {
        ids.push_back(j.id);
        acks.push_back({j.id, j.lock_token.value_or(""), std::nullopt, j.queue});
      }
      db_->retrying([&] { record(ids); });
      stats_.lease_lost += static_cast<std::int64_t>(repo_->ack_many(acks).size());
    }
    return after_round(jobs.size(), latency);
  }

  // An empty claim ends the client only when no job is left at all: under FOR UPDATE a
  // claim that waited for a row another client then took comes back empty, and under
  // SKIP LOCKED the last jobs may be held by others (who may yet roll back).
  bool after_round(std::size_t taken, double latency_ms) {
    if (taken == 0) {
      if (left() == 0) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return true;
    }
    stats_.latencies_ms.push_back(latency_ms);
    control_.runs += static_cast<std::int64_t>(taken);
    asked_ = Clock::now();
    return true;
  }

  std::vector<long long> pick() {
    int limit = plan_.batch;
    return fetch_ids(db_->session(), pick_sql_,
                     [&](soci::statement& st) { st.exchange(use(limit, "limit")); });
  }

  void record(const std::vector<long long>& ids) {
    const BenchSql& sql = *plan_.sql;
    std::vector<long long> jobs(ids);
    std::vector<int> clients(ids.size(), plan_.number);
    std::string text = plan_.tables.render(sql.record_prefix);
    soci::statement st(db_->session());
    for (std::size_t i = 0; i < ids.size(); ++i) {
      std::string row = sql.ledger_row;
      const std::string n = std::to_string(i);
      for (auto at = row.find("{n}"); at != std::string::npos; at = row.find("{n}"))
        row.replace(at, 3, n);
      text += (i ? ", " : "") + row;
      st.exchange(use(jobs[i], "job" + n));
      st.exchange(use(clients[i], "client" + n));
    }
    prepare_once(st, text);
    st.execute(true);
  }

  void mark(std::vector<long long>& ids) {
    int client = plan_.number;
    soci::statement st(db_->session());
    bind_ids(st, ids);
    st.exchange(use(client, "client"));
    prepare_once(st, expand_ids(plan_.tables.render(plan_.sql->mark), ids.size()));
    st.execute(true);
  }

  long long left() {
    long long n = 0;
    db_->retrying([&] { db_->session() << left_sql_, soci::into(n); });
    return n;
  }

  const ClientPlan& plan_;
  RunControl& control_;
  ClientStats& stats_;
  std::unique_ptr<Database> db_;
  std::optional<JobRepository> repo_;
  ClaimRequest request_;
  std::string pick_sql_, left_sql_;
  Clock::time_point asked_;
};

}  // namespace

void run_client(const ClientPlan& plan, RunControl& control, ClientStats& stats) {
  std::unique_ptr<Client> client;
  try {
    client = std::make_unique<Client>(plan, control, stats);
  } catch (...) {
    stats.connect_error = std::current_exception();
  }
  ++control.connected;
  if (client) {
    while (!control.go && !control.stop) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    try {
      client->run();
    } catch (const Stopped&) {
    } catch (const std::exception& e) {
      if (!control.stop) stats.error = e.what();
    }
  }
  stats.ended = Clock::now();
  ++control.finished;
}

}  // namespace queuectl::bench
