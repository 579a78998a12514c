// Runs the real queuectl binary (or any program) and captures what it printed.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace queuectl::testing {

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `argv` with `input` on stdin and extra environment variables; waits for it.
RunResult run_process(const std::vector<std::string>& argv, const std::string& input = "",
                      const std::map<std::string, std::string>& env = {});

// Runs queuectl with --db `url` followed by `args`.
RunResult queuectl(const std::string& url, const std::vector<std::string>& args,
                   const std::string& input = "",
                   const std::map<std::string, std::string>& env = {});

// Starts a process in the background; returns its pid. Output goes to `log_path`.
int spawn_process(const std::vector<std::string>& argv, const std::string& log_path,
                  const std::map<std::string, std::string>& env = {});
// Waits for a spawned process; returns its exit code (128 + signal when killed).
int wait_process(int pid);

}  // namespace queuectl::testing
