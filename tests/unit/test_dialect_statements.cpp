// Each dialect's statements (db/statements.hpp) are complete for what its capabilities
// say: every statement every backend runs is there, the claim has the shape
// update_returning() says, and what only some backends have (session locks, LISTEN,
// arrays) is there exactly where the dialect says it has it. Nothing is connected to.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <variant>

#include "db/dialect.hpp"

using queuectl::Backend;
using queuectl::ClaimPickThenMark;
using queuectl::ClaimReturning;
using queuectl::Dialect;
using queuectl::GuardedWrite;
using queuectl::NamedLockStatements;
using queuectl::Statements;

namespace {

const Backend kBackends[] = {Backend::sqlite, Backend::postgresql, Backend::mysql};

// A statement the backend has: some text.
void check_text(const char* name, const std::string& sql) {
  CAPTURE(name);
  CHECK_FALSE(sql.empty());
}

// A guarded write: its write always; its pick exactly where the dialect has no
// UPDATE ... RETURNING (the pick is what reports the rows then).
void check_guarded(const char* name, const GuardedWrite& w, const Dialect& d) {
  CAPTURE(name);
  CHECK_FALSE(w.write.empty());
  CHECK(w.pick.empty() == d.update_returning());
}

void check_optional(const char* name, const std::optional<std::string>& sql) {
  CAPTURE(name);
  if (sql) CHECK_FALSE(sql->empty());
}

// refresh is what keeps a lock row alive; session locks do not use it.
void check_lock(const NamedLockStatements& l, bool row) {
  check_text("acquire", l.acquire);
  check_text("check", l.check);
  check_text("release", l.release);
  check_text("shown_key", l.shown_key);
  if (row) check_text("refresh", l.refresh);
}

}  // namespace

TEST_CASE("dialect statements: what every backend runs is there") {
  for (Backend b : kBackends) {
    CAPTURE(queuectl::backend_name(b));
    const auto dialect = queuectl::make_dialect(b);
    const Dialect& d = *dialect;
    const Statements& s = d.sql();
    check_text("job_columns", s.job_columns);
    check_text("now", s.now);
    check_text("job_by_id", s.job_by_id);

    check_text("enqueue.insert_job", s.enqueue.insert_job);
    check_text("enqueue.last_insert_id", s.enqueue.last_insert_id);
    check_text("enqueue.job_by_dedupe_key", s.enqueue.job_by_dedupe_key);
    check_text("enqueue.values_rows.prefix", s.enqueue.values_rows.prefix);
    check_text("enqueue.values_rows.row", s.enqueue.values_rows.row);
    // values_rows.suffix may be empty: MySQL skips duplicates with INSERT IGNORE, up front.
    check_optional("enqueue.insert_arrays", s.enqueue.insert_arrays);
    check_optional("enqueue.insert_arrays_ids", s.enqueue.insert_arrays_ids);
    // A dialect that tells a multi-row INSERT's ids does it one way: arrays returning them, or
    // consecutive ids after the rows.
    CHECK_FALSE((s.enqueue.insert_arrays_ids && s.enqueue.consecutive_ids));
    CHECK(s.enqueue.insert_arrays_ids.has_value() <= s.enqueue.insert_arrays.has_value());

    check_text("finish.ack", s.finish.ack);
    check_guarded("finish.ack_ids", s.finish.ack_ids, d);
    check_optional("finish.ack_id_array", s.finish.ack_id_array);
    check_optional("finish.ack_id_one", s.finish.ack_id_one);
    CHECK(s.finish.ack_id_one.has_value() == s.finish.ack_id_array.has_value());
    check_guarded("finish.fail_retry", s.finish.fail_retry, d);
    check_guarded("finish.fail_final", s.finish.fail_final, d);
    check_guarded("finish.extend", s.finish.extend, d);
    check_guarded("finish.release", s.finish.release, d);

    check_text("listing.stats_ready", s.listing.stats_ready);
    check_text("listing.stats_processing", s.listing.stats_processing);
    check_text("listing.stats_finished", s.listing.stats_finished);
    check_text("listing.paused_queues", s.listing.paused_queues);
    check_text("listing.queue_policies", s.listing.queue_policies);

    check_text("top.failed", s.top.failed);
    check_text("top.done_recently", s.top.done_recently);
    check_text("top.queue_settings", s.top.queue_settings);
    check_text("top.workers", s.top.workers);
    check_text("top.failures", s.top.failures);

    check_text("leases.list_leases", s.leases.list_leases);
    check_text("leases.lease_summary", s.leases.lease_summary);
    check_text("leases.reap_pick", s.leases.reap_pick);
    check_text("leases.reap_mark", s.leases.reap_mark);
    check_text("leases.reap_unleased_pick", s.leases.reap_unleased_pick);
    check_text("leases.reap_unleased_mark", s.leases.reap_unleased_mark);
    check_text("leases.reaped_by_ids", s.leases.reaped_by_ids);

    check_text("admin.statuses_by_ids", s.admin.statuses_by_ids);
    check_guarded("admin.retry_ids", s.admin.retry_ids, d);
    check_guarded("admin.cancel_ids", s.admin.cancel_ids, d);
    check_guarded("admin.cancel_ids_force", s.admin.cancel_ids_force, d);
    check_guarded("admin.move_ids", s.admin.move_ids, d);
    check_text("admin.dead_letters_pick", s.admin.dead_letters_pick);
    check_text("admin.finished_pick", s.admin.finished_pick);
    check_text("admin.finished_count", s.admin.finished_count);
    check_text("admin.delete_ids", s.admin.delete_ids);

    check_text("queues.pause", s.queues.pause);
    check_text("queues.resume", s.queues.resume);
    check_text("queues.set_strict_groups", s.queues.set_strict_groups);
    check_text("queues.set_dead_letter", s.queues.set_dead_letter);
    check_text("queues.set_max_processing", s.queues.set_max_processing);
    check_text("queues.settings", s.queues.settings);
    check_text("queues.dead_letter_targets", s.queues.dead_letter_targets);
    check_text("queues.names", s.queues.names);
    check_text("queues.named", s.queues.named);
    check_text("queues.set_retain", s.queues.set_retain);
    check_text("queues.set_rate", s.queues.set_rate);
    check_text("queues.clear_rate_keys", s.queues.clear_rate_keys);
    check_text("queues.rate_state", s.queues.rate_state);

    check_text("schedules.now", s.schedules.now);
    check_text("schedules.get", s.schedules.get);
    check_text("schedules.lock", s.schedules.lock);
    check_text("schedules.list", s.schedules.list);
    check_text("schedules.names", s.schedules.names);
    check_text("schedules.insert", s.schedules.insert);
    check_text("schedules.redefine", s.schedules.redefine);
    check_text("schedules.remove", s.schedules.remove);
    check_text("schedules.remove_fires", s.schedules.remove_fires);
    check_text("schedules.set_paused", s.schedules.set_paused);
    check_text("schedules.any_due", s.schedules.any_due);
    check_text("schedules.due_pick", s.schedules.due_pick);
    check_text("schedules.job_status", s.schedules.job_status);
    check_text("schedules.advance", s.schedules.advance);
    check_text("schedules.triggered", s.schedules.triggered);
    check_text("schedules.record_fires.prefix", s.schedules.record_fires.prefix);
    check_text("schedules.record_fires.row", s.schedules.record_fires.row);
    CHECK(s.schedules.record_fires.row.find("{n}") != std::string::npos);
    check_text("schedules.prune_fires", s.schedules.prune_fires);
    check_text("schedules.recent_fires", s.schedules.recent_fires);
    check_text("schedules.late", s.schedules.late);

    check_text("groups.list", s.groups.list);

    check_text("migrations.create_table", s.migrations.create_table);
    check_text("migrations.applied", s.migrations.applied);
    check_text("migrations.record", s.migrations.record);
    check_text("migrations.is_applied", s.migrations.is_applied);
    check_text("migrations.table_columns", s.migrations.table_columns);

    // Every backend can hold a named lock as a row (the only kind on SQLite and Galera).
    check_lock(s.locks.row, true);
  }
}

TEST_CASE("dialect statements: the claim has the shape update_returning() says") {
  for (Backend b : kBackends) {
    CAPTURE(queuectl::backend_name(b));
    const auto dialect = queuectl::make_dialect(b);
    const Statements& s = dialect->sql();
    const auto* one = std::get_if<ClaimReturning>(&s.claim);
    CHECK((one != nullptr) == dialect->update_returning());
    if (one) {
      check_text("claim.claim", one->claim);
      check_optional("claim.locking_pick", one->locking_pick);
      // A backend whose claims pass over each other's row locks can hold one half way, as
      // the contract tests do; one without row locks (SQLite) has nothing to hold.
      CHECK(one->locking_pick.has_value() == dialect->skip_locked());
      // A rate limit: taken by the one statement where it can lock the queue's row itself
      // (PostgreSQL), else by steps around it, which then bind :grant and :keys_free.
      CHECK(one->rate.has_value() == !dialect->skip_locked());
      CHECK(one->claim_rated.has_value() == !one->rate.has_value());
      if (one->rate) {
        check_text("claim.rate.read", one->rate->read);
        check_text("claim.rate.spend", one->rate->spend);
        check_text("claim.rate.spend_key", one->rate->spend_key);
        CHECK(one->claim.find(":grant") != std::string::npos);
        CHECK(one->claim.find(":keys_free") != std::string::npos);
      } else {
        // The plain claim leaves rate-limited queues to claim_rated, which takes the tokens.
        CHECK(one->claim.find("rate_count IS NOT NULL") != std::string::npos);
        CHECK(one->claim.find("queuectl_rate_take") == std::string::npos);
        CHECK(one->claim_rated->find("queuectl_rate_take") != std::string::npos);
        CHECK(one->claim_rated->find("queuectl_rate_key_ready") != std::string::npos);
        // The simple rated claim leaves the queues with buckets per key to claim_rated.
        REQUIRE(one->claim_rated_simple.has_value());
        CHECK(one->claim_rated_simple->find("queuectl_rate_take") != std::string::npos);
        CHECK(one->claim_rated_simple->find("p.rate_per_key") != std::string::npos);
      }
    } else {
      const auto& steps = std::get<ClaimPickThenMark>(s.claim);
      check_text("claim.start", steps.start);
      check_text("claim.pick", steps.pick);
      check_text("claim.pick_ungrouped", steps.pick_ungrouped);
      check_text("claim.pick_top", steps.pick_top);
      check_text("claim.pick_ungrouped_top", steps.pick_ungrouped_top);
      // From the top: the same statements without the start's terms.
      for (const std::string* top : {&steps.pick_top, &steps.pick_ungrouped_top})
        CHECK(top->find(":start_") == std::string::npos);
      CHECK(steps.pick.find(":start_id") != std::string::npos);
      CHECK(steps.pick_ungrouped.find(":start_id") != std::string::npos);
      CHECK(steps.pick_top.find("ix_job_queue_groups") != std::string::npos);
      CHECK(steps.pick_ungrouped_top.find("ix_job_queue_groups") == std::string::npos);
      check_text("claim.rate_take", steps.rate_take);
      // The same columns, without the group checks.
      CHECK(steps.pick.find("ix_job_queue_groups") != std::string::npos);
      CHECK(steps.pick_ungrouped.find("ix_job_queue_groups") == std::string::npos);
      check_text("claim.recheck", steps.recheck);
      check_text("claim.limit_lock", steps.limit_lock);
      check_text("claim.limit_busy", steps.limit_busy);
      check_text("claim.mark", steps.mark);
      check_text("claim.rate.read", steps.rate.read);
      check_text("claim.rate.spend", steps.rate.spend);
      check_text("claim.rate.spend_key", steps.rate.spend_key);
      // The pick skips what other claimers hold.
      CHECK(dialect->skip_locked());
    }
  }
}

TEST_CASE("dialect statements: session locks and LISTEN exactly where the dialect has them") {
  for (Backend b : kBackends) {
    CAPTURE(queuectl::backend_name(b));
    const auto dialect = queuectl::make_dialect(b);
    const Statements& s = dialect->sql();
    CHECK(s.locks.session.has_value() == dialect->session_locks());
    if (s.locks.session) check_lock(*s.locks.session, false);
    CHECK(s.migrations.lock.has_value() == dialect->session_locks());
    if (s.migrations.lock) {
      check_text("migrations.lock.acquire", s.migrations.lock->acquire);
      check_text("migrations.lock.release", s.migrations.lock->release);
    }
    CHECK(s.listen.empty() != dialect->listen_notify());
  }
}
