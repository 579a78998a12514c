// queuectl cron through the real binary: the commands, bad input, apply, downtime (misfire
// once, skip, all), overlap skip, the race of many firers with SIGKILLs, and what workers do
// for their queue (schedules, reaping, retention). Runs unchanged on every backend.
#include <doctest/doctest.h>

#include <map>
#include <random>
#include <set>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {
namespace {

// Seconds since the epoch of "2026-11-26T08:09:47Z".
std::int64_t epoch_s(const json& v) {
  REQUIRE(v.is_string());
  std::string s = v.get<std::string>();
  REQUIRE(s.size() == 20);
  std::tm tm{};
  tm.tm_year = std::stoi(s.substr(0, 4)) - 1900;
  tm.tm_mon = std::stoi(s.substr(5, 2)) - 1;
  tm.tm_mday = std::stoi(s.substr(8, 2));
  tm.tm_hour = std::stoi(s.substr(11, 2));
  tm.tm_min = std::stoi(s.substr(14, 2));
  tm.tm_sec = std::stoi(s.substr(17, 2));
  return static_cast<std::int64_t>(timegm(&tm));
}

json schedules(const std::string& url) {
  return ok_json(url, {"cron", "list"});
}

json schedule(const std::string& url, const std::string& name) {
  return ok_json(url, {"cron", "show", name});
}

json tick(const std::string& url) {
  return ok_json(url, {"cron", "tick"});
}

// The schedules as stored, without what changes by itself (relative times).
std::string stored_schedules(const std::string& url) {
  json all = schedules(url);
  for (auto& s : all) s.erase("late");
  return all.dump();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
}

}  // namespace

TEST_CASE("cli: cron: add, list, show, pause, resume, trigger, remove") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  RunResult added = ok(url, {"cron", "add", "nightly", "30  2 * * *", "reports", "{\"kind\": 1}",
                             "--tz", "Europe/Berlin", "--priority", "3", "--max-attempts", "2"});
  CHECK(contains(added.out, "schedule nightly added; next run "));
  CHECK(contains(added.out, ":30:00 CET"));
  json s = schedule(url, "nightly");
  CHECK(s["schedule"] == "30 2 * * *");  // blanks made one
  CHECK(s["tz"] == "Europe/Berlin");
  CHECK(s["payload"] == json{{"kind", 1}});
  CHECK(s["priority"] == 3);
  CHECK(s["misfire"] == "once");
  CHECK(s["overlap"] == "allow");
  CHECK(s["paused"] == false);
  // The next runs: 02:30 in Berlin is 01:30 UTC in winter, one day apart.
  REQUIRE(s["next_runs"].size() == 5);
  for (const auto& n : s["next_runs"]) {
    CHECK(n["at"].get<std::string>().substr(11) == "01:30:00Z");
    CHECK(contains(n["local"].get<std::string>(), "02:30:00 CET"));
  }
  CHECK(epoch_s(s["next_runs"][1]["at"]) - epoch_s(s["next_runs"][0]["at"]) == 86400);
  CHECK(s["next_run_at"] == s["next_runs"][0]["at"]);

  // Re-adding with the same schedule keeps the ticks; another schedule moves them.
  ok(url, {"cron", "add", "nightly", "30 2 * * *", "reports", "--tz", "Europe/Berlin"});
  CHECK(schedule(url, "nightly")["next_run_at"] == s["next_run_at"]);
  CHECK(schedule(url, "nightly")["priority"] == 0);
  ok(url, {"cron", "add", "nightly", "45 2 * * *", "reports", "--tz", "Europe/Berlin"});
  CHECK(schedule(url, "nightly")["next_run_at"].get<std::string>().substr(11) == "01:45:00Z");

  // trigger: a job now, by hand, whatever the schedule; the ticks go on as before.
  json fired = ok_json(url, {"cron", "trigger", "nightly"});
  const std::int64_t id = fired["job_id"].get<std::int64_t>();
  json job = show(url, id);
  CHECK(job["queue"] == "reports");
  CHECK(job["status"] == "ready");
  json after = schedule(url, "nightly");
  CHECK(after["last_job_id"] == id);
  REQUIRE(after["recent_fires"].size() == 1);
  CHECK(after["recent_fires"][0]["by_hand"] == true);
  CHECK(after["recent_fires"][0]["job_id"] == id);
  CHECK(after["next_run_at"].get<std::string>().substr(11) == "01:45:00Z");

  // list: the table and JSON.
  RunResult table = ok(url, {"cron", "list"});
  CHECK(contains(table.out, "NAME"));
  CHECK(contains(table.out, "nightly"));
  CHECK(contains(table.out, "Europe/Berlin"));
  json all = schedules(url);
  REQUIRE(all.size() == 1);
  CHECK(all[0]["last_job_status"] == "ready");
  CHECK(all[0]["late"] == false);

  // pause and resume, each twice.
  CHECK(contains(ok(url, {"cron", "pause", "nightly"}).out, "schedule nightly paused"));
  CHECK(contains(ok(url, {"cron", "pause", "nightly"}).out, "already paused"));
  CHECK(schedule(url, "nightly")["paused"] == true);
  CHECK(contains(ok(url, {"cron", "list"}).out, "paused"));
  CHECK(contains(ok(url, {"cron", "resume", "nightly"}).out, "resumed"));
  CHECK(contains(ok(url, {"cron", "resume", "nightly"}).out, "was not paused"));
  CHECK(schedule(url, "nightly")["paused"] == false);

  // Prometheus beside the queues.
  RunResult prom = ok(url, {"-o", "prometheus", "stats"});
  CHECK(contains(
      prom.out,
      "queuectl_schedule_next_run_timestamp_seconds{schedule=\"nightly\",queue=\"reports\"} "));
  CHECK(contains(prom.out, "queuectl_schedule_late{schedule=\"nightly\",queue=\"reports\"} 0\n"));

  // remove; a second remove and the other commands name the missing schedule, exit 4.
  CHECK(contains(ok(url, {"cron", "remove", "nightly"}).out, "schedule nightly removed"));
  check_error(queuectl(url, {"cron", "remove", "nightly"}), 4, "no schedule named nightly");
  check_error(queuectl(url, {"cron", "show", "nightly"}), 4, "no schedule named nightly");
  check_error(queuectl(url, {"cron", "trigger", "nightly"}), 4, "no schedule named nightly");
  check_error(queuectl(url, {"cron", "pause", "nightly"}), 4, "no schedule named nightly");
  CHECK(schedules(url).empty());
  CHECK(show(url, id)["status"] == "ready");  // its job stays
}

TEST_CASE("cli: cron: many `cron add` of one new name at once all succeed, one schedule") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  for (int round = 0; round < 4; ++round) {
    const std::string name = "same-" + std::to_string(round);
    std::vector<std::future<RunResult>> adds;
    for (int i = 0; i < 6; ++i)
      adds.push_back(queuectl_async(url, {"cron", "add", name, "@hourly", "q"}));
    for (auto& a : adds) {
      const RunResult r = a.get();
      INFO(dump(r));
      CHECK(r.exit_code == 0);
    }
  }
  CHECK(schedules(url).size() == 4);
}

TEST_CASE("cli: cron: bad input names what is wrong, exit 2, nothing written") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  ok(url, {"cron", "add", "keep", "@hourly", "q"});
  const std::string before = stored_schedules(url);
  rejects(fixture, {"cron", "add", "x", "61 * * * *", "q"}, "minute: 61 is out of range 0-59");
  rejects(fixture, {"cron", "add", "x", "0 24 * * *", "q"}, "hour");
  rejects(fixture, {"cron", "add", "x", "0 0 31 2 *", "q"}, "day-of-month");
  rejects(fixture, {"cron", "add", "x", "* * * *", "q"}, "4 fields");
  rejects(fixture, {"cron", "add", "x", "@every 0s", "q"}, "@every");
  rejects(fixture, {"cron", "add", "x", "@daily", "q", "--tz", "Mars/Olympus"}, "Mars/Olympus");
  rejects(fixture, {"cron", "add", "x", "@daily", "q", "--misfire", "twice"}, "--misfire");
  rejects(fixture, {"cron", "add", "x", "@daily", "q", "--misfire-after", "500ms"},
          "--misfire-after");
  rejects(fixture, {"cron", "add", "x", "@daily", "q", "--misfire-limit", "0"}, "--misfire-limit");
  rejects(fixture, {"cron", "add", "x", "@daily", "q", "--misfire-limit", "3"},
          "--misfire-limit goes with --misfire all");
  rejects(fixture, {"cron", "add", "x", "@daily", "q", "--misfire", "skip", "--misfire-limit", "3"},
          "not with --misfire skip");
  rejects(fixture, {"cron", "apply", "-"}, "\"misfire_limit\" goes with \"misfire\" all",
          "{\"name\":\"x\",\"schedule\":\"@daily\",\"queue\":\"q\",\"misfire_limit\":3}\n");
  rejects(fixture, {"cron", "add", "x", "@daily", "q", "--overlap", "queue"}, "--overlap");
  rejects(fixture, {"cron", "add", "bad name", "@daily", "q"}, "invalid schedule name");
  rejects(fixture, {"cron", "add", "x", "@daily", "bad queue"}, "invalid queue name");
  rejects(fixture, {"cron", "add", "x", "@daily", "q", "{not json"}, "payload");
  rejects(fixture, {"cron", "tick", "--batch", "0"}, "--batch");
  rejects(fixture, {"cron", "show", "keep", "--next", "0"}, "--next");
  rejects(fixture, {"cron", "frobnicate"}, "unknown cron subcommand 'frobnicate'");
  rejects(fixture, {"cron", "lsit"}, "did you mean list?");
  check_usage_error(queuectl(url, {"cron"}), "cron needs a subcommand: one of add, remove");
  CHECK(stored_schedules(url) == before);
}

TEST_CASE("cli: cron: a schedule that cannot fire is named, and the others still fire") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  ok(url, {"cron", "add", "broken", "@every 1s", "q"});
  ok(url, {"cron", "add", "fine", "@every 1s", "q"});
  // A zone this host does not know, as after a hand edit or on a host with older tzdata.
  fixture.db().session()
      << "UPDATE queuectl_schedules SET time_zone = 'Mars/Olympus' WHERE name = 'broken'";
  sleep_ms(2100);
  // One schedule a batch: the broken one comes first every time, and is passed over.
  RunResult r = queuectl(url, {"cron", "tick", "--batch", "1"});
  INFO(dump(r));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, "schedule broken cannot fire"));
  CHECK(contains(r.err, "Mars/Olympus"));
  CHECK(contains(r.out, "schedule fine: job "));
  CHECK(schedule(url, "fine")["fired"].get<int>() >= 2);
  // show still shows it, and says why it cannot fire.
  RunResult shown = queuectl(url, {"cron", "show", "broken"});
  CHECK(shown.exit_code == 0);
  CHECK(contains(shown.out, "name:       broken"));
  CHECK(contains(shown.err, "cannot fire"));
  CHECK(schedule(url, "broken")["fired"] == 0);
}

TEST_CASE(
    "cli: cron: apply makes a file the truth, idempotent; dry run and bad files write nothing") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  const std::string file = dir.path() + "/schedules.ndjson";
  ok(url, {"cron", "add", "old", "@daily", "q"});
  write_file(file,
             "# the schedules of team A\n"
             "{\"name\":\"nightly\",\"schedule\":\"30 2 * * "
             "*\",\"tz\":\"Europe/Berlin\",\"queue\":\"reports\"}\n"
             "\n"
             "{\"name\":\"sync\",\"schedule\":\"@every "
             "10s\",\"queue\":\"sync\",\"payload\":{\"full\":false},"
             "\"overlap\":\"skip\",\"priority\":2}\n");
  RunResult first = ok(url, {"cron", "apply", file});
  CHECK(contains(first.out, "added: nightly"));
  CHECK(contains(first.out, "added: sync"));
  CHECK(contains(first.out, "2 of 2 schedule(s) changed"));
  CHECK(schedules(url).size() == 3);  // additive: old stays
  CHECK(schedule(url, "sync")["payload"] == json{{"full", false}});
  CHECK(schedule(url, "sync")["overlap"] == "skip");
  const std::string applied = stored_schedules(url);
  // Again: nothing changes, exit 0.
  RunResult again = ok(url, {"cron", "apply", file});
  CHECK(contains(again.out, "0 of 2 schedule(s) changed"));
  CHECK(stored_schedules(url) == applied);

  // A dry run of a changed file with --prune says what it would do and writes nothing.
  write_file(file,
             "{\"name\":\"nightly\",\"schedule\":\"0 3 * * "
             "*\",\"tz\":\"Europe/Berlin\",\"queue\":\"reports\"}\n"
             "{\"name\":\"sync\",\"schedule\":\"@every "
             "10s\",\"queue\":\"sync\",\"payload\":{\"full\":false},"
             "\"overlap\":\"skip\",\"priority\":2}\n");
  RunResult dry = ok(url, {"cron", "apply", file, "--prune", "--dry-run"});
  CHECK(contains(dry.out, "would be replaced: nightly"));
  CHECK(contains(dry.out, "schedule: '30 2 * * *' -> '0 3 * * *'"));
  CHECK(contains(dry.out, "would be removed: old"));
  CHECK(contains(dry.out, "dry run: nothing written"));
  CHECK(stored_schedules(url) == applied);
  // For real.
  ok(url, {"cron", "apply", file, "--prune"});
  json all = schedules(url);
  REQUIRE(all.size() == 2);
  CHECK(schedule(url, "nightly")["schedule"] == "0 3 * * *");

  // A bad line names its line and nothing is written, even from the good lines before it.
  const std::string before = stored_schedules(url);
  write_file(file,
             "{\"name\":\"fresh\",\"schedule\":\"@hourly\",\"queue\":\"q\"}\n"
             "# comment\n"
             "{\"name\":\"broken\",\"schedule\":\"61 * * * *\",\"queue\":\"q\"}\n");
  rejects(fixture, {"cron", "apply", file, "--prune"}, "line 3: minute: 61 is out of range");
  write_file(file, "{\"name\":\"fresh\",\"schedule\":\"@hourly\"}\n");
  rejects(fixture, {"cron", "apply", file}, "line 1: \"queue\" is missing");
  write_file(file, "{\"name\":\"fresh\",\"schedule\":\"@hourly\",\"queue\":\"q\",\"colour\":1}\n");
  rejects(fixture, {"cron", "apply", file}, "unknown key \"colour\"");
  write_file(file,
             "{\"name\":\"a\",\"schedule\":\"@hourly\",\"queue\":\"q\"}\n"
             "{\"name\":\"a\",\"schedule\":\"@daily\",\"queue\":\"q\"}\n");
  rejects(fixture, {"cron", "apply", file}, "line 2: schedule a is also on line 1");
  rejects(fixture, {"cron", "apply", dir.path() + "/missing.ndjson"}, "missing.ndjson");
  CHECK(stored_schedules(url) == before);
}

TEST_CASE("cli: cron: after downtime, misfire once, skip and all do what the README says") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  // Three schedules every second; a tick more than 2 s late is missed. Nothing fires for
  // about 6 s, then one tick.
  for (const char* mode : {"once", "skip", "all"}) {
    std::vector<std::string> add = {"cron",
                                    "add",
                                    mode,
                                    "@every 1s",
                                    std::string("q-") + mode,
                                    "--misfire",
                                    mode,
                                    "--misfire-after",
                                    "2s"};
    // The limit goes with all alone (refused with the others: it would do nothing).
    if (std::string(mode) == "all") add.insert(add.end(), {"--misfire-limit", "2"});
    ok(url, add);
  }
  std::map<std::string, std::int64_t> first;
  for (const char* mode : {"once", "skip", "all"})
    first[mode] = epoch_s(schedule(url, mode)["next_run_at"]);
  sleep_ms(6500);
  json r = tick(url);
  std::map<std::string, std::vector<json>> fires;
  for (const auto& f : r["fires"]) fires[f["schedule"].get<std::string>()].push_back(f);
  auto ticks_of = [&](const std::string& mode) {
    std::vector<std::int64_t> t;
    for (const auto& f : fires[mode]) t.push_back(epoch_s(f["tick"]));
    return t;
  };
  // Each: fired ticks are consecutive seconds ending at the last due tick, and every tick
  // since the first is either fired or counted missed.
  for (const char* mode : {"once", "skip", "all"}) {
    INFO(mode << ": " << r.dump());
    auto t = ticks_of(mode);
    REQUIRE(!t.empty());
    for (std::size_t i = 1; i < t.size(); ++i) CHECK(t[i] == t[i - 1] + 1);
    json s = schedule(url, mode);
    CHECK(epoch_s(s["next_run_at"]) == t.back() + 1);
    CHECK(s["missed"].get<std::int64_t>() + s["fired"].get<std::int64_t>() ==
          t.back() - first[mode] + 1);
  }
  // once: one job for the missed ticks (the oldest fire, standing for the others), then the
  // 2 or 3 on time.
  auto once = fires["once"];
  CHECK(once[0]["missed"].get<int>() >= 2);
  CHECK(epoch_s(once[0]["tick"]) - first["once"] == once[0]["missed"].get<int>());
  CHECK(once.size() >= 3);
  CHECK(once.size() <= 4);
  // skip: only the on-time ticks.
  CHECK(fires["skip"].size() >= 2);
  CHECK(fires["skip"].size() <= 3);
  for (const auto& f : fires["skip"]) CHECK(f["missed"] == 0);
  // all, at most 2: the latest 2 missed, then those on time.
  CHECK(fires["all"].size() == fires["skip"].size() + 2);
  for (const auto& f : fires["all"]) CHECK(f["missed"] == 0);
  // Each job's run_at is its tick.
  for (const auto& f : fires["once"]) {
    json job = show(url, f["job_id"].get<std::int64_t>());
    CHECK(job["run_at"].get<std::string>().substr(0, 19) ==
          f["tick"].get<std::string>().substr(0, 19));
  }
}

TEST_CASE("cli: cron: overlap skip makes no job while the last one is unfinished") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  ok(url, {"cron", "add", "one-at-a-time", "@every 1s", "ov", "--overlap", "skip"});
  auto due_tick = [&] {
    // Wait for the next tick to be due, then fire it.
    const std::int64_t next = epoch_s(schedule(url, "one-at-a-time")["next_run_at"]);
    while (static_cast<std::int64_t>(std::time(nullptr)) <= next) sleep_ms(100);
    sleep_ms(150);
    return tick(url);
  };
  json r = due_tick();
  REQUIRE(r["jobs"].get<int>() >= 1);
  std::int64_t id = 0;
  for (const auto& f : r["fires"])
    if (!f["job_id"].is_null()) id = f["job_id"].get<std::int64_t>();
  REQUIRE(id > 0);
  // Ready and unfinished: skipped.
  r = due_tick();
  CHECK(r["jobs"] == 0);
  CHECK(r["skipped"].get<int>() >= 1);
  // Processing: skipped.
  json job = claim_one(url, "ov");
  CHECK(job["id"] == id);
  r = due_tick();
  CHECK(r["jobs"] == 0);
  CHECK(r["skipped"].get<int>() >= 1);
  CHECK(show(url, id)["status"] == "processing");
  // Done: the next tick makes a job.
  ok(url, {"ack", id_text(job), "--token", job["lock_token"].get<std::string>()});
  r = due_tick();
  CHECK(r["jobs"] == 1);
  json s = schedule(url, "one-at-a-time");
  CHECK(s["skipped"].get<int>() >= 2);
  bool skipped_seen = false;
  for (const auto& f : s["recent_fires"]) skipped_seen = skipped_seen || f["job_id"].is_null();
  CHECK(skipped_seen);
}

TEST_CASE("cli: cron: two workers reap their queue's expired leases and purge past retention") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  Cleanup cleanup;
  TempDir dir;
  ok(url, {"queue", "kept", "--retain", "3s"});
  CHECK(ok_json(url, {"queue", "kept"})["retain"] == "3s");
  // Finished jobs: done, failed and canceled.
  std::vector<std::int64_t> finished;
  for (int i = 0; i < 3; ++i) finished.push_back(id_of(enqueue(url, "kept")));
  json done = claim_one(url, "kept");
  CHECK(id_of(done) == finished[0]);
  ok(url, {"ack", id_text(done), "--token", done["lock_token"].get<std::string>()});
  json failing = claim_one(url, "kept");
  CHECK(id_of(failing) == finished[1]);
  ok(url, {"fail", id_text(failing), "--token", failing["lock_token"].get<std::string>(),
           "--permanent", "--error", "no"});
  ok(url, {"cancel", std::to_string(finished[2])});
  // Unfinished jobs that must stay: one not yet due, one processing under a long lease.
  const std::int64_t later = id_of(enqueue(url, "kept", "{}", {"--delay", "1h"}));
  const std::int64_t held = id_of(enqueue(url, "kept"));
  json held_job = claim_one(url, "kept", {"--lease", "1h"});
  CHECK(id_of(held_job) == held);
  // A job whose lease expires: the workers reap it, run it, and purge it 3 s after.
  const std::int64_t expiring = id_of(enqueue(url, "kept"));
  json lapsing = claim_one(url, "kept", {"--lease", "1s"});
  CHECK(id_of(lapsing) == expiring);
  // A job of another queue, done, is not theirs to purge.
  const std::int64_t other = id_of(enqueue(url, "other"));
  json other_job = claim_one(url, "other");
  ok(url, {"ack", id_text(other_job), "--token", other_job["lock_token"].get<std::string>()});
  ok(url, {"queue", "other", "--retain", "1s"});

  const int a = cleanup.child(
      spawn_queuectl(url, {"work", "kept", "--lease", "2s", "--", "true"}, dir.path() + "/a.log"));
  const int b = cleanup.child(
      spawn_queuectl(url, {"work", "kept", "--lease", "2s", "--", "true"}, dir.path() + "/b.log"));
  auto gone = [&](std::int64_t id) {
    return queuectl(url, {"show", std::to_string(id)}).exit_code == 4;
  };
  CHECK(wait_until([&] { return gone(finished[0]) && gone(finished[1]) && gone(finished[2]); },
                   30000));
  CHECK(wait_until([&] { return gone(expiring); }, 45000));
  CHECK(show(url, later)["status"] == "ready");
  CHECK(show(url, held)["status"] == "processing");
  CHECK(show(url, other)["status"] == "done");
  kill(a, SIGTERM);
  kill(b, SIGTERM);
  CHECK(wait_child(cleanup, a) == 0);
  CHECK(wait_child(cleanup, b) == 0);
  const std::string logs = read_text(dir.path() + "/a.log") + read_text(dir.path() + "/b.log");
  INFO(logs);
  CHECK(contains(logs, "reaped 1 expired lease(s) of queue kept"));
  CHECK(contains(logs, "older than its retention of 3s"));
}

TEST_CASE("slow: cron race: 8 firers with SIGKILLs, each tick of each schedule exactly one job") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  Cleanup cleanup;
  TempDir dir;
  constexpr int kSchedules = 20;
  for (int i = 0; i < kSchedules; ++i)
    ok(url, {"cron", "add", "race-" + std::to_string(i), "@every 1s", "race",
             "{\"s\":" + std::to_string(i) + "}"});
  // 4 `cron tick` slots, each a new process as soon as the last ends; 4 workers of the
  // queue, which fire too. Every 700 ms one of the 8 is killed with SIGKILL and replaced.
  std::vector<int> slots(8, 0);
  int spawned = 0;
  auto start = [&](int i) {
    const std::string log = dir.path() + "/p" + std::to_string(spawned++) + ".log";
    slots[i] = cleanup.child(
        i < 4 ? spawn_queuectl(url, {"-q", "cron", "tick"}, log)
              : spawn_queuectl(url, {"-q", "work", "race", "--lease", "2s", "--", "true"}, log));
  };
  for (int i = 0; i < 8; ++i) start(i);
  std::mt19937 rng(20261126);
  int killed = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  auto next_kill = std::chrono::steady_clock::now() + std::chrono::milliseconds(700);
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 8; ++i) {
      int code = 0;
      if (try_wait(slots[i], code)) {
        cleanup.forget(slots[i]);
        if (i >= 4) CHECK_MESSAGE(code == 0, "a worker ended by itself: " << code);
        if (i < 4) CHECK_MESSAGE(code == 0, "cron tick failed: " << code);
        start(i);
      }
    }
    if (std::chrono::steady_clock::now() >= next_kill) {
      const int victim = static_cast<int>(rng() % 8);
      kill(slots[victim], SIGKILL);
      wait_child(cleanup, slots[victim]);
      ++killed;
      start(victim);
      next_kill += std::chrono::milliseconds(700);
    }
    sleep_ms(50);
  }
  for (int i = 0; i < 8; ++i) {
    if (i >= 4) kill(slots[i], SIGTERM);
  }
  for (int i = 0; i < 8; ++i) wait_child(cleanup, slots[i]);
  CHECK(killed >= 30);
  // Every job of the queue, by schedule (its payload names it). A job's run_at is its tick
  // only until a retry moves it (a worker killed mid-job leaves its job to the reaper), so the
  // ticks come from each schedule's fire history, which names the job of each tick: every
  // tick from the first to the last has one job, and every job of the schedule is one of them.
  std::map<int, std::set<std::int64_t>> jobs_of;
  std::size_t all_jobs = 0;
  json jobs = ok_json(url, {"list", "race", "--limit", "100000"});
  for (const auto& j : jobs) {
    jobs_of[j["payload"]["s"].get<int>()].insert(j["id"].get<std::int64_t>());
    ++all_jobs;
  }
  REQUIRE(jobs_of.size() == static_cast<std::size_t>(kSchedules));
  std::size_t fired_jobs = 0;
  for (int s = 0; s < kSchedules; ++s) {
    INFO("schedule race-" << s);
    json shown = ok_json(url, {"cron", "show", "race-" + std::to_string(s), "--fires", "100"});
    const json& fires = shown["recent_fires"];
    REQUIRE(fires.size() < 100);  // the whole history is kept: 30 s of ticks
    std::vector<std::int64_t> ticks;
    std::set<std::int64_t> ids;
    for (const auto& f : fires) {
      REQUIRE_FALSE(f["tick"].is_null());
      REQUIRE_FALSE(f["job_id"].is_null());
      CHECK(f["missed"] == 0);
      ticks.push_back(epoch_s(f["tick"]));
      ids.insert(f["job_id"].get<std::int64_t>());
    }
    std::sort(ticks.begin(), ticks.end());
    CHECK(ticks.size() >= 25);  // ~30 ticks in 30 s
    CHECK_MESSAGE(std::set<std::int64_t>(ticks.begin(), ticks.end()).size() == ticks.size(),
                  "a tick fired twice");
    CHECK_MESSAGE(ticks.back() - ticks.front() + 1 == static_cast<std::int64_t>(ticks.size()),
                  "a tick is missing");
    CHECK_MESSAGE(ids.size() == ticks.size(), "two ticks named one job");
    CHECK_MESSAGE(ids == jobs_of[s], "the schedule's jobs are not its ticks' jobs, one each");
    CHECK(shown["missed"] == 0);
    CHECK(shown["fired"].get<std::size_t>() == ticks.size());
    fired_jobs += ids.size();
  }
  CHECK(fired_jobs == all_jobs);
}

}  // namespace queuectl::testing::cli

namespace queuectl::testing::cli {

// A tick fires a batch's jobs in one INSERT (SQLite, PostgreSQL) and its history in another:
// every fire's job must still be its own, with its own tick as run_at.
TEST_CASE("cli: cron tick: many schedules due at once each get their own jobs, one per tick") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  std::string lines;
  for (int i = 0; i < 30; ++i)
    lines += "{\"name\": \"b" + std::to_string(i) +
             "\", \"schedule\": \"@every 10s\", \"queue\": \"batch\"}\n";
  write_file(dir.path() + "/s.ndjson", lines);
  ok(url, {"cron", "apply", dir.path() + "/s.ndjson"});
  // Due 40 s back: four or five ticks each, all on time (within the 60 s misfire window).
  fixture.db().session() << "UPDATE queuectl_schedules SET next_fire = next_fire - 40";
  const json fired = tick(url);
  const std::int64_t jobs = fired["jobs"].get<std::int64_t>();
  REQUIRE(jobs >= 30 * 4);
  REQUIRE(fired["fires"].size() == static_cast<std::size_t>(jobs));

  json listed = ok_json(url, {"list", "batch", "--limit", "1000"});
  std::map<std::int64_t, std::string> run_at;
  for (const json& j : listed) run_at[j["id"].get<std::int64_t>()] = j["run_at"];
  CHECK(run_at.size() == static_cast<std::size_t>(jobs));
  std::map<std::string, std::vector<std::int64_t>> ticks;
  std::set<std::int64_t> ids;
  for (const json& f : fired["fires"]) {
    CAPTURE(f.dump());
    const std::int64_t id = f["job_id"].get<std::int64_t>();
    CHECK(ids.insert(id).second);  // no job stands for two fires
    REQUIRE(run_at.count(id) == 1);
    CHECK(run_at[id].substr(0, 19) == f["tick"].get<std::string>().substr(0, 19));
    ticks[f["schedule"]].push_back(epoch_s(f["tick"]));
  }
  CHECK(ticks.size() == 30);
  for (const auto& [name, t] : ticks) {
    CAPTURE(name);
    for (std::size_t i = 1; i < t.size(); ++i) CHECK(t[i] - t[i - 1] == 10);
    // The history has the same jobs for the same ticks.
    json recent = schedule(url, name)["recent_fires"];
    CHECK(recent.size() == t.size());
    for (const json& r : recent) CHECK(ids.count(r["job_id"].get<std::int64_t>()) == 1);
  }
}

// The history keeps the last 100 fires or so: it is trimmed when a schedule's fire count
// passes a multiple of 20, not at every fire.
TEST_CASE("cli: cron: the fire history is trimmed to the last 100 fires") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  ok(url, {"cron", "add", "kept", "@every 1h", "q"});
  ok(url, {"cron", "add", "trimmed", "@every 1h", "q"});
  for (int i = 0; i < 3; ++i) {
    ok(url, {"cron", "trigger", "kept"});
    ok(url, {"cron", "trigger", "trimmed"});
  }
  const std::string count = "SELECT COUNT(*) FROM queuectl_schedule_fires WHERE name = ";
  // As if "trimmed" had fired 219 times: its next fire is the 220th, which trims to the
  // fires after the 120th: none of the three older ones is left.
  fixture.db().session() << "UPDATE queuectl_schedules SET seq = 219 WHERE name = 'trimmed'";
  ok(url, {"cron", "trigger", "trimmed"});
  ok(url, {"cron", "trigger", "kept"});
  CHECK(scalar(fixture.db(), count + "'trimmed'") == 1);
  CHECK(scalar(fixture.db(),
               "SELECT MAX(seq) FROM queuectl_schedule_fires WHERE name = 'trimmed'") == 220);
  CHECK(scalar(fixture.db(), count + "'kept'") == 4);
  // The next fire (221st) is not a trim: the history grows again.
  ok(url, {"cron", "trigger", "trimmed"});
  CHECK(scalar(fixture.db(), count + "'trimmed'") == 2);
}

}  // namespace queuectl::testing::cli
