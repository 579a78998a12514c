// `queuectl serve` in a real browser (headless Chromium through chromedriver): the page shows
// what the CLI wrote and follows it without a reload, shows an error whole, retries a job
// only when writes are allowed, and renders (screenshots for the docs when
// QUEUECTL_SCREENSHOT_DIR is set). The data is made with the CLI and checked with the CLI;
// the page is only read through its stable hooks (element ids and data-* attributes).
// "slow: " cases: each backend runs them as the ctest cli_<backend>_serve_browser.
#include <doctest/doctest.h>

#include <httplib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/serve_helpers.hpp"
#include "support/webdriver.hpp"

namespace queuectl::testing::cli {

namespace {

// Two lines: the failures view groups by the first, the job page shows both.
const std::string kError = "boom: disk full\nsecond line";
const std::string kFirstLine = "boom: disk full";

std::string overview_cell(const std::string& queue, const std::string& field) {
  return "#overview tr[data-queue=\"" + queue + "\"] td[data-field=\"" + field + "\"]";
}

std::string job_field(const std::string& id, const std::string& field) {
  return "#job-detail[data-job-id=\"" + id + "\"] [data-field=\"" + field + "\"]";
}

TextPredicate not_blank() {
  return [](const std::string& t) { return t.find_first_not_of(" \t\r\n") != std::string::npos; };
}

// Where the page is and what it shows, its console and the server's log: what to read when
// a wait fails.
std::string page_state(WebDriver& browser, const ServeProcess& serve) {
  std::string out;
  try {
    out += "page: " + browser.current_url() + "\n";
    json text = browser.execute("return document.body ? document.body.innerText : '';");
    out += "--- page text:\n" + text.get<std::string>().substr(0, 4000) + "\n";
    for (const auto& line : browser.browser_log()) out += "console: " + line + "\n";
  } catch (const std::exception& e) {
    // An open window.confirm, for one, blocks every read of the page.
    out += std::string("(page unreadable: ") + e.what() + ")\n";
  }
  return out + "--- server log:\n" + serve.log();
}

// Waits for an element of `css` whose text `predicate` accepts; returns it. Fails the test
// with the page's state when none comes (WebDriver::wait_for's generous deadline).
std::string wait_page(WebDriver& browser, const ServeProcess& serve, const std::string& css,
                      const TextPredicate& predicate, const std::string& what) {
  try {
    return browser.wait_for(css, predicate);
  } catch (const WebDriverError& e) {
    FAIL(what << ": " << e.what() << "\n" << page_state(browser, serve));
  }
  return "";
}

// Clicks the element of `css`, found again should a refresh replace it in between.
void click_fresh(WebDriver& browser, const ServeProcess& serve, const std::string& css) {
  for (int attempt = 0;; ++attempt) {
    try {
      browser.click(wait_page(browser, serve, css, any_text(), css));
      return;
    } catch (const WebDriverError& e) {
      if (e.code() != "stale element reference" || attempt == 4)
        FAIL("clicking " << css << ": " << e.what() << "\n" << page_state(browser, serve));
    }
  }
}

long long action_count(WebDriver& browser) {
  return browser.execute("return document.querySelectorAll('[data-action]').length;")
      .get<long long>();
}

// The page's scripts and styles obey its Content-Security-Policy (default-src 'self'): no
// inline script or style that Chromium refused, which it reports on the console.
void check_no_csp_violations(WebDriver& browser) {
  for (const auto& line : browser.browser_log())
    CHECK_MESSAGE(line.find("Content Security Policy") == std::string::npos, line);
}

// A job of `queue` failed for good through the CLI: one attempt, failed with `error`. The
// queue must have no other ready job (the claim takes this one).
json failed_job(const std::string& url, const std::string& queue,
                const std::string& error = kError) {
  json job = enqueue(url, queue, R"({"to":"someone@example.com"})", {"--max-attempts", "1"});
  json claimed = claim_one(url, queue);
  REQUIRE(claimed["id"] == job["id"]);
  ok(url,
     {"fail", id_text(job), "--token", claimed["lock_token"].get<std::string>(), "--error", error});
  json shown = show(url, id_of(job));
  INFO("show: " << shown.dump());
  REQUIRE(shown["status"] == "failed");
  return shown;
}

// A server's log line for a write: "queuectl serve: <user|-> <peer ip>: <command line> ->
// exit N", here by no user from loopback.
bool logged_write(const std::string& log, const std::string& command, int code) {
  std::istringstream lines(log);
  const std::string tail = "-> exit " + std::to_string(code);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("queuectl serve: - 127.0.0.1: ", 0) == 0 &&
        line.find(command) != std::string::npos && line.size() >= tail.size() &&
        line.compare(line.size() - tail.size(), tail.size(), tail) == 0)
      return true;
  return false;
}

// The big-endian 32-bit number at `at` of `bytes`.
unsigned be32(const std::string& bytes, std::size_t at) {
  unsigned v = 0;
  for (std::size_t i = at; i < at + 4; ++i) v = (v << 8) | static_cast<unsigned char>(bytes[i]);
  return v;
}

// Takes a screenshot of the viewport and requires a PNG of some substance (a nearly blank
// page at this size is about 6 kB); saves it as `name` in $QUEUECTL_SCREENSHOT_DIR when set.
void screenshot(WebDriver& browser, const std::string& name) {
  const std::string png = browser.screenshot_png();
  static const std::string signature("\x89PNG\r\n\x1a\n", 8);
  REQUIRE_MESSAGE(png.size() > 24, name << ": " << png.size() << " bytes");
  CHECK_MESSAGE(png.compare(0, 8, signature) == 0, name << " is not a PNG");
  CHECK_MESSAGE(png.size() > 10000, name << ": only " << png.size() << " bytes, a blank page?");
  // IHDR's width and height: the window of 1280x900 (less the browser's own bars) was used.
  const unsigned width = be32(png, 16), height = be32(png, 20);
  CHECK_MESSAGE((width >= 1000 && height >= 600), name << ": " << width << "x" << height);
  if (const char* dir = std::getenv("QUEUECTL_SCREENSHOT_DIR"); dir && *dir) {
    std::filesystem::create_directories(dir);
    const std::string path = std::string(dir) + "/" + name;
    std::ofstream out(path, std::ios::binary);
    out << png;
    out.close();
    REQUIRE_MESSAGE(out.good(), "could not write " << path);
    MESSAGE("saved " << path);
  }
}

}  // namespace

TEST_CASE("slow: serve browser: the overview counts what the CLI enqueued and follows it live") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  for (int i = 0; i < 3; ++i) enqueue(url, "web_q");
  enqueue(url, "other_q");
  ServeProcess serve(url, {"--refresh", "500ms"});
  WebDriver browser;
  browser.navigate(serve.url() + "/");

  const std::string ready = overview_cell("web_q", "ready");
  wait_page(browser, serve, ready, text_equals("3"), "web_q's ready count");
  wait_page(browser, serve, overview_cell("other_q", "ready"), text_equals("1"),
            "other_q's ready count");
  // A mark in the page's globals: a reload of the page (rather than a refresh of its data
  // by polling the API) would lose it.
  browser.execute("window.queuectlTestMark = 42; return null;");
  for (int i = 0; i < 2; ++i) enqueue(url, "web_q");
  wait_page(browser, serve, ready, text_equals("5"), "web_q's ready count after 2 more");
  // Settings show among the flags, as `stats` has them.
  ok(url, {"queue", "other_q", "--retain", "7d", "--keep-done", "off"});
  wait_page(browser, serve, overview_cell("other_q", "flags"),
            text_equals("retain=7d, keep-done=off"), "other_q's flags after its settings");
  CHECK_MESSAGE(browser.execute("return window.queuectlTestMark === 42;") == true,
                "the page reloaded instead of refreshing its data");
  wait_page(browser, serve, "#last-refresh", not_blank(), "the time of the last refresh");
  check_no_csp_violations(browser);
  CHECK(serve.stop() == 0);
}

TEST_CASE("slow: serve browser: a failed job's error shows on its page and among the failures") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  json job = failed_job(url, "web_fail");
  const std::string id = id_text(job);
  ServeProcess serve(url);
  WebDriver browser;
  browser.navigate(serve.url() + "/#/job/" + id);

  wait_page(browser, serve, job_field(id, "last_error"), text_contains(kFirstLine),
            "the job's last_error");
  // The whole error, its line break kept (a <pre>).
  wait_page(browser, serve, job_field(id, "last_error"), text_contains(kError),
            "both lines of the job's last_error");
  wait_page(browser, serve, job_field(id, "status"), text_contains("failed"), "the job's status");

  browser.navigate(serve.url() + "/#/failures");
  // Grouped by the error's first line only; the group names its queue.
  wait_page(
      browser, serve, "#failures tr[data-error-group=\"" + kFirstLine + "\"]",
      [](const std::string& t) {
        return t.find(kFirstLine) != std::string::npos && t.find("web_fail") != std::string::npos;
      },
      "the failures' group of the error");
  // Its queue link lists that queue's failed jobs with that error, found by the server.
  failed_job(url, "web_fail", "another error");
  click_fresh(browser, serve,
              "#failures tr[data-error-group=\"" + kFirstLine + "\"] td[data-field=\"queues\"] a");
  CHECK_MESSAGE(wait_until(
                    [&] {
                      return browser
                                 .execute(
                                     "return [...document.querySelectorAll('#jobs "
                                     "tr[data-job-id]')].map((r) => r.dataset.jobId);")
                                 .get<std::vector<std::string>>() == std::vector<std::string>{id};
                    },
                    10000),
                "the failed jobs with the error are not listed alone\n"
                    << page_state(browser, serve));
  check_no_csp_violations(browser);
  CHECK(serve.stop() == 0);
}

TEST_CASE("slow: serve browser: with --allow-writes the job page retries a failed job") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  json job = failed_job(url, "web_retry");
  const std::string id = id_text(job);
  ServeProcess serve(url, {"--allow-writes"});
  CHECK_MESSAGE(serve.writes_allowed(), serve.listening_line());
  WebDriver browser;
  browser.navigate(serve.url() + "/#/job/" + id);

  wait_page(browser, serve, job_field(id, "status"), text_contains("failed"), "the job's status");
  click_fresh(browser, serve,
              "#job-detail[data-job-id=\"" + id + "\"] button[data-action=\"retry\"]");
  // The page may ask first (window.confirm): accept it whenever it shows, until the CLI
  // sees the job ready again.
  json shown;
  const bool retried = wait_until(
      [&] {
        browser.accept_alert();
        shown = show(url, id_of(job));
        return shown["status"] == "ready";
      },
      10000, 100);
  INFO("show: " << shown.dump());
  REQUIRE_MESSAGE(retried, "not ready 10 s after the click\n" << page_state(browser, serve));

  // The page reports the outcome; the server logged the write.
  wait_page(browser, serve, "#flash", not_blank(), "the outcome of the retry");
  CHECK_MESSAGE(wait_until([&] { return logged_write(serve.log(), "retry", 0); }, 10000),
                "no write line for the retry in the server's log:\n"
                    << serve.log());

  // The jobs view filters on the server (a group key here) and cancels every job the
  // filter names, not only the page: two pages of 2 here, since the page holds 100.
  std::vector<std::int64_t> g1, g2;
  for (int i = 0; i < 3; ++i)
    g1.push_back(id_of(enqueue(url, "web_cancel", "{}", {"--group-key", "g1"})));
  g2.push_back(id_of(enqueue(url, "web_cancel", "{}", {"--group-key", "g2"})));
  browser.navigate(serve.url() + "/#/jobs?queue=web_cancel&group_key=g1");
  auto shown_ids = [&] {
    return browser
        .execute(
            "return [...document.querySelectorAll('#jobs tr[data-job-id]')]"
            ".map((r) => Number(r.dataset.jobId));")
        .get<std::vector<std::int64_t>>();
  };
  CHECK_MESSAGE(wait_until([&] { return shown_ids() == g1; }, 10000),
                "the jobs view does not list group g1 alone\n"
                    << page_state(browser, serve));
  // An id range, from the form: the ids strictly between the first and the last.
  browser.navigate(serve.url() + "/#/jobs?queue=web_cancel&after=" + std::to_string(g1[0]) +
                   "&before=" + std::to_string(g2[0]));
  CHECK_MESSAGE(wait_until(
                    [&] {
                      return shown_ids() == std::vector<std::int64_t>{g1[1], g1[2]};
                    },
                    10000),
                "the jobs view does not list the id range\n"
                    << page_state(browser, serve));
  CHECK(action_count(browser) == 0);  // no "Cancel all matching" with a range (and no row actions)
  browser.navigate(serve.url() + "/#/jobs?queue=web_cancel&group_key=g1");
  CHECK_MESSAGE(wait_until([&] { return shown_ids() == g1; }, 10000), page_state(browser, serve));
  click_fresh(browser, serve, "button[data-action=\"cancel-matching\"]");
  const bool canceled = wait_until(
      [&] {
        browser.accept_alert();
        for (std::int64_t id : g1)
          if (show(url, id)["status"] != "canceled") return false;
        return true;
      },
      10000, 100);
  REQUIRE_MESSAGE(canceled, "group g1 not canceled 10 s after the click\n"
                                << page_state(browser, serve));
  CHECK(show(url, g2[0])["status"] == "ready");
  CHECK_MESSAGE(wait_until([&] { return logged_write(serve.log(), "--group-key=g1", 0); }, 10000),
                serve.log());

  // A failure group's "Retry all" retries every failed job of its queues with that error.
  const std::string outage = "HTTP 503 from the billing API";
  std::vector<std::int64_t> failed_ids;
  for (int i = 0; i < 2; ++i) failed_ids.push_back(id_of(failed_job(url, "web_outage", outage)));
  const std::int64_t other = id_of(failed_job(url, "web_outage", "a bug"));
  browser.navigate(serve.url() + "/#/failures");
  click_fresh(
      browser, serve,
      "#failures tr[data-error-group=\"" + outage + "\"] button[data-action=\"retry-error\"]");
  const bool all_retried = wait_until(
      [&] {
        browser.accept_alert();
        for (std::int64_t id : failed_ids)
          if (show(url, id)["status"] != "ready") return false;
        return true;
      },
      10000, 100);
  REQUIRE_MESSAGE(all_retried, "the outage's jobs not ready 10 s after the click\n"
                                   << page_state(browser, serve));
  CHECK(show(url, other)["status"] == "failed");
  CHECK(serve.stop() == 0);
}

TEST_CASE("slow: serve browser: without --allow-writes no action shows and the API refuses") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  json job = failed_job(url, "web_ro");
  const std::string id = id_text(job);
  enqueue(url, "web_ro");
  ServeProcess serve(url, {"--refresh", "500ms"});
  CHECK_FALSE(serve.writes_allowed());
  WebDriver browser;

  browser.navigate(serve.url() + "/");
  wait_page(browser, serve, overview_cell("web_ro", "failed"), text_equals("1"),
            "web_ro's failed count");
  wait_page(browser, serve, overview_cell("web_ro", "ready"), text_equals("1"),
            "web_ro's ready count");
  CHECK(action_count(browser) == 0);
  browser.navigate(serve.url() + "/#/job/" + id);
  wait_page(browser, serve, job_field(id, "status"), text_contains("failed"), "the job's status");
  wait_page(browser, serve, job_field(id, "last_error"), text_contains(kFirstLine),
            "the job's last_error");
  CHECK(action_count(browser) == 0);
  // Again after a refresh or two (500 ms each), should buttons come with later data.
  sleep_ms(1500);
  CHECK_MESSAGE(action_count(browser) == 0, page_state(browser, serve));

  // The API refuses the write itself, with a valid CSRF token.
  httplib::Client http(serve.url());
  http.set_read_timeout(30);
  auto session = http.Get("/api/session");
  REQUIRE_MESSAGE(static_cast<bool>(session),
                  "GET /api/session: " << httplib::to_string(session.error()));
  INFO("/api/session: " << session->body);
  REQUIRE(session->status == 200);
  json state = parse(session->body);
  CHECK(state["writes"] == false);
  // Writes off come with a reason the page shows (its wording is the server's).
  const json reason = state["read_only_reason"];
  CHECK((reason.is_string() && !reason.get<std::string>().empty()));
  REQUIRE(state["csrf_token"].is_string());
  const httplib::Headers headers = {{"X-CSRF-Token", state["csrf_token"].get<std::string>()}};
  const json body = {{"ids", json::array({job["id"]})}};
  auto refused = http.Post("/api/retry", headers, body.dump(), "application/json");
  REQUIRE_MESSAGE(static_cast<bool>(refused),
                  "POST /api/retry: " << httplib::to_string(refused.error()));
  INFO("POST /api/retry: " << refused->status << " " << refused->body);
  CHECK(refused->status == 403);
  json refusal = parse(refused->body);
  REQUIRE(refusal.is_object());
  CHECK(refusal["error"].is_string());
  CHECK(refusal.value("error", "").rfind("writes are off", 0) == 0);
  CHECK(show(url, id_of(job))["status"] == "failed");
  CHECK_FALSE(logged_write(serve.log(), "retry", 0));
  CHECK(serve.stop() == 0);
}

TEST_CASE("slow: serve browser: screenshots of the overview and of a failed job") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  // Queues with work in every state worth seeing: failed first (each claim takes the one
  // ready job), then ready, processing (long leases) and scheduled.
  failed_job(url, "shot.emails", "smtp: connection refused by mx1.example.com");
  failed_job(url, "shot.emails", "smtp: connection refused by mx2.example.com");
  json job = failed_job(url, "shot.reports", kError);
  enqueue_many(url, "shot.emails", 12);
  REQUIRE(claim(url, "shot.emails", {"--limit", "3", "--lease", "10m"}).size() == 3);
  enqueue_many(url, "shot.reports", 4);
  REQUIRE(claim(url, "shot.reports", {"--lease", "10m"}).size() == 1);
  enqueue_many(url, "shot.thumbnails", 30);
  for (int i = 0; i < 2; ++i) enqueue(url, "shot.thumbnails", "{}", {"--delay", "1h"});
  ServeProcess serve(url, {"--allow-writes"});
  WebDriver browser;
  browser.set_window_size(1280, 900);

  browser.navigate(serve.url() + "/");
  wait_page(browser, serve, overview_cell("shot.emails", "ready"), text_equals("9"),
            "shot.emails' ready count");
  wait_page(browser, serve, overview_cell("shot.emails", "processing"), text_equals("3"),
            "shot.emails' processing count");
  wait_page(browser, serve, overview_cell("shot.emails", "failed"), text_equals("2"),
            "shot.emails' failed count");
  wait_page(browser, serve, overview_cell("shot.reports", "failed"), text_equals("1"),
            "shot.reports' failed count");
  wait_page(browser, serve, overview_cell("shot.thumbnails", "scheduled"), text_equals("2"),
            "shot.thumbnails' scheduled count");
  screenshot(browser, "serve-overview.png");

  const std::string id = id_text(job);
  browser.navigate(serve.url() + "/#/job/" + id);
  wait_page(browser, serve, job_field(id, "last_error"), text_contains(kFirstLine),
            "the job's last_error");
  screenshot(browser, "serve-job.png");
  CHECK(serve.stop() == 0);
}

}  // namespace queuectl::testing::cli
