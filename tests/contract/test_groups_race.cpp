// Ordered groups under contention: 8 processes claim (in batches) and ack 2,000 jobs
// spread over 50 groups, some attempts fail and come back after a short delay, and one
// worker dies holding a lease that the reaper returns. Every process appends "S group id"
// to a shared log before it works on a job and "E group id" after, both while it holds the
// lease (O_APPEND writes land whole and in the order they were made). Afterwards the log
// must show that no two jobs of a group were ever in progress at once, and that each
// group's jobs started in id order (a retried job may start again before the next one).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "contract/contract_helpers.hpp"
#include "db/lease_repository.hpp"

namespace queuectl::testing::contract {
namespace {

using namespace std::chrono_literals;

constexpr int kWorkers = 8;
constexpr int kGroups = 50;
constexpr int kJobs = 2000;
constexpr int kBatch = 4;
constexpr const char* kQueue = "race";

std::string group_name(int i) {
  return "g" + std::to_string(i % kGroups);
}

void log_event(int fd, char kind, const Job& job) {
  const std::string line = std::string(1, kind) + " " + job.group_key.value_or("-") + " " +
                           std::to_string(job.id) + "\n";
  // One write of a short line to an O_APPEND file: never interleaved with another's.
  if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) _exit(20);
}

// A worker process: claims batches until nothing is left unfinished.
[[noreturn]] void worker(const FreshDatabase& fx, int index, const std::string& log_path) {
  int code = 0;
  try {
    const int fd = open(log_path.c_str(), O_WRONLY | O_APPEND);
    if (fd < 0) _exit(21);
    auto db = fx.connect();
    JobRepository repo(*db);
    for (int idle = 0; idle < 20000;) {
      auto jobs = claim(repo, kQueue, kBatch, Duration::seconds(60), "w" + std::to_string(index));
      if (jobs.empty()) {
        if (scalar(*db, "SELECT COUNT(*) FROM job_queue WHERE status IN (0, 1)") == 0) break;
        ++idle;
        std::this_thread::sleep_for(2ms);
        continue;
      }
      for (const Job& job : jobs) {
        log_event(fd, 'S', job);
        log_event(fd, 'E', job);
        if (job.id % 7 == 0 && job.attempts == 1) {
          FailRequest r;
          r.id = job.id;
          r.token = *job.lock_token;
          r.error = "first attempt fails";
          r.retry_in = millis(20);
          repo.fail(r);
        } else {
          repo.ack({job.id, *job.lock_token, std::nullopt});
        }
      }
    }
    close(fd);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "worker %d: %s\n", index, e.what());
    code = 1;
  }
  std::fflush(nullptr);
  _exit(code);  // no destructors: the parent's connection must stay untouched
}

}  // namespace

TEST_CASE("groups race: 8 processes never run two jobs of a group at once, and keep id order") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  std::vector<NewJob> jobs;
  for (int i = 0; i < kJobs; ++i) {
    NewJob j = new_job(kQueue, R"({"n":)" + std::to_string(i) + "}");
    j.group_key = group_name(i);
    jobs.push_back(j);
  }
  REQUIRE_EQ(repo.enqueue_many(jobs).enqueued, kJobs);

  char tmpl[] = "/tmp/queuectl-groups-race-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string log_path = dir + "/events.log";
  { std::ofstream(log_path).flush(); }

  // A worker that dies with its first job: it claims one job with a 300 ms lease, stops
  // working on it and never acks it, so that group stays busy until the reaper returns the
  // job. Done here, before the workers start, so that it happens on every run (a worker
  // process doing it could find nothing to claim on a loaded machine).
  {
    const int fd = open(log_path.c_str(), O_WRONLY | O_APPEND);
    REQUIRE(fd >= 0);
    auto dead = claim(repo, kQueue, 1, millis(300), "dead");
    REQUIRE_EQ(dead.size(), 1u);
    log_event(fd, 'S', dead[0]);
    log_event(fd, 'E', dead[0]);
    close(fd);
  }

  std::vector<pid_t> pids;
  std::cout.flush();
  std::fflush(nullptr);  // or each child would print the parent's buffered output again
  for (int w = 0; w < kWorkers; ++w) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) worker(fx, w, log_path);
    pids.push_back(pid);
  }
  // The reaper, as cron would run it, with a short backoff so the test stays short.
  LeaseRepository leases(fx.db());
  ReapOptions reap;
  reap.queue = kQueue;
  reap.backoff.base = millis(10);
  reap.backoff.cap = millis(10);
  std::int64_t reaped = 0;
  std::vector<int> codes(kWorkers, -1);
  const auto deadline = std::chrono::steady_clock::now() + 240s;
  for (int running = kWorkers; running > 0;) {
    reaped += static_cast<std::int64_t>(leases.reap(reap).requeued.size());
    std::this_thread::sleep_for(50ms);
    for (int w = 0; w < kWorkers; ++w) {
      int status = 0;
      if (codes[w] == -1 && waitpid(pids[w], &status, WNOHANG) == pids[w]) {
        codes[w] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        --running;
      }
    }
    if (std::chrono::steady_clock::now() > deadline) {
      for (int w = 0; w < kWorkers; ++w)
        if (codes[w] == -1) kill(pids[w], SIGKILL);
      FAIL("the workers did not finish within 240 s");
    }
  }
  for (int w = 0; w < kWorkers; ++w) CHECK_MESSAGE(codes[w] == 0, "worker " << w << " failed");
  CHECK_EQ(reaped, 1);
  CHECK_EQ(count_rows(fx.db(), "status = 2"), kJobs);

  std::ifstream in(log_path);
  std::map<std::string, std::int64_t> running;  // group -> job in progress
  std::map<std::string, std::int64_t> last_started;
  std::int64_t starts = 0, overlaps = 0, out_of_order = 0;
  std::string first_problem;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    char kind = 0;
    std::string group;
    std::int64_t id = 0;
    fields >> kind >> group >> id;
    REQUIRE_MESSAGE(group != "-", "a job without a group key: " << line);
    if (kind == 'S') {
      ++starts;
      if (running.count(group)) {
        ++overlaps;
        if (first_problem.empty())
          first_problem = "job " + std::to_string(id) + " started while job " +
                          std::to_string(running[group]) + " of group " + group + " ran";
      }
      if (last_started.count(group) && id < last_started[group]) {
        ++out_of_order;
        if (first_problem.empty())
          first_problem = "job " + std::to_string(id) + " of group " + group +
                          " started after job " + std::to_string(last_started[group]);
      }
      running[group] = id;
      last_started[group] = id;
    } else {
      REQUIRE_MESSAGE(kind == 'E', line);
      CHECK_MESSAGE(running.count(group), "an end without a start: " << line);
      running.erase(group);
    }
  }
  MESSAGE(starts << " starts for " << kJobs << " jobs, " << reaped << " reaped");
  CHECK_MESSAGE(overlaps == 0, overlaps << " overlaps; first: " << first_problem);
  CHECK_MESSAGE(out_of_order == 0, out_of_order << " out of order; first: " << first_problem);
  // Every job started at least once; the failing ones (every 7th id) twice.
  CHECK(starts >= kJobs + kJobs / 7 - 1);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace queuectl::testing::contract
