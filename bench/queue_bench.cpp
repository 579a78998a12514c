// queue_bench: throughput and latency figures for queuectl's repository, measured with the
// real code paths (JobRepository, Database, Migrator) against a real database.
//
//   queue_bench --db URL [--i-know-this-drops-tables] [--claim] [--stats]
//               [--reset-only | --keep-schema] [--workers 1,2,4] [--batches 1,100]
//               [--jobs-b1 3000] [--jobs-b100 20000] [--jobs N] [--done 1000000]
//               [--ready 1000] [--runs 20] [--queues 10] [--max-processing N] [--rate N]
//               [--bare] [--keep-done on|off]
//   queue_bench --db URL --print-claim-sql
//
// --claim   claim+ack throughput: for each batch size B and worker count W, the queue is
//           emptied and refilled (by the database's own row generator), then W forked
//           worker processes, each with its own connection, loop claim(limit B, lease 30s)
//           + ack_many(claimed ids, token) until a claim comes back empty.
//           --max-processing N gives the queue that concurrency limit first (0, the
//           default: none), to measure what the limit costs the claim (bench/limits.sh);
//           --rate N a rate limit of N starts a second with a burst of N (0: none).
//           --bare (PostgreSQL, MySQL/MariaDB): the workers run the article's statements
//           themselves instead of JobRepository, the floor of bench/bare_floor.sh. MySQL: in
//           a transaction, SELECT id ... ORDER BY the claim order LIMIT B FOR UPDATE SKIP
//           LOCKED, then one UPDATE of those ids to processing with a token and a lease,
//           COMMIT. PostgreSQL: one UPDATE ... WHERE id IN (that SELECT) RETURNING id, in
//           autocommit. Then one UPDATE of the ids to done, guarded by the token. Same table,
//           indexes and triggers; no start probe, no group, limit or rate checks, no job
//           columns read.
//           --keep-done off: the queue keeps no done job (`queue QUEUE --keep-done off`),
//           so the library's acks delete their jobs; with --bare the ack is a DELETE of the
//           ids, guarded by the token.
// --stats   JobRepository::stats latency with --done finished jobs and --ready ready jobs
//           spread over --queues queues, after ANALYZE (VACUUM ANALYZE on PostgreSQL).
// --reset-only  drop the tables and migrate, nothing else (run.sh uses it before timing
//           `queuectl enqueue --from`).
// --keep-schema  skip the drop and the migration: the tables are used as they are (made by
//           an earlier --reset-only, then changed by hand to measure what one index or
//           trigger costs: bench/ack_parts.sh). The schema must be at the current version.
// With neither --claim nor --stats nor --reset-only, both figures are measured.
// --print-claim-sql  print the dialect's claim statement for the URL's backend (with its
//           :name placeholders) and exit, touching no table: run.sh hands it to pgbench.
//
// The schema is dropped and re-created first (job_queue, queuectl_queues, queuectl_locks,
// queuectl_schema_migrations): queue_bench refuses to run unless the URL's database name
// contains "bench" or "test", or --i-know-this-drops-tables is given.
//
// Results go to stdout, one line each, as key=value words (run.sh parses them):
//   claim_ack backend=postgresql workers=2 batch=100 jobs=20000 seconds=1.234 jobs_per_s=16207
//             claim_ms=1.2 ack_many_ms=3.4     (mean time of one call, per worker)
//   stats backend=postgresql done=1000000 ready=1000 queues=10 runs=20 median_ms=12.3 ...
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
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "core/db_url.hpp"
#include "core/duration.hpp"
#include "core/errors.hpp"
#include "db/admin_repository.hpp"
#include "db/database.hpp"
#include "db/job_repository.hpp"
#include "db/migrations.hpp"
#include "db/row_reader.hpp"

#include "bench_db.hpp"

using namespace queuectl;
using namespace queuectl::bench;

namespace {

struct Options {
  std::string db;
  bool force = false;
  bool claim = false;
  bool stats = false;
  bool reset_only = false;
  bool keep_schema = false;  // --keep-schema: no drop and migrate first
  std::vector<int> workers{1, 2, 4};
  std::vector<int> batches{1, 100};
  long long jobs_b1 = 3000;
  long long jobs_b100 = 20000;
  long long jobs = 0;  // overrides both when set
  long long done = 1000000;
  long long ready = 1000;
  int runs = 20;
  int queues = 10;
  std::string queue = "bench";
  bool print_claim_sql = false;
  int max_processing = 0;  // the queue's concurrency limit during --claim; 0: none
  int rate = 0;            // the queue's rate limit (starts a second, burst as many); 0: none
  bool bare = false;       // --claim with the article's statements, not JobRepository
  bool keep_done = true;   // --keep-done off: acks delete their jobs (bare: a DELETE)
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "queue_bench: " << why << "\n"
            << "usage: queue_bench --db URL [--i-know-this-drops-tables] [--claim] [--stats]\n"
               "                   [--reset-only | --keep-schema] [--workers 1,2,4]\n"
               "                   [--batches 1,100] [--jobs-b1 N] [--jobs-b100 N] [--jobs N]\n"
               "                   [--done N] [--ready N] [--runs N] [--queues N]\n"
               "                   [--max-processing N] [--rate N] [--bare] [--keep-done on|off]\n";
  std::exit(2);
}

long long parse_count(const std::string& text, const std::string& what) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno || end == text.c_str() || *end || v <= 0) usage(what + " needs a positive integer");
  return v;
}

std::vector<int> parse_list(const std::string& text, const std::string& what) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(static_cast<int>(parse_count(item, what)));
  if (out.empty()) usage(what + " needs a list like 1,2,4");
  return out;
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
    else if (a == "--claim")
      o.claim = true;
    else if (a == "--stats")
      o.stats = true;
    else if (a == "--reset-only")
      o.reset_only = true;
    else if (a == "--keep-schema")
      o.keep_schema = true;
    else if (a == "--workers")
      o.workers = parse_list(value(), a);
    else if (a == "--batches")
      o.batches = parse_list(value(), a);
    else if (a == "--jobs-b1")
      o.jobs_b1 = parse_count(value(), a);
    else if (a == "--jobs-b100")
      o.jobs_b100 = parse_count(value(), a);
    else if (a == "--jobs")
      o.jobs = parse_count(value(), a);
    else if (a == "--done")
      o.done = parse_count(value(), a);
    else if (a == "--ready")
      o.ready = parse_count(value(), a);
    else if (a == "--runs")
      o.runs = static_cast<int>(parse_count(value(), a));
    else if (a == "--queues")
      o.queues = static_cast<int>(parse_count(value(), a));
    else if (a == "--max-processing")
      o.max_processing = static_cast<int>(parse_count(value(), a));
    else if (a == "--rate")
      o.rate = static_cast<int>(parse_count(value(), a));
    else if (a == "--bare")
      o.bare = true;
    else if (a == "--keep-done") {
      const std::string v = value();
      if (v != "on" && v != "off") usage("--keep-done takes on or off");
      o.keep_done = v == "on";
    } else if (a == "--print-claim-sql")
      o.print_claim_sql = true;
    else if (a == "-h" || a == "--help")
      usage("measures claim+ack throughput and stats latency");
    else
      usage("unknown argument " + a);
  }
  if (o.db.empty()) {
    const char* env = std::getenv("QUEUECTL_DB");
    if (env) o.db = env;
  }
  if (o.db.empty()) usage("--db URL is required");
  if (o.reset_only && o.keep_schema) usage("--reset-only and --keep-schema contradict each other");
  if (!o.claim && !o.stats && !o.reset_only) o.claim = o.stats = true;
  return o;
}

std::string backend_text(const DbUrl& url) {
  return std::string(backend_name(url.backend));
}

void note(const std::string& line) {
  std::cerr << "queue_bench: " << line << std::endl;
}

// ------------------------------------------------------------------ schema --

// Inserts `count` rows with the database's own row generator, in chunks. `status` 0
// makes ready jobs (run_at = now, due at once), 2 makes done jobs finished now. Queue
// names are `prefix` when queues == 1, else prefix-0 .. prefix-(queues-1) round robin.
// All values are integers formatted here or constant literals: no input reaches the SQL.
void generate_jobs(Database& db, long long count, int status, const std::string& prefix,
                   int queues) {
  const Backend b = db.url().backend;
  const long long chunk = b == Backend::postgresql ? 1000000 : 100000;
  static int has_seq = -1;
  if (b == Backend::mysql && has_seq < 0) has_seq = mariadb_has_sequence(db) ? 1 : 0;
  for (long long start = 1; start <= count; start += chunk) {
    const long long n = std::min(chunk, count - start + 1);
    const std::string lo = std::to_string(start), hi = std::to_string(start + n - 1);
    const std::string st = std::to_string(status);
    const std::string q = std::to_string(queues);
    std::string sql;
    if (b == Backend::postgresql) {
      std::string queue = queues == 1 ? "'" + prefix + "'" : "'" + prefix + "-' || (g % " + q + ")";
      sql =
          "INSERT INTO job_queue (queue, status, attempts, payload, finished_at) "
          "SELECT " +
          queue + ", " + st + ", " + (status == 2 ? "1" : "0") +
          ", CAST('{\"n\":' || g || '}' AS jsonb), " + (status == 2 ? "now()" : "NULL") +
          " FROM generate_series(" + lo + ", " + hi + ") AS g";
    } else if (b == Backend::mysql) {
      std::string queue =
          queues == 1 ? "'" + prefix + "'" : "CONCAT('" + prefix + "-', g % " + q + ")";
      std::string select = "SELECT " + queue + ", " + st + ", " + (status == 2 ? "1" : "0") +
                           ", CONCAT('{\"n\":', g, '}'), " + (status == 2 ? "NOW(6)" : "NULL");
      std::string head = "INSERT INTO job_queue (queue, status, attempts, payload, finished_at) ";
      if (has_seq == 1) {
        // MariaDB's Sequence engine: seq_LO_to_HI is a virtual table of integers.
        sql = head + select + " FROM (SELECT seq AS g FROM seq_" + lo + "_to_" + hi + ") AS s";
      } else {
        db.session() << "SET SESSION cte_max_recursion_depth = " + std::to_string(n + 10);
        sql = head + "WITH RECURSIVE s (g) AS (SELECT " + lo +
              " UNION ALL SELECT g + 1 FROM s "
              "WHERE g < " +
              hi + ") " + select + " FROM s";
      }
    } else {
      std::string queue = queues == 1 ? "'" + prefix + "'" : "'" + prefix + "-' || (g % " + q + ")";
      sql =
          "INSERT INTO job_queue (queue, status, attempts, payload, finished_at) "
          "WITH RECURSIVE s (g) AS (SELECT " +
          lo + " UNION ALL SELECT g + 1 FROM s WHERE g < " + hi + ") SELECT " + queue + ", " + st +
          ", " + (status == 2 ? "1" : "0") + ", '{\"n\":' || g || '}', " +
          (status == 2 ? "strftime('%Y-%m-%d %H:%M:%f', 'now')" : "NULL") + " FROM s";
    }
    db.transaction([&] { db.session() << sql; });
  }
}

long long count_status(Database& db, int status) {
  long long n = 0;
  db.session() << "SELECT COUNT(*) FROM job_queue WHERE status = " + std::to_string(status),
      soci::into(n);
  return n;
}

// ------------------------------------------------------------- claim + ack --

// Runs the "{ids}" statement `sql` over `ids`, with :token bound (twice when the statement
// has :token2), as the library runs its own (row_reader: expand_ids, bind_ids).
void run_on_ids(soci::session& s, const std::string& sql, std::vector<long long>& ids,
                std::string& token) {
  soci::statement st(s);
  bind_ids(st, ids);
  st.exchange(soci::use(token, "token"));
  if (sql.find(":token2") != std::string::npos) st.exchange(soci::use(token, "token2"));
  prepare_once(st, expand_ids(sql, ids.size()));
  st.execute(true);
}

// --bare on PostgreSQL: the article's claim, one statement in autocommit (UPDATE of the ids a
// sub-select picks with FOR UPDATE SKIP LOCKED, RETURNING them), then its ack (BarePgAck).
// The claim is prepared on the server once per worker and run again with new values, as a
// hand-written worker would keep it (a statement prepared for each claim would also send
// PREPARE and DEALLOCATE: three round trips, which the floor measured until 2026-11-28).
struct BarePgClaim {
  explicit BarePgClaim(soci::session& s) : st(s) {
    st.exchange(soci::into(id));
    st.exchange(soci::use(token, "token"));
    st.exchange(soci::use(token2, "token2"));
    st.exchange(soci::use(queue, "queue"));
    st.exchange(soci::use(batch, "batch"));
    st.alloc();
    st.prepare(
        "UPDATE job_queue SET status = 1, attempts = attempts + 1,"
        " locked_by = CAST(:token AS text), lock_token = CAST(:token2 AS text),"
        " locked_at = now(), lock_until = now() + INTERVAL '30 seconds',"
        " updated_at = now()"
        " WHERE id IN (SELECT id FROM job_queue"
        " WHERE queue = CAST(:queue AS text) AND status = 0 AND run_at <= now()"
        " ORDER BY priority DESC, run_at, id"
        " LIMIT CAST(:batch AS integer) FOR UPDATE SKIP LOCKED)"
        " RETURNING id",
        soci::details::st_repeatable_query);
    st.define_and_bind();
  }
  soci::statement st;
  long long id = 0;
  std::string token, token2, queue;
  int batch = 0;
};

// --bare on PostgreSQL: the article's ack of `count` ids, prepared once per worker for each
// count of ids and run again with new values, as the library keeps its own ack prepared
// (since 2026-11-28; before, both sent theirs as one-time statements).
struct BarePgAck {
  BarePgAck(soci::session& s, std::size_t count, bool keep_done) : st(s), ids(count) {
    bind_ids(st, ids);
    st.exchange(soci::use(token, "token"));
    st.alloc();
    st.prepare(expand_ids(keep_done ? "UPDATE job_queue SET status = 2, lock_until = NULL,"
                                      " finished_at = now(), updated_at = now()"
                                      " WHERE id IN ({ids}) AND status = 1"
                                      " AND lock_token = CAST(:token AS text)"
                                    : "DELETE FROM job_queue WHERE id IN ({ids}) AND status = 1"
                                      " AND lock_token = CAST(:token AS text)",
                          count),
               soci::details::st_repeatable_query);
    st.define_and_bind();
  }
  soci::statement st;
  std::vector<long long> ids;
  std::string token;
};

long long bare_claim_ack_pg(soci::session& s, const std::string& queue, int batch,
                            const std::string& token, bool keep_done, double& claim_s,
                            double& ack_s) {
  static std::unique_ptr<BarePgClaim> claim;                      // one worker process, one session
  static std::map<std::size_t, std::unique_ptr<BarePgAck>> acks;  // by their count of ids
  if (!claim) claim = std::make_unique<BarePgClaim>(s);
  std::vector<long long> ids;
  auto t0 = Clock::now();
  claim->token = claim->token2 = token;
  claim->queue = queue;
  claim->batch = batch;
  for (bool got = claim->st.execute(true); got; got = claim->st.fetch()) ids.push_back(claim->id);
  claim_s += seconds_since(t0);
  if (ids.empty()) return 0;
  auto t1 = Clock::now();
  std::unique_ptr<BarePgAck>& ack = acks[ids.size()];
  if (!ack) ack = std::make_unique<BarePgAck>(s, ids.size(), keep_done);
  std::copy(ids.begin(), ids.end(), ack->ids.begin());  // in place: bound by reference
  ack->token = token;
  ack->st.execute(true);
  ack_s += seconds_since(t1);
  return static_cast<long long>(ids.size());
}

// --bare: one claim of up to `batch` jobs by the article's statements and the ack of what it
// took; the number of jobs (0: the queue is empty). MySQL/MariaDB; PostgreSQL above.
long long bare_claim_ack(soci::session& s, const std::string& queue, int batch,
                         const std::string& token, bool keep_done, double& claim_s, double& ack_s) {
  if (s.get_backend_name() == "postgresql")
    return bare_claim_ack_pg(s, queue, batch, token, keep_done, claim_s, ack_s);
  std::vector<long long> ids;
  auto t0 = Clock::now();
  s.begin();
  {
    long long id = 0;
    std::string q = queue;
    soci::statement pick = (s.prepare << "SELECT id FROM job_queue"
                                         " WHERE queue = :queue AND status = 0"
                                         " AND run_at <= NOW(6)"
                                         " ORDER BY priority DESC, run_at, id"
                                         " LIMIT :batch FOR UPDATE SKIP LOCKED",
                            soci::into(id), soci::use(q, "queue"), soci::use(batch, "batch"));
    for (bool got = pick.execute(true); got; got = pick.fetch()) ids.push_back(id);
  }
  if (ids.empty()) {
    s.commit();
    claim_s += seconds_since(t0);
    return 0;
  }
  std::string tok = token;
  run_on_ids(s,
             "UPDATE job_queue SET status = 1, attempts = attempts + 1, locked_by = :token,"
             " lock_token = :token2, locked_at = NOW(6), lock_until = NOW(6) + INTERVAL 30 SECOND,"
             " updated_at = NOW(6) WHERE id IN ({ids})",
             ids, tok);
  s.commit();
  claim_s += seconds_since(t0);
  auto t1 = Clock::now();
  run_on_ids(s,
             keep_done ? "UPDATE job_queue SET status = 2, lock_until = NULL, finished_at = NOW(6),"
                         " updated_at = NOW(6) WHERE id IN ({ids}) AND status = 1"
                         " AND lock_token = :token"
                       : "DELETE FROM job_queue WHERE id IN ({ids}) AND status = 1"
                         " AND lock_token = :token",
             ids, tok);
  ack_s += seconds_since(t1);
  return static_cast<long long>(ids.size());
}

// One worker process: its own connection; claims and acks until a claim comes back
// empty. Reports its job count on `result_fd`. Never returns.
[[noreturn]] void worker_main(const DbUrl& url, const std::string& queue, int batch, bool bare,
                              bool keep_done, int ready_fd, int go_fd, int result_fd) {
  int code = 0;
  long long jobs = 0, claims = 0, lost = 0;
  double claim_s = 0, ack_s = 0;  // time inside claim() and ack_many(), empty claims included
  try {
    Database db(url);
    JobRepository repo(db);
    ClaimRequest req;
    req.queue = queue;
    req.limit = batch;
    req.lease = Duration::seconds(30);
    req.worker = "bench:" + std::to_string(getpid());
    // Ready: connected. Then wait until the parent closes the go pipe.
    char c = 'r';
    if (write(ready_fd, &c, 1) != 1) throw Error("cannot signal readiness");
    while (read(go_fd, &c, 1) < 0 && errno == EINTR) {
    }
    std::vector<AckItem> items;
    while (bare) {
      const long long n =
          bare_claim_ack(db.session(), queue, batch, req.worker, keep_done, claim_s, ack_s);
      if (n == 0) break;
      ++claims;
      jobs += n;
    }
    for (; !bare;) {
      auto t0 = Clock::now();
      std::vector<Job> claimed = repo.claim(req);
      claim_s += seconds_since(t0);
      if (claimed.empty()) break;
      ++claims;
      items.clear();
      for (const Job& j : claimed) items.push_back({j.id, *j.lock_token, std::nullopt, j.queue});
      auto t1 = Clock::now();
      lost += static_cast<long long>(repo.ack_many(items).size());
      ack_s += seconds_since(t1);
      jobs += static_cast<long long>(claimed.size());
    }
  } catch (const std::exception& e) {
    std::cerr << "queue_bench: worker " << getpid() << ": " << e.what() << std::endl;
    code = 1;
  }
  char line[160];
  int len = std::snprintf(line, sizeof line, "%lld %lld %lld %.6f %.6f\n", jobs, claims, lost,
                          claim_s, ack_s);
  if (write(result_fd, line, static_cast<std::size_t>(len)) != len) code = 1;
  std::fflush(nullptr);
  _exit(code);  // no destructors, no atexit: the parent's state is not ours
}

struct ClaimFigure {
  int workers = 0;
  int batch = 0;
  long long jobs = 0;
  double seconds = 0;
  double claim_ms = 0;  // mean time of one claim() call, over all workers
  double ack_ms = 0;    // mean time of one ack_many() call
};

ClaimFigure run_claim_case(const DbUrl& url, const Options& o, int workers, int batch,
                           long long total) {
  {
    Database db(url);
    empty_queue(db);
    generate_jobs(db, total, 0, o.queue, 1);
    AdminRepository(db).set_max_processing(
        o.queue, o.max_processing > 0 ? std::optional<int>(o.max_processing) : std::nullopt);
    std::optional<RateLimit> rate;
    if (o.rate > 0) rate = RateLimit{o.rate, 1000, o.rate, false};
    AdminRepository(db).set_rate(o.queue, rate);
    AdminRepository(db).set_keep_done(o.queue, o.keep_done);
    analyze(db);
  }  // closed before fork: no connection is shared with the children

  int ready[2], go[2], result[2];
  if (pipe(ready) || pipe(go) || pipe(result)) throw Error("pipe failed");
  std::vector<pid_t> pids;
  std::fflush(nullptr);  // nothing buffered may be inherited and written twice
  for (int w = 0; w < workers; ++w) {
    pid_t pid = fork();
    if (pid < 0) throw Error("fork failed");
    if (pid == 0) {
      close(ready[0]);
      close(go[1]);
      close(result[0]);
      worker_main(url, o.queue, batch, o.bare, o.keep_done, ready[1], go[0], result[1]);
    }
    pids.push_back(pid);
  }
  close(ready[1]);
  close(go[0]);
  close(result[1]);
  // Wait until every worker is connected, then start them all at once.
  int got = 0;
  char c;
  while (got < workers) {
    ssize_t r = read(ready[0], &c, 1);
    if (r == 1)
      ++got;
    else if (r == 0 || errno != EINTR)
      break;
  }
  auto t0 = Clock::now();
  close(go[1]);
  bool failed = got < workers;
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
  long long jobs = 0, claims = 0, lost = 0;
  double claim_s = 0, ack_s = 0;
  std::istringstream in(out);
  long long j, cl, l;
  double cs, as;
  while (in >> j >> cl >> l >> cs >> as) {
    jobs += j;
    claims += cl;
    lost += l;
    claim_s += cs;
    ack_s += as;
  }
  if (failed) throw Error("a worker failed (see above)");

  Database db(url);
  long long done = count_status(db, 2), left = count_status(db, 0) + count_status(db, 1);
  // --keep-done off: every ack deleted its job, so none is left done either.
  if (lost || done != (o.keep_done ? total : 0) || left || jobs != total)
    throw Error("inconsistent run: claimed " + std::to_string(jobs) + ", done " +
                std::to_string(done) + ", left " + std::to_string(left) + ", lost acks " +
                std::to_string(lost) + " of " + std::to_string(total));
  note("W=" + std::to_string(workers) + " B=" + std::to_string(batch) + ": " +
       std::to_string(total) + " jobs in " + std::to_string(claims) + " claims, " +
       std::to_string(secs) + " s");
  // Every worker ends with one empty claim, counted in claim_s: divide by claims + workers.
  return {workers,
          batch,
          total,
          secs,
          1000.0 * claim_s / static_cast<double>(claims + workers),
          claims ? 1000.0 * ack_s / static_cast<double>(claims) : 0.0};
}

// ------------------------------------------------------------------- stats --

void run_stats(Database& db, const Options& o) {
  const std::string backend = backend_text(db.url());
  empty_queue(db);
  auto t0 = Clock::now();
  generate_jobs(db, o.done, 2, o.queue, o.queues);
  double fill_done = seconds_since(t0);
  generate_jobs(db, o.ready, 0, o.queue, o.queues);
  t0 = Clock::now();
  analyze(db);
  double analyze_s = seconds_since(t0);
  note("stats: inserted " + std::to_string(o.done) + " done jobs in " + std::to_string(fill_done) +
       " s, analyze " + std::to_string(analyze_s) + " s");

  JobRepository repo(db);
  auto check = repo.stats({});  // warm-up, and a check that the counts are right
  long long done = 0, ready = 0;
  for (const auto& q : check) {
    done += q.done;
    ready += q.ready;
  }
  if (done != o.done || ready != o.ready)
    throw Error("stats counted " + std::to_string(done) + " done / " + std::to_string(ready) +
                " ready, expected " + std::to_string(o.done) + " / " + std::to_string(o.ready));
  std::vector<double> ms;
  for (int i = 0; i < o.runs; ++i) {
    auto t = Clock::now();
    repo.stats({});
    ms.push_back(seconds_since(t) * 1000.0);
  }
  std::sort(ms.begin(), ms.end());
  double median =
      ms.size() % 2 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2.0;
  // The ready counts alone (the dialect's stats_ready statement): they come from the
  // claim index, so their cost must not depend on the finished rows.
  std::vector<double> ready_ms;
  for (int i = 0; i < o.runs; ++i) {
    auto t = Clock::now();
    std::string name;
    long long now_ready = 0, scheduled = 0;
    double age = 0;
    soci::indicator i1 = soci::i_ok, i2 = soci::i_ok, i3 = soci::i_ok;
    soci::statement st =
        (db.session().prepare << db.sql().listing.stats_ready, soci::into(name),
         soci::into(now_ready, i1), soci::into(scheduled, i2), soci::into(age, i3));
    long long counted = 0;
    for (bool got = st.execute(true); got; got = st.fetch()) counted += now_ready;
    if (counted != o.ready) throw Error("stats_ready counted " + std::to_string(counted));
    ready_ms.push_back(seconds_since(t) * 1000.0);
  }
  std::sort(ready_ms.begin(), ready_ms.end());
  double ready_median = ready_ms[ready_ms.size() / 2];
  char line[512];
  std::snprintf(line, sizeof line,
                "stats backend=%s done=%lld ready=%lld queues=%d runs=%d median_ms=%.2f "
                "min_ms=%.2f max_ms=%.2f ready_part_median_ms=%.2f fill_done_s=%.1f\n",
                backend.c_str(), o.done, o.ready, o.queues, o.runs, median, ms.front(), ms.back(),
                ready_median, fill_done);
  std::cout << line << std::flush;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse_args(argc, argv);
  try {
    DbUrl url = DbUrl::parse(o.db);
    if (o.print_claim_sql) {
      // The one statement of an UPDATE ... RETURNING claim; nothing for a pick-then-mark one.
      const auto dialect = make_dialect(url.backend);
      const auto* one = std::get_if<ClaimReturning>(&dialect->sql().claim);
      std::cout << (one ? one->claim : std::string()) << "\n";
      return 0;
    }
    const std::string name = database_name(url);
    if (!o.force && name.find("bench") == std::string::npos &&
        name.find("test") == std::string::npos) {
      std::cerr << "queue_bench: refusing to run on " << url.redacted()
                << ": it drops and re-creates the queuectl tables. Use a database whose name "
                   "contains \"bench\" or \"test\", or pass --i-know-this-drops-tables.\n";
      return 2;
    }
    const std::string backend = backend_text(url);
    if (o.bare && (url.backend == Backend::sqlite || !o.claim || o.stats))
      usage("--bare measures --claim alone, on PostgreSQL or MySQL/MariaDB");
    if (o.keep_schema) {
      Database db(url);
      Migrator(db).require_current();
    } else {
      Database db(url);
      note("resetting the schema on " + url.redacted());
      drop_and_migrate(db);
    }
    if (o.reset_only) return 0;

    if (o.claim) {
      for (int batch : o.batches) {
        long long total = o.jobs ? o.jobs : (batch >= 100 ? o.jobs_b100 : o.jobs_b1);
        for (int workers : o.workers) {
          ClaimFigure f = run_claim_case(url, o, workers, batch, total);
          char line[512];
          std::snprintf(line, sizeof line,
                        "claim_ack backend=%s workers=%d batch=%d jobs=%lld seconds=%.3f "
                        "jobs_per_s=%.0f claim_ms=%.2f ack_many_ms=%.2f max_processing=%d "
                        "rate=%d mode=%s keep_done=%s\n",
                        backend.c_str(), f.workers, f.batch, f.jobs, f.seconds,
                        static_cast<double>(f.jobs) / f.seconds, f.claim_ms, f.ack_ms,
                        o.max_processing, o.rate, o.bare ? "bare" : "library",
                        o.keep_done ? "on" : "off");
          std::cout << line << std::flush;
        }
      }
    }
    if (o.stats) {
      Database db(url);
      run_stats(db, o);
    }
    return 0;
  } catch (const Error& e) {
    std::cerr << "queue_bench: error: " << e.what() << "\n";
    return 1;
  } catch (const soci::soci_error& e) {
    std::cerr << "queue_bench: database error: " << e.get_error_message() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "queue_bench: error: " << e.what() << "\n";
    return 1;
  }
}
