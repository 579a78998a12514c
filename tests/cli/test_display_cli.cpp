// What people see (issue 14): tables fitted to the terminal by display width, relative
// times and -o wide, `show` described, `leases` cut with a word and summed over all rows,
// control characters never reaching the terminal, and refused in every name queuectl
// writes. Runs on every backend; the raw rows are written with the fixture's own SQL.
#include <doctest/doctest.h>

#include <regex>

#include "cli/fault_helpers.hpp"
#include "core/display_text.hpp"
#include "core/validate.hpp"

namespace queuectl::testing::cli {

namespace {

const std::string kEllipsis = "\xe2\x80\xa6";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t from = 0;
  while (from < text.size()) {
    std::size_t nl = text.find('\n', from);
    if (nl == std::string::npos) nl = text.size();
    lines.push_back(text.substr(from, nl - from));
    from = nl + 1;
  }
  return lines;
}

// The widest line in terminal columns (a cell cut inside a UTF-8 sequence fails
// is_valid_utf8 first).
std::size_t widest(const std::string& text) {
  std::size_t w = 0;
  for (const auto& l : lines_of(text)) w = std::max(w, display_width(l));
  return w;
}

// Runs queuectl with a fixed $COLUMNS, stdout a pipe.
RunResult with_columns(const std::string& url, const std::string& columns,
                       const std::vector<std::string>& args) {
  RunResult r = queuectl(url, args, "", {{"COLUMNS", columns}});
  INFO(dump(r));
  REQUIRE(r.exit_code == 0);
  return r;
}

// Runs a shell command line on a pseudo-terminal of `cols` columns (util-linux `script`);
// returns what the terminal showed, stdout and stderr together.
RunResult on_terminal(const std::string& url, const std::vector<std::string>& args, int cols = 80) {
  std::string command = "stty cols " + std::to_string(cols) + " rows 40; '" +
                        std::string(QUEUECTL_BINARY) + "' --db '" + url + "'";
  for (const auto& a : args) command += " '" + a + "'";
  return run_process({"timeout", "60", "script", "-qec", command, "/dev/null"}, "",
                     {{"COLUMNS", ""}});
}

// The column at which `header` starts in the first line, in display columns.
std::size_t column_of(const std::string& line, const std::string& header) {
  const std::size_t at = line.find(header);
  REQUIRE(at != std::string::npos);
  return display_width(line.substr(0, at));
}

// Sets columns of one job with bound values, as an application's own SQL might.
void set_text(FreshDatabase& fixture, const json& job, const std::string& column,
              const std::string& value) {
  long long id = job["id"].get<long long>();
  std::string v = value;
  fixture.db().session() << "UPDATE job_queue SET " + column + " = :v WHERE id = :id",
      soci::use(v, "v"), soci::use(id, "id");
}

}  // namespace

TEST_CASE("cli: list fits the terminal width: payload cut first, on a character boundary") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  // 100 umlauts: 200 bytes, 100 columns, cut only between characters.
  std::string long_text;
  for (int i = 0; i < 100; ++i) long_text += "\xc3\xbc";
  enqueue(url, "emails", "{\"text\":\"" + long_text + "\"}");
  claim_one(url, "emails",
            {"--lease", "10m", "--worker", "w\xc3\xb6rker-\xe6\x9d\xb1\xe4\xba\xac"});
  enqueue(url, "emails", "{\"n\":2}");

  // 80 columns: the payload gives way, and keeps its start. 75: less of it.
  for (const std::string cols : {"80", "75"}) {
    CAPTURE(cols);
    RunResult r = with_columns(url, cols, {"list"});
    CHECK(is_valid_utf8(r.out));
    CHECK(widest(r.out) == static_cast<std::size_t>(std::stoi(cols)));
    CHECK(contains(r.out, kEllipsis));
    // The payload's start is kept (jsonb writes a space after the colon).
    CHECK(std::regex_search(r.out, std::regex("\\{\"text\": ?\"(\xc3\xbc)*\xe2\x80\xa6\n")));
    CHECK(contains(r.out, "1   emails  processing"));  // ids, names and status not cut
  }
  SUBCASE("narrower than the columns that are never cut: as narrow as it gets") {
    RunResult r = with_columns(url, "40", {"list"});
    CHECK(is_valid_utf8(r.out));
    CHECK(contains(r.out, "1   emails  processing"));
    CHECK(contains(r.out, "{\"text\"" + kEllipsis));  // the payload at its floor, 8 columns
  }
  SUBCASE("a pipe without $COLUMNS gets whole rows") {
    RunResult r = with_columns(url, "", {"list"});
    CHECK(contains(r.out, long_text + "\"}"));
    CHECK(!contains(r.out, kEllipsis));
  }
  SUBCASE("on a terminal, its width (TIOCGWINSZ)") {
    RunResult r = on_terminal(url, {"list"}, 76);
    INFO(dump(r));
    CHECK(r.exit_code == 0);
    CHECK(is_valid_utf8(r.out));
    CHECK(contains(r.out, kEllipsis));
    CHECK(widest(r.out) == 76);  // (the \r that script writes before each \n takes none)
  }
}

TEST_CASE(
    "cli: list shows ages and lease times relative to the database clock; -o wide, absolute") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  json job = enqueue(url, "emails");
  claim_one(url, "emails", {"--lease", "10m", "--worker", "w1"});
  enqueue(url, "emails", "{}", {"--delay", "1h"});

  RunResult r = with_columns(url, "", {"list"});
  const auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 3);
  CHECK(std::regex_match(
      lines[0],
      std::regex(R"(ID\s+QUEUE\s+STATUS\s+PRI\s+ATTEMPTS\s+AGE\s+RUN_AT\s+LOCK_UNTIL\s+PAYLOAD)")));
  CHECK(!contains(r.out, "TOKEN"));
  // The processing job: due "now" or seconds ago, its lease ends in 9m5xs or 10m.
  CHECK(std::regex_search(
      lines[1],
      std::regex(R"(processing\s+0\s+1/25\s+\d+s\s+(now|\d+s ago)\s+in (9m5\ds|10m)\s+\{\})")));
  // The delayed job: due in about an hour, no lease.
  CHECK(std::regex_search(lines[2],
                          std::regex(R"(ready\s+0\s+0/25\s+\d+s\s+in (59m|1h)\s+-\s+\{\})")));
  CHECK(!std::regex_search(r.out, std::regex(R"(\d{4}-\d\d-\d\dT)")));

  SUBCASE("-o wide: RFC 3339 times, worker, token and group key") {
    RunResult w = with_columns(url, "", {"-o", "wide", "list"});
    const auto wl = lines_of(w.out);
    REQUIRE(wl.size() == 3);
    CHECK(std::regex_match(
        wl[0],
        std::regex(
            R"(ID\s+QUEUE\s+STATUS\s+PRI\s+ATTEMPTS\s+CREATED_AT\s+RUN_AT\s+LOCK_UNTIL\s+WORKER\s+TOKEN\s+GROUP\s+PROGRESS\s+PAYLOAD)")));
    const json token = show(url, job["id"].get<long long>())["lock_token"];
    CHECK(contains(wl[1], token.get<std::string>()));
    CHECK(contains(wl[1], " w1 "));
    CHECK(std::regex_search(wl[1], std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)")));
  }
  SUBCASE("-o json is unchanged: absolute times") {
    json all = ok_json(url, {"list"});
    CHECK(is_rfc3339_us(all[0]["run_at"]));
    CHECK(is_rfc3339_us(all[0]["lock_until"]));
  }
}

TEST_CASE("cli: a UTF-8 worker name keeps the leases table aligned; durations read 9m58s") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  enqueue(url, "emails");
  enqueue(url, "emails");
  claim_one(url, "emails",
            {"--lease", "10m", "--worker", "w\xc3\xb6rker-\xe6\x9d\xb1\xe4\xba\xac"});
  claim_one(url, "emails", {"--lease", "10m", "--worker", "plain"});

  RunResult r = with_columns(url, "", {"leases"});
  const auto lines = lines_of(r.out);
  REQUIRE(lines.size() >= 3);
  CHECK(lines[0].rfind("ID  QUEUE   WORKER", 0) == 0);
  const std::size_t held = column_of(lines[0], "HELD");
  for (int i : {1, 2}) {
    const std::string& l = lines[i];
    CAPTURE(l);
    // The cell after WORKER starts in the same terminal column on every row.
    const std::string name =
        contains(l, "plain") ? "plain" : "w\xc3\xb6rker-\xe6\x9d\xb1\xe4\xba\xac";
    const std::size_t next = l.find_first_not_of(' ', l.find(name) + name.size());
    CHECK(display_width(l.substr(0, next)) == held);
    // LEFT: "9m5Xs" or "10m", never "+599.8s"; no progress reported.
    CHECK(std::regex_search(l, std::regex(R"(\s(9m5\ds|10m)\s+1/25\s+-$)")));
  }
  CHECK(!contains(r.out, "+"));
}

TEST_CASE("cli: stats fits 80 columns; -o wide has every count") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  for (int i = 0; i < 3; ++i) enqueue(url, "emails");
  enqueue(url, "reports");
  ok(url, {"pause", "reports"});
  // Short names: 80 columns without cutting anything, even in a pipe.
  RunResult r = with_columns(url, "", {"stats"});
  CHECK(widest(r.out) <= 80);
  const auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 3);
  CHECK(std::regex_match(
      lines[0],
      std::regex(
          R"(QUEUE\s+READY\s+SCHED\s+PROC\s+EXPIRED\s+UNLEASED\s+DONE\s+FAILED\s+OLDEST\s+FLAGS)")));
  CHECK(std::regex_search(lines[1],
                          std::regex(R"(^emails\s+3\s+0\s+0\s+0\s+0\s+0\s+0\s+\d+(ms|s)\s+-$)")));
  CHECK(std::regex_search(lines[2], std::regex(R"(^reports\s.*\s+paused$)")));
  SUBCASE("a long queue name gives way on an 80-column terminal") {
    const std::string name = "reports-for-the-month-of-november-in-the-eu-west-region";
    enqueue(url, name);
    RunResult fitted = with_columns(url, "80", {"stats"});
    CHECK(widest(fitted.out) <= 80);
    CHECK(contains(fitted.out, "reports-"));
    CHECK(contains(fitted.out, kEllipsis));
    CHECK(!contains(fitted.out, name));
  }
  SUBCASE("-o wide: every count under its full name") {
    RunResult wide = with_columns(url, "", {"-o", "wide", "stats"});
    CHECK(std::regex_search(
        wide.out,
        std::regex(
            R"(^QUEUE\s+READY\s+SCHEDULED\s+WAITING\s+PROCESSING\s+EXPIRED\s+UNLEASED\s+DONE\s+FAILED\s+CANCELED\s+PAUSED\s+STRICT\s+MAX_PROCESSING\s+RATE\s+DEAD_LETTER\s+RETAIN\s+KEEP_DONE\s+OLDEST_READY\n)")));
  }
}

TEST_CASE("cli: show describes one job: a field a line, last_error a block, payload indented") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  json job = enqueue(url, "emails", R"({"to":"a@example.com","tags":["x","y"]})");
  json claimed = claim_one(url, "emails");
  const std::string traceback =
      "Traceback (most recent call last):\n  File \"send.py\", line 3, in <module>\n"
      "ValueError: bad\taddress \x1b[31mred\x1b[0m";
  ok(url, {"fail", id_text(job), "--token", claimed["lock_token"].get<std::string>(), "--error",
           traceback, "--permanent"});

  RunResult r = ok(url, {"show", id_text(job)});
  const auto lines = lines_of(r.out);
  CHECK(lines[0] == "id:            " + id_text(job));
  CHECK(contains(r.out, "\nqueue:         emails\n"));
  CHECK(contains(r.out, "\nstatus:        failed\n"));
  CHECK(contains(r.out,
                 "\nlast_error:\n"
                 "  Traceback (most recent call last):\n"
                 "    File \"send.py\", line 3, in <module>\n"
                 "  ValueError: bad\\taddress \\x1b[31mred\\x1b[0m\n"));
  CHECK(contains(r.out,
                 "\npayload:\n"
                 "  {\n"
                 "    \"to\": \"a@example.com\",\n"
                 "    \"tags\": [\n"
                 "      \"x\",\n"
                 "      \"y\"\n"
                 "    ]\n"
                 "  }\n"));
  CHECK(contains(r.out, "\nresult:        -\n"));
  // Times: RFC 3339 with how long ago.
  CHECK(std::regex_search(
      r.out, std::regex(R"(\ncreated_at:    \d{4}-\d\d-\d\dT\S+Z \((now|\d+s ago)\)\n)")));
  CHECK(r.out.find('\x1b') == std::string::npos);

  json doc = parse(ok(url, {"-o", "json", "show", id_text(job)}).out);
  CHECK(doc["last_error"] == traceback);
  CHECK(doc["payload"] == json::parse(R"({"to":"a@example.com","tags":["x","y"]})"));
}

TEST_CASE("cli: leases says when --limit cut the rows, and sums every lease per worker") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  for (int i = 0; i < 8; ++i) enqueue(url, "emails");
  claim(url, "emails", {"--limit", "5", "--worker", "alpha", "--lease", "300ms"});
  claim(url, "emails", {"--limit", "3", "--worker", "beta", "--lease", "10m"});
  REQUIRE(wait_until([&] { return ok_json(url, {"leases", "--expired"}).size() == 5; }));

  RunResult r = with_columns(url, "", {"leases", "--limit", "2"});
  INFO(dump(r));
  CHECK(contains(r.err, "showing 2 of 8 leases"));
  const auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 7);  // header, 2 rows, blank, summary header, 2 workers
  CHECK(lines[4].rfind("WORKER", 0) == 0);
  CHECK(std::regex_search(lines[5], std::regex(R"(^alpha\s+5\s+5\s+0\s+expired \S+ ago$)")));
  CHECK(std::regex_search(lines[6], std::regex(R"(^beta\s+3\s+0\s+0\s+(9m5\ds|10m)$)")));

  SUBCASE("filtered the same way: one worker") {
    RunResult b = with_columns(url, "", {"leases", "--worker", "beta", "--limit", "1"});
    CHECK(contains(b.err, "showing 1 of 3 leases"));
    CHECK(std::regex_search(b.out, std::regex(R"(\nbeta\s+3\s+0\s+0\s)")));
    CHECK(!contains(b.out, "alpha"));
  }
  SUBCASE("no cut, no word; -q silences it") {
    CHECK(with_columns(url, "", {"leases"}).err.empty());
    CHECK(with_columns(url, "", {"-q", "leases", "--limit", "1"}).err.empty());
  }
  SUBCASE("-o json: the rows asked for") {
    CHECK(ok_json(url, {"leases", "--limit", "2"}).size() == 2);
  }
}

TEST_CASE("cli: control characters in rows written by other code never reach the terminal") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const std::string evil_queue = "evil\x1b[2J\x1b[H", evil_worker =
                                                          "w\x1b]0;pwned\x07\xc2\x9b"
                                                          "1m";
  json job = enqueue(url, "evil");
  claim_one(url, "evil", {"--lease", "10m"});
  allow_any_queue_name(fixture);  // a row written before the table refused such names
  set_text(fixture, job, "queue", evil_queue);
  set_text(fixture, job, "locked_by", evil_worker);
  set_text(fixture, job, "group_key", "g\nnewline");

  const std::string shown_queue = "evil\\x1b[2J\\x1b[H";
  const std::string shown_worker = "w\\x1b]0;pwned\\x07\\u009b1m";
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"list"}, {"stats"}, {"leases"}, {"show", id_text(job)}, {"__complete", "queues"}}) {
    CAPTURE(args[0]);
    RunResult r = with_columns(url, "200", args);
    CHECK(r.out.find('\x1b') == std::string::npos);
    CHECK(r.out.find('\x07') == std::string::npos);
    CHECK(r.out.find("\xc2\x9b") == std::string::npos);
    CHECK(contains(r.out, shown_queue));
  }
  CHECK(contains(with_columns(url, "", {"leases"}).out, shown_worker));
  CHECK(contains(with_columns(url, "", {"show", id_text(job)}).out, "group_key:     g\\nnewline"));
  // __complete: one name a line, escaped.
  CHECK(with_columns(url, "", {"__complete", "queues"}).out == shown_queue + "\n");

  SUBCASE("Prometheus label values: the format's escapes, others as visible text") {
    set_text(fixture, job, "queue", "a\"b\\c\nd\x1b");
    RunResult p = with_columns(url, "", {"-o", "prometheus", "stats"});
    CHECK(p.out.find('\x1b') == std::string::npos);
    CHECK(contains(p.out,
                   "queuectl_jobs{queue=\"a\\\"b\\\\c\\nd\\\\x1b\",status=\"processing\"} 1\n"));
  }
  SUBCASE("-o wide too") {
    RunResult r = with_columns(url, "", {"-o", "wide", "list"});
    CHECK(r.out.find('\x1b') == std::string::npos);
    CHECK(contains(r.out, shown_queue));
    CHECK(contains(r.out, shown_worker));
  }
  SUBCASE("-o json keeps the stored value (JSON escapes it)") {
    json doc = ok_json(url, {"show", id_text(job)});
    CHECK(doc["queue"] == evil_queue);
    CHECK(doc["locked_by"] == evil_worker);
  }
}

TEST_CASE("cli: every writer refuses control characters in names and keys, writing nothing") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  json job = enqueue(url, "q");
  for (const std::string& bad : {std::string("q\x1b[2J"), std::string("q\xc2\x9b"),
                                 std::string("q\xe2\x80\xae"), std::string("q\n")}) {
    CAPTURE(bad);
    rejects(fixture, {"enqueue", bad, "{}"}, "queue name");
    rejects(fixture, {"enqueue", "q", "{}", "--dedupe-key", bad}, "--dedupe-key");
    rejects(fixture, {"enqueue", "q", "{}", "--group-key", bad}, "--group-key");
    rejects(fixture, {"claim", "q", "--worker", bad}, "worker");
    rejects(fixture, {"pause", bad}, "queue name");
    rejects(fixture, {"resume", bad}, "queue name");
    rejects(fixture, {"queue", bad, "--strict-groups", "on"}, "queue name");
    rejects(fixture, {"retry", "--queue", bad}, "queue name");
    // The message shows the value escaped, never raw, on one line.
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"claim", "q", "--worker", bad},
          std::vector<std::string>{"retry", bad}}) {
      RunResult r = queuectl(url, args);
      CHECK(r.exit_code == 2);
      CHECK(count_lines(r.err) == 1);
      CHECK(r.err.find('\x1b') == std::string::npos);
      CHECK(r.err.find("\xc2\x9b") == std::string::npos);
    }
  }
  // enqueue --from: a line's queue, dedupe or group key with an escape (JSON \u001b,
  // \u009b) refuses the whole input.
  for (const std::string field : {"queue", "dedupe_key", "group_key"}) {
    CAPTURE(field);
    const std::string queue = field == "queue" ? "" : "\"queue\":\"q\",";
    const std::string line =
        "{\"queue\":\"q\",\"payload\":{}}\n{" + queue + "\"" + field + "\":\"x\\u001b[2J\"}\n";
    rejects(fixture, {"enqueue", "--from", "-"}, "line 2", line);
    const std::string c1 = "{" + queue + "\"" + field + "\":\"x\\u009b\"}\n";
    rejects(fixture, {"enqueue", "--from", "-"}, "line 1", c1);
  }
  CHECK(job_rows(fixture) == 1);
}

TEST_CASE("cli: reap's progress on a terminal: done of total, rate, time left; then cleared") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  for (int i = 0; i < 5; ++i) enqueue(url, "q");
  claim(url, "q", {"--limit", "5", "--lease", "300ms"});
  REQUIRE(wait_until([&] { return ok_json(url, {"leases", "--expired"}).size() == 5; }));

  RunResult r = on_terminal(url, {"reap", "--batch", "2"});
  INFO(dump(r));
  CHECK(r.exit_code == 0);
  CHECK(std::regex_search(
      r.out,
      std::regex(R"(\rreaped 2 of 5 job\(s\) in 1 batch\(es\), [\d.]+/s, \S+ left\x1b\[K)")));
  CHECK(contains(r.out, "\rreaped 5 of 5 job(s) in 3 batch(es)"));
  // The line is cleared, and the report takes its place: no copy of the last progress line.
  const std::size_t last_clear = r.out.rfind("\r\x1b[K");
  REQUIRE(last_clear != std::string::npos);
  const std::string after = r.out.substr(last_clear + 4);
  CHECK(contains(after, "5"));
  CHECK(!contains(after, "reaped"));
}

TEST_CASE("cli: purge's progress on a terminal: count of total, rate, time left; the report once") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  for (int i = 0; i < 5; ++i) enqueue(url, "q");
  RunResult claimed = ok(url, {"-o", "ndjson", "claim", "q", "--limit", "5"});
  ok(url, {"ack", "--from", "-"}, claimed.out);

  RunResult r = on_terminal(url, {"purge", "--older-than", "0s", "--batch", "2"});
  INFO(dump(r));
  CHECK(r.exit_code == 0);
  CHECK(std::regex_search(r.out,
                          std::regex(R"(\rpurged 2 of 5 job\(s\), [\d.]+/s, \w+ left\x1b\[K)")));
  const std::size_t last_clear = r.out.rfind("\r\x1b[K");
  REQUIRE(last_clear != std::string::npos);
  CHECK(r.out.substr(last_clear + 4) == "purged 5 job(s)\r\n");
  CHECK(job_rows(fixture) == 0);
}

}  // namespace queuectl::testing::cli
