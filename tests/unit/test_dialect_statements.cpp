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

    check_text("finish.ack", s.finish.ack);
    check_guarded("finish.ack_ids", s.finish.ack_ids, d);
    check_optional("finish.ack_id_array", s.finish.ack_id_array);
    check_guarded("finish.fail_retry", s.finish.fail_retry, d);
    check_guarded("finish.fail_final", s.finish.fail_final, d);
    check_guarded("finish.extend", s.finish.extend, d);
    check_guarded("finish.release", s.finish.release, d);

    check_text("listing.list_jobs", s.listing.list_jobs);
    check_text("listing.list_jobs_newest", s.listing.list_jobs_newest);
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
    } else {
      const auto& steps = std::get<ClaimPickThenMark>(s.claim);
      check_text("claim.start", steps.start);
      check_text("claim.pick", steps.pick);
      check_text("claim.recheck", steps.recheck);
      check_text("claim.limit_lock", steps.limit_lock);
      check_text("claim.limit_busy", steps.limit_busy);
      check_text("claim.mark", steps.mark);
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
