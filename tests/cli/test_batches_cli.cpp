// Batches through the real binary: `batch create/close/show`, `enqueue --batch`, the one
// callback with the members' counts (after the last member, or at the close), an empty
// batch, bad input; then the race of the issue: batches run by 4 workers with failures and
// SIGKILLs, each calling back exactly once, after its last member. Every backend.
#include <doctest/doctest.h>

#include <map>
#include <sstream>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {
namespace {

json batch_show(const std::string& url, const std::string& id) {
  return ok_json(url, {"batch", "show", id});
}

// The jobs of a queue, oldest first.
json jobs_of(const std::string& url, const std::string& queue) {
  return ok_json(url, {"list", queue, "--limit", "1000"});
}

}  // namespace

TEST_CASE("cli: batch: one callback with the counts once closed and every member finished") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  json b = ok_json(url, {"batch", "create", "--on-success", "done-cb", "{\"kind\":\"report\"}",
                         "--on-failure", "fail-cb", "{}"});
  const std::string id = id_text(b);
  CHECK(b["state"] == "open");
  CHECK(ok(url, {"batch", "create", "--on-success", "x", "{}"}).out ==
        std::to_string(b["id"].get<std::int64_t>() + 1) + "\n");
  std::vector<json> members;
  for (int i = 0; i < 3; ++i) members.push_back(enqueue(url, "work", "{}", {"--batch", id}));
  json shown = batch_show(url, id);
  CHECK(shown["total"] == 3);
  CHECK(shown["pending"] == 3);
  // All members done before the close: nothing yet, and the close calls back.
  ok(url, {"work", "work", "--drain", "-q", "--", "true"});
  CHECK(batch_show(url, id)["pending"] == 0);
  CHECK(jobs_of(url, "done-cb").empty());
  RunResult closed = ok(url, {"batch", "close", id});
  CHECK(contains(closed.out, "batch " + id + " closed: 3 job(s), 0 not finished; callback job"));
  json cb = jobs_of(url, "done-cb");
  REQUIRE(cb.size() == 1);
  CHECK(
      cb[0]["payload"] ==
      json{{"batch", {{"id", b["id"]}, {"total", 3}, {"done", 3}, {"failed", 0}, {"canceled", 0}}},
           {"kind", "report"}});
  shown = batch_show(url, id);
  CHECK(shown["state"] == "finished");
  CHECK(shown["callback_job_id"] == cb[0]["id"]);
  // Closing again changes nothing and calls back no more.
  ok(url, {"batch", "close", id});
  CHECK(jobs_of(url, "done-cb").size() == 1);
  CHECK(jobs_of(url, "fail-cb").empty());
  // A closed batch takes no more jobs: exit 2, nothing written.
  const std::string before = db_fingerprint(fixture);
  RunResult late = queuectl(url, {"enqueue", "work", "{}", "--batch", id});
  CHECK(late.exit_code == 2);
  CHECK(contains(late.err, "batch " + id + " is closed"));
  CHECK(db_fingerprint(fixture) == before);
}

TEST_CASE(
    "cli: batch: a failed or canceled member makes it the failure callback, at the last end") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const std::string id = id_text(ok_json(url, {"batch", "create", "--on-success", "ok-cb", "{}",
                                               "--on-failure", "bad-cb", "{\"alert\":true}"}));
  json a = enqueue(url, "m", "{}", {"--batch", id, "--max-attempts", "1"});
  json b = enqueue(url, "m2", "{}", {"--batch", id});
  json c = enqueue(url, "m3", "{}", {"--batch", id, "--after", id_text(a)});
  ok(url, {"batch", "close", id});
  CHECK(batch_show(url, id)["state"] == "closed");
  // a fails for good: c (waiting for a) is canceled with it; b is still to run.
  queuectl(url, {"work", "m", "--drain", "-q", "--", "false"});
  json shown = batch_show(url, id);
  CHECK(shown["failed"] == 1);
  CHECK(shown["canceled"] == 1);
  CHECK(shown["pending"] == 1);
  CHECK(jobs_of(url, "bad-cb").empty());
  ok(url, {"work", "m2", "--drain", "-q", "--", "true"});
  json cb = jobs_of(url, "bad-cb");
  REQUIRE(cb.size() == 1);
  CHECK(cb[0]["payload"]["batch"] ==
        json{{"id", std::stoll(id)}, {"total", 3}, {"done", 1}, {"failed", 1}, {"canceled", 1}});
  CHECK(cb[0]["payload"]["alert"] == true);
  CHECK(jobs_of(url, "ok-cb").empty());
  CHECK(ok_json(url, {"show", id_text(b)})["status"] == "done");
  CHECK(ok_json(url, {"show", id_text(c)})["status"] == "canceled");
}

TEST_CASE("cli: batch: an empty batch closed at once calls back once") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const std::string id = id_text(ok_json(url, {"batch", "create", "--on-success", "cb", "{}"}));
  ok(url, {"batch", "close", id});
  ok(url, {"batch", "close", id});
  json cb = jobs_of(url, "cb");
  REQUIRE(cb.size() == 1);
  CHECK(cb[0]["payload"]["batch"]["total"] == 0);
  // A member canceled by hand counts as canceled; with no --on-failure nothing is enqueued.
  const std::string id2 = id_text(ok_json(url, {"batch", "create", "--on-success", "cb", "{}"}));
  json m = enqueue(url, "q", "{}", {"--batch", id2});
  ok(url, {"cancel", id_text(m)});
  ok(url, {"batch", "close", id2});
  json shown = batch_show(url, id2);
  CHECK(shown["state"] == "finished");
  CHECK(shown["canceled"] == 1);
  CHECK(shown["callback_job_id"].is_null());
  CHECK(jobs_of(url, "cb").size() == 1);
}

TEST_CASE("cli: batch: bad input is exit 2 with one line, and writes nothing") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const std::string id = id_text(ok_json(url, {"batch", "create", "--on-success", "cb", "{}"}));
  const std::string before = db_fingerprint(fixture);
  const std::vector<std::vector<std::string>> cases = {
      {"batch", "create"},
      {"batch", "create", "--on-success", "cb"},
      {"batch", "create", "--on-success", "bad queue", "{}"},
      {"batch", "create", "--on-success", "cb", "[1]"},
      {"batch", "create", "--on-success", "cb", "{\"batch\":1}"},
      {"batch", "create", "--on-failure", "cb", "not json"},
      {"batch", "close", "abc"},
      {"batch", "show", "0"},
      {"enqueue", "q", "{}", "--batch", "999999"},
      {"enqueue", "q", "{}", "--batch", "x1"},
  };
  for (const auto& args : cases) {
    RunResult r = queuectl(url, args);
    INFO(dump(r));
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
  }
  CHECK(db_fingerprint(fixture) == before);
  RunResult missing = queuectl(url, {"batch", "close", "999999"});
  CHECK(missing.exit_code == 4);
  CHECK(queuectl(url, {"batch", "show", "999999"}).exit_code == 4);
  CHECK(ok_json(url, {"batch", "show", id})["total"] == 0);  // the refused jobs joined nothing
}

TEST_CASE("slow: batch race: each batch calls back exactly once, after its last member") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  Cleanup cleanup;
  TempDir dir;
  constexpr int kBatches = 20, kMembers = 40;
  std::vector<std::string> batch_ids;
  std::string lines;
  for (int b = 0; b < kBatches; ++b) {
    const std::string id = id_text(ok_json(url, {"batch", "create", "--on-success", "cb", "{}",
                                                 "--on-failure", "cb", "{\"failed\":true}"}));
    batch_ids.push_back(id);
    for (int m = 0; m < kMembers; ++m) {
      // One member in 25 fails for good; one in 10 fails its first attempt.
      const int k = b * kMembers + m;
      const std::string payload = k % 25 == 3   ? "{\"doom\":1}"
                                  : k % 10 == 4 ? "{\"flaky\":1}"
                                                : "{}";
      lines += "{\"queue\":\"members\",\"batch\":" + id + ",\"payload\":" + payload +
               (k % 25 == 3 ? ",\"max_attempts\":1" : "") + "}\n";
    }
  }
  ok(url, {"enqueue", "--from", "-"}, lines);
  // Half the batches are closed before the workers start, half while they run.
  for (int b = 0; b < kBatches / 2; ++b) ok(url, {"batch", "close", batch_ids[b]});
  const std::string script =
      "p=$(cat); case \"$p\" in *doom*) exit 1;; *flaky*) [ \"$QUEUECTL_ATTEMPT\" = 1 ] && exit 1;;"
      " esac; sleep 0.0$((QUEUECTL_JOB_ID % 5)); exit 0";
  int started = 0;
  auto start_worker = [&] {
    return cleanup.child(spawn_queuectl(url,
                                        {"work", "members", "--concurrency", "4", "--lease", "3s",
                                         "--poll-interval", "250ms", "--", "sh", "-c", script},
                                        dir.path() + "/w" + std::to_string(started++) + ".log"));
  };
  std::vector<int> workers;
  for (int i = 0; i < 4; ++i) workers.push_back(start_worker());
  for (int k = 0; k < 4; ++k) {
    sleep_ms(2500);
    if (k == 1)
      for (int b = kBatches / 2; b < kBatches; ++b) ok(url, {"batch", "close", batch_ids[b]});
    const std::size_t victim = static_cast<std::size_t>(k) % workers.size();
    kill(workers[victim], SIGKILL);
    wait_child(cleanup, workers[victim]);
    workers[victim] = start_worker();
  }
  auto finished = [&] {
    for (const std::string& id : batch_ids)
      if (batch_show(url, id)["state"] != "finished") return false;
    return true;
  };
  const bool all = wait_until(finished, 240000, 1000);
  for (int pid : workers) kill(pid, SIGTERM);
  for (int pid : workers) wait_child(cleanup, pid);
  REQUIRE(all);

  json callbacks = jobs_of(url, "cb");
  // Each batch exactly once, with counts that add up to its members.
  std::map<std::int64_t, int> per_batch;
  for (const json& cb : callbacks) ++per_batch[cb["payload"]["batch"]["id"].get<std::int64_t>()];
  CHECK(callbacks.size() == static_cast<std::size_t>(kBatches));
  std::map<std::int64_t, std::int64_t> finish_of;  // batch -> its finished_at
  for (const std::string& id : batch_ids) {
    const std::int64_t bid = std::stoll(id);
    CHECK(per_batch[bid] == 1);
    json shown = batch_show(url, id);
    CHECK(shown["total"] == kMembers);
    CHECK(shown["done"].get<int>() + shown["failed"].get<int>() + shown["canceled"].get<int>() ==
          kMembers);
    CHECK(shown["failed"].get<int>() >= 1);
    finish_of[bid] = epoch_us(shown["finished_at"]);
    json cb = ok_json(url, {"show", std::to_string(shown["callback_job_id"].get<std::int64_t>())});
    CHECK(cb["payload"]["batch"]["failed"] == shown["failed"]);
    // Made by the transaction that finished the batch. On PostgreSQL its created_at is that
    // transaction's start, so no later than the batch's finished_at (the finishing statement's
    // clock); elsewhere it is the time of its INSERT, which runs after the finishing UPDATE.
    if (is_postgresql())
      CHECK(epoch_us(cb["created_at"]) <= finish_of[bid]);
    else
      CHECK(epoch_us(cb["created_at"]) >= finish_of[bid] - 1000);
  }
  // Every member ended before its batch finished (and so before its callback was made).
  std::map<std::int64_t, std::int64_t> member_end;
  std::string after = "0";
  for (;;) {
    json page = ok_json(url, {"list", "members", "--limit", "1000", "--after", after});
    if (page.empty()) break;
    for (const json& j : page) {
      after = id_text(j);
      REQUIRE(j["finished_at"].is_string());
      member_end[j["id"].get<std::int64_t>()] = epoch_us(j["finished_at"]);
    }
  }
  REQUIRE(member_end.size() == static_cast<std::size_t>(kBatches * kMembers));
  const std::string rows =
      table_text(fixture, "queuectl_batch_jobs", {"job_id", "batch_id"}, "job_id");
  std::istringstream in(rows);
  std::string line;
  int late = 0, seen = 0;
  while (std::getline(in, line)) {
    const auto bar = line.find(" | ");
    const std::int64_t job = std::stoll(line.substr(0, bar));
    const std::int64_t batch = std::stoll(line.substr(bar + 3));
    ++seen;
    if (member_end[job] > finish_of[batch]) ++late;
  }
  CHECK(seen == kBatches * kMembers);
  CHECK(late == 0);
}

}  // namespace queuectl::testing::cli
