// An idle `queuectl work` and new jobs. On PostgreSQL the worker LISTENs and the triggers
// of migration 002 NOTIFY it, so it wakes at once even with a poll interval of ten
// minutes: for a job enqueued by queuectl, one inserted by plain SQL (the outbox), one
// put back by `retry`, and jobs of a queue that is resumed. On the other backends the same
// jobs are found by polling (the test runs them with a short --poll-interval).
#include <doctest/doctest.h>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {

namespace {

bool listens() {
  return backend_under_test() == Backend::postgresql;
}

// Waits until the job has reached `status`; generous, since only a missed wake-up (a
// ten-minute poll) could make it slow.
void require_status(const std::string& url, std::int64_t id, const std::string& status,
                    const std::string& log) {
  REQUIRE_MESSAGE(wait_until([&] { return status_of(url, id) == status; }, 60000, 50),
                  "job " << id << " is " << status_of(url, id) << ", not " << status
                         << "; worker log:\n"
                         << read_text(log));
}

}  // namespace

TEST_CASE("cli: an idle worker wakes for new, retried and resumed jobs" *
          doctest::skip(through_pooler())) {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  const std::string log = dir.path() + "/worker.log";
  // Payload {"fail":true} fails the job; anything else succeeds.
  const std::string script = "grep -q '\"fail\"' && { echo failing >&2; exit 1; }; exit 0";
  int worker = cleanup.child(spawn_queuectl(url,
                                            {"-v", "work", "wake", "--poll-interval",
                                             listens() ? "10m" : "200ms", "--", "sh", "-c", script},
                                            log));
  if (listens()) {
    REQUIRE_MESSAGE(
        wait_until([&] { return contains(read_text(log), "listening for new jobs on wake"); }),
        read_text(log));
  }

  // A first job, to be sure the worker has claimed at least once and found the queue empty
  // after it: from here on it sleeps for its whole poll interval unless woken.
  const std::int64_t first = id_of(enqueue(url, "wake"));
  require_status(url, first, "done", log);
  sleep_ms(300);

  SUBCASE("enqueued by queuectl") {
    const std::int64_t id = id_of(enqueue(url, "wake", R"({"n":1})"));
    require_status(url, id, "done", log);
  }

  SUBCASE("inserted by plain SQL in an application's transaction") {
    if (listens()) {
      fixture.db().session() << "INSERT INTO job_queue (queue, payload) VALUES ('wake', '{}')";
      REQUIRE_MESSAGE(wait_until([&] { return jobs_with_status(fixture, 2) == 2; }, 60000, 50),
                      read_text(log));
    } else {
      const std::int64_t id = id_of(enqueue(url, "wake"));
      require_status(url, id, "done", log);
    }
  }

  SUBCASE("put back by retry") {
    const std::int64_t id =
        id_of(enqueue(url, "wake", R"({"fail":true})", {"--max-attempts", "1"}));
    require_status(url, id, "failed", log);
    ok(url, {"retry", std::to_string(id)});
    // Ready again, then taken and failed a second time (attempts were reset to 0).
    const std::string line = "job " + std::to_string(id) + " attempt 1/1: failed";
    REQUIRE_MESSAGE(
        wait_until([&] { return lines_with(read_text(log), line).size() == 2; }, 60000, 50),
        read_text(log));
    require_status(url, id, "failed", log);
  }

  SUBCASE("waiting in a paused queue, resumed") {
    ok(url, {"pause", "wake"});
    const std::int64_t id = id_of(enqueue(url, "wake"));
    sleep_ms(500);
    CHECK(status_of(url, id) == "ready");  // paused: handed out to nobody
    ok(url, {"resume", "wake"});
    require_status(url, id, "done", log);
  }

  kill(worker, SIGTERM);
  CHECK(wait_child(cleanup, worker) == 0);
  const std::string text = read_text(log);
  INFO(text);
  if (listens()) {
    CHECK(contains(text, "woken: a job is due on wake"));
  } else {
    CHECK_FALSE(contains(text, "listening for new jobs"));
  }
}

}  // namespace queuectl::testing::cli
