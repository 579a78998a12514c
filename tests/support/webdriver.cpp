#include "support/webdriver.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <httplib.h>

#include "support/process.hpp"

namespace queuectl::testing {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kDriver = "/usr/bin/chromedriver";
constexpr const char* kBrowser = "/usr/bin/chromium";
// The key under which WebDriver passes an element reference (W3C "web element identifier").
constexpr const char* kElementKey = "element-6066-11e4-a52e-4f735466cecf";

void sleep_ms(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trim(const std::string& s) {
  auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  auto b = std::find_if_not(s.begin(), s.end(), space);
  auto e = std::find_if_not(s.rbegin(), s.rend(), space).base();
  return b < e ? std::string(b, e) : std::string();
}

// A loopback port that was free a moment ago: bound to port 0, read, closed. Another process
// may take it before chromedriver binds it; start_driver then tries another.
int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw WebDriverError("session not created", "webdriver: socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
            getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(fd);
  if (!ok) throw WebDriverError("session not created", "webdriver: no free loopback port");
  return ntohs(addr.sin_port);
}

std::string element_id(const json& ref) {
  if (!ref.is_object() || !ref.contains(kElementKey) || !ref[kElementKey].is_string())
    throw WebDriverError("invalid response", "webdriver: not an element: " + ref.dump());
  return ref[kElementKey].get<std::string>();
}

std::string base64_decode(const std::string& in) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(in.size() / 4 * 3);
  unsigned buffer = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    int v = value(c);
    if (v < 0) throw WebDriverError("invalid response", "webdriver: screenshot is not base64");
    buffer = (buffer << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  return out;
}

// Whether a child has ended (and reaps it): a chromedriver whose port was taken meanwhile
// exits at once.
bool reaped(int pid) {
  int status = 0;
  return waitpid(pid, &status, WNOHANG) == pid;
}

// Waits up to `timeout_ms` for a child to end; reaps it when it did.
bool reaped_within(int pid, int timeout_ms) {
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (Clock::now() < deadline) {
    if (reaped(pid)) return true;
    sleep_ms(50);
  }
  return reaped(pid);
}

// Every process below `root` (its children, theirs, ...), from /proc: the Chromium processes
// that chromedriver started, to end them should chromedriver leave any behind.
std::vector<int> descendants(int root) {
  std::multimap<int, int> children;  // parent pid -> pid
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
    if (name.empty() || !std::all_of(name.begin(), name.end(), digit)) continue;
    const std::string stat = read_file("/proc/" + name + "/stat");
    const std::size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream fields(stat.substr(paren + 1));
    std::string state;
    int parent = 0;
    if (fields >> state >> parent) children.emplace(parent, std::stoi(name));
  }
  std::vector<int> out;
  std::vector<int> todo = {root};
  while (!todo.empty()) {
    int pid = todo.back();
    todo.pop_back();
    auto [b, e] = children.equal_range(pid);
    for (auto it = b; it != e; ++it) {
      out.push_back(it->second);
      todo.push_back(it->second);
    }
  }
  return out;
}

// Still a Chromium process (a pid can be reused once its process has ended).
bool is_chromium(int pid) {
  return read_file("/proc/" + std::to_string(pid) + "/cmdline").find("chrom") != std::string::npos;
}

}  // namespace

TextPredicate text_equals(const std::string& expected) {
  return [expected](const std::string& text) { return trim(text) == expected; };
}

TextPredicate text_contains(const std::string& needle) {
  return [needle](const std::string& text) { return text.find(needle) != std::string::npos; };
}

TextPredicate any_text() {
  return [](const std::string&) { return true; };
}

WebDriver::WebDriver() {
  char tmpl[] = "/tmp/queuectl-webdriver-XXXXXX";
  if (!mkdtemp(tmpl)) throw WebDriverError("session not created", "webdriver: mkdtemp failed");
  temp_dir_ = tmpl;
  try {
    start_driver();
    create_session();
  } catch (...) {
    // No destructor runs for an object whose constructor threw: end what was started here.
    stop_driver();
    std::error_code ec;
    std::filesystem::remove_all(temp_dir_, ec);
    throw;
  }
}

WebDriver::~WebDriver() {
  if (!session_.empty()) {
    try {
      command("DELETE", "/session/" + session_);
    } catch (const std::exception&) {
      // stop_driver ends Chromium by its pids.
    }
  }
  stop_driver();
  std::error_code ec;
  std::filesystem::remove_all(temp_dir_, ec);
}

std::string WebDriver::driver_log() const {
  return read_file(temp_dir_ + "/chromedriver.log");
}

void WebDriver::start_driver() {
  std::string why;
  for (int attempt = 0; attempt < 5; ++attempt) {
    driver_port_ = free_port();
    driver_pid_ = spawn_process({kDriver, "--port=" + std::to_string(driver_port_)},
                                temp_dir_ + "/chromedriver.log");
    http_ = std::make_unique<httplib::Client>("127.0.0.1", driver_port_);
    http_->set_connection_timeout(2);
    // Creating a session starts Chromium, and a navigation waits for the page to load: on a
    // busy machine either can take long.
    http_->set_read_timeout(120);
    http_->set_write_timeout(30);
    auto deadline = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < deadline) {
      if (reaped(driver_pid_)) {
        driver_pid_ = -1;
        break;
      }
      if (auto res = http_->Get("/status"); res && res->status == 200) {
        json status = json::parse(res->body, nullptr, false);
        if (!status.is_discarded() && status["value"].is_object() &&
            status["value"].value("ready", false))
          return;
      }
      sleep_ms(50);
    }
    const bool exited = driver_pid_ < 0;
    why = std::string(kDriver) + (exited ? " exited" : " was not ready after 20 s");
    stop_driver();
    if (!exited) break;  // not a port taken meanwhile: no use retrying
  }
  throw WebDriverError("session not created", "webdriver: " + why + "; its log:\n" + driver_log());
}

void WebDriver::create_session() {
  const json options = {
      {"binary", kBrowser},
      {"args",
       {"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--window-size=1280,900", "--user-data-dir=" + temp_dir_ + "/profile"}}};
  const json capabilities = {
      {"browserName", "chrome"},
      {"goog:chromeOptions", options},
      // The page's console, read by browser_log() (CSP violations are reported there).
      {"goog:loggingPrefs", {{"browser", "ALL"}}},
      // Leave a window.confirm open for accept_alert(), instead of dismissing it.
      {"unhandledPromptBehavior", "ignore"},
      {"timeouts", {{"pageLoad", 60000}, {"script", 30000}, {"implicit", 0}}}};
  json value;
  try {
    value = command("POST", "/session", {{"capabilities", {{"alwaysMatch", capabilities}}}});
  } catch (const WebDriverError& e) {
    throw WebDriverError("session not created",
                         std::string(e.what()) + "\nchromedriver's log:\n" + driver_log());
  }
  if (!value.is_object() || !value["sessionId"].is_string())
    throw WebDriverError("session not created", "webdriver: no session id in " + value.dump());
  session_ = value["sessionId"].get<std::string>();
}

void WebDriver::stop_driver() {
  if (driver_pid_ <= 0) return;
  const std::vector<int> below = descendants(driver_pid_);
  kill(driver_pid_, SIGTERM);
  if (!reaped_within(driver_pid_, 5000)) {
    kill(driver_pid_, SIGKILL);
    wait_process(driver_pid_);
  }
  driver_pid_ = -1;
  // After a deleted session chromedriver has ended Chromium already; these are what a failed
  // deletion or a killed chromedriver left behind.
  for (int pid : below)
    if (kill(pid, 0) == 0 && is_chromium(pid)) kill(pid, SIGKILL);
}

json WebDriver::command(const std::string& method, const std::string& path, const json& body) {
  if (!http_) throw WebDriverError("http", "webdriver: chromedriver is not running");
  const std::string payload = (body.is_null() ? json::object() : body).dump();
  httplib::Result res = method == "GET"      ? http_->Get(path)
                        : method == "DELETE" ? http_->Delete(path)
                                             : http_->Post(path, payload, "application/json");
  const std::string what = "webdriver: " + method + " " + path;
  if (!res) throw WebDriverError("http", what + ": " + httplib::to_string(res.error()));
  json doc = json::parse(res->body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    throw WebDriverError("invalid response", what + ": HTTP " + std::to_string(res->status) + ": " +
                                                 res->body.substr(0, 2000));
  json value = doc.contains("value") ? doc["value"] : json();
  if (res->status != 200) {
    std::string code = "unknown error", message;
    if (value.is_object()) {
      code = value.value("error", code);
      message = value.value("message", "");
    }
    throw WebDriverError(code, what + ": " + code + ": " + message);
  }
  return value;
}

json WebDriver::session_command(const std::string& method, const std::string& suffix,
                                const json& body) {
  if (session_.empty()) throw WebDriverError("invalid session id", "webdriver: no session");
  return command(method, "/session/" + session_ + suffix, body);
}

void WebDriver::navigate(const std::string& url) {
  session_command("POST", "/url", {{"url", url}});
}

std::string WebDriver::current_url() {
  return session_command("GET", "/url").get<std::string>();
}

std::string WebDriver::find(const std::string& css) {
  return element_id(
      session_command("POST", "/element", {{"using", "css selector"}, {"value", css}}));
}

std::vector<std::string> WebDriver::find_all(const std::string& css) {
  json refs = session_command("POST", "/elements", {{"using", "css selector"}, {"value", css}});
  std::vector<std::string> out;
  for (const json& ref : refs) out.push_back(element_id(ref));
  return out;
}

std::string WebDriver::text(const std::string& element) {
  return session_command("GET", "/element/" + element + "/text").get<std::string>();
}

std::optional<std::string> WebDriver::attribute(const std::string& element,
                                                const std::string& name) {
  json value = session_command("GET", "/element/" + element + "/attribute/" + name);
  if (value.is_null()) return std::nullopt;
  return value.is_string() ? value.get<std::string>() : value.dump();
}

void WebDriver::click(const std::string& element) {
  session_command("POST", "/element/" + element + "/click", json::object());
}

json WebDriver::execute(const std::string& script, const json& args) {
  return session_command("POST", "/execute/sync", {{"script", script}, {"args", args}});
}

std::string WebDriver::wait_for(const std::string& css, const TextPredicate& predicate,
                                std::chrono::milliseconds timeout) {
  // One script reads every match with its text at one moment, so that a page re-rendering
  // between a find and a read (a refresh) cannot make the element stale in between.
  static const std::string script =
      "return Array.from(document.querySelectorAll(arguments[0]))"
      ".map(function (e) { return [e, e.innerText]; });";
  auto deadline = Clock::now() + timeout;
  json seen;
  while (true) {
    seen = execute(script, json::array({css}));
    for (const json& pair : seen) {
      const std::string text = pair[1].is_string() ? pair[1].get<std::string>() : "";
      if (!predicate || predicate(text)) return element_id(pair[0]);
    }
    if (Clock::now() >= deadline) break;
    sleep_ms(100);
  }
  std::string texts;
  for (const json& pair : seen) texts += "\n  " + pair[1].dump();
  throw WebDriverError(
      "wait timeout",
      "webdriver: waited " + std::to_string(timeout.count()) + " ms for '" + css + "': " +
          (seen.empty() ? std::string("no element matches") : "the matches' texts:" + texts));
}

std::string WebDriver::screenshot_png() {
  return base64_decode(session_command("GET", "/screenshot").get<std::string>());
}

void WebDriver::set_window_size(int width, int height) {
  session_command("POST", "/window/rect", {{"width", width}, {"height", height}});
}

bool WebDriver::accept_alert() {
  try {
    session_command("POST", "/alert/accept", json::object());
    return true;
  } catch (const WebDriverError& e) {
    if (e.code() == "no such alert") return false;
    throw;
  }
}

std::vector<std::string> WebDriver::browser_log() {
  // Chromedriver's own endpoint (not W3C; Selenium's get_log uses it).
  json entries = session_command("POST", "/se/log", {{"type", "browser"}});
  std::vector<std::string> out;
  for (const json& e : entries)
    out.push_back(e.value("level", std::string("?")) + " " + e.value("message", std::string()));
  return out;
}

}  // namespace queuectl::testing
