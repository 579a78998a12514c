// pickup_bench: how long a job waits between its enqueue and the start of its command under
// `queuectl work` (issue 34: pickup latency), and the floor: how long a bare spawn of the
// same command takes to start.
//
//   pickup_bench --db URL --queue Q --rate N --seconds S --ledger FILE
//   pickup_bench --floor K --ledger FILE --command SCRIPT
//
// Pickup: enqueues into Q through JobRepository::enqueue, one job a transaction, N a second
// for S seconds at a steady pace (job i at its own slot, t0 + i/N, never in bursts), and
// notes the wall-clock time (CLOCK_REALTIME) at which each enqueue returned, committed. A
// `queuectl work Q -- bash -c SCRIPT` started beside it (bench/pickup.sh) runs, for each
// job, a script that appends "ID SECONDS.MICROSECONDS" ($QUEUECTL_JOB_ID, $EPOCHREALTIME) to
// FILE. After the last
// enqueue it waits (up to 60 s) until FILE names every job, then prints
//   pickup backend=B rate=N jobs=M p50_ms=.. p95_ms=.. p99_ms=.. max_ms=..
// The latency of a job is its command's time less its enqueue's: the time it waited for a
// worker to see it, claim it and start its command.
//
// Floor: runs `bash -c SCRIPT` K times, one after the other, with QUEUECTL_JOB_ID set to
// 1..K, by fork and exec as `work` does, and prints
//   floor spawns=K p50_ms=.. p95_ms=.. p99_ms=.. max_ms=..
// from the moment before each fork to the time the command wrote: what any worker pays
// before a job's command runs, with no database at all.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench/latency.hpp"
#include "core/db_url.hpp"
#include "core/errors.hpp"
#include "db/database.hpp"
#include "db/job_repository.hpp"

namespace {

using queuectl::Database;
using queuectl::DbUrl;

struct Options {
  std::string db, queue = "pickup", ledger, command;
  int rate = 500, seconds = 10, floor = 0;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "pickup_bench: " << why
            << "\nusage: pickup_bench --db URL --queue Q --rate N --seconds S --ledger FILE\n"
               "       pickup_bench --floor K --ledger FILE --command SCRIPT\n";
  std::exit(2);
}

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--db")
      o.db = value();
    else if (a == "--queue")
      o.queue = value();
    else if (a == "--rate")
      o.rate = std::stoi(value());
    else if (a == "--seconds")
      o.seconds = std::stoi(value());
    else if (a == "--ledger")
      o.ledger = value();
    else if (a == "--floor")
      o.floor = std::stoi(value());
    else if (a == "--command")
      o.command = value();
    else
      usage("unknown argument " + a);
  }
  if (o.ledger.empty()) usage("--ledger is required");
  if (o.floor > 0 ? o.command.empty() : o.db.empty()) usage("--db (or --floor and --command)");
  if (o.rate < 1 || o.seconds < 1) usage("--rate and --seconds must be positive");
  return o;
}

// Wall-clock seconds, as $EPOCHREALTIME prints them.
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The ledger's lines: id -> the time its command wrote.
std::map<long long, double> read_ledger(const std::string& path) {
  std::map<long long, double> out;
  std::ifstream in(path);
  long long id = 0;
  std::string when;
  while (in >> id >> when) {
    // $EPOCHREALTIME uses the locale's decimal point; the bench runs under LC_ALL=C.
    out[id] = std::strtod(when.c_str(), nullptr);
  }
  return out;
}

void print_summary(const std::string& head, std::vector<double> ms) {
  using queuectl::bench::percentile;
  char line[256];
  const double p50 = percentile(ms, 50), p95 = percentile(ms, 95), p99 = percentile(ms, 99),
               max = percentile(ms, 100);
  std::snprintf(line, sizeof line, " p50_ms=%.2f p95_ms=%.2f p99_ms=%.2f max_ms=%.2f\n", p50, p95,
                p99, max);
  std::cout << head << line << std::flush;
}

int run_floor(const Options& o) {
  std::vector<double> started(static_cast<std::size_t>(o.floor) + 1);
  for (int i = 1; i <= o.floor; ++i) {
    started[static_cast<std::size_t>(i)] = now_seconds();
    const pid_t pid = fork();
    if (pid == 0) {
      setenv("QUEUECTL_JOB_ID", std::to_string(i).c_str(), 1);
      execl("/bin/bash", "bash", "-c", o.command.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
  }
  std::vector<double> ms;
  for (const auto& [id, when] : read_ledger(o.ledger))
    if (id >= 1 && id <= o.floor)
      ms.push_back((when - started[static_cast<std::size_t>(id)]) * 1e3);
  if (static_cast<int>(ms.size()) != o.floor) {
    std::cerr << "pickup_bench: the ledger names " << ms.size() << " of " << o.floor << " spawns\n";
    return 1;
  }
  print_summary("floor spawns=" + std::to_string(o.floor), ms);
  return 0;
}

int run_pickup(const Options& o) {
  const DbUrl url = DbUrl::parse(o.db);
  Database db(url);
  queuectl::JobRepository repo(db);
  std::map<long long, double> enqueued;
  const long long total = static_cast<long long>(o.rate) * o.seconds;
  const auto t0 = std::chrono::steady_clock::now();
  for (long long i = 0; i < total; ++i) {
    std::this_thread::sleep_until(t0 + std::chrono::microseconds(i * 1000000 / o.rate));
    queuectl::NewJob job;
    job.queue = o.queue;
    const long long id = repo.enqueue(job).job.id;
    enqueued[id] = now_seconds();
  }
  const double behind =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() - o.seconds;
  std::map<long long, double> started;
  for (int waited = 0; waited < 600; ++waited) {
    started = read_ledger(o.ledger);
    bool all = true;
    for (const auto& entry : enqueued) all = all && started.count(entry.first);
    if (all) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::vector<double> ms;
  for (const auto& [id, when] : enqueued) {
    auto it = started.find(id);
    if (it != started.end()) ms.push_back((it->second - when) * 1e3);
  }
  if (ms.size() != enqueued.size()) {
    std::cerr << "pickup_bench: only " << ms.size() << " of " << enqueued.size()
              << " jobs started within 60 s of the last enqueue\n";
    return 1;
  }
  char head[256];
  std::snprintf(head, sizeof head, "pickup backend=%s rate=%d jobs=%zu enqueue_behind_s=%.2f",
                std::string(queuectl::backend_name(url.backend)).c_str(), o.rate, ms.size(),
                behind);
  print_summary(head, ms);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_args(argc, argv);
  try {
    return o.floor > 0 ? run_floor(o) : run_pickup(o);
  } catch (const std::exception& e) {
    std::cerr << "pickup_bench: error: " << e.what() << "\n";
    return 1;
  }
}
