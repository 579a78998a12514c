// Operating a queue through the real binary: retry, cancel, purge, pause and resume,
// leases and list paging. Runs unchanged on every backend.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {

namespace {

// A new job of `queue` brought to `status` (done, failed or canceled) through the CLI.
json finished(const std::string& url, const std::string& queue, const std::string& status) {
  json job = enqueue(url, queue, "{}", {"--priority", "1000"});
  if (status == "canceled") {
    ok(url, {"cancel", id_text(job)});
  } else {
    json c = claim_one(url, queue);
    REQUIRE(c["id"] == job["id"]);
    const std::string token = c["lock_token"];
    if (status == "done")
      ok(url, {"ack", id_text(job), "--token", token});
    else
      ok(url, {"fail", id_text(job), "--token", token, "--permanent", "--error", "boom"});
  }
  json shown = show(url, id_of(job));
  REQUIRE(shown["status"] == status);
  return shown;
}

// `-o json ARGS` with a deadline, for purges in small batches: one that loops forever
// fails the test after `timeout_ms` instead of hanging the whole run.
json bounded_json(const std::string& url, std::vector<std::string> args, int timeout_ms = 30000) {
  args.insert(args.begin(), {"-o", "json"});
  TempDir dir;
  const std::string out = dir.path() + "/out", err = dir.path() + "/err";
  RunResult r;
  r.exit_code = wait_exit(spawn_queuectl_split(url, args, out, err), timeout_ms);
  r.out = read_text(out);
  r.err = read_text(err);
  INFO(dump(r));
  REQUIRE_MESSAGE(r.exit_code != -1, "still running after " << timeout_ms << "ms: killed");
  REQUIRE(r.exit_code == 0);
  return parse(r.out);
}

}  // namespace

TEST_CASE("cli: retry by ids puts failed and canceled jobs back to ready, reports the rest") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  json failed = finished(url, "q", "failed");
  // Canceled while it was not due for an hour: retry makes it due now.
  json later = enqueue(url, "q", "{}", {"--delay", "1h"});
  ok(url, {"cancel", id_text(later)});
  json ready = enqueue(url, "q");
  json done = finished(url, "q", "done");
  json canceled = finished(url, "q", "canceled");
  enqueue(url, "other");
  json held = claim_one(url, "other");

  // Not retryable: ready, done, processing; and an unknown id. Nothing changes.
  RunResult r = refused(
      fixture, {"-o", "json", "retry", id_text(ready), id_text(done), id_text(held), "999999"}, 1,
      "only failed or canceled");
  CHECK(r.err.find("no such job: 999999") != std::string::npos);  // every id on the one line
  json report = parse(r.out);
  CHECK(report["retried"] == 0);
  CHECK(report["retried_ids"] == json::array());
  CHECK(report["not_found"] == 1);
  CHECK(report["not_found_ids"] == json::array({999999}));
  CHECK(report["other_state"] == 3);
  json skipped = json::array({{{"id", ready["id"]}, {"status", "ready"}},
                              {{"id", done["id"]}, {"status", "done"}},
                              {{"id", held["id"]}, {"status", "processing"}}});
  std::sort(skipped.begin(), skipped.end());
  json got_skipped = report["other_state_jobs"];
  std::sort(got_skipped.begin(), got_skipped.end());
  CHECK(got_skipped == skipped);
  refused(fixture, {"retry", "999999"}, 4, "999999");

  json retried = ok_json(url, {"retry", id_text(failed), id_text(later)});
  CHECK(id_set(retried["retried_ids"]) == id_set(json::array({failed["id"], later["id"]})));
  CHECK(retried["retried"] == 2);
  CHECK(retried["other_state_jobs"] == json::array());
  for (const json& before : {failed, later}) {
    json after = show(url, id_of(before));
    INFO(after.dump());
    CHECK(after["status"] == "ready");
    CHECK(after["attempts"] == 0);
    CHECK(after["finished_at"].is_null());
    CHECK(after["lock_token"].is_null());
    CHECK(epoch_us(after["run_at"]) >= epoch_us(before["updated_at"]));
    CHECK(epoch_us(after["run_at"]) <= epoch_us(after["updated_at"]));
  }
  // All three are due now: one claim takes them.
  std::vector<std::int64_t> due = ids_in(claim(url, "q", {"--limit", "10"}));
  CHECK(std::set<std::int64_t>(due.begin(), due.end()) ==
        std::set<std::int64_t>{id_of(failed), id_of(later), id_of(ready)});
  CHECK(show(url, id_of(done))["status"] == "done");
  CHECK(show(url, id_of(canceled))["status"] == "canceled");

  // A mix: the retryable one is retried, the other reported, exit 1.
  RunResult mixed = queuectl(url, {"retry", id_text(canceled), id_text(done)});
  INFO(dump(mixed));
  CHECK(mixed.exit_code == 1);
  CHECK(contains(mixed.out, "retried 1 job(s): " + id_text(canceled)));
  CHECK(contains(mixed.err, id_text(done) + " (done)"));
  CHECK(show(url, id_of(canceled))["status"] == "ready");
  CHECK(show(url, id_of(done))["status"] == "done");
}

TEST_CASE("cli: retry QUEUE --status failed retries that queue's failed jobs, --older-than") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  json old_failed = finished(url, "mail", "failed");
  age_job(fixture, old_failed, "finished_at");
  json new_failed = finished(url, "mail", "failed");
  json canceled = finished(url, "mail", "canceled");
  json done = finished(url, "mail", "done");
  json other = finished(url, "other", "failed");
  age_job(fixture, other, "finished_at");

  json r = ok_json(url, {"retry", "--queue", "mail", "--status", "failed", "--older-than", "1h"});
  CHECK(r["retried_ids"] == json::array({old_failed["id"]}));
  CHECK(status_of(url, id_of(old_failed)) == "ready");
  CHECK(status_of(url, id_of(new_failed)) == "failed");

  r = ok_json(url, {"retry", "--queue", "mail", "--status", "failed"});
  CHECK(r["retried_ids"] == json::array({new_failed["id"]}));
  CHECK(show(url, id_of(new_failed))["attempts"] == 0);
  // Other statuses and other queues are untouched.
  CHECK(status_of(url, id_of(canceled)) == "canceled");
  CHECK(status_of(url, id_of(done)) == "done");
  CHECK(status_of(url, id_of(other)) == "failed");

  // Nothing left to retry is not an error.
  r = ok_json(url, {"retry", "--queue", "mail", "--status", "failed"});
  CHECK(r["retried"] == 0);
  r = ok_json(url, {"retry", "--queue", "mail", "--status", "canceled"});
  CHECK(r["retried_ids"] == json::array({canceled["id"]}));
  CHECK(status_of(url, id_of(other)) == "failed");
}

TEST_CASE("cli: cancel ready jobs; --force cancels a processing one and its holder is locked out") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  json ready = enqueue(url, "q");
  enqueue(url, "busy");
  json held = claim_one(url, "busy", {"--worker", "w-1"});
  const std::string id = id_text(held), token = held["lock_token"];
  json done = finished(url, "q", "done");

  json r = ok_json(url, {"cancel", id_text(ready)});
  CHECK(r["canceled"] == 1);
  CHECK(r["canceled_ids"] == json::array({ready["id"]}));
  json canceled = show(url, id_of(ready));
  CHECK(canceled["status"] == "canceled");
  CHECK(is_rfc3339_us(canceled["finished_at"]));
  CHECK(claim(url, "q") == json::array());

  // Without --force a processing job is refused and untouched; so is a done one.
  RunResult no_force = refused(fixture, {"cancel", id}, 1, "--force");
  CHECK(contains(no_force.err, id + " (processing)"));
  refused(fixture, {"cancel", id_text(done), "--force"}, 1, id_text(done) + " (done)");
  refused(fixture, {"cancel", "999999"}, 4, "999999");

  r = ok_json(url, {"cancel", "--force", id});
  CHECK(r["canceled_ids"] == json::array({held["id"]}));
  json after = show(url, held["id"]);
  CHECK(after["status"] == "canceled");
  CHECK(after["lock_token"].is_null());

  // The holder's token no longer counts: exit 3 and nothing written.
  refused(fixture, {"ack", id, "--token", token}, 3, "lease lost");
  refused(fixture, {"fail", id, "--token", token, "--error", "late"}, 3, "lease lost");
  refused(fixture, {"extend", id, "--token", token, "--lease", "1m"}, 3, "lease lost");
  refused(fixture, {"release", id, "--token", token}, 3, "lease lost");
  CHECK(show(url, held["id"]) == after);
}

TEST_CASE("cli: list and cancel by group key, error text and id range") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  auto ids = [](const json& jobs) {
    std::vector<std::int64_t> out;
    for (const json& j : jobs) out.push_back(j["id"].get<std::int64_t>());
    return out;
  };
  using V = std::vector<std::int64_t>;
  // Failed jobs first (they are claimed before the others are enqueued).
  std::vector<std::int64_t> failed;
  for (const char* error : {"SMTP 552: mailbox full", "timed out", "SMTP 552: Mailbox full"}) {
    json job = enqueue(url, "q", "{}", {"--group-key", "acct-2"});
    json c = claim_one(url, "q");
    REQUIRE(c["id"] == job["id"]);
    ok(url, {"fail", id_text(job), "--token", c["lock_token"], "--permanent", "--error", error});
    failed.push_back(id_of(job));
  }
  std::vector<std::int64_t> acct1, acct2;
  for (int i = 0; i < 5; ++i)
    acct1.push_back(id_of(enqueue(url, "q", "{}", {"--group-key", "acct-1"})));
  for (int i = 0; i < 2; ++i)
    acct2.push_back(id_of(enqueue(url, "q", "{}", {"--group-key", "acct-2"})));
  json held = claim_one(url, "q");  // acct-1's head: processing
  REQUIRE(id_of(held) == acct1[0]);
  const std::int64_t other = id_of(enqueue(url, "other", "{}", {"--group-key", "acct-1"}));
  // Waiting for a ready job (enqueue --after): `ready` in list leaves it out, and so does
  // --status ready in cancel; cancel's default takes it.
  const std::int64_t waiting = id_of(
      enqueue(url, "q", "{}", {"--group-key", "acct-1", "--after", std::to_string(acct2[0])}));

  CHECK(ids(ok_json(url, {"list", "q", "--status", "failed", "--error", "mailbox full"})) ==
        V{failed[0]});
  CHECK(ids(ok_json(url, {"list", "q", "--error", "552"})) == V{failed[0], failed[2]});
  CHECK(ids(ok_json(url, {"list", "--group-key", "acct-1", "--status", "ready"})) ==
        V{acct1[1], acct1[2], acct1[3], acct1[4], other});
  CHECK(ids(ok_json(url, {"list", "q", "--after", std::to_string(acct1[1]), "--before",
                          std::to_string(acct1[4])})) == V{acct1[2], acct1[3]});
  CHECK(ids(ok_json(url, {"list", "q", "--newest-first", "--after", std::to_string(acct1[1]),
                          "--before", std::to_string(acct1[4])})) == V{acct1[3], acct1[2]});
  rejects(fixture, {"list", "--after", "9", "--before", "5"}, "--before");
  rejects(fixture, {"list", "--error="}, "--error");
  rejects(fixture, {"list", "--group-key", std::string(300, 'k')}, "--group-key");

  // Bad filters: exit 2 and nothing written.
  rejects(fixture, {"cancel", "--queue", "q", "--status", "processing"}, "--force");
  rejects(fixture, {"cancel", "--queue", "q", "--status", "done"}, "done");
  rejects(fixture, {"cancel", id_text(held), "--queue", "q"}, "not both");
  rejects(fixture, {"cancel", id_text(held), "--error", "x"}, "--queue");
  rejects(fixture, {"cancel", "--queue", "q", "--error="}, "--error");
  rejects(fixture, {"cancel", "--queue", "q", "--batch", "0"}, "--batch");
  rejects(fixture, {"cancel", "--queue", "q", "--batch", "10001"}, "--batch");
  rejects(fixture, {"cancel"}, "--queue");

  // The failed jobs whose error says so, and only those.
  json r =
      ok_json(url, {"cancel", "--queue", "q", "--status", "failed", "--error", "mailbox full"});
  CHECK(r["canceled_ids"] == json::array({failed[0]}));
  CHECK(r["other_state"] == 0);
  CHECK(show(url, failed[1])["status"] == "failed");
  CHECK(show(url, failed[2])["status"] == "failed");
  // A group's ready (and failed) jobs, two a transaction; its processing head stays, and
  // so does the same key in another queue.
  r = ok_json(url, {"cancel", "--queue", "q", "--group-key", "acct-1", "--batch", "2"});
  CHECK(r["canceled_ids"].get<V>() == V{acct1[1], acct1[2], acct1[3], acct1[4], waiting});
  CHECK(show(url, acct1[0])["status"] == "processing");
  CHECK(show(url, other)["status"] == "ready");
  for (std::int64_t id : acct2) CHECK(show(url, id)["status"] == "ready");
  // Nothing left to match: exit 0, none canceled.
  r = ok_json(url, {"cancel", "--queue", "q", "--group-key", "acct-1"});
  CHECK(r["canceled"] == 0);
  // Processing ones with --force; the holder is locked out.
  RunResult text = ok(url, {"cancel", "--queue", "q", "--group-key", "acct-1", "--status",
                            "processing", "--force"});
  CHECK(contains(text.out, "canceled 1 job(s): " + id_text(held)));
  refused(fixture, {"ack", id_text(held), "--token", held["lock_token"]}, 3, "lease lost");
}

TEST_CASE("cli: retry --queue by error text and group key") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  std::vector<std::int64_t> ids;
  const std::vector<std::pair<std::string, std::string>> jobs = {
      {"SMTP 421: try later", "a"}, {"SMTP 550: no such user", "a"}, {"SMTP 421: busy", "b"}};
  for (const auto& [error, key] : jobs) {
    json job = enqueue(url, "mail", "{}", {"--group-key", key});
    json c = claim_one(url, "mail");
    REQUIRE(c["id"] == job["id"]);
    ok(url, {"fail", id_text(job), "--token", c["lock_token"], "--permanent", "--error", error});
    ids.push_back(id_of(job));
  }
  rejects(fixture, {"retry", "--queue", "mail", "--error", "421", "--older-than", "1h"},
          "--older-than");
  rejects(fixture, {"retry", std::to_string(ids[0]), "--error", "421"}, "--queue");
  rejects(fixture, {"retry", "--queue", "mail", "--group-key="}, "--group-key");
  json r = ok_json(url, {"retry", "--queue", "mail", "--error", "SMTP 421", "--group-key", "a"});
  CHECK(r["retried_ids"] == json::array({ids[0]}));
  r = ok_json(url, {"retry", "--queue", "mail", "--error", "SMTP 421"});
  CHECK(r["retried_ids"] == json::array({ids[2]}));
  CHECK(show(url, ids[1])["status"] == "failed");
  for (std::int64_t id : {ids[0], ids[2]}) CHECK(show(url, id)["status"] == "ready");
}

TEST_CASE("cli: purge deletes only finished jobs older than the cutoff") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  json old_done = finished(url, "a", "done"), old_failed = finished(url, "a", "failed"),
       old_canceled = finished(url, "a", "canceled"), other_done = finished(url, "b", "done");
  for (const json* j : {&old_done, &old_failed, &old_canceled, &other_done})
    age_job(fixture, *j, "finished_at");
  json new_done = finished(url, "a", "done");
  // Old, but not finished: never purged.
  json processing = enqueue(url, "a"), ready = enqueue(url, "a");
  REQUIRE(claim_one(url, "a")["id"] == processing["id"]);
  for (const json* j : {&ready, &processing}) {
    age_job(fixture, *j, "created_at");
    age_job(fixture, *j, "updated_at");
  }
  const std::vector<std::int64_t> unfinished = queue_ids(fixture, "a", "0,1");
  REQUIRE(unfinished.size() == 2);

  const std::string before = db_fingerprint(fixture);
  json dry = ok_json(url, {"purge", "--older-than", "1h", "--dry-run"});
  CHECK(dry == json{{"dry_run", true}, {"would_purge", 4}});
  CHECK(db_fingerprint(fixture) == before);

  json r = ok_json(url, {"purge", "a", "--older-than", "1h", "--status", "failed,canceled"});
  CHECK(r == json{{"dry_run", false}, {"purged", 2}});
  CHECK(queue_ids(fixture, "a", "3,4").empty());
  CHECK(status_of(url, id_of(old_done)) == "done");

  r = ok_json(url, {"purge", "a", "--older-than", "1h"});
  CHECK(r["purged"] == 1);
  CHECK(queue_ids(fixture, "a", "2") == std::vector<std::int64_t>{id_of(new_done)});
  CHECK(queue_ids(fixture, "b") == std::vector<std::int64_t>{id_of(other_done)});

  r = ok_json(url, {"purge", "--older-than", "1h"});
  CHECK(r["purged"] == 1);
  CHECK(queue_ids(fixture, "b").empty());

  // A zero cutoff takes every finished job, and still never a ready or processing one.
  r = ok_json(url, {"purge", "--older-than", "0s"});
  CHECK(r["purged"] == 1);
  CHECK(queue_ids(fixture, "a") == unfinished);
  CHECK(status_of(url, id_of(ready)) == "ready");
  CHECK(status_of(url, id_of(processing)) == "processing");
  RunResult table = ok(url, {"purge", "--older-than", "0s"});
  CHECK(table.out == "purged 0 job(s)\n");
}

TEST_CASE("cli: purge in small batches deletes every row; a purged dedupe key is free again") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  std::string lines;
  for (int i = 0; i < 7; ++i)
    lines += "{\"queue\":\"bulk\",\"dedupe_key\":\"k" + std::to_string(i) + "\"}\n";
  REQUIRE(ok_json(url, {"enqueue", "--from", "-"}, lines)["enqueued"] == 7);
  // Three done, four canceled.
  json claimed = claim(url, "bulk", {"--limit", "3"});
  REQUIRE(claimed.size() == 3);
  std::string acks;
  for (const json& j : claimed)
    acks += json{{"id", j["id"]}, {"token", j["lock_token"]}}.dump() + "\n";
  ok(url, {"ack", "--from", "-"}, acks);
  std::vector<std::string> cancel = {"cancel"};
  for (auto id : queue_ids(fixture, "bulk", "0")) cancel.push_back(std::to_string(id));
  REQUIRE(cancel.size() == 5);
  ok(url, cancel);
  enqueue(url, "bulk", "{}", {"--dedupe-key", "live"});
  REQUIRE(job_rows(fixture) == 8);

  // While the job exists, its key is taken.
  CHECK(enqueue(url, "bulk", "{}", {"--dedupe-key", "k0"})["deduplicated"] == true);

  // Each batch size counts, then deletes, all 7 finished rows (1 is the edge case: a batch
  // of one row per transaction).
  for (std::string batch : {"1", "2", "3"}) {
    SUBCASE(("--batch " + batch).c_str()) {
      CHECK(bounded_json(url, {"purge", "--older-than", "0s", "--batch", batch, "--dry-run"}) ==
            json{{"dry_run", true}, {"would_purge", 7}});
      REQUIRE(job_rows(fixture) == 8);
      CHECK(bounded_json(url, {"purge", "bulk", "--older-than", "0s", "--batch", batch}) ==
            json{{"dry_run", false}, {"purged", 7}});
    }
  }
  CHECK(job_rows(fixture) == 1);
  json again = enqueue(url, "bulk", "{}", {"--dedupe-key", "k0"});
  CHECK(again["deduplicated"] == false);
  CHECK(again["status"] == "ready");
  CHECK(enqueue(url, "bulk", "{}", {"--dedupe-key", "live"})["deduplicated"] == true);
}

TEST_CASE("cli: a paused queue hands out nothing until resumed; other queues go on") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  const std::string ran = dir.path() + "/ran";
  const std::vector<std::string> worker = {
      "work", "p", "--drain", "--", "sh", "-c", "cat >/dev/null; echo x >> '" + ran + "'"};
  enqueue(url, "p");
  enqueue(url, "other");

  CHECK(ok_json(url, {"pause", "p"}) == json{{"queue", "p"}, {"paused", true}, {"changed", true}});
  enqueue(url, "p");  // enqueue still works
  CHECK(claim(url, "p") == json::array());
  json drained = ok_json(url, worker);
  CHECK(drained["done"] == 0);
  CHECK_FALSE(file_exists(ran));
  CHECK(queue_ids(fixture, "p", "0").size() == 2);
  CHECK(claim(url, "other").size() == 1);

  json stats = ok_json(url, {"stats"});
  INFO(stats.dump());
  REQUIRE(stats.size() == 2);
  for (const json& s : stats) CHECK(s["paused"] == (s["queue"] == "p"));
  CHECK(ok_json(url, {"stats", "p"})[0]["ready"] == 2);
  std::string prom = ok(url, {"-o", "prometheus", "stats"}).out;
  CHECK(contains(prom, "queuectl_queue_paused{queue=\"p\"} 1\n"));
  CHECK(contains(prom, "queuectl_queue_paused{queue=\"other\"} 0\n"));
  std::string table = ok(url, {"stats"}).out;
  INFO(table);
  CHECK(contains(table, "FLAGS"));
  std::istringstream rows(table);
  std::map<std::string, bool> paused_in_table;
  for (std::string line; std::getline(rows, line);) {
    std::istringstream words(line);
    std::string queue;
    words >> queue;
    if (queue == "p" || queue == "other") paused_in_table[queue] = contains(line, " paused");
  }
  CHECK(paused_in_table == std::map<std::string, bool>{{"p", true}, {"other", false}});

  CHECK(ok_json(url, {"resume", "p"}) ==
        json{{"queue", "p"}, {"paused", false}, {"changed", true}});
  CHECK(ok_json(url, {"stats", "p"})[0]["paused"] == false);
  CHECK(contains(ok(url, {"-o", "prometheus", "stats"}).out,
                 "queuectl_queue_paused{queue=\"p\"} 0\n"));
  CHECK(claim(url, "p").size() == 1);
  drained = ok_json(url, worker);
  CHECK(drained["done"] == 1);
  CHECK(read_lines(ran).size() == 1);
  CHECK(queue_ids(fixture, "p", "0").empty());

  // Resuming a queue that is not paused is harmless and says so.
  RunResult again = ok(url, {"resume", "p"});
  CHECK(contains(again.err, "not paused"));
}

TEST_CASE("cli: leases lists processing jobs with filters, seconds left and a worker summary") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  for (const char* q : {"q1", "q1", "q2", "q2"}) enqueue(url, q);
  enqueue(url, "q1");  // stays ready: never a lease
  json expiring = claim_one(url, "q1", {"--worker", "w-old", "--lease", "1s"});
  json aged = claim_one(url, "q1", {"--worker", "w-young", "--lease", "1h"});
  json long_lease = claim_one(url, "q2", {"--worker", "w-young", "--lease", "1h"});
  json short_lease = claim_one(url, "q2", {"--worker", "w-mid", "--lease", "2m"});
  age_job(fixture, aged, "locked_at");
  json expired = wait_expired(url);
  CHECK(ids_in(expired) == std::vector<std::int64_t>{id_of(expiring)});
  CHECK(expired[0]["seconds_left"].get<double>() < 0);
  CHECK(expired[0]["expired"] == true);

  auto leases = [&](std::vector<std::string> args) {
    args.insert(args.begin(), "leases");
    return ids_in(ok_json(url, args));
  };
  using Ids = std::vector<std::int64_t>;
  // Ordered by lease expiry.
  CHECK(leases({}) == Ids{id_of(expiring), id_of(short_lease), id_of(aged), id_of(long_lease)});
  CHECK(leases({"--expiring-within", "10m"}) == Ids{id_of(expiring), id_of(short_lease)});
  CHECK(leases({"--older-than", "1h"}) == Ids{id_of(aged)});
  CHECK(leases({"--worker", "w-young"}) == Ids{id_of(aged), id_of(long_lease)});
  CHECK(leases({"q2"}) == Ids{id_of(short_lease), id_of(long_lease)});
  CHECK(leases({"q1", "--worker", "w-young"}) == Ids{id_of(aged)});
  CHECK(leases({"q2", "--expired"}).empty());
  CHECK(leases({"--worker", "nobody"}).empty());

  json all = ok_json(url, {"leases"});
  for (const json& l : all) {
    INFO(l.dump());
    CHECK(l["status"] == "processing");
    CHECK(is_uuid(l["lock_token"]));
    CHECK(l["expired"] == (l["seconds_left"].get<double>() < 0));
    CHECK(l.contains("payload"));
    CHECK(l.contains("locked_by"));
  }
  double left = all[3]["seconds_left"];
  CHECK(left > 3000);
  CHECK(left <= 3600);
  // ndjson: the same objects, one a line.
  std::vector<json> lines = parse_lines(ok(url, {"-o", "ndjson", "leases"}).out);
  REQUIRE(lines.size() == 4);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    CHECK(lines[i]["id"] == all[i]["id"]);
    CHECK(lines[i]["lock_token"] == all[i]["lock_token"]);
    CHECK(lines[i].size() == all[i].size());
  }

  // Table: one row per lease, then a summary per worker (leases, expired).
  std::string table = ok(url, {"leases"}).out;
  INFO(table);
  CHECK(std::regex_search(table, std::regex(R"(\sexpired \S+ ago\s)")));
  std::smatch header;
  REQUIRE(std::regex_search(table, header, std::regex("\nWORKER +LEASES +EXPIRED")));
  std::istringstream rows(table.substr(static_cast<std::size_t>(header.position(0))));
  std::map<std::string, std::string> per_worker;
  for (std::string line; std::getline(rows, line);) {
    std::istringstream words(line);
    std::string worker, held, expired_count;
    words >> worker >> held >> expired_count;
    if (!worker.empty()) per_worker[worker] = held + "/" + expired_count;
  }
  CHECK(per_worker ==
        std::map<std::string, std::string>{
            {"WORKER", "LEASES/EXPIRED"}, {"w-old", "1/1"}, {"w-mid", "1/0"}, {"w-young", "2/0"}});
}

TEST_CASE("cli: list --after walks a queue page by page; --status takes a list") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  std::string lines;
  for (int i = 0; i < 14; ++i)
    lines += std::string("{\"queue\":\"") + (i % 3 == 1 ? "noise" : "pages") + "\"}\n";
  ok(url, {"enqueue", "--from", "-"}, lines);
  const std::vector<std::int64_t> expected = queue_ids(fixture, "pages");
  REQUIRE(expected.size() == 9);

  for (const char* format : {"json", "ndjson"}) {
    CAPTURE(format);
    std::vector<std::int64_t> seen;
    std::vector<std::string> args = {"-o", format, "list", "pages", "--limit", "4"};
    for (int page = 0; page < 20; ++page) {
      RunResult r = ok(url, args);
      std::vector<json> jobs = std::string(format) == "json" ? parse(r.out).get<std::vector<json>>()
                                                             : parse_lines(r.out);
      if (jobs.empty()) break;
      CHECK(jobs.size() <= 4);
      for (const json& j : jobs) {
        CHECK(j["queue"] == "pages");
        seen.push_back(id_of(j));
      }
      // A full page says where the next one starts.
      if (jobs.size() == 4) CHECK(contains(r.err, "--after " + id_text(jobs.back())));
      args.resize(6);
      args.insert(args.end(), {"--after", id_text(jobs.back())});
    }
    CHECK(seen == expected);
  }

  // Statuses: two canceled, two processing, one failed.
  ok(url, {"cancel", std::to_string(expected[1]), std::to_string(expected[4])});
  json held = claim(url, "pages", {"--limit", "2"});
  REQUIRE(held.size() == 2);
  ok(url, {"fail", id_text(held[0]), "--token", held[0]["lock_token"].get<std::string>(),
           "--permanent"});
  auto listed = [&](const std::string& statuses, const std::string& limit = "100") {
    return ids_in(ok_json(url, {"list", "pages", "--status", statuses, "--limit", limit}));
  };
  CHECK(listed("canceled") == std::vector<std::int64_t>{expected[1], expected[4]});
  CHECK(listed("processing") == std::vector<std::int64_t>{id_of(held[1])});
  CHECK(listed("failed,canceled") == queue_ids(fixture, "pages", "3,4"));
  CHECK(listed("ready,processing") == queue_ids(fixture, "pages", "0,1"));
  CHECK(listed("ready,processing,done,failed,canceled") == expected);
  std::vector<std::int64_t> first_two = queue_ids(fixture, "pages", "0,4");
  first_two.resize(2);
  CHECK(listed("ready,canceled", "2") == first_two);
  // Without a queue, every queue's jobs of that status.
  CHECK(ids_in(ok_json(url, {"list", "--status", "ready"})).size() ==
        queue_ids(fixture, "pages", "0").size() + queue_ids(fixture, "noise", "0").size());
}

}  // namespace queuectl::testing::cli
