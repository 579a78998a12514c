// The one table of the job's fields (core/job_fields.hpp) against what follows it: each
// dialect's job column list (the row reader reads columns by their place in the table),
// and JSON, whose keys come from the table in its order.
#include <doctest/doctest.h>

#include <regex>
#include <string>
#include <vector>

#include "cli/views.hpp"
#include "core/job_fields.hpp"
#include "db/dialect.hpp"

namespace {

// The items of an SQL select list, split at commas outside parentheses and quotes.
std::vector<std::string> select_items(const std::string& list) {
  std::vector<std::string> items(1);
  int depth = 0;
  bool quoted = false;
  for (char c : list) {
    if (c == '\'') quoted = !quoted;
    if (!quoted && c == '(') ++depth;
    if (!quoted && c == ')') --depth;
    if (!quoted && depth == 0 && c == ',') {
      items.emplace_back();
      continue;
    }
    items.back() += c;
  }
  return items;
}

// The job fields an item names, as whole words (outside quotes).
std::vector<std::string> fields_named(const std::string& item) {
  std::string bare = std::regex_replace(item, std::regex("'[^']*'"), "''");
  std::vector<std::string> named;
  for (const auto& f : queuectl::kJobFields)
    if (std::regex_search(bare, std::regex("\\b" + std::string(f.name) + "\\b")))
      named.emplace_back(f.name);
  return named;
}

}  // namespace

TEST_CASE("job fields: each dialect's column list names the fields in the table's order") {
  for (auto backend :
       {queuectl::Backend::sqlite, queuectl::Backend::postgresql, queuectl::Backend::mysql}) {
    CAPTURE(queuectl::backend_name(backend));
    const std::string columns = queuectl::make_dialect(backend)->sql().job_columns;
    const std::vector<std::string> items = select_items(columns);
    REQUIRE(items.size() == queuectl::kJobFields.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      CAPTURE(items[i]);
      CHECK(fields_named(items[i]) ==
            std::vector<std::string>{std::string(queuectl::kJobFields[i].name)});
    }
  }
}

TEST_CASE("job fields: a job's JSON has the table's fields, in its order") {
  queuectl::Job j;
  j.payload = "{}";
  const auto doc = queuectl::job_json(j);
  std::vector<std::string> keys;
  for (const auto& [key, value] : doc.items()) keys.push_back(key);
  CHECK(keys == queuectl::job_field_names());
  static_assert(queuectl::job_field("checkpoint") == queuectl::kJobFields.size() - 1);
}
