#include "db/row_reader.hpp"

#include <charconv>
#include <system_error>
#include <type_traits>

#include "core/errors.hpp"
#include "core/job_fields.hpp"
#include "core/time_text.hpp"

namespace queuectl {

void JobRowReader::bind(soci::statement& st) {
  for (std::size_t i = 0; i < kColumns; ++i) st.exchange(soci::into(values_[i], nulls_[i]));
}

Job JobRowReader::job() {
  // Each column's text is moved, not copied, into the job, and numbers are read where they
  // lie: a claim of a hundred jobs reads 2,500 columns.
  auto text = [&](std::size_t i) {
    return nulls_[i] == soci::i_null ? std::string() : std::move(values_[i]);
  };
  auto num = [&](std::size_t i) -> long long {
    static const std::string none;
    const std::string& v = nulls_[i] == soci::i_null ? none : values_[i];
    long long out = 0;
    // The leading digits, as std::stoll took them (a database sends no space or '+').
    if (std::from_chars(v.data(), v.data() + v.size(), out).ec != std::errc())
      throw Error("unexpected value '" + v + "' in job column " + std::to_string(i));
    return out;
  };
  // Columns in kJobFields order: the dialects' job_columns list them so (a unit test).
  // Each position is found at compile time.
#define QC_AT(name) std::integral_constant<std::size_t, job_field(name)>::value
  auto opt_at = [&](std::size_t i) -> std::optional<std::string> {
    if (nulls_[i] == soci::i_null) return std::nullopt;
    return std::move(values_[i]);
  };
  // PostgreSQL sends its times as its own text, which costs the server a third of to_char's
  // (postgresql_sql.hpp); the others send them as queuectl prints them.
  auto time_at = [&](std::size_t i) { return rfc3339_from_pg_text(text(i)); };
  auto opt_time_at = [&](std::size_t i) -> std::optional<std::string> {
    if (nulls_[i] == soci::i_null) return std::nullopt;
    std::string t = rfc3339_from_pg_text(values_[i]);
    if (t.empty()) return std::nullopt;  // infinity
    return t;
  };
  Job j;
  j.id = num(QC_AT("id"));
  j.queue = text(QC_AT("queue"));
  j.status = static_cast<Status>(num(QC_AT("status")));
  j.priority = static_cast<int>(num(QC_AT("priority")));
  j.run_at = time_at(QC_AT("run_at"));
  j.attempts = static_cast<int>(num(QC_AT("attempts")));
  j.max_attempts = static_cast<int>(num(QC_AT("max_attempts")));
  j.payload = text(QC_AT("payload"));
  j.result = opt_at(QC_AT("result"));
  j.last_error = opt_at(QC_AT("last_error"));
  j.locked_by = opt_at(QC_AT("locked_by"));
  j.lock_token = opt_at(QC_AT("lock_token"));
  j.locked_at = opt_time_at(QC_AT("locked_at"));
  j.lock_until = opt_time_at(QC_AT("lock_until"));
  j.dedupe_key = opt_at(QC_AT("dedupe_key"));
  j.group_key = opt_at(QC_AT("group_key"));
  j.created_at = time_at(QC_AT("created_at"));
  j.updated_at = time_at(QC_AT("updated_at"));
  j.finished_at = opt_time_at(QC_AT("finished_at"));
  j.dead_from = opt_at(QC_AT("dead_from"));
  j.trace_parent = opt_at(QC_AT("trace_parent"));
  j.trace_state = opt_at(QC_AT("trace_state"));
  if (nulls_[QC_AT("progress")] != soci::i_null)
    j.progress = static_cast<int>(num(QC_AT("progress")));
  j.progress_note = opt_at(QC_AT("progress_note"));
  j.checkpoint = opt_at(QC_AT("checkpoint"));
#undef QC_AT
  return j;
}

std::string values_row(const InsertValuesRows& rows, std::size_t index) {
  std::string row = rows.row;
  const std::string n = std::to_string(index);
  for (auto pos = row.find("{n}"); pos != std::string::npos; pos = row.find("{n}", pos + n.size()))
    row.replace(pos, 3, n);
  return row;
}

std::string expand_ids(const std::string& sql, std::size_t count) {
  std::string list;
  for (std::size_t i = 0; i < count; ++i) {
    if (i) list += ", ";
    list += ":id" + std::to_string(i);
  }
  std::string out = sql;
  auto pos = out.find("{ids}");
  if (pos != std::string::npos) out.replace(pos, 5, list);
  return out;
}

void bind_ids(soci::statement& st, std::vector<long long>& ids) {
  for (std::size_t i = 0; i < ids.size(); ++i)
    st.exchange(soci::use(ids[i], "id" + std::to_string(i)));
}

void prepare_once(soci::statement& st, const std::string& sql) {
  st.alloc();
  st.prepare(sql, soci::details::st_one_time_query);
  st.define_and_bind();
}

long long execute_on_ids(soci::session& session, const std::string& sql,
                         std::vector<long long>& ids) {
  soci::statement st(session);
  bind_ids(st, ids);
  prepare_once(st, expand_ids(sql, ids.size()));
  st.execute(true);
  return st.get_affected_rows();
}

}  // namespace queuectl
