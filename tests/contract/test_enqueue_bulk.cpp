// enqueue_many at the sizes `enqueue --from` sends: several statements' worth of rows
// (PostgreSQL sends 5,000 rows a statement as array parameters, the others 500 as VALUES
// rows), values with every character an array literal or a statement treats specially,
// ids in the order of the input, and all or nothing across statements.
#include "contract/contract_helpers.hpp"

namespace queuectl::testing::contract {

namespace {

// Text that an array literal or a VALUES list must carry through unchanged.
const std::vector<std::string> kAwkward = {"NULL",       "null",        "a,b",       "{x}",
                                           "\"quoted\"", "back\\slash", "tab\there", " spaced ",
                                           "한국어",     "'single'",    "\\\"",      "}{,\"\\"};

}  // namespace

TEST_CASE("enqueue_many of 12,000 jobs keeps their order, their values and every character") {
  FreshDatabase fx;
  JobRepository repo(fx.db());

  std::vector<NewJob> batch;
  for (int i = 0; i < 12000; ++i) {
    const std::string& awkward = kAwkward[i % kAwkward.size()];
    nlohmann::json payload = {{"i", i}, {"text", awkward}};
    NewJob j = new_job(i % 2 ? "bulk" : "bulk2", payload.dump(), (i % 5) - 2);
    if (i % 3 == 0) j.group_key = awkward;
    if (i % 4 == 0) j.dedupe_key = awkward + std::to_string(i);
    if (i % 1000 == 7) j.run_at = "2031-02-03 04:05:06.789012";  // SQLite keeps milliseconds
    if (i % 1000 == 8) j.delay = Duration::seconds(600);
    j.max_attempts = 1 + i % 9;
    batch.push_back(j);
  }
  auto r = repo.enqueue_many(batch);
  CHECK_EQ(r.enqueued, 12000);
  CHECK_EQ(r.duplicates, 0);

  ListFilter all;
  all.limit = 20000;
  std::vector<Job> jobs = repo.list(all);
  REQUIRE_EQ(jobs.size(), 12000u);
  std::sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.id < b.id; });
  int wrong = 0;
  for (int i = 0; i < 12000; ++i) {
    const Job& j = jobs[static_cast<std::size_t>(i)];
    const NewJob& in = batch[static_cast<std::size_t>(i)];
    const nlohmann::json payload = nlohmann::json::parse(j.payload);
    const bool same = payload.at("i") == i && payload.at("text") == kAwkward[i % kAwkward.size()] &&
                      j.queue == in.queue && j.priority == in.priority &&
                      j.max_attempts == in.max_attempts && j.group_key == in.group_key &&
                      j.dedupe_key == in.dedupe_key &&
                      (i % 1000 != 7 || j.run_at.rfind("2031-02-03T04:05:06.789", 0) == 0);
    if (!same && ++wrong <= 3)
      MESSAGE("job " << j.id << " (input " << i << ") came back as " << j.payload << " in "
                     << j.queue << ", group " << j.group_key.value_or("-"));
  }
  CHECK_EQ(wrong, 0);
  auto st = repo.stats({"bulk", "bulk2"});
  REQUIRE_EQ(st.size(), 2u);
  CHECK_EQ(st[0].scheduled + st[1].scheduled, 24);  // 12 with a run_at, 12 with a delay
  // A second time: every job with a dedupe key is a duplicate, the rest go in again.
  auto again = repo.enqueue_many(batch);
  CHECK_EQ(again.duplicates, 3000);
  CHECK_EQ(again.enqueued, 9000);
}

TEST_CASE("enqueue_many of 12,000 jobs writes nothing when one in the last statement is bad") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  std::vector<NewJob> batch;
  for (int i = 0; i < 12000; ++i)
    batch.push_back(new_job("bulk", R"({"i":)" + std::to_string(i) + "}"));
  batch[11500].payload = "{not json";
  CHECK_THROWS_AS(repo.enqueue_many(batch), Error);
  CHECK_EQ(count_rows(fx.db()), 0);
  batch[11500].payload = "{}";
  CHECK_EQ(repo.enqueue_many(batch).enqueued, 12000);
}

}  // namespace queuectl::testing::contract
