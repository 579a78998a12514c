// group_bench: what ordered groups cost the claim, measured with the real code paths
// (JobRepository, Database, Migrator) against a real database. Every figure comes with a
// floor measured in the same run, so that the figures to read are ratios: the machine
// is shared and noisy, and nothing here asserts a time.
//
//   group_bench --db URL [--i-know-this-drops-tables] [--throughput] [--latency] [--explain]
//               [--jobs 100000] [--groups 10000] [--workers 2] [--batch 100]
//               [--shapes ungrouped,rr,bygroup] [--repeat 1]
//               [--busy-groups 10000] [--claimable 1000] [--done 1000000] [--iterations 200]
//   group_bench --db URL --print-claim-sql
//
// --throughput  claim+ack throughput, as queue_bench --claim measures it: for each shape the
//       queue is emptied and refilled with --jobs jobs by the database's own row generator,
//       ANALYZEd, then --workers forked processes, each with its own connection, loop
//       JobRepository::claim(limit --batch, lease 30s) + ack_many(ids, token). Shapes:
//         ungrouped  no group key (the floor);
//         rr         group_key = "g<i % groups>", enqueued round robin (ids interleave:
//                    every group's jobs are spread over the whole queue);
//         bygroup    group after group (job i in group i * groups / jobs: a group's jobs
//                    are neighbours in claim order, so each claim walks past the followers
//                    of the heads it takes).
//       A grouped claim may come back empty while jobs remain (every head held by the other
//       worker): a worker stops only when its claim is empty and no job is ready or
//       processing; the empty claims are counted. After each drain every job must be done,
//       no ack may have lost its lease, and no job may have been claimed before an older
//       job of its group finished: each worker records, on the monotonic clock, when
//       claim() returned each job and when ack_many() was called for it, and a job whose
//       claim returned before the ack of an older job of its group began is counted as an
//       order violation (the run fails if there is any). As a control of that check, the
//       ungrouped drain's jobs get the bygroup keys afterwards and the check is run on
//       them: it must find violations there (control_violations=).
//       --repeat R runs the shapes R times, interleaved, and reports each run.
// --latency  the latency of one claim(limit 1) with --busy-groups groups each holding a
//       processing head (lease 1 day) and 1 or 2 ready jobs behind it (alternately), plus
//       --claimable ready jobs that may run (every other one ungrouped, the others heads of
//       groups of their own), plus --done finished rows (grouped like the busy groups).
//       Each iteration times claim() alone, then releases the job (JobRepository::release)
//       and puts its run_at back, so every iteration starts from the same state. Two
//       layouts of the claim order (priority, run_at, id):
//         blocked_first    the blocked followers are older than the claimable jobs, so a
//                          claim walks past all of them first (the usual case: a busy
//                          group's backlog is old);
//         claimable_first  the claimable jobs come first.
//       Cases, each after ANALYZE: grouped with 0 done rows, then grouped with --done done
//       rows (both layouts each), then the same table with no group key at all (0 and
//       --done done rows; the same number of rows in every status).
// --explain  with --latency: the plan of the claim statement on the grouped table, without
//       and with the done rows, both layouts (PostgreSQL EXPLAIN (ANALYZE, BUFFERS) of the claim,
//       MariaDB ANALYZE of the claim's pick, each in a transaction rolled back; SQLite EXPLAIN
//       QUERY PLAN), literal values in place of the placeholders.
// With neither --throughput nor --latency, both are measured.
//
// The schema is dropped and re-created first (job_queue, queuectl_queues, queuectl_locks,
// queuectl_schema_migrations): group_bench refuses to run unless the URL's database name
// contains "bench" or "test", or --i-know-this-drops-tables is given.
//
// Results go to stdout, one line each, as key=value words (bench/groups.sh parses them):
//   drain backend=postgresql shape=rr run=1 jobs=100000 groups=10000 workers=2 batch=100
//         seconds=2.5 jobs_per_s=40000 claims=1000 empty_claims=0 claim_ms=2.1 ack_many_ms=1.5
//         order_violations=0 [control_violations=N, ungrouped only]
//   latency backend=postgresql case=grouped layout=blocked_first done=1000000 busy_groups=10000
//         claimable=1000 iterations=200 median_ms=0.8 p10_ms=0.7 p90_ms=1.0 min_ms=0.6 max_ms=3
//   explain backend=postgresql layout=blocked_first done=0 | <one line of the plan>
// Progress goes to stderr.

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "core/db_url.hpp"
#include "core/duration.hpp"
#include "core/errors.hpp"
#include "db/database.hpp"
#include "db/job_repository.hpp"
#include "db/migrations.hpp"

#include "bench_db.hpp"

using namespace queuectl;
using namespace queuectl::bench;

namespace {

struct Options {
  std::string db;
  bool force = false;
  bool throughput = false;
  bool latency = false;
  bool explain = false;
  bool print_claim_sql = false;
  long long jobs = 100000;
  long long groups = 10000;
  int workers = 2;
  int batch = 100;
  std::vector<std::string> shapes{"ungrouped", "rr", "bygroup"};
  int repeat = 1;
  long long busy_groups = 10000;
  long long claimable = 1000;
  long long done = 1000000;
  int iterations = 200;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "group_bench: " << why << "\n"
            << "usage: group_bench --db URL [--i-know-this-drops-tables] [--throughput]\n"
               "                   [--latency] [--explain] [--jobs N] [--groups N]\n"
               "                   [--workers N] [--batch N] [--shapes ungrouped,rr,bygroup]\n"
               "                   [--repeat N] [--busy-groups N] [--claimable N] [--done N]\n"
               "                   [--iterations N]\n"
               "       group_bench --db URL --print-claim-sql\n";
  std::exit(2);
}

long long parse_count(const std::string& text, const std::string& what, bool zero_ok = false) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno || end == text.c_str() || *end || v < 0 || (v == 0 && !zero_ok))
    usage(what + " needs a positive integer");
  return v;
}

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--db")
      o.db = value();
    else if (a == "--i-know-this-drops-tables")
      o.force = true;
    else if (a == "--throughput")
      o.throughput = true;
    else if (a == "--latency")
      o.latency = true;
    else if (a == "--explain")
      o.explain = true;
    else if (a == "--print-claim-sql")
      o.print_claim_sql = true;
    else if (a == "--jobs")
      o.jobs = parse_count(value(), a);
    else if (a == "--groups")
      o.groups = parse_count(value(), a);
    else if (a == "--workers")
      o.workers = static_cast<int>(parse_count(value(), a));
    else if (a == "--batch")
      o.batch = static_cast<int>(parse_count(value(), a));
    else if (a == "--repeat")
      o.repeat = static_cast<int>(parse_count(value(), a));
    else if (a == "--busy-groups")
      o.busy_groups = parse_count(value(), a);
    else if (a == "--claimable")
      o.claimable = parse_count(value(), a);
    else if (a == "--done")
      o.done = parse_count(value(), a, true);
    else if (a == "--iterations")
      o.iterations = static_cast<int>(parse_count(value(), a));
    else if (a == "--shapes") {
      o.shapes.clear();
      std::stringstream ss(value());
      std::string item;
      while (std::getline(ss, item, ',')) {
        if (item != "ungrouped" && item != "rr" && item != "bygroup")
          usage("--shapes takes ungrouped, rr and bygroup");
        o.shapes.push_back(item);
      }
      if (o.shapes.empty()) usage("--shapes needs a list");
    } else if (a == "-h" || a == "--help") {
      usage("measures what ordered groups cost the claim");
    } else {
      usage("unknown argument " + a);
    }
  }
  if (o.db.empty()) {
    const char* env = std::getenv("QUEUECTL_DB");
    if (env) o.db = env;
  }
  if (o.db.empty()) usage("--db URL is required");
  if (!o.throughput && !o.latency) o.throughput = o.latency = true;
  return o;
}

void note(const std::string& line) {
  std::cerr << "group_bench: " << line << std::endl;
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// ------------------------------------------------------------------ schema --

long long count_where(Database& db, const std::string& where) {
  long long n = 0;
  db.session() << "SELECT COUNT(*) FROM job_queue WHERE " + where, soci::into(n);
  return n;
}

// ----------------------------------------------------- SQL for generated rows --
// Every value below is an integer formatted here or a constant literal: no input reaches
// the SQL. `g` is the generator's row number, 1..count.

struct Sql {
  Backend b;
  // 'prefix' followed by the integer expression `e`.
  std::string cat(const std::string& prefix, const std::string& e) const {
    if (b == Backend::mysql) return "CONCAT('" + prefix + "', " + e + ")";
    return "('" + prefix + "' || (" + e + "))";
  }
  std::string idiv(const std::string& a, const std::string& c) const {
    if (b == Backend::mysql) return "((" + a + ") DIV (" + c + "))";
    return "((" + a + ") / (" + c + "))";
  }
  std::string now() const {
    switch (b) {
      case Backend::postgresql:
        return "now()";
      case Backend::mysql:
        return "NOW(6)";
      default:
        return "strftime('%Y-%m-%d %H:%M:%f', 'now')";
    }
  }
  std::string now_plus_day() const {
    switch (b) {
      case Backend::postgresql:
        return "(now() + INTERVAL '1 day')";
      case Backend::mysql:
        return "(NOW(6) + INTERVAL 1 DAY)";
      default:
        return "strftime('%Y-%m-%d %H:%M:%f', 'now', '+1 day')";
    }
  }
  // A fixed time in the past, 2020-01-01 00:00:0S UTC, as the run_at column takes it.
  std::string fixed_time(int second) const {
    const std::string s = "2020-01-01 00:00:0" + std::to_string(second);
    switch (b) {
      case Backend::postgresql:
        return "CAST('" + s + "+00' AS timestamptz)";
      case Backend::mysql:
        return "CAST('" + s + ".000000' AS DATETIME(6))";
      default:
        return "'" + s + ".000'";
    }
  }
  std::string payload() const {
    switch (b) {
      case Backend::postgresql:
        return "CAST('{\"n\":' || g || '}' AS jsonb)";
      case Backend::mysql:
        return "CONCAT('{\"n\":', g, '}')";
      default:
        return "('{\"n\":' || g || '}')";
    }
  }
};

struct Rows {
  std::string queue;
  long long count = 0;
  int status = 0;              // 0 ready, 1 processing (lease 1 day), 2 done
  std::string group = "NULL";  // SQL expression of g
  std::string run_at;          // SQL expression; empty: now
};

// Inserts the rows with the database's own generator, in chunks (one transaction each).
void generate(Database& db, const Rows& r) {
  const Backend b = db.url().backend;
  const Sql q{b};
  const long long chunk = b == Backend::postgresql ? 1000000 : 100000;
  static int has_seq = -1;
  if (b == Backend::mysql && has_seq < 0) has_seq = mariadb_has_sequence(db) ? 1 : 0;
  const bool processing = r.status == 1, done = r.status == 2;
  const std::string select =
      "SELECT '" + r.queue + "', " + std::to_string(r.status) + ", " + (r.status == 0 ? "0" : "1") +
      ", " + q.payload() + ", " + r.group + ", " + (r.run_at.empty() ? q.now() : r.run_at) + ", " +
      (processing ? "'group_bench'" : "NULL") + ", " + (processing ? "'held-by-bench'" : "NULL") +
      ", " + (processing || done ? q.now() : "NULL") + ", " +
      (processing ? q.now_plus_day() : "NULL") + ", " + (done ? q.now() : "NULL");
  const std::string head =
      "INSERT INTO job_queue (queue, status, attempts, payload, group_key, run_at, locked_by, "
      "lock_token, locked_at, lock_until, finished_at) ";
  for (long long start = 1; start <= r.count; start += chunk) {
    const long long n = std::min(chunk, r.count - start + 1);
    const std::string lo = std::to_string(start), hi = std::to_string(start + n - 1);
    std::string sql;
    if (b == Backend::postgresql) {
      sql = head + select + " FROM generate_series(CAST(" + lo + " AS bigint), " + hi + ") AS g";
    } else if (b == Backend::mysql) {
      if (has_seq == 1) {
        sql = head + select + " FROM (SELECT seq AS g FROM seq_" + lo + "_to_" + hi + ") AS s";
      } else {
        db.session() << "SET SESSION max_recursive_iterations = " + std::to_string(n + 10);
        sql = head + "WITH RECURSIVE s (g) AS (SELECT " + lo +
              " UNION ALL SELECT g + 1 FROM s WHERE g < " + hi + ") " + select + " FROM s";
      }
    } else {
      sql = head + "WITH RECURSIVE s (g) AS (SELECT " + lo +
            " UNION ALL SELECT g + 1 FROM s WHERE g < " + hi + ") " + select + " FROM s";
    }
    db.transaction([&] { db.session() << sql; });
  }
}

// ------------------------------------------------------------- claim + ack --

// One worker process: its own connection; claims and acks until a claim comes back
// empty and no job of the queue is ready or processing. Reports on `result_fd`.
// What a worker saw of one job, on the one monotonic clock all processes share.
struct JobTrace {
  long long id;
  long long claim_end_ns;  // claim() returned it
  long long ack_start_ns;  // ack_many() for it was called
};

long long mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

[[noreturn]] void worker_main(const DbUrl& url, const std::string& queue, int batch, int ready_fd,
                              int go_fd, int result_fd, const std::string& trace_path) {
  int code = 0;
  std::vector<JobTrace> trace;
  long long jobs = 0, claims = 0, empty = 0, lost = 0;
  double claim_s = 0, ack_s = 0;
  try {
    Database db(url);
    JobRepository repo(db);
    ClaimRequest req;
    req.queue = queue;
    req.limit = batch;
    req.lease = Duration::seconds(30);
    req.worker = "bench:" + std::to_string(getpid());
    const std::string left_sql = "SELECT COUNT(*) FROM (SELECT id FROM job_queue WHERE queue = '" +
                                 queue + "' AND status IN (0, 1) LIMIT 1) t";
    char c = 'r';
    if (write(ready_fd, &c, 1) != 1) throw Error("cannot signal readiness");
    while (read(go_fd, &c, 1) < 0 && errno == EINTR) {
    }
    std::vector<AckItem> items;
    for (;;) {
      auto t0 = Clock::now();
      std::vector<Job> claimed = repo.claim(req);
      claim_s += seconds_since(t0);
      const long long claim_end = mono_ns();
      if (claimed.empty()) {
        long long left = 0;
        db.session() << left_sql, soci::into(left);
        if (left == 0) break;
        ++empty;  // every head is held by another worker: try again
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        continue;
      }
      ++claims;
      items.clear();
      for (const Job& j : claimed) items.push_back({j.id, *j.lock_token, std::nullopt});
      const long long ack_start = mono_ns();
      for (const Job& j : claimed) trace.push_back({j.id, claim_end, ack_start});
      auto t1 = Clock::now();
      lost += static_cast<long long>(repo.ack_many(items).size());
      ack_s += seconds_since(t1);
      jobs += static_cast<long long>(claimed.size());
    }
  } catch (const std::exception& e) {
    std::cerr << "group_bench: worker " << getpid() << ": " << e.what() << std::endl;
    code = 1;
  }
  if (FILE* f = std::fopen(trace_path.c_str(), "wb")) {
    if (!trace.empty() &&
        std::fwrite(trace.data(), sizeof(JobTrace), trace.size(), f) != trace.size())
      code = 1;
    if (std::fclose(f) != 0) code = 1;
  } else {
    code = 1;
  }
  char line[200];
  int len = std::snprintf(line, sizeof line, "%lld %lld %lld %lld %.6f %.6f\n", jobs, claims, empty,
                          lost, claim_s, ack_s);
  if (write(result_fd, line, static_cast<std::size_t>(len)) != len) code = 1;
  std::fflush(nullptr);
  _exit(code);
}

// Jobs claimed while an older job of their group was not finished, from the workers'
// traces: job b is a violation when its claim() returned before ack_many() was even
// called for some older job a of its group (then a was not done when b was claimed).
// Sound, if not complete: a claim and an ack that overlap in time are not counted.
// (The rows' own times cannot tell: locked_at and finished_at are the start times of
// their transactions, and PostgreSQL starts the claim's before planning it, so a claim
// whose snapshot saw the ack committed may carry an earlier locked_at than finished_at.)
long long order_violations(Database& db, const std::string& queue,
                           const std::vector<JobTrace>& traces) {
  std::vector<std::pair<std::string, long long>> keyed;  // (group_key, id)
  {
    std::vector<long long> ids(10000);
    std::vector<std::string> keys(10000);
    soci::statement st =
        (db.session().prepare << "SELECT id, group_key FROM job_queue WHERE queue = '" + queue +
                                     "' AND group_key IS NOT NULL",
         soci::into(ids), soci::into(keys));
    st.execute();
    while (st.fetch()) {
      for (std::size_t i = 0; i < ids.size(); ++i) keyed.emplace_back(keys[i], ids[i]);
      ids.resize(10000);
      keys.resize(10000);
    }
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<JobTrace> by_id = traces;
  std::sort(by_id.begin(), by_id.end(),
            [](const JobTrace& a, const JobTrace& b) { return a.id < b.id; });
  auto find = [&](long long id) -> const JobTrace* {
    auto it = std::lower_bound(by_id.begin(), by_id.end(), id,
                               [](const JobTrace& t, long long v) { return t.id < v; });
    return it != by_id.end() && it->id == id ? &*it : nullptr;
  };
  long long violations = 0;
  const std::string* group = nullptr;
  long long latest_ack_start = 0;  // of the older jobs of the group
  for (const auto& [key, id] : keyed) {
    const JobTrace* t = find(id);
    if (!t) throw Error("job " + std::to_string(id) + " is missing from the workers' traces");
    if (!group || *group != key) {
      group = &key;
      latest_ack_start = 0;
    }
    if (t->claim_end_ns < latest_ack_start) ++violations;
    latest_ack_start = std::max(latest_ack_start, t->ack_start_ns);
  }
  return violations;
}

void run_drain(const DbUrl& url, const Options& o, const std::string& shape, int run) {
  const std::string queue = "drain";
  const std::string backend(backend_name(url.backend));
  {
    Database db(url);
    const Sql q{url.backend};
    empty_queue(db);
    Rows r;
    r.queue = queue;
    r.count = o.jobs;
    const std::string G = std::to_string(o.groups), N = std::to_string(o.jobs);
    if (shape == "rr")
      r.group = q.cat("g", "g % " + G);
    else if (shape == "bygroup")
      r.group = q.cat("g", q.idiv("(g - 1) * " + G, N));
    generate(db, r);
    analyze(db);
  }

  int ready[2], go[2], result[2];
  if (pipe(ready) || pipe(go) || pipe(result)) throw Error("pipe failed");
  std::vector<pid_t> pids;
  std::vector<std::string> trace_paths;
  const auto tmp = std::filesystem::temp_directory_path();
  for (int w = 0; w < o.workers; ++w)
    trace_paths.push_back(
        tmp / ("group_bench." + std::to_string(getpid()) + "." + std::to_string(w) + ".trace"));
  std::fflush(nullptr);
  for (int w = 0; w < o.workers; ++w) {
    pid_t pid = fork();
    if (pid < 0) throw Error("fork failed");
    if (pid == 0) {
      close(ready[0]);
      close(go[1]);
      close(result[0]);
      worker_main(url, queue, o.batch, ready[1], go[0], result[1], trace_paths[w]);
    }
    pids.push_back(pid);
  }
  close(ready[1]);
  close(go[0]);
  close(result[1]);
  int got = 0;
  char c;
  while (got < o.workers) {
    ssize_t r = read(ready[0], &c, 1);
    if (r == 1)
      ++got;
    else if (r == 0 || errno != EINTR)
      break;
  }
  auto t0 = Clock::now();
  close(go[1]);
  bool failed = got < o.workers;
  for (pid_t pid : pids) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = true;
  }
  double secs = seconds_since(t0);
  close(ready[0]);
  std::string out;
  char buf[512];
  for (ssize_t r; (r = read(result[0], buf, sizeof buf)) > 0;)
    out.append(buf, static_cast<std::size_t>(r));
  close(result[0]);
  long long jobs = 0, claims = 0, empty = 0, lost = 0;
  double claim_s = 0, ack_s = 0;
  std::istringstream in(out);
  long long j, cl, em, l;
  double cs, as;
  while (in >> j >> cl >> em >> l >> cs >> as) {
    jobs += j;
    claims += cl;
    empty += em;
    lost += l;
    claim_s += cs;
    ack_s += as;
  }
  std::vector<JobTrace> traces;
  for (const auto& path : trace_paths) {
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      JobTrace t{};
      while (std::fread(&t, sizeof t, 1, f) == 1) traces.push_back(t);
      std::fclose(f);
    }
    std::filesystem::remove(path);
  }
  if (failed) throw Error("a worker failed (see above)");

  Database db(url);
  long long done = count_where(db, "queue = '" + queue + "' AND status = 2");
  long long left = count_where(db, "queue = '" + queue + "' AND status <> 2");
  long long violations = shape == "ungrouped" ? 0 : order_violations(db, queue, traces);
  if (lost || done != o.jobs || left || jobs != o.jobs || violations)
    throw Error("inconsistent " + shape + " drain: claimed " + std::to_string(jobs) + ", done " +
                std::to_string(done) + ", left " + std::to_string(left) + ", lost acks " +
                std::to_string(lost) + ", group order violations " + std::to_string(violations) +
                " of " + std::to_string(o.jobs));
  // A control for the check itself: give the ungrouped drain's jobs the bygroup shape's
  // keys after the fact. It ran them without regard to groups, so the check must find
  // most of them out of order; a check that finds nothing here would prove nothing.
  long long control = -1;
  if (shape == "ungrouped") {
    const Sql q{url.backend};
    long long min_id = 0;
    db.session() << "SELECT MIN(id) FROM job_queue WHERE queue = '" + queue + "'",
        soci::into(min_id);
    db.transaction([&] {
      db.session() << "UPDATE job_queue SET group_key = " +
                          q.cat("g", q.idiv("(id - " + std::to_string(min_id) + ") * " +
                                                std::to_string(o.groups),
                                            std::to_string(o.jobs))) +
                          " WHERE queue = '" + queue + "'";
    });
    control = order_violations(db, queue, traces);
  }
  note(shape + " run " + std::to_string(run) + ": " + std::to_string(o.jobs) + " jobs in " +
       std::to_string(claims) + " claims (+" + std::to_string(empty) + " empty), " +
       fmt("%.3f", secs) + " s; all done" +
       (shape == "ungrouped" ? "; control: the order check finds " + std::to_string(control) +
                                   " violations when bygroup keys are pinned on afterwards"
                             : ", group order kept"));
  char line[640];
  std::snprintf(line, sizeof line,
                "drain backend=%s shape=%s run=%d jobs=%lld groups=%lld workers=%d batch=%d "
                "seconds=%.3f jobs_per_s=%.0f claims=%lld empty_claims=%lld claim_ms=%.2f "
                "ack_many_ms=%.2f order_violations=%lld%s\n",
                backend.c_str(), shape.c_str(), run, o.jobs, shape == "ungrouped" ? 0LL : o.groups,
                o.workers, o.batch, secs, static_cast<double>(o.jobs) / secs, claims, empty,
                1000.0 * claim_s / static_cast<double>(claims + empty + o.workers),
                claims ? 1000.0 * ack_s / static_cast<double>(claims) : 0.0, violations,
                control >= 0 ? (" control_violations=" + std::to_string(control)).c_str() : "");
  std::cout << line << std::flush;
}

// ----------------------------------------------------------------- latency --

const char* const kLatQueue = "lat";

// run_at of the claimable jobs per layout; the blocked followers have fixed_time(1).
int claimable_second(const std::string& layout) {
  return layout == "blocked_first" ? 2 : 0;
}

// The claimable jobs: ungrouped ones and heads of groups "c<n>".
const char* const kClaimableWhere =
    "queue = 'lat' AND status = 0 AND (group_key IS NULL OR group_key LIKE 'c%')";

// Busy groups g0..g(B-1), each a processing head and 1 or 2 ready followers (run_at
// 00:00:01), then the claimable jobs. With `grouped` false the same rows have no key.
void build_latency_table(Database& db, const Options& o, bool grouped) {
  const Sql q{db.url().backend};
  empty_queue(db);
  const std::string B = std::to_string(o.busy_groups);
  auto key = [&](const std::string& prefix, const std::string& e) {
    return grouped ? q.cat(prefix, e) : std::string("NULL");
  };
  Rows heads{kLatQueue, o.busy_groups, 1, key("g", "g - 1"), ""};
  generate(db, heads);
  Rows first{kLatQueue, o.busy_groups, 0, key("g", "g - 1"), q.fixed_time(1)};
  generate(db, first);
  // A second follower in every other group (g1, g3, ...).
  Rows second{kLatQueue, o.busy_groups / 2, 0, key("g", "2 * g - 1"), q.fixed_time(1)};
  if (second.count > 0) generate(db, second);
  Rows claimable{kLatQueue, o.claimable, 0,
                 grouped ? "CASE WHEN g % 2 = 0 THEN NULL ELSE " + q.cat("c", "g") + " END"
                         : std::string("NULL"),
                 q.fixed_time(2)};
  generate(db, claimable);
}

void add_done_rows(Database& db, const Options& o, bool grouped) {
  const Sql q{db.url().backend};
  Rows done{kLatQueue, o.done, 2,
            grouped ? q.cat("g", "g % " + std::to_string(o.busy_groups)) : std::string("NULL"), ""};
  auto t0 = Clock::now();
  generate(db, done);
  note("inserted " + std::to_string(o.done) + " done rows in " + fmt("%.1f", seconds_since(t0)) +
       " s");
}

// Grouped: the layout puts the claimable jobs after (blocked_first) or before the
// followers. Ungrouped there is nothing to tell apart; the layout is left as built.
void set_layout(Database& db, const std::string& layout) {
  const Sql q{db.url().backend};
  db.transaction([&] {
    db.session() << "UPDATE job_queue SET run_at = " + q.fixed_time(claimable_second(layout)) +
                        " WHERE " + kClaimableWhere;
  });
}

struct LatencyFigure {
  double median = 0, p10 = 0, p90 = 0, min = 0, max = 0;
};

LatencyFigure measure_claims(Database& db, const Options& o, bool grouped,
                             const std::string& layout) {
  const Sql q{db.url().backend};
  JobRepository repo(db);
  ClaimRequest req;
  req.queue = kLatQueue;
  req.limit = 1;
  req.lease = Duration::seconds(30);
  req.worker = "group_bench";
  const int run_at_second = grouped ? claimable_second(layout) : 1;
  std::vector<double> ms;
  const int warmup = 10;
  for (int i = 0; i < warmup + o.iterations; ++i) {
    auto t0 = Clock::now();
    std::vector<Job> jobs = repo.claim(req);
    double dt = seconds_since(t0) * 1000.0;
    if (jobs.size() != 1)
      throw Error("a latency claim took " + std::to_string(jobs.size()) + " jobs");
    const Job& j = jobs.front();
    if (j.group_key && j.group_key->rfind("g", 0) == 0)
      throw Error("the claim took job " + std::to_string(j.id) + " of busy group " + *j.group_key);
    repo.release(j.id, *j.lock_token);
    // release sets run_at to now: put it back, so the next claim sees the same order.
    db.transaction([&] {
      db.session() << "UPDATE job_queue SET run_at = " + q.fixed_time(run_at_second) +
                          " WHERE id = " + std::to_string(j.id);
    });
    if (i >= warmup) ms.push_back(dt);
  }
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double p) { return ms[static_cast<std::size_t>(p * (ms.size() - 1) + 0.5)]; };
  LatencyFigure f;
  f.median = ms.size() % 2 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
  f.p10 = pct(0.10);
  f.p90 = pct(0.90);
  f.min = ms.front();
  f.max = ms.back();
  return f;
}

void report_latency(Database& db, const Options& o, const std::string& kase,
                    const std::string& layout, long long done) {
  const bool grouped = kase == "grouped";
  if (grouped) set_layout(db, layout);
  // The table is as built: check the counts, so that the figure is for the stated state.
  long long processing = count_where(db, "queue = 'lat' AND status = 1");
  long long ready = count_where(db, "queue = 'lat' AND status = 0");
  long long finished = count_where(db, "queue = 'lat' AND status = 2");
  const long long want_ready = o.busy_groups + o.busy_groups / 2 + o.claimable;
  if (processing != o.busy_groups || ready != want_ready || finished != done)
    throw Error("latency table has " + std::to_string(processing) + " processing / " +
                std::to_string(ready) + " ready / " + std::to_string(finished) + " done rows");
  LatencyFigure f = measure_claims(db, o, grouped, layout);
  note(kase + " " + layout + " done=" + std::to_string(done) + ": median " + fmt("%.3f", f.median) +
       " ms");
  char line[640];
  std::snprintf(line, sizeof line,
                "latency backend=%s case=%s layout=%s done=%lld busy_groups=%lld "
                "ready_rows=%lld claimable=%lld iterations=%d median_ms=%.3f p10_ms=%.3f "
                "p90_ms=%.3f min_ms=%.3f max_ms=%.3f\n",
                std::string(backend_name(db.url().backend)).c_str(), kase.c_str(), layout.c_str(),
                done, o.busy_groups, ready, o.claimable, o.iterations, f.median, f.p10, f.p90,
                f.min, f.max);
  std::cout << line << std::flush;
}

// One column of a generic row as text.
std::string column_text(const soci::row& r, std::size_t i) {
  if (r.get_indicator(i) == soci::i_null) return "NULL";
  switch (r.get_properties(i).get_data_type()) {
    case soci::dt_string:
      return r.get<std::string>(i);
    case soci::dt_integer:
      return std::to_string(r.get<int>(i));
    case soci::dt_long_long:
      return std::to_string(r.get<long long>(i));
    case soci::dt_unsigned_long_long:
      return std::to_string(r.get<unsigned long long>(i));
    case soci::dt_double:
      return fmt("%g", r.get<double>(i));
    default:
      return "?";
  }
}

// A claim statement (the one statement, or the pick) with literal values in place of its
// placeholders.
std::string literal_claim(std::string sql) {
  // The pick's start before every job (ClaimStart's default); longer names first, since
  // each is replaced wherever its text appears.
  const ClaimStart top;
  const std::string priority = std::to_string(top.priority), run_at = "'" + top.run_at + "'",
                    id = std::to_string(top.id);
  const std::pair<const char*, std::string> subs[] = {{":start_priority_eq", priority},
                                                      {":start_priority", priority},
                                                      {":start_run_at_eq", run_at},
                                                      {":start_run_at", run_at},
                                                      {":start_id", id},
                                                      {":queue", "'lat'"},
                                                      {":limit", "1"},
                                                      {":worker", "'explain'"},
                                                      {":token", "'explain-token'"},
                                                      {":lease_ms", "30000"}};
  for (const auto& [name, value] : subs) {
    for (std::size_t at; (at = sql.find(name)) != std::string::npos;)
      sql.replace(at, std::strlen(name), value);
  }
  return sql;
}

// Prints the rows of a plan, each line prefixed; MariaDB's ANALYZE is a table, whose
// column names come first.
void print_plan(Database& db, const std::string& sql, const std::string& prefix) {
  const Backend b = db.url().backend;
  auto& ses = db.session();
  if (b != Backend::sqlite) ses.begin();  // EXPLAIN ANALYZE runs the claim: undo it
  try {
    soci::rowset<soci::row> rows = ses.prepare << sql;
    bool header = b == Backend::mysql;
    for (const soci::row& r : rows) {
      std::string line;
      if (header) {
        for (std::size_t i = 0; i < r.size(); ++i)
          line += (i ? " | " : "") + r.get_properties(i).get_name();
        std::cout << prefix << line << "\n";
        line.clear();
        header = false;
      }
      for (std::size_t i = 0; i < r.size(); ++i) line += (i ? " | " : "") + column_text(r, i);
      std::cout << prefix << line << "\n";
    }
  } catch (...) {
    if (b != Backend::sqlite) ses.rollback();
    throw;
  }
  if (b != Backend::sqlite) ses.rollback();
  std::cout << std::flush;
}

void explain_claim(Database& db, const std::string& layout, long long done) {
  set_layout(db, layout);
  const Backend b = db.url().backend;
  const ClaimStatements& claim = db.sql().claim;
  const std::string prefix = "explain backend=" + std::string(backend_name(b)) +
                             " layout=" + layout + " done=" + std::to_string(done);
  if (b == Backend::postgresql) {
    print_plan(db,
               "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) " +
                   literal_claim(std::get<ClaimReturning>(claim).claim),
               prefix + " stmt=claim | ");
  } else if (b == Backend::mysql) {
    const auto& steps = std::get<ClaimPickThenMark>(claim);
    print_plan(db, "ANALYZE " + literal_claim(steps.pick), prefix + " stmt=claim_pick | ");
    // The re-check of the picked head, for the job the pick returns (the first claimable).
    long long first = 0;
    db.session() << std::string("SELECT MIN(id) FROM job_queue WHERE ") + kClaimableWhere,
        soci::into(first);
    std::string recheck = steps.recheck;
    recheck.replace(recheck.find("{ids}"), 5, std::to_string(first));
    print_plan(db, "ANALYZE " + recheck, prefix + " stmt=claim_recheck | ");
  } else {
    print_plan(db, "EXPLAIN QUERY PLAN " + literal_claim(std::get<ClaimReturning>(claim).claim),
               prefix + " stmt=claim | ");
  }
}

void run_latency(const DbUrl& url, const Options& o) {
  Database db(url);
  const std::vector<std::string> layouts{"blocked_first", "claimable_first"};
  // Grouped, no done rows: the floor for flatness.
  auto t0 = Clock::now();
  build_latency_table(db, o, true);
  analyze(db);
  note("grouped latency table built in " + fmt("%.1f", seconds_since(t0)) + " s");
  for (const auto& layout : layouts) report_latency(db, o, "grouped", layout, 0);
  if (o.explain)
    for (const auto& layout : layouts) explain_claim(db, layout, 0);
  // Grouped, with the done rows.
  if (o.done > 0) {
    add_done_rows(db, o, true);
    analyze(db);
    for (const auto& layout : layouts) report_latency(db, o, "grouped", layout, o.done);
    if (o.explain)
      for (const auto& layout : layouts) explain_claim(db, layout, o.done);
  }
  // Ungrouped: the same rows without keys, without and with the done rows.
  build_latency_table(db, o, false);
  analyze(db);
  report_latency(db, o, "ungrouped", "as_built", 0);
  if (o.done > 0) {
    add_done_rows(db, o, false);
    analyze(db);
    report_latency(db, o, "ungrouped", "as_built", o.done);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse_args(argc, argv);
  try {
    DbUrl url = DbUrl::parse(o.db);
    if (o.print_claim_sql) {
      const auto dialect = make_dialect(url.backend);
      const ClaimStatements& claim = dialect->sql().claim;
      const auto* one = std::get_if<ClaimReturning>(&claim);
      std::cout << (one ? one->claim : std::get<ClaimPickThenMark>(claim).pick) << "\n";
      return 0;
    }
    const std::string name = database_name(url);
    if (!o.force && name.find("bench") == std::string::npos &&
        name.find("test") == std::string::npos) {
      std::cerr << "group_bench: refusing to run on " << url.redacted()
                << ": it drops and re-creates the queuectl tables. Use a database whose name "
                   "contains \"bench\" or \"test\", or pass --i-know-this-drops-tables.\n";
      return 2;
    }
    {
      Database db(url);
      note("resetting the schema on " + url.redacted());
      drop_and_migrate(db);
    }
    if (o.throughput) {
      for (int run = 1; run <= o.repeat; ++run)
        for (const auto& shape : o.shapes) run_drain(url, o, shape, run);
    }
    if (o.latency) run_latency(url, o);
    return 0;
  } catch (const Error& e) {
    std::cerr << "group_bench: error: " << e.what() << "\n";
    return 1;
  } catch (const soci::soci_error& e) {
    std::cerr << "group_bench: database error: " << e.get_error_message() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "group_bench: error: " << e.what() << "\n";
    return 1;
  }
}
