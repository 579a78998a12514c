// Small helpers shared by the unit tests: a substring test, expecting a UsageError, and
// setting an environment variable for the length of one test.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

#include <doctest/doctest.h>

#include "core/errors.hpp"

namespace queuectl::test {

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// Runs `f`, which must throw UsageError (exit code 2); returns the error's message.
template <class F>
std::string usage_error_of(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    CHECK(e.code() == ExitCode::usage);
    CHECK(static_cast<int>(e.code()) == 2);
    return e.what();
  } catch (const std::exception& e) {
    FAIL("expected UsageError, got another exception: " << e.what());
  }
  FAIL("expected UsageError, nothing was thrown");
  return {};
}

// Sets (or, with nullopt, unsets) an environment variable; restores the old value on exit.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = std::string(old);
    if (value)
      ::setenv(name, value->c_str(), 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_.c_str(), old_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace queuectl::test
