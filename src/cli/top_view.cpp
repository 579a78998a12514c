#include "cli/top_view.hpp"

#include <algorithm>
#include <cstdio>

#include "core/display_text.hpp"
#include "core/duration.hpp"
#include "core/human_time.hpp"

namespace queuectl {
namespace {

// Text from the table, made safe and fitted: escaped, cut to `width`, padded (or
// right-aligned) to it.
std::string cell(const std::string& text, std::size_t width, bool right = false) {
  const std::string fitted = fit_width(visible_text(text), width);
  const std::size_t used = display_width(fitted);
  const std::string pad(used < width ? width - used : 0, ' ');
  return right ? pad + fitted : fitted + pad;
}

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

// HH:MM:SS of an RFC 3339 time, else the text as it is.
std::string clock_of(const std::string& now) {
  return now.size() >= 19 && now[10] == 'T' ? now.substr(11, 8) + "Z" : now;
}

std::string flags_of(const TopQueue& q) {
  std::string flags;
  if (q.paused) flags += 'P';
  if (q.strict_groups) flags += 'S';
  if (q.max_processing) flags += 'L';
  if (q.rate) flags += 'R';
  if (q.retain_ms) flags += 'T';
  if (!q.keep_done) flags += 'N';
  return flags.empty() ? "-" : flags;
}

// Columns of the queue table after QUEUE: title, width (right-aligned).
struct Column {
  const char* title;
  std::size_t width;
};
constexpr Column kQueueColumns[] = {{"READY", 6},  {"SCHED", 6},  {"PROC", 7},   {"EXPIRED", 7},
                                    {"FAILED", 6}, {"DONE/M", 6}, {"OLDEST", 6}, {"FLAGS", 6}};
constexpr std::size_t kQueueMin = 8, kQueueMax = 64;

std::size_t numbers_width() {
  std::size_t w = 0;
  for (const Column& c : kQueueColumns) w += 1 + c.width;
  return w;
}

std::vector<std::string> queue_cells(const TopQueue& q) {
  std::string proc = compact_count(q.processing, 7);
  if (q.max_processing) {
    const std::string limited =
        compact_count(q.processing, 7) + "/" + compact_count(*q.max_processing, 7);
    if (limited.size() <= 7) proc = limited;
  }
  return {compact_count(q.ready, 6),
          compact_count(q.scheduled, 6),
          proc,
          compact_count(q.expired, 7),
          compact_count(q.failed, 6),
          compact_count(q.done_last_minute, 6),
          q.oldest_ready_age_seconds ? human_duration(*q.oldest_ready_age_seconds) : "-",
          flags_of(q)};
}

std::string queue_line(const std::string& name, const std::vector<std::string>& cells,
                       std::size_t name_width) {
  std::string line = cell(name, name_width);
  for (std::size_t i = 0; i < cells.size(); ++i)
    line += " " + cell(cells[i], kQueueColumns[i].width, i + 1 < cells.size());
  return line;
}

}  // namespace

std::string compact_count(std::int64_t n, std::size_t width) {
  std::string text = std::to_string(n);
  if (text.size() <= width || n < 0) return text;
  const char* units[] = {"k", "M", "G", "T", "P"};
  double v = static_cast<double>(n);
  for (const char* unit : units) {
    v /= 1000;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%s", v, unit);
    if (std::string(buf).size() <= width && v < 100) return buf;
    std::snprintf(buf, sizeof buf, "%.0f%s", v, unit);
    if (std::string(buf).size() <= width) return buf;
  }
  return text;
}

std::vector<std::string> render_top(const TopSnapshot& snap, const TopFrameInfo& info,
                                    std::size_t width, std::optional<std::size_t> height) {
  width = std::max<std::size_t>(width, 20);
  std::vector<std::string> lines;

  // Title: the database on the left, the clock (and how often it refreshes) on the right.
  std::string right = clock_of(snap.now);
  if (!info.interval.empty()) right += "  every " + info.interval;
  const std::string left = "queuectl top  " + info.source;
  const std::size_t right_w = display_width(right);
  if (right_w + 2 < width)
    lines.push_back(cell(left, width - right_w - 1) + " " + right);
  else
    lines.push_back(cell(left, width));
  if (!info.trouble.empty()) lines.push_back(cell("! " + info.trouble, width));

  TopQueue total;
  for (const TopQueue& q : snap.queues) {
    total.ready += q.ready;
    total.scheduled += q.scheduled;
    total.waiting += q.waiting;
    total.processing += q.processing;
    total.expired += q.expired;
    total.failed += q.failed;
    total.done_last_minute += q.done_last_minute;
  }
  lines.push_back(
      cell(std::to_string(snap.queues.size()) + " queues  ready " + std::to_string(total.ready) +
               "  sched " + std::to_string(total.scheduled) +
               (total.waiting ? "  waiting " + std::to_string(total.waiting) : "") + "  proc " +
               std::to_string(total.processing) + "  expired " + std::to_string(total.expired) +
               "  failed " + std::to_string(total.failed) + "  done/min " +
               std::to_string(total.done_last_minute),
           width));
  // Schedules nothing fires: one line, the most overdue first.
  if (!snap.late_schedules.empty()) {
    std::string late = "LATE schedules:";
    for (const TopLateSchedule& l : snap.late_schedules)
      late += " " + l.name + " (" + human_duration(static_cast<double>(l.late_seconds)) + ")";
    lines.push_back(cell(late + "  see queuectl cron list", width));
  }

  // How many rows each section gets: all of them without a height; with one, workers and
  // failures give way first (to one row each), then queues.
  const std::size_t queue_rows = std::max<std::size_t>(snap.queues.size(), 1);
  std::size_t worker_rows = std::min<std::size_t>(snap.workers.size(), kTopWorkers);
  std::size_t failure_rows = std::min<std::size_t>(snap.failures.size(), kTopFailures);
  // Running jobs that reported progress: a section only while there are some.
  std::size_t progress_rows = std::min<std::size_t>(snap.progress.size(), kTopFailures);
  std::size_t queues_shown = snap.queues.size();
  if (height) {
    // title, summary, blank, queue header, blank, worker header, blank, failure header, blank,
    // footer; and the line that says the database does not answer, when it does not; and
    // blank and header of the progress section, when it is there
    const std::size_t fixed = (info.trouble.empty() ? 10 : 11) +
                              (snap.late_schedules.empty() ? 0 : 1) + (progress_rows ? 2 : 0);
    const std::size_t avail = *height > fixed ? *height - fixed : 0;
    while (queue_rows + worker_rows + failure_rows + progress_rows > avail &&
           (worker_rows > 1 || failure_rows > 1 || progress_rows > 1)) {
      if (progress_rows > 1)
        --progress_rows;
      else if (worker_rows >= failure_rows && worker_rows > 1)
        --worker_rows;
      else
        --failure_rows;
    }
    if (queue_rows + worker_rows + failure_rows + progress_rows > avail) {
      const std::size_t others = worker_rows + failure_rows + progress_rows;
      const std::size_t room = avail > others + 1 ? avail - others - 1 : 0;
      queues_shown = std::min(queues_shown, room);
    }
  }

  // Queues: QUEUE takes what the numbers leave, as wide as the longest name needs.
  std::size_t longest = 5;
  for (const TopQueue& q : snap.queues)
    longest = std::max(longest, display_width(visible_text(q.queue)));
  const std::size_t numbers = numbers_width();
  std::size_t name_width = width > numbers + kQueueMin ? width - numbers : kQueueMin;
  name_width = std::min({name_width, std::max(longest, kQueueMin), kQueueMax});
  lines.push_back("");
  std::vector<std::string> titles;
  for (const Column& c : kQueueColumns) titles.push_back(c.title);
  lines.push_back(queue_line("QUEUE", titles, name_width));
  if (snap.queues.empty())
    lines.push_back("no queue has jobs ready, running, failed or done in the last minute");
  for (std::size_t i = 0; i < queues_shown; ++i)
    lines.push_back(queue_line(snap.queues[i].queue, queue_cells(snap.queues[i]), name_width));
  if (queues_shown < snap.queues.size())
    lines.push_back("+" + std::to_string(snap.queues.size() - queues_shown) +
                    " more queue(s): a taller window shows them, or `queuectl stats`");

  // The busiest workers.
  lines.push_back("");
  if (snap.workers.empty()) {
    lines.push_back("no worker holds a lease");
  } else {
    const std::size_t worker_width = width > 16 + 6 ? width - 16 : 6;
    lines.push_back(cell("WORKER", worker_width) + " " + cell("LEASES", 7, true) + " " +
                    cell("EXPIRED", 7, true));
    for (std::size_t i = 0; i < worker_rows; ++i) {
      const TopWorker& w = snap.workers[i];
      lines.push_back(cell(w.worker.value_or("-"), worker_width) + " " +
                      cell(std::to_string(w.leases), 7, true) + " " +
                      cell(std::to_string(w.expired), 7, true));
    }
  }

  // Running jobs' last reported progress and note, the latest first.
  if (progress_rows) {
    lines.push_back("");
    std::size_t id_width = 3;
    for (std::size_t i = 0; i < progress_rows; ++i)
      id_width = std::max(id_width, std::to_string(snap.progress[i].id).size());
    const std::size_t queue_width = 16, pct_width = 4;
    const std::size_t used = id_width + 1 + queue_width + 1 + pct_width + 1;
    const std::size_t note_width = width > used + 5 ? width - used : 5;
    lines.push_back(cell("JOB", id_width, true) + " " + cell("QUEUE", queue_width) + " " +
                    cell("DONE", pct_width, true) + " " + cell("NOTE", note_width));
    for (std::size_t i = 0; i < progress_rows; ++i) {
      const TopProgress& p = snap.progress[i];
      lines.push_back(cell(std::to_string(p.id), id_width, true) + " " +
                      cell(p.queue, queue_width) + " " +
                      cell(p.progress ? std::to_string(*p.progress) + "%" : "-", pct_width, true) +
                      " " + cell(p.note.value_or("-"), note_width));
    }
  }

  // The newest failures, their error's first line.
  lines.push_back("");
  if (snap.failures.empty()) {
    lines.push_back("no failed jobs");
  } else {
    std::size_t id_width = 3, queue_width = 5;
    for (std::size_t i = 0; i < failure_rows; ++i) {
      id_width = std::max(id_width, std::to_string(snap.failures[i].id).size());
      queue_width = std::max(queue_width, display_width(visible_text(snap.failures[i].queue)));
    }
    queue_width = std::min<std::size_t>(queue_width, 16);
    const std::size_t age_width = 8;
    const std::size_t used = id_width + 1 + queue_width + 1 + age_width + 1;
    const std::size_t error_width = width > used + 5 ? width - used : 5;
    lines.push_back(cell("JOB", id_width, true) + " " + cell("QUEUE", queue_width) + " " +
                    cell("FAILED", age_width) + " " + cell("ERROR", error_width));
    for (std::size_t i = 0; i < failure_rows; ++i) {
      const TopFailure& f = snap.failures[i];
      const std::string age = f.age_seconds ? human_duration(*f.age_seconds) + " ago" : "-";
      const std::string error = first_line(f.error);
      lines.push_back(cell(std::to_string(f.id), id_width, true) + " " +
                      cell(f.queue, queue_width) + " " + cell(age, age_width) + " " +
                      cell(error.empty() ? "-" : error, error_width));
    }
  }

  std::string footer = "FLAGS P paused S strict L limit R rate T retain N acks delete";
  if (info.keys) footer = "q quit  r refresh  " + footer;
  lines.push_back("");
  lines.push_back(cell(footer, width));

  for (std::string& line : lines) {
    // Cells are fitted one by one; a row is also never wider than the frame, nor ends in
    // padding.
    line = fit_width(line, width);
    while (!line.empty() && line.back() == ' ') line.pop_back();
  }
  if (height && lines.size() > *height) lines.resize(*height);
  return lines;
}

nlohmann::ordered_json top_json(const TopSnapshot& snap) {
  using json = nlohmann::ordered_json;
  json doc;
  doc["now"] = snap.now;
  doc["queues"] = json::array();
  for (const TopQueue& q : snap.queues)
    doc["queues"].push_back(
        json{{"queue", q.queue},
             {"ready", q.ready},
             {"scheduled", q.scheduled},
             {"waiting", q.waiting},
             {"processing", q.processing},
             {"expired", q.expired},
             {"failed", q.failed},
             {"done_last_minute", q.done_last_minute},
             {"oldest_ready_age_seconds",
              q.oldest_ready_age_seconds ? json(*q.oldest_ready_age_seconds) : json()},
             {"paused", q.paused},
             {"strict_groups", q.strict_groups},
             {"max_processing", q.max_processing ? json(*q.max_processing) : json()},
             {"rate", q.rate ? json(*q.rate) : json()},
             {"retain",
              q.retain_ms ? json(Duration(std::chrono::milliseconds(*q.retain_ms)).str()) : json()},
             {"keep_done", q.keep_done}});
  doc["workers"] = json::array();
  for (const TopWorker& w : snap.workers)
    doc["workers"].push_back(json{{"worker", w.worker ? json(*w.worker) : json()},
                                  {"leases", w.leases},
                                  {"expired", w.expired}});
  doc["failures"] = json::array();
  for (const TopFailure& f : snap.failures)
    doc["failures"].push_back(
        json{{"id", f.id},
             {"queue", f.queue},
             {"attempts", f.attempts},
             {"failed_seconds_ago", f.age_seconds ? json(*f.age_seconds) : json()},
             {"error", first_line(f.error)}});
  doc["progress"] = json::array();
  for (const TopProgress& p : snap.progress)
    doc["progress"].push_back(json{{"id", p.id},
                                   {"queue", p.queue},
                                   {"worker", p.worker ? json(*p.worker) : json()},
                                   {"progress", p.progress ? json(*p.progress) : json()},
                                   {"note", p.note ? json(*p.note) : json()}});
  doc["late_schedules"] = json::array();
  for (const TopLateSchedule& l : snap.late_schedules)
    doc["late_schedules"].push_back(
        json{{"name", l.name}, {"queue", l.queue}, {"late_seconds", l.late_seconds}});
  return doc;
}

}  // namespace queuectl
