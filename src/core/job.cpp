#include "core/job.hpp"

#include <string>

#include "core/errors.hpp"

namespace queuectl {

std::string_view status_name(Status s) {
  switch (s) {
    case Status::ready:
      return "ready";
    case Status::processing:
      return "processing";
    case Status::done:
      return "done";
    case Status::failed:
      return "failed";
    case Status::canceled:
      return "canceled";
  }
  return "unknown";
}

bool is_waiting_run_at(std::string_view run_at) {
  return run_at.rfind(kWaitingRunAtText, 0) == 0 || run_at.rfind(kWaitingRunAtTextMysql, 0) == 0;
}

bool is_waiting(const Job& job) {
  return job.status == Status::ready && is_waiting_run_at(job.run_at);
}

std::string_view job_status_text(const Job& job) {
  return is_waiting(job) ? "waiting" : status_name(job.status);
}

Status parse_status(std::string_view name, std::string_view taken) {
  for (Status s :
       {Status::ready, Status::processing, Status::done, Status::failed, Status::canceled}) {
    if (status_name(s) == name) return s;
  }
  if (name == "cancelled") return Status::canceled;
  const std::string expected = taken.empty()
                                   ? "expected ready, waiting, processing, done, failed or canceled"
                                   : std::string(taken);
  if (name == "waiting")
    throw UsageError(taken.empty() ? "status waiting is not taken here"
                                   : expected + ", not waiting");
  throw UsageError("unknown status '" + std::string(name) + "': " + expected);
}

std::vector<Status> parse_status_list(std::string_view list, std::string_view taken) {
  std::vector<Status> out;
  while (true) {
    auto comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    if (item.empty()) throw UsageError("empty status in list '" + std::string(list) + "'");
    Status s = parse_status(item, taken);
    bool seen = false;
    for (Status o : out) seen = seen || o == s;
    if (!seen) out.push_back(s);
    if (comma == std::string_view::npos) break;
    list = list.substr(comma + 1);
  }
  return out;
}

}  // namespace queuectl
