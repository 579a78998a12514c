#include "db/row_reader.hpp"

#include "core/errors.hpp"

namespace queuectl {
namespace {

std::optional<std::string> opt(const std::string& v, soci::indicator ind) {
  if (ind == soci::i_null) return std::nullopt;
  return v;
}

}  // namespace

void JobRowReader::bind(soci::statement& st) {
  for (std::size_t i = 0; i < kColumns; ++i) st.exchange(soci::into(values_[i], nulls_[i]));
}

Job JobRowReader::job() const {
  auto text = [&](std::size_t i) { return nulls_[i] == soci::i_null ? std::string() : values_[i]; };
  auto num = [&](std::size_t i) -> long long {
    const std::string v = text(i);
    try {
      return std::stoll(v);
    } catch (const std::exception&) {
      throw Error("unexpected value '" + v + "' in job column " + std::to_string(i));
    }
  };
  Job j;
  j.id = num(0);
  j.queue = text(1);
  j.status = static_cast<Status>(num(2));
  j.priority = static_cast<int>(num(3));
  j.run_at = text(4);
  j.attempts = static_cast<int>(num(5));
  j.max_attempts = static_cast<int>(num(6));
  j.payload = text(7);
  j.result = opt(values_[8], nulls_[8]);
  j.last_error = opt(values_[9], nulls_[9]);
  j.locked_by = opt(values_[10], nulls_[10]);
  j.lock_token = opt(values_[11], nulls_[11]);
  j.locked_at = opt(values_[12], nulls_[12]);
  j.lock_until = opt(values_[13], nulls_[13]);
  j.dedupe_key = opt(values_[14], nulls_[14]);
  j.group_key = opt(values_[15], nulls_[15]);
  j.created_at = text(16);
  j.updated_at = text(17);
  j.finished_at = opt(values_[18], nulls_[18]);
  j.dead_from = opt(values_[19], nulls_[19]);
  return j;
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
