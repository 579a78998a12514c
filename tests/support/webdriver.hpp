// A small WebDriver (W3C protocol) client for the browser tests of `queuectl serve`: starts
// chromedriver on a free loopback port, opens one headless Chromium session, and drives it.
// Every failure throws (WebDriverError): a browser that cannot start fails the test, it never
// skips it, so that a broken browser setup cannot pass for a working page.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace httplib {
class Client;
}

namespace queuectl::testing {

// An error that chromedriver answered (code is the W3C error code, such as "no such element"
// or "stale element reference"), or one of this client's own ("session not created",
// "wait timeout", "http").
class WebDriverError : public std::runtime_error {
 public:
  WebDriverError(std::string code, const std::string& message)
      : std::runtime_error(message), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

// A test on the text of an element (as the browser renders it: innerText).
using TextPredicate = std::function<bool(const std::string&)>;
// The text, without surrounding white space, is exactly `expected`.
TextPredicate text_equals(const std::string& expected);
// The text contains `needle`.
TextPredicate text_contains(const std::string& needle);
// Any text at all, even empty: the element exists.
TextPredicate any_text();

class WebDriver {
 public:
  // Starts chromedriver and a headless Chromium session (window 1280x900, a fresh profile).
  WebDriver();
  // Deletes the session (chromedriver then ends Chromium) and ends chromedriver.
  ~WebDriver();
  WebDriver(const WebDriver&) = delete;
  WebDriver& operator=(const WebDriver&) = delete;

  // Loads `url` and waits for the document to load.
  void navigate(const std::string& url);
  std::string current_url();

  // Element ids (WebDriver references) of the first / every element matching `css`.
  // find throws (code "no such element") when none matches.
  std::string find(const std::string& css);
  std::vector<std::string> find_all(const std::string& css);
  std::string text(const std::string& element);
  // nullopt when the element has no such attribute.
  std::optional<std::string> attribute(const std::string& element, const std::string& name);
  void click(const std::string& element);

  // Runs `script` (a function body: `return ...;`) in the page with `args` (arguments[i]);
  // returns what it returned. Elements come back as {"element-6066-...": id}.
  nlohmann::json execute(const std::string& script,
                         const nlohmann::json& args = nlohmann::json::array());

  // Polls every 100 ms until an element matching `css` has a text that `predicate` accepts;
  // returns that element's id. Waits for the page to get there (a refresh, a route), so the
  // deadline is generous; past it, throws (code "wait timeout") naming the texts last seen.
  std::string wait_for(const std::string& css, const TextPredicate& predicate,
                       std::chrono::milliseconds timeout = std::chrono::seconds(20));

  // The current viewport as PNG bytes.
  std::string screenshot_png();
  void set_window_size(int width, int height);
  // Accepts an open window.confirm / alert; false when none is open.
  bool accept_alert();
  // The page's console messages since the last call ("LEVEL message" each), for diagnostics
  // and for CSP violations, which Chromium reports there.
  std::vector<std::string> browser_log();

 private:
  nlohmann::json command(const std::string& method, const std::string& path,
                         const nlohmann::json& body = nullptr);
  nlohmann::json session_command(const std::string& method, const std::string& suffix,
                                 const nlohmann::json& body = nullptr);
  // Starts chromedriver on a free port and waits for /status to say ready; retries a few
  // times when the port was taken meanwhile. Throws with chromedriver's log.
  void start_driver();
  void create_session();
  // Ends chromedriver and anything it started that is still running.
  void stop_driver();
  std::string driver_log() const;

  std::unique_ptr<httplib::Client> http_;
  int driver_pid_ = -1;
  int driver_port_ = 0;
  std::string temp_dir_;  // chromedriver's log and Chromium's profile
  std::string session_;
};

}  // namespace queuectl::testing
