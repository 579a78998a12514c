// A parent purged while jobs still wait for it: `--on-parent-failure wait` keeps a job
// waiting for a failed parent's retry, which a purge makes impossible. The purge cancels
// such jobs (and passes the cancel down), and leaves alone the jobs whose purged parents
// were done. Every backend, through the real binary.
#include <doctest/doctest.h>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {
namespace {

std::string status_of(const std::string& url, const json& job) {
  return ok_json(url, {"show", id_text(job)})["status"].get<std::string>();
}

// Claims the one due job of `job`'s queue, which must be `job`, and returns its token.
std::string claim_token(const std::string& url, const json& job) {
  json got = claim(url, job["queue"].get<std::string>());
  REQUIRE(got.size() == 1);
  REQUIRE(got[0]["id"] == job["id"]);
  return got[0]["lock_token"].get<std::string>();
}

}  // namespace

TEST_CASE("cli: after: purging a failed parent cancels the jobs still waiting for it") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  json failed = enqueue(url, "p1", "{}", {"--max-attempts", "1"});
  json done = enqueue(url, "p2", "{}");
  json pending = enqueue(url, "p3", "{}");
  json waits = enqueue(url, "c", "{}", {"--after", id_text(failed), "--on-parent-failure", "wait"});
  json below = enqueue(url, "g", "{}", {"--after", id_text(waits)});
  // Waits for a parent that will be done and purged, and for one still pending.
  json other = enqueue(url, "c2", "{}", {"--after", id_text(done) + "," + id_text(pending)});

  ok(url, {"fail", id_text(failed), "--token", claim_token(url, failed), "--error", "boom",
           "--permanent"});
  ok(url, {"ack", id_text(done), "--token", claim_token(url, done)});
  CHECK(status_of(url, waits) == "waiting");  // the policy: wait for a retry of the parent

  ok(url, {"purge", "--older-than", "0s", "--status", "failed,done"});
  json w = ok_json(url, {"show", id_text(waits)});
  CHECK(w["status"] == "canceled");
  CHECK(w["last_error"] == "parent job " + id_text(failed) + " was purged before it was done");
  REQUIRE(w["after"].size() == 1);
  CHECK(w["after"][0]["state"] == "missing");
  json b = ok_json(url, {"show", id_text(below)});
  CHECK(b["status"] == "canceled");
  CHECK(b["last_error"] == "parent job " + id_text(waits) + " was canceled");

  // The purged parent that was done had met its edge: its child still waits for the other.
  CHECK(status_of(url, other) == "waiting");
  ok(url, {"ack", id_text(pending), "--token", claim_token(url, pending)});
  CHECK(status_of(url, other) == "ready");

  // Purging the canceled jobs and the last parent leaves the released job as it was.
  ok(url, {"purge", "--older-than", "0s", "--status", "failed,done,canceled"});
  CHECK(status_of(url, other) == "ready");
  CHECK(queuectl(url, {"show", id_text(waits)}).exit_code != 0);
}

}  // namespace queuectl::testing::cli
