// queuectl top's statements stay cheap however many done jobs the table keeps: with
// 100,000 done jobs (finished two hours ago) and a few live ones, EXPLAIN of each names the
// index that serves it and reads no done row of the past; and TopRepository::read counts
// right.
#include "contract/contract_helpers.hpp"
#include "db/top_repository.hpp"

#include <cctype>

namespace queuectl::testing::contract {
namespace {

std::string plan_of(Database& db, const std::string& sql, int limit = -1) {
  soci::row r;
  soci::statement st(db.session());
  st.exchange(soci::into(r));
  if (limit >= 0) st.exchange(soci::use(limit, "limit"));
  st.alloc();
  st.prepare((is_sqlite() ? "EXPLAIN QUERY PLAN " : "EXPLAIN ") + sql);
  st.define_and_bind();
  std::string text;
  for (bool got = st.execute(true); got; got = st.fetch()) {
    for (std::size_t i = 0; i < r.size(); ++i) {
      std::string value = "NULL";
      if (r.get_indicator(i) != soci::i_null) {
        switch (r.get_properties(i).get_data_type()) {
          case soci::dt_string:
            value = r.get<std::string>(i);
            break;
          case soci::dt_integer:
            value = std::to_string(r.get<int>(i));
            break;
          case soci::dt_long_long:
            value = std::to_string(r.get<long long>(i));
            break;
          case soci::dt_unsigned_long_long:
            value = std::to_string(r.get<unsigned long long>(i));
            break;
          case soci::dt_double:
            value = std::to_string(r.get<double>(i));
            break;
          default:
            value = "?";
        }
      }
      text += (i ? " | " : "") + value;
    }
    text += "\n";
  }
  return text;
}

// `index` may name two indexes, "a|b": either serves the statement.
// Whether the plan names the index: the whole name, so that job_queue_failed is not found
// in job_queue_failed_groups.
bool names_index(const std::string& plan, const std::string& index) {
  for (auto at = plan.find(index); at != std::string::npos; at = plan.find(index, at + 1)) {
    const std::size_t end = at + index.size();
    if (end == plan.size() ||
        !(std::isalnum(static_cast<unsigned char>(plan[end])) || plan[end] == '_'))
      return true;
  }
  return false;
}

void check_uses(const std::string& plan, const std::string& index) {
  const auto bar = index.find('|');
  const bool used = bar == std::string::npos ? names_index(plan, index)
                                             : names_index(plan, index.substr(0, bar)) ||
                                                   names_index(plan, index.substr(bar + 1));
  CHECK_MESSAGE(used, "not served by " << index << ":\n" << plan);
  if (is_postgresql()) CHECK_MESSAGE(plan.find("Seq Scan on job_queue") == std::string::npos, plan);
  if (is_sqlite()) CHECK_MESSAGE(plan.find("SCAN job_queue\n") == std::string::npos, plan);
  if (is_mysql()) CHECK_MESSAGE(plan.find("| ALL |") == std::string::npos, plan);
}

}  // namespace

TEST_CASE("top's statements use their indexes among 100,000 done jobs, and count right") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  const std::string two_hours_ago = is_postgresql() ? "now() - interval '2 hours'"
                                    : is_mysql()
                                        ? "NOW(6) - INTERVAL 2 HOUR"
                                        : "strftime('%Y-%m-%d %H:%M:%f', 'now', '-2 hours')";
  exec(fx.db(),
       "INSERT INTO job_queue (queue, status, attempts, payload, finished_at) "
       "SELECT 'q', 2, 1, '{}', " +
           two_hours_ago + " FROM " + hundred_thousand_rows());
  REQUIRE_EQ(count_rows(fx.db(), "status = 2"), 100000);
  for (int i = 0; i < 4; ++i) add(repo, "q");
  add(repo, "other");
  // Two done now, one failed now, one failed two hours ago; two processing.
  for (const Job& j : claim(repo, "q", 2)) repo.ack({j.id, *j.lock_token, std::nullopt});
  for (const Job& j : claim(repo, "other", 1)) {
    FailRequest r;
    r.id = j.id;
    r.token = *j.lock_token;
    r.error = "first line\nsecond";
    r.permanent = true;
    repo.fail(r);
  }
  exec(fx.db(),
       "INSERT INTO job_queue (queue, status, attempts, payload, last_error, "
       "finished_at) VALUES ('q', 3, 1, '{}', 'old failure', " +
           two_hours_ago + ")");
  for (int i = 0; i < 2; ++i) add(repo, "q");
  claim(repo, "q", 2, Duration::seconds(3600));
  if (is_postgresql()) exec(fx.db(), "VACUUM ANALYZE job_queue");
  if (is_sqlite()) exec(fx.db(), "ANALYZE");
  if (is_mysql()) query_text(fx.db(), "ANALYZE TABLE job_queue");

  const Statements& q = fx.db().sql();
  const std::string failed_index = is_mysql() ? "ix_job_queue_finished" : "job_queue_failed";
  // Processing rows only: by lease expiry, or by queue (the concurrency limit's index).
  const std::string leases_index =
      is_mysql() ? "ix_job_queue_lease" : "job_queue_leases|job_queue_processing_groups";
  {
    INFO("top_failed");
    check_uses(plan_of(fx.db(), q.top.failed), failed_index);
  }
  {
    INFO("top_done_recently");
    check_uses(plan_of(fx.db(), q.top.done_recently),
               is_mysql() ? "ix_job_queue_finished" : "job_queue_finished");
  }
  {
    INFO("top_failures");
    check_uses(plan_of(fx.db(), q.top.failures, 5), failed_index);
  }
  {
    INFO("top_workers");
    check_uses(plan_of(fx.db(), q.top.workers, 5), leases_index);
  }
  {
    INFO("top_progress");
    check_uses(plan_of(fx.db(), q.top.progress, 5), leases_index);
  }

  TopSnapshot snap = TopRepository(fx.db()).read(5, 5);
  REQUIRE(snap.queues.size() == 2);
  const TopQueue& other = snap.queues[0];
  const TopQueue& main = snap.queues[1];
  CHECK(other.queue == "other");
  CHECK(other.failed == 1);
  CHECK(main.queue == "q");
  CHECK(main.ready == 2);
  CHECK(main.processing == 2);
  CHECK(main.failed == 1);
  CHECK(main.done_last_minute == 2);
  REQUIRE(snap.failures.size() == 2);
  CHECK(snap.failures[0].queue == "other");  // newest first
  CHECK(snap.failures[0].error == "first line\nsecond");
  CHECK(snap.failures[1].error == "old failure");
  REQUIRE(snap.workers.size() == 1);
  CHECK(snap.workers[0].leases == 2);
}

}  // namespace queuectl::testing::contract
