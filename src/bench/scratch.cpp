#include "bench/scratch.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <stdexcept>
#include <variant>

#include "core/errors.hpp"
#include "db/migrations.hpp"

namespace queuectl::bench {
namespace {

// The name part of each strategy: letters, digits and underscores.
const char* tag(Strategy s) {
  switch (s) {
    case Strategy::naive:
      return "naive";
    case Strategy::for_update:
      return "for_update";
    case Strategy::skip_locked:
      return "skip_locked";
    case Strategy::claim:
      break;
  }
  return "claim";
}

bool safe_name(const std::string& name) {
  return !name.empty() && name.size() <= 60 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

// The words of a DDL statement, upper-cased, without comments: identifiers and keywords as
// runs of letters, digits and underscores; any other character ends a word.
std::vector<std::string> words(const std::string& sql) {
  std::vector<std::string> out;
  std::string word;
  for (std::size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    if (c == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {
      i = std::min(sql.find('\n', i), sql.size());
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      word += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      continue;
    } else if (c == '(' || c == ';') {
      if (!word.empty()) out.push_back(word);
      word.clear();
      out.push_back(std::string(1, c));
      continue;
    }
    if (!word.empty()) out.push_back(word);
    word.clear();
  }
  if (!word.empty()) out.push_back(word);
  return out;
}

// What a migration statement creates or changes: the table it creates, and every object it
// names as its target (an index and its table, a trigger and its table). Both empty for
// anything but CREATE TABLE, CREATE [UNIQUE] INDEX, CREATE TRIGGER, DROP TRIGGER (a
// migration that replaces one) and ALTER TABLE.
struct DdlTargets {
  std::string creates_table;
  std::vector<std::string> names;
};

DdlTargets ddl_targets(const std::vector<std::string>& w) {
  DdlTargets out;
  std::size_t i = 0;
  auto at = [&](const char* word) { return i < w.size() && w[i] == word; };
  auto skip_if_not_exists = [&] {
    if (at("IF") && i + 2 < w.size() && w[i + 1] == "NOT" && w[i + 2] == "EXISTS") i += 3;
  };
  auto name = [&]() -> std::string { return i < w.size() ? w[i++] : std::string(); };
  // The table after the next ON.
  auto on_table = [&]() -> std::string {
    while (i < w.size() && !at("ON")) ++i;
    ++i;
    return name();
  };
  if (at("CREATE")) {
    ++i;
    if (at("TABLE")) {
      ++i;
      skip_if_not_exists();
      out.creates_table = name();
      out.names = {out.creates_table};
    } else if (at("TRIGGER")) {
      ++i;
      skip_if_not_exists();
      std::string trigger = name();
      out.names = {trigger, on_table()};
    } else {
      if (at("UNIQUE")) ++i;
      if (!at("INDEX")) return {};
      ++i;
      skip_if_not_exists();
      std::string index = name();
      out.names = {index, on_table()};
    }
  } else if (at("DROP")) {
    ++i;
    if (!at("TRIGGER")) return {};
    ++i;
    if (at("IF") && i + 1 < w.size() && w[i + 1] == "EXISTS") i += 2;
    out.names = {name()};
  } else if (at("ALTER")) {
    ++i;
    if (!at("TABLE")) return {};
    ++i;
    out.names = {name()};
  }
  return out;
}

// Whether a statement of the copy names only scratch objects among queuectl's: no word
// (identifier or literal, comments aside) names job_queue or a queuectl_ object outside the
// copy. PostgreSQL's triggers call functions shared by the whole schema (the wake-ups would
// notify real workers) and SQLite's queuectl_locks is not part of the copy: both stay out.
bool names_only_scratch(const std::vector<std::string>& w, const std::string& prefix) {
  std::string upper_prefix;
  for (char c : prefix)
    upper_prefix += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return std::none_of(w.begin(), w.end(), [&](const std::string& word) {
    std::string rest = word;
    replace_all(rest, upper_prefix, "");
    return rest.find("JOB_QUEUE") != std::string::npos ||
           rest.find("QUEUECTL_") != std::string::npos;
  });
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string ScratchTables::render(const std::string& sql, const std::string& table) const {
  std::string out = sql;
  replace_all(out, "{jobs}", jobs);
  replace_all(out, "{ledger}", ledger);
  replace_all(out, "{table}", table);
  return out;
}

std::vector<std::string> ScratchTables::all() const {
  std::vector<std::string> out = {jobs, ledger};
  if (!queues.empty()) out.push_back(queues);
  if (!rate_keys.empty()) out.push_back(rate_keys);
  return out;
}

ScratchTables scratch_tables(long pid, Strategy strategy) {
  ScratchTables t;
  t.jobs = "queuectl_bench_" + std::to_string(pid) + "_" + tag(strategy);
  t.ledger = t.jobs + "_ledger";
  if (strategy == Strategy::claim) {
    t.queues = t.jobs + "_queues";
    t.rate_keys = t.jobs + "_rate_keys";
  }
  for (const std::string& name : t.all())
    if (!safe_name(name)) throw std::logic_error("unsafe scratch table name " + name);
  return t;
}

std::string rename_tables(const std::string& sql, const ScratchTables& t) {
  static const std::string jobs = "job_queue", queues = "queuectl_queues",
                           rate_keys = "queuectl_rate_keys";
  std::string out;
  out.reserve(sql.size() + 256);
  for (std::size_t i = 0; i < sql.size();) {
    if (!t.rate_keys.empty() && sql.compare(i, rate_keys.size(), rate_keys) == 0) {
      out += t.rate_keys;
      i += rate_keys.size();
    } else if (sql.compare(i, queues.size(), queues) == 0) {
      out += t.queues;
      i += queues.size();
    } else if (sql.compare(i, jobs.size(), jobs) == 0) {
      out += t.jobs;
      i += jobs.size();
    } else {
      out += sql[i++];
    }
  }
  return out;
}

Statements claim_statements(const Statements& real, const ScratchTables& t) {
  if (t.queues.empty()) throw std::logic_error("claim_statements needs the queues table");
  auto r = [&](const std::string& sql) { return rename_tables(sql, t); };
  auto r_opt = [&](const std::optional<std::string>& sql) -> std::optional<std::string> {
    if (!sql) return std::nullopt;
    return r(*sql);
  };
  // PostgreSQL's claim calls a function per limit, only for a queue that has the limit;
  // the copy's queue has none, and the copy has no function.
  auto without_limits = [](std::string sql) {
    replace_all(sql, "queuectl_claim_slots(a.queue, 2147483647)", "2147483647");
    for (const char* fn : {"queuectl_claim_slots", "queuectl_rate_take", "queuectl_rate_key_ready"})
      if (sql.find(fn) != std::string::npos)
        throw std::logic_error(std::string("the claim calls ") + fn +
                               " in a way the bench's copy does not know");
    return sql;
  };
  Statements s;
  s.job_columns = r(real.job_columns);
  auto r_rate = [&](const RateSteps& rate) {
    return RateSteps{r(rate.read), r(rate.spend), r(rate.spend_key)};
  };
  if (const auto* one = std::get_if<ClaimReturning>(&real.claim)) {
    // The copy's queue has no rate: the plain claim takes its jobs, and claim_rated (which
    // calls the rate functions on the real tables) is left out, as is every other statement
    // of the chain.
    ClaimReturning copy;
    copy.claim = without_limits(r(one->claim));
    copy.in_transaction = one->in_transaction;
    copy.locking_pick = r_opt(one->locking_pick);
    if (one->rate) copy.rate = r_rate(*one->rate);
    s.claim = std::move(copy);
  } else {
    const auto& steps = std::get<ClaimPickThenMark>(real.claim);
    s.claim = ClaimPickThenMark{
        r(steps.start),          r(steps.pick),     r(steps.recheck),           r(steps.limit_lock),
        r(steps.limit_busy),     r(steps.mark),     r(steps.rate_take),         r_rate(steps.rate),
        r(steps.pick_ungrouped), r(steps.pick_top), r(steps.pick_ungrouped_top)};
  }
  s.finish.ack = r(real.finish.ack);
  s.finish.ack_ids = {r(real.finish.ack_ids.write), r(real.finish.ack_ids.pick)};
  s.finish.ack_id_array = r_opt(real.finish.ack_id_array);
  s.finish.ack_id_one = r_opt(real.finish.ack_id_one);
  s.finish.ack_delete = {r(real.finish.ack_delete.write), r(real.finish.ack_delete.pick)};
  s.finish.ack_delete_array = r_opt(real.finish.ack_delete_array);
  s.finish.ack_delete_one = r_opt(real.finish.ack_delete_one);
  s.finish.deleting_queues = r(real.finish.deleting_queues);
  const InsertValuesRows& rows = real.enqueue.values_rows;
  s.enqueue.values_rows = {r(rows.prefix), r(rows.row), r(rows.suffix)};
  return s;
}

std::vector<std::string> copy_ddl(const std::vector<std::string>& statements,
                                  const ScratchTables& t) {
  std::vector<std::string> out;
  for (const std::string& statement : statements) {
    const std::string renamed = rename_tables(statement, t);
    const std::vector<std::string> w = words(renamed);
    const DdlTargets targets = ddl_targets(w);
    const bool ours = !targets.names.empty() &&
                      std::all_of(targets.names.begin(), targets.names.end(),
                                  [&](const std::string& n) {
                                    return lower(n).find(t.jobs) != std::string::npos;
                                  }) &&
                      names_only_scratch(w, t.jobs);
    if (ours) out.push_back(renamed);
  }
  return out;
}

std::vector<std::string> schema_copy(Backend backend, const ScratchTables& t) {
  std::vector<std::string> statements;
  for (const Migration& m : migrations_for(backend)) {
    auto split = split_statements(m.sql);
    statements.insert(statements.end(), split.begin(), split.end());
  }
  return copy_ddl(statements, t);
}

ScratchSchema::ScratchSchema(Database& db, const BenchSql& sql, ScratchTables tables,
                             std::function<void(const std::string&)> warn)
    : db_(db), sql_(sql), tables_(std::move(tables)), warn_(std::move(warn)) {}

ScratchSchema::~ScratchSchema() {
  for (const std::string& problem : drop())
    if (warn_) warn_(problem);
}

void ScratchSchema::refuse_taken_names() {
  // Every name taken, in one message: a bench killed leaves them all.
  std::string taken_names;
  for (const std::string& name : tables_.all()) {
    long long taken = 0;
    std::string bound = name;
    db_.retrying(
        [&] { db_.session() << sql_.table_exists, soci::use(bound, "name"), soci::into(taken); });
    if (taken != 0) taken_names += (taken_names.empty() ? "" : ", ") + name;
  }
  if (!taken_names.empty())
    throw Error("scratch table(s) " + taken_names +
                " already exist: left by a bench that was killed, or in use by one with the "
                "same process id on another host; drop them by hand once no bench uses them");
}

void ScratchSchema::run_ddl(const std::string& ddl, const std::string& creates) {
  try {
    db_.session() << ddl;
  } catch (const soci::soci_error& e) {
    throw Error("cannot create the scratch table " + (creates.empty() ? tables_.jobs : creates) +
                " in " + db_.url().redacted() + ": " + db_.error_text(e));
  }
  if (!creates.empty()) created_.push_back(creates);
}

void ScratchSchema::create_seed_table() {
  refuse_taken_names();
  run_ddl(tables_.render(sql_.create_jobs), tables_.jobs);
  run_ddl(tables_.render(sql_.create_pick), "");
  run_ddl(tables_.render(sql_.create_ledger), tables_.ledger);
  run_ddl(tables_.render(sql_.create_ledger_index), "");
}

void ScratchSchema::create_schema_copy() {
  refuse_taken_names();
  for (const std::string& ddl : schema_copy(db_.url().backend, tables_))
    run_ddl(ddl, lower(ddl_targets(words(ddl)).creates_table));
  run_ddl(tables_.render(sql_.create_ledger), tables_.ledger);
  run_ddl(tables_.render(sql_.create_ledger_index), "");
}

std::vector<std::string> ScratchSchema::drop() {
  std::vector<std::string> problems;
  while (!created_.empty()) {
    const std::string name = created_.back();
    created_.pop_back();
    try {
      db_.retrying([&] { db_.session() << tables_.render(sql_.drop, name); });
    } catch (const std::exception& e) {
      problems.push_back("could not drop the scratch table " + name + " (" + e.what() +
                         "): drop it by hand");
    }
  }
  return problems;
}

}  // namespace queuectl::bench
