// What the schedule repository's two files share (schedule_repository.cpp: definitions and
// reads; schedule_firing.cpp: firing): reading schedule rows. Internal to src/db.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include <soci/soci.h>

#include "core/errors.hpp"
#include "db/database.hpp"
#include "db/row_reader.hpp"
#include "db/schedule_repository.hpp"

namespace queuectl::schedule_rows {

// A row of the schedule columns (ScheduleStatements), read as text.
struct ScheduleRowReader {
  static constexpr std::size_t kColumns = 20;
  std::array<std::string, kColumns + 1> values;
  std::array<soci::indicator, kColumns + 1> nulls{};

  void bind(soci::statement& st, bool with_status = false) {
    for (std::size_t i = 0; i < kColumns + (with_status ? 1 : 0); ++i)
      st.exchange(soci::into(values[i], nulls[i]));
  }
  std::optional<std::int64_t> opt_num(std::size_t i) const {
    if (nulls[i] == soci::i_null) return std::nullopt;
    try {
      return std::stoll(values[i]);
    } catch (const std::exception&) {
      throw Error("unexpected value '" + values[i] + "' in schedule column " + std::to_string(i));
    }
  }
  std::int64_t num(std::size_t i) const { return opt_num(i).value_or(0); }
  std::string text(std::size_t i) const { return nulls[i] == soci::i_null ? "" : values[i]; }

  Schedule schedule(bool with_status = false) const {
    Schedule s;
    ScheduleDefinition& d = s.def;
    d.name = text(0);
    d.queue = text(1);
    d.payload = text(2);
    d.priority = static_cast<int>(num(3));
    d.max_attempts = static_cast<int>(num(4));
    if (nulls[5] != soci::i_null) d.group_key = values[5];
    d.schedule = text(6);
    d.time_zone = text(7);
    try {
      d.misfire.mode = parse_misfire(text(8));
    } catch (const UsageError&) {
      throw Error("schedule " + d.name + ": unknown misfire '" + text(8) + "' stored");
    }
    d.misfire.limit = static_cast<int>(num(9));
    d.misfire.after = std::chrono::seconds(num(10));
    d.overlap_skip = text(11) == "skip";
    s.paused = num(12) != 0;
    s.next_fire = num(13);
    s.last_fire = opt_num(14);
    s.last_job_id = opt_num(15);
    s.fired = num(16);
    s.missed = num(17);
    s.skipped = num(18);
    s.seq = num(19);
    if (with_status) {
      if (auto st = opt_num(20)) s.last_job_status = static_cast<Status>(*st);
    }
    return s;
  }
};

template <typename AddUses>
std::vector<Schedule> fetch_schedules(soci::session& session, const std::string& sql,
                                      AddUses add_uses, bool with_status = false) {
  soci::statement st(session);
  ScheduleRowReader reader;
  reader.bind(st, with_status);
  add_uses(st);
  prepare_once(st, sql);
  std::vector<Schedule> out;
  for (bool got = st.execute(true); got; got = st.fetch())
    out.push_back(reader.schedule(with_status));
  return out;
}

inline std::optional<Schedule> one_schedule(Database& db, const std::string& sql,
                                            const std::string& name) {
  std::string n = name;
  auto rows = fetch_schedules(db.session(), sql,
                              [&](soci::statement& st) { st.exchange(soci::use(n, "name")); });
  if (rows.empty()) return std::nullopt;
  return rows.front();
}

inline std::int64_t read_now(Database& db) {
  long long now = 0;
  db.session() << db.sql().schedules.now, soci::into(now);
  return now;
}

// The status of job `id` (a schedule's last job), none when it is gone (purged).
inline std::optional<Status> job_status(Database& db, std::int64_t id) {
  long long bound = id;
  int status = -1;
  soci::indicator ind = soci::i_null;
  db.session() << db.sql().schedules.job_status, soci::use(bound, "id"), soci::into(status, ind);
  if (ind == soci::i_null || !db.session().got_data()) return std::nullopt;
  return static_cast<Status>(status);
}

}  // namespace queuectl::schedule_rows
