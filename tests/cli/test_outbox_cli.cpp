// The transactional outbox, as the README shows it: an application writes its business
// change and the event in one transaction of its own, with plain SQL, and
// `queuectl work outbox -- CMD` relays the event. Runs unchanged on every backend.
#include <doctest/doctest.h>

#include <stdexcept>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {

namespace {

// The application's own table, beside queuectl's (dropped before and after).
class OrdersTable {
 public:
  explicit OrdersTable(Database& db) : db_(db) {
    db_.session() << "DROP TABLE IF EXISTS outbox_test_orders";
    db_.session() << "CREATE TABLE outbox_test_orders (id INTEGER PRIMARY KEY, state "
                     "VARCHAR(20) NOT NULL)";
    db_.session() << "INSERT INTO outbox_test_orders (id, state) VALUES (42, 'new')";
  }
  ~OrdersTable() {
    try {
      db_.session() << "DROP TABLE IF EXISTS outbox_test_orders";
    } catch (...) {
    }
  }
  OrdersTable(const OrdersTable&) = delete;
  OrdersTable& operator=(const OrdersTable&) = delete;

 private:
  Database& db_;
};

// The README's INSERT for the backend under test; `skip_duplicate` adds its
// "written twice" clause.
std::string outbox_insert(bool skip_duplicate) {
  const std::string values =
      "('outbox', '{\"event\":\"order.paid\",\"order_id\":42}', 'order.paid:42', 'order:42'";
  if (backend_under_test() == Backend::mysql)
    return "INSERT INTO job_queue (queue, payload, dedupe_key, group_key) VALUES " + values + ")" +
           (skip_duplicate ? " ON DUPLICATE KEY UPDATE id = id" : "");
  return "INSERT INTO job_queue (queue, payload, dedupe_key, group_key) VALUES " + values + ")" +
         (skip_duplicate ? " ON CONFLICT DO NOTHING" : "");
}

// One application transaction: the business change and the event, or neither.
void place_order(Database& app, bool commit, bool skip_duplicate = false) {
  struct Rollback : std::runtime_error {
    Rollback() : std::runtime_error("rollback") {}
  };
  try {
    app.transaction([&] {
      app.session() << "UPDATE outbox_test_orders SET state = 'paid' WHERE id = 42";
      app.session() << outbox_insert(skip_duplicate);
      if (!commit) throw Rollback();
    });
  } catch (const Rollback&) {
  }
}

}  // namespace

TEST_CASE("cli: the outbox: an event committed with the business change is relayed once") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  auto app = fixture.connect();
  OrdersTable orders(*app);
  // An application far from UTC: its session's clock must not delay the event.
  if (backend_under_test() == Backend::mysql) app->session() << "SET time_zone = '+09:00'";
  if (backend_under_test() == Backend::postgresql) app->session() << "SET TIME ZONE 'Asia/Seoul'";

  // Rolled back: neither the order change nor the event exists.
  place_order(*app, false);
  CHECK(job_rows(fixture) == 0);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM outbox_test_orders WHERE state = 'paid'") == 0);

  // Committed: both; and written a second time, the dedupe key keeps it one event.
  place_order(*app, true);
  place_order(*app, true, true);
  CHECK(job_rows(fixture) == 1);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM outbox_test_orders WHERE state = 'paid'") == 1);

  // The relay delivers it at once (it is due now, whatever the application's time zone).
  const std::string delivered = dir.path() + "/delivered";
  json summary = ok_json(url, {"work", "outbox", "--drain", "--", "sh", "-c",
                               "cat >> '" + delivered + "'; echo >> '" + delivered + "'"});
  INFO(summary.dump());
  CHECK(summary["done"] == 1);
  std::vector<std::string> lines = read_lines(delivered);
  REQUIRE(lines.size() == 1);
  CHECK(parse(lines[0]) == json{{"event", "order.paid"}, {"order_id", 42}});
  json jobs = ok_json(url, {"list", "outbox"});
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0]["status"] == "done");
  CHECK(jobs[0]["dedupe_key"] == "order.paid:42");
  CHECK(jobs[0]["group_key"] == "order:42");
  CHECK(jobs[0]["attempts"] == 1);

  // Relayed once: a second relay finds nothing.
  json again = ok_json(url, {"work", "outbox", "--drain", "--", "sh", "-c",
                             "cat >> '" + delivered + "'; echo >> '" + delivered + "'"});
  CHECK(again["done"] == 0);
  CHECK(read_lines(delivered).size() == 1);
}

}  // namespace queuectl::testing::cli
