// Rate limits through the real binary: `queue Q --rate/--burst/--rate-per-key` and where the
// limit shows (queue, stats, Prometheus), bad input, a worker that sleeps until the next
// token and drains a limited queue, and the races of the issue: 8 workers against one
// bucket, and a bucket per key with one key holding 90% of the backlog. Every backend.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>

#include "cli/fault_helpers.hpp"
#include "db/job_repository.hpp"
#include "db/rate_buckets.hpp"

namespace queuectl::testing::cli {
namespace {

// Every job of `queue` that has been claimed: (locked_at in microseconds, group key).
struct Start {
  std::int64_t at_us;
  std::string key;
};

std::vector<Start> starts(const std::string& url, const std::string& queue) {
  std::vector<Start> out;
  std::string after = "0";
  for (;;) {
    json page = ok_json(
        url, {"list", queue, "--status", "processing,done", "--limit", "1000", "--after", after});
    if (page.empty()) break;
    for (const json& j : page) {
      if (j["locked_at"].is_string())
        out.push_back({epoch_us(j["locked_at"]), j["group_key"].is_string()
                                                     ? j["group_key"].get<std::string>()
                                                     : std::string("-")});
      after = std::to_string(j["id"].get<std::int64_t>());
    }
  }
  return out;
}

std::int64_t db_now_us(FreshDatabase& fixture) {
  return epoch_us(json(JobRepository(fixture.db()).now()));
}

// 8 `work --concurrency 2 -- true` processes on `queue` for `ms`, then stopped: the start
// times (sorted) of the jobs claimed by then, the database's time then, and the median of
// the tokens the queue's bucket held, read every 250 ms after the first 2 s.
struct RaceStarts {
  std::vector<std::int64_t> at_us;
  std::int64_t stop_us = 0;
  double median_tokens = 0;
};

RaceStarts race_starts(FreshDatabase& fixture, const std::string& queue, int ms) {
  const std::string& url = fixture.url();
  Cleanup cleanup;
  TempDir dir;
  std::vector<int> workers;
  for (int i = 0; i < 8; ++i)
    workers.push_back(
        cleanup.child(spawn_queuectl(url, {"work", queue, "--concurrency", "2", "--", "true"},
                                     dir.path() + "/w" + std::to_string(i) + ".log")));
  // The bucket's level tells who set the pace: keen workers keep it near empty, and tokens
  // left lying in it were ones the workers were too slow to take.
  std::vector<double> tokens;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  sleep_ms(2000);
  while (std::chrono::steady_clock::now() < until) {
    Database& db = fixture.db();
    std::optional<RateRead> rate;
    db.retrying([&] { rate = read_rate(db.session(), db.sql().queues.rate_state, queue, true); });
    REQUIRE(rate);
    tokens.push_back(rate->tokens_now());
    sleep_ms(250);
  }
  RaceStarts r;
  r.stop_us = db_now_us(fixture);
  REQUIRE(!tokens.empty());
  std::nth_element(tokens.begin(), tokens.begin() + tokens.size() / 2, tokens.end());
  r.median_tokens = tokens[tokens.size() / 2];
  // Stopped before the starts are read: paging through the jobs while the workers still
  // claimed chased their newest starts for as long as each page found more.
  for (int pid : workers) kill(pid, SIGTERM);
  for (int pid : workers) CHECK(wait_child(cleanup, pid) == 0);
  const std::vector<Start> s = starts(url, queue);
  for (const Start& x : s)
    if (x.at_us <= r.stop_us) r.at_us.push_back(x.at_us);
  std::sort(r.at_us.begin(), r.at_us.end());
  return r;
}

void enqueue_keyed(const std::string& url, const std::string& queue,
                   const std::map<std::string, int>& per_key) {
  std::string lines;
  int total = 0;
  // Interleaved, so that no key's jobs all come first.
  for (int round = 0;; ++round) {
    bool any = false;
    for (const auto& [key, n] : per_key) {
      if (round >= n) continue;
      any = true;
      ++total;
      lines += "{\"queue\":\"" + queue + "\",\"payload\":{},\"group_key\":\"" + key + "\"}\n";
    }
    if (!any) break;
  }
  json r = ok_json(url, {"enqueue", "--from", "-"}, lines);
  REQUIRE(r["enqueued"] == total);
}

}  // namespace

TEST_CASE("cli: rate: queue --rate sets, shows and removes a rate limit") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  RunResult set = ok(url, {"queue", "mail", "--rate", "20/s", "--burst", "40"});
  CHECK(contains(set.out, "queue mail: rate 20/s burst 40"));
  json s = ok_json(url, {"queue", "mail"});
  CHECK(s["rate"] == "20/s");
  CHECK(s["burst"] == 40);
  CHECK(s["rate_per_key"] == false);
  ok(url, {"queue", "api", "--rate", "100/m", "--rate-per-key", "on"});
  s = ok_json(url, {"queue", "api"});
  CHECK(s["rate"] == "100/m");
  CHECK(s["burst"] == 100);  // one period's worth by default
  CHECK(s["rate_per_key"] == true);

  enqueue(url, "mail");
  json stats = ok_json(url, {"stats"});
  bool seen = false;
  for (const json& q : stats)
    if (q["queue"] == "mail") {
      seen = true;
      CHECK(q["rate"] == "20/s");
      CHECK(q["burst"] == 40);
    }
  CHECK(seen);
  RunResult table = ok(url, {"stats"});
  CHECK(contains(table.out, "rate=20/s"));
  RunResult prom = ok(url, {"stats", "-o", "prometheus"});
  CHECK(contains(prom.out, "queuectl_queue_rate_limit_per_second{queue=\"mail\"} 20\n"));
  CHECK(contains(prom.out, "queuectl_queue_rate_burst{queue=\"mail\"} 40\n"));
  CHECK(contains(prom.out, "queuectl_queue_rate_per_key{queue=\"api\"} 1\n"));
  json top = ok_json(url, {"top", "--once"});
  seen = false;
  for (const json& q : top["queues"])
    if (q["queue"] == "mail") {
      seen = true;
      CHECK(q["rate"] == "20/s");
    }
  CHECK(seen);

  RunResult removed = ok(url, {"queue", "mail", "--rate", "none"});
  CHECK(contains(removed.out, "rate none"));
  s = ok_json(url, {"queue", "mail"});
  CHECK(s["rate"].is_null());
  CHECK(s["burst"].is_null());
}

TEST_CASE("cli: rate: bad rates and bursts name what is wrong, exit 2, nothing written") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  ok(url, {"queue", "mail", "--rate", "5/s"});
  for (const char* bad : {"0/s", "1.5/s", "5", "1000001/s", "abc", "5/"})
    rejects(fixture, {"queue", "mail", "--rate", bad}, "--rate must be N/s, N/m or N/h");
  rejects(fixture, {"queue", "mail", "--rate=-1/s"}, "--rate must be N/s, N/m or N/h");
  rejects(fixture, {"queue", "mail", "--rate", "5/fortnight"}, "'fortnight' is not a unit of time");
  rejects(fixture, {"queue", "mail", "--rate", "5/s", "--burst", "0"}, "--burst must be");
  rejects(fixture, {"queue", "mail", "--burst", "10"}, "--burst needs --rate");
  rejects(fixture, {"queue", "mail", "--rate-per-key", "on"}, "--rate-per-key needs --rate");
  rejects(fixture, {"queue", "mail", "--rate", "none", "--burst", "3"}, "--rate none");
  rejects(fixture, {"queue", "mail", "--rate", "5/s", "--rate-per-key", "maybe"}, "--rate-per-key");
  // A bad rate beside a good setting writes neither.
  rejects(fixture, {"queue", "mail", "--max-processing", "3", "--rate", "0/s"}, "--rate");
  CHECK(ok_json(url, {"queue", "mail"})["rate"] == "5/s");
}

TEST_CASE("cli: rate: with a concurrency limit, a claim takes tokens only for the jobs it starts") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  // Three tokens and no refill to speak of; two slots.
  ok(url, {"queue", "both", "--rate", "1/h", "--burst", "3", "--max-processing", "2"});
  enqueue_many(url, "both", 10);
  json first = claim(url, "both", {"--limit", "5"});
  REQUIRE(first.size() == 2);  // the slots cut it, and it spent two tokens, not five
  for (const json& job : first)
    ok(url, {"ack", id_text(job), "--token", job["lock_token"].get<std::string>()});
  CHECK(claim(url, "both", {"--limit", "5"}).size() == 1);  // the one token left
  CHECK(claim(url, "both", {"--limit", "5"}).empty());
}

TEST_CASE("cli: rate: work --drain waits for each token and runs every job") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  ok(url, {"queue", "slow", "--rate", "5/s", "--burst", "1"});
  enqueue_many(url, "slow", 6);
  // Not out of jobs at the first empty claim: the rate holds them back, and --drain goes on
  // until every one has run.
  json summary = ok_json(url, {"work", "slow", "--drain", "--concurrency", "4", "--", "true"});
  CHECK(summary["done"] == 6);
  std::vector<Start> s = starts(url, "slow");
  REQUIRE(s.size() == 6);
  std::sort(s.begin(), s.end(), [](const Start& a, const Start& b) { return a.at_us < b.at_us; });
  // One token at first, then one every 200 ms: six starts take at least a second (less the
  // clock's rounding).
  CHECK(s.back().at_us - s.front().at_us >= 990000);
  for (std::size_t i = 1; i < s.size(); ++i) CHECK(s[i].at_us - s[i - 1].at_us >= 190000);
}

// PostgreSQL: a session takes tokens ahead only when it claims the queue again within 100 ms
// (migration 17). A `queuectl claim` is a session of its own, so each takes the one token its
// job needs, however plentiful the bucket: nothing is lost when the command ends. (Through a
// transaction pooler the commands share the pooler's server sessions, and a second command
// within 100 ms may take tokens ahead there for the next: skipped.)
TEST_CASE("cli: rate: each claim command takes one token, however full the bucket" *
          doctest::skip(!is_postgresql() || through_pooler())) {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  ok(url, {"queue", "fast", "--rate", "1000/s", "--burst", "1000"});
  enqueue_many(url, "fast", 3);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(claim(url, "fast").size() == 1);
    CHECK(scalar(fixture.db(), "SELECT rate_granted FROM queuectl_queues WHERE queue = 'fast'") ==
          1);
  }
}

// The lower bound of a race: a bucket that grants too little. When the workers were keen
// (the bucket near empty most of the run), they started at least 0.9 of what the bucket
// allows. When tokens lay unused in the bucket (its median level a quarter of the burst or
// more), the machine was too slow to start that many (on 2 cores with another suite
// spawning beside it, 8 workers started about 70 `true` a second), and only half is
// required: a bucket that stopped refilling would still give burst tokens and no more.
namespace {
void gave_what_it_allows(double claimed, double allowed, double median_tokens, int burst) {
  CHECK(claimed >= 0.5 * allowed);
  if (median_tokens < 0.25 * burst)
    CHECK(claimed >= 0.9 * allowed);
  else
    MESSAGE("the bucket held " << median_tokens << " tokens at its median: the workers, not "
                               << "the bucket, set the pace; checked at half of " << allowed);
}
}  // namespace

// Seconds a start may be stamped after the grant of its token: a bucket's refill is counted
// on the clock read by the claim's rate statement, and a start's time is stamped by the
// claim's UPDATE just after it, so on a loaded machine the first start can trail its grant
// by some milliseconds, which a window opened at that start would leave out.
constexpr double kGrantToStart = 0.05;

TEST_CASE("slow: rate race: 8 workers for 15 s against --rate 20/s --burst 10") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  ok(url, {"queue", "race", "--rate", "20/s", "--burst", "10"});
  enqueue_many(url, "race", 2000);
  const RaceStarts r = race_starts(fixture, "race", 15000);
  REQUIRE(!r.at_us.empty());
  const auto claimed = static_cast<double>(r.at_us.size());
  const double elapsed = static_cast<double>(r.stop_us - r.at_us.front()) / 1e6;
  const double allowed = 20 * (elapsed + kGrantToStart) + 10;
  INFO("claimed " << claimed << " in " << elapsed << " s; the bucket allows " << allowed
                  << "; median tokens in the bucket " << r.median_tokens);
  CHECK(elapsed >= 12);
  CHECK(claimed <= allowed + 1);  // + 1: times are rounded to the millisecond
  gave_what_it_allows(claimed, allowed, r.median_tokens, 10);
}

// A bucket large enough that workers take tokens ahead while it is more than half full
// (PostgreSQL, migration 17), drained by 8 workers: the starts stay within what the bucket
// gave out, burst + rate x time, and any one second within burst + rate x 1.1 s.
TEST_CASE("slow: rate race with tokens taken ahead: 8 workers against --rate 100/s --burst 50") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  ok(url, {"queue", "ahead", "--rate", "100/s", "--burst", "50"});
  enqueue_many(url, "ahead", 3000);
  const RaceStarts r = race_starts(fixture, "ahead", 12000);
  const std::vector<std::int64_t>& at = r.at_us;
  REQUIRE(!at.empty());
  const double elapsed = static_cast<double>(r.stop_us - at.front()) / 1e6;
  const double allowed = 100 * (elapsed + kGrantToStart) + 50;
  const auto claimed = static_cast<double>(at.size());
  std::size_t busiest = 0;
  for (std::size_t i = 0, j = 0; j < at.size(); ++j) {
    while (at[j] - at[i] >= 1000000) ++i;
    busiest = std::max(busiest, j - i + 1);
  }
  INFO("claimed " << claimed << " in " << elapsed << " s; the bucket allows " << allowed
                  << "; the busiest second " << busiest << "; median tokens in the bucket "
                  << r.median_tokens);
  CHECK(elapsed >= 9);
  CHECK(claimed <= allowed + 1);  // + 1: times are rounded to the millisecond
  gave_what_it_allows(claimed, allowed, r.median_tokens, 50);
  CHECK(busiest <= 50 + 110 + 1);
}

TEST_CASE("slow: rate race per key: one key with 90% of the backlog holds back no other key") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  Cleanup cleanup;
  TempDir dir;
  ok(url, {"queue", "keyed", "--rate", "2/s", "--burst", "2", "--rate-per-key", "on"});
  // Every key has more than its bucket can give in the run (2/s for 12 s and a burst of 2).
  std::map<std::string, int> backlog{{"big", 4500}};
  for (int k = 0; k < 10; ++k) backlog["k" + std::to_string(k)] = 50;
  enqueue_keyed(url, "keyed", backlog);
  std::vector<int> workers;
  for (int i = 0; i < 8; ++i)
    workers.push_back(
        cleanup.child(spawn_queuectl(url, {"work", "keyed", "--concurrency", "2", "--", "true"},
                                     dir.path() + "/w" + std::to_string(i) + ".log")));
  sleep_ms(12000);
  const std::int64_t stop_us = db_now_us(fixture);
  for (int pid : workers) kill(pid, SIGTERM);
  for (int pid : workers) CHECK(wait_child(cleanup, pid) == 0);
  std::vector<Start> s = starts(url, "keyed");
  std::map<std::string, std::vector<std::int64_t>> by_key;
  std::int64_t first = stop_us;
  for (const Start& x : s) {
    if (x.at_us > stop_us) continue;
    by_key[x.key].push_back(x.at_us);
    first = std::min(first, x.at_us);
  }
  const double elapsed = static_cast<double>(stop_us - first) / 1e6;
  CHECK(elapsed >= 9);
  REQUIRE(by_key.size() == 11);
  for (auto& entry : by_key) std::sort(entry.second.begin(), entry.second.end());
  // A key's rate is counted from its own first start: one that began a second after another
  // had a second less to run.
  auto span_of = [&](const std::vector<std::int64_t>& times) {
    return static_cast<double>(stop_us - times.front()) / 1e6;
  };
  const double busy = static_cast<double>(by_key["big"].size());
  const double busy_span = span_of(by_key["big"]);
  const double busy_rate = busy / busy_span;
  for (auto& [key, times] : by_key) {
    const double span = span_of(times);
    const double allowed = 2 * span + 2;
    const double n = static_cast<double>(times.size());
    INFO("key " << key << ": " << n << " starts in " << span << " s, allowed " << allowed
                << "; the busy key: " << busy << " in " << busy_span << " s");
    // No key faster than its own bucket allows, the busy one included.
    CHECK(n <= allowed + 1);
    // The others are not held back by the busy key: each starts soon after it, and at more
    // than half its rate, well past what one bucket for the queue could give each of the
    // eleven keys (a tenth of the rate). How near each comes to its own rate depends on the
    // machine's load: a key's next job waits for the claim, the command and the ack of the
    // one before. (The former check, by counts alone, n >= 0.75 * busy, failed once in CI
    // on PostgreSQL: a key with 25 starts in 19.1 s, against the busy key's 34.)
    CHECK(span >= 0.75 * busy_span);
    CHECK(n / span >= 0.5 * busy_rate);
    CHECK(n >= 0.3 * allowed);
  }
}

}  // namespace queuectl::testing::cli
