// `queuectl serve` as a background process for the browser and HTTP tests: started on a
// port of its own choosing (--listen 127.0.0.1:0), found through the one line it writes
// once listening, and stopped with SIGTERM, which must end it with exit 0.
#pragma once

#include <signal.h>
#include <sys/wait.h>

#include <exception>
#include <map>
#include <string>
#include <vector>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {

class ServeProcess {
 public:
  // Runs `queuectl --db DB_URL serve --listen 127.0.0.1:0 EXTRA...` (without the --listen
  // when EXTRA has one) with `env` added to the environment, stdout and stderr to a log.
  // Waits up to 20 s for the "listening on" line; fails the test, with the log, when the
  // server exits first or the line does not come.
  explicit ServeProcess(const std::string& db_url, const std::vector<std::string>& extra = {},
                        const std::map<std::string, std::string>& env = {}) {
    std::vector<std::string> argv = {QUEUECTL_BINARY, "--db", db_url, "serve"};
    bool listen_given = false;
    for (const auto& a : extra) listen_given |= a == "--listen" || a.rfind("--listen=", 0) == 0;
    if (!listen_given) argv.insert(argv.end(), {"--listen", "127.0.0.1:0"});
    argv.insert(argv.end(), extra.begin(), extra.end());
    log_path_ = dir_.path() + "/serve.log";
    pid_ = spawn_process(argv, log_path_, env);

    std::string line;
    bool exited = false;
    wait_until(
        [&] {
          line = listening_line_in(read_text(log_path_));
          exited = line.empty() && try_wait(pid_, exit_code_);
          return !line.empty() || exited;
        },
        20000);
    if (line.empty() || !parse_listening(line)) {
      if (!exited) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
      }
      const std::string why = exited         ? "exited " + std::to_string(exit_code_)
                              : line.empty() ? "never said it was listening (20 s)"
                                             : "wrote a listening line without a URL: " + line;
      FAIL("queuectl serve " << why << "; its log:\n" << read_text(log_path_));
    }
  }

  // Stops the server if the test did not; a bad exit is reported unless the test is already
  // failing with an exception (a REQUIRE), which is what to read then.
  ~ServeProcess() {
    if (pid_ <= 0 || stopped_) return;
    const int code = stop();
    if (std::uncaught_exceptions() == 0)
      CHECK_MESSAGE(code == 0, "queuectl serve exited " << code << " on SIGTERM; its log:\n"
                                                        << log());
  }

  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  // SIGTERM, then waits (20 s at most; then SIGKILL and -1). Returns the exit code; called
  // again, the same code.
  int stop() {
    if (stopped_ || pid_ <= 0) return exit_code_;
    kill(pid_, SIGTERM);
    exit_code_ = wait_exit(pid_, 20000);
    stopped_ = true;
    return exit_code_;
  }

  // "http://127.0.0.1:PORT" ("https://..." with TLS), without the trailing '/': a base for
  // httplib::Client and for page URLs (url() + "/#/job/7").
  const std::string& url() const { return url_; }
  int port() const { return port_; }
  int pid() const { return pid_; }
  // Whether the listening line says "(writes allowed)" rather than "(read-only...)".
  bool writes_allowed() const { return writes_allowed_; }
  // The whole "queuectl serve: listening on ..." line, without its newline.
  const std::string& listening_line() const { return listening_; }
  // What the server wrote so far (stdout and stderr).
  std::string log() const { return read_text(log_path_); }

 private:
  // "queuectl serve: listening on http://127.0.0.1:PORT/ (read-only)": the URL is the word
  // with "://", the port what follows the last ':' of its host part, up to the next '/'.
  bool parse_listening(const std::string& line) {
    const std::size_t scheme_end = line.find("://");
    if (scheme_end == std::string::npos) return false;
    const std::size_t start = line.rfind(' ', scheme_end) + 1;  // npos + 1 == 0
    const std::size_t slash = line.find('/', scheme_end + 3);
    if (slash == std::string::npos) return false;
    const std::size_t colon = line.rfind(':', slash);
    if (colon <= scheme_end + 3 || colon + 1 == slash) return false;
    const std::string digits = line.substr(colon + 1, slash - colon - 1);
    if (digits.size() > 5 || digits.find_first_not_of("0123456789") != std::string::npos)
      return false;
    listening_ = line;
    url_ = line.substr(start, slash - start);
    port_ = std::stoi(digits);
    writes_allowed_ = line.find("(writes allowed)") != std::string::npos;
    return port_ > 0;
  }

  // The complete listening line of `text`, or "" while it has not been written whole.
  static std::string listening_line_in(const std::string& text) {
    const std::size_t at = text.find("queuectl serve: listening on ");
    if (at == std::string::npos) return "";
    const std::size_t nl = text.find('\n', at);
    return nl == std::string::npos ? "" : text.substr(at, nl - at);
  }

  TempDir dir_;
  std::string log_path_;
  int pid_ = -1;
  int exit_code_ = -1;
  bool stopped_ = false;
  std::string listening_;
  std::string url_;
  int port_ = 0;
  bool writes_allowed_ = false;
};

}  // namespace queuectl::testing::cli
