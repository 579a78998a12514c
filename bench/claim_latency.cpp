// claim_latency: the library's claim of one job plus its ack, timed one after the other on
// an existing database (bench/scale.sh, part 3: claim latency against the finished rows).
//
//   claim_latency --db URL --queue Q --samples N [--db2 URL2]
//
// Opens URL (migrated) through Database and JobRepository, as `queuectl work` does, and
// N times claims one job of Q (lease 30 s) and acks it, timing each pair on the monotonic
// clock. With --db2, a second database is opened too and the pairs alternate between the
// two, one for one, so that their figures are taken at the same moments. Prints, for each
//   latency db=1|2 samples=N p50_ms=.. p99_ms=..
// and exits 1 when a claim comes back empty (the queue needs N ready jobs). Writes nothing
// but the claims and acks; drops nothing.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "bench/latency.hpp"
#include "core/db_url.hpp"
#include "db/database.hpp"
#include "db/job_repository.hpp"

namespace {

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "claim_latency: " << why
            << "\nusage: claim_latency --db URL --queue Q --samples N [--db2 URL2]\n";
  std::exit(2);
}

struct Target {
  std::unique_ptr<queuectl::Database> db;
  std::unique_ptr<queuectl::JobRepository> repo;
  std::vector<double> ms;
};

// One claim of one job and its ack, in milliseconds.
double claim_and_ack(Target& t, const std::string& queue) {
  queuectl::ClaimRequest request;
  request.queue = queue;
  request.worker = "claim_latency";
  const auto start = std::chrono::steady_clock::now();
  const std::vector<queuectl::Job> jobs = t.repo->claim(request);
  if (jobs.empty()) {
    std::cerr << "claim_latency: the claim of " << queue << " came back empty\n";
    std::exit(1);
  }
  t.repo->ack({jobs.front().id, *jobs.front().lock_token, std::nullopt});
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

int main(int argc, char** argv) try {
  std::string db, db2, queue;
  int samples = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage(a + " needs a value");
    const std::string v = argv[++i];
    if (a == "--db")
      db = v;
    else if (a == "--db2")
      db2 = v;
    else if (a == "--queue")
      queue = v;
    else if (a == "--samples")
      samples = std::atoi(v.c_str());
    else
      usage("unknown argument " + a);
  }
  if (db.empty() || queue.empty() || samples < 1) usage("--db, --queue and --samples are needed");
  std::vector<Target> targets;
  for (const std::string& url : {db, db2}) {
    if (url.empty()) continue;
    Target t;
    t.db = std::make_unique<queuectl::Database>(queuectl::DbUrl::parse(url));
    t.repo = std::make_unique<queuectl::JobRepository>(*t.db);
    claim_and_ack(t, queue);  // warm: the connection and the statements' first use
    targets.push_back(std::move(t));
  }
  for (int i = 0; i < samples; ++i)
    for (Target& t : targets) t.ms.push_back(claim_and_ack(t, queue));
  for (std::size_t n = 0; n < targets.size(); ++n) {
    std::vector<double>& ms = targets[n].ms;
    const double p50 = queuectl::bench::percentile(ms, 50);
    const double p99 = queuectl::bench::percentile(ms, 99);
    std::printf("latency db=%zu samples=%zu p50_ms=%.3f p99_ms=%.3f\n", n + 1, ms.size(), p50, p99);
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "claim_latency: " << e.what() << "\n";
  return 1;
}
