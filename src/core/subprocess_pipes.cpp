// Subprocess: the worker's side of a captured command's pipes (its stdin, stdout, stderr and
// report descriptor), driven by the caller's poll().
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "core/subprocess.hpp"
#include "core/validate.hpp"

namespace queuectl {

void Subprocess::poll_fds(std::vector<pollfd>& fds) const {
  if (in_fd_ >= 0) fds.push_back({in_fd_, POLLOUT, 0});
  if (out_fd_ >= 0) fds.push_back({out_fd_, POLLIN, 0});
  if (err_fd_ >= 0) fds.push_back({err_fd_, POLLIN, 0});
  if (report_fd_ >= 0) fds.push_back({report_fd_, POLLIN, 0});
}

bool Subprocess::handle(int fd, short revents) {
  if (fd < 0 || (fd != in_fd_ && fd != out_fd_ && fd != err_fd_ && fd != report_fd_)) return false;
  if (fd == in_fd_) {
    if (revents & (POLLERR | POLLHUP)) {
      close_fd(in_fd_);  // the command does not read its stdin: fine
      return true;
    }
    ssize_t n = write(in_fd_, input_.data() + written_, input_.size() - written_);
    if (n > 0) written_ += static_cast<std::size_t>(n);
    if ((n < 0 && errno != EAGAIN && errno != EINTR) || written_ == input_.size()) close_fd(in_fd_);
    return true;
  }
  char buf[16384];
  ssize_t n = read(fd, buf, sizeof buf);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
  if (fd == report_fd_) {
    if (n <= 0) {
      pass_report_lines(true);
      close_fd(report_fd_);
    } else {
      report_line_.append(buf, static_cast<std::size_t>(n));
      pass_report_lines(false);
    }
    return true;
  }
  if (n <= 0) {
    if (fd == err_fd_) pass_stderr_lines(true);
    close_fd(fd == out_fd_ ? out_fd_ : err_fd_);
    return true;
  }
  std::size_t got = static_cast<std::size_t>(n);
  if (fd == out_fd_) {
    std::size_t room = kMaxStdout - std::min(kMaxStdout, out_.size());
    out_.append(buf, std::min(room, got));
    if (got > room) out_truncated_ = true;
  } else {
    err_.append(buf, got);
    if (err_.size() > 2 * kStderrTail) {
      err_.erase(0, err_.size() - kStderrTail);
      err_truncated_ = true;
    }
    if (on_stderr_line_) {
      err_line_.append(buf, got);
      pass_stderr_lines(false);
    }
  }
  return true;
}

void Subprocess::pass_stderr_lines(bool at_end) {
  if (!on_stderr_line_) return;
  std::size_t from = 0;
  while (from < err_line_.size()) {
    std::size_t nl = err_line_.find('\n', from);
    std::size_t end = nl == std::string::npos ? err_line_.size() : nl;
    if (nl == std::string::npos && end - from < kStderrLine && !at_end) break;
    end = std::min(end, from + kStderrLine);
    std::string line = err_line_.substr(from, end - from);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    on_stderr_line_(line);
    from = end < err_line_.size() && err_line_[end] == '\n' ? end + 1 : end;
  }
  err_line_.erase(0, from);
}

void Subprocess::pass_report_lines(bool at_end) {
  std::size_t from = 0;
  while (from < report_line_.size()) {
    const std::size_t nl = report_line_.find('\n', from);
    if (nl == std::string::npos) {
      // An unterminated line: kept until its end comes, up to kReportLine bytes.
      if (at_end && !report_skipping_) {
        on_report_line_(report_line_.substr(from));
      } else if (report_line_.size() - from > kReportLine) {
        if (!report_skipping_) on_report_line_(report_line_.substr(from, kReportLine));
        report_skipping_ = true;
      }
      if (at_end || report_skipping_) from = report_line_.size();
      break;
    }
    std::string line = report_line_.substr(from, nl - from);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!report_skipping_) on_report_line_(line.substr(0, kReportLine));
    report_skipping_ = false;
    from = nl + 1;
  }
  report_line_.erase(0, from);
}

std::string Subprocess::err_tail() const {
  std::string tail = err_.size() > kStderrTail ? err_.substr(err_.size() - kStderrTail) : err_;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  // Raw bytes: a cut at the start may split a character, and a command may print
  // anything; last_error is text, so it must be valid UTF-8 without NUL characters
  // (PostgreSQL's text cuts at the first one).
  for (char& c : tail)
    if (c == '\0') c = ' ';
  return to_valid_utf8((err_truncated_ || err_.size() > kStderrTail ? "..." : "") + tail);
}

}  // namespace queuectl
