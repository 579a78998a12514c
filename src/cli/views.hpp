// Views: turn results into Output (a JSON document, NDJSON items, a table for people and,
// where there is more to show, a wide table). Tables show times relative to `now` (the
// database clock: "3m", "in 25s") and durations as "9m58s"; -o wide shows times as
// RFC 3339, as JSON does.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/output.hpp"
#include "core/job.hpp"
#include "db/group_repository.hpp"
#include "db/job_repository.hpp"
#include "db/migrations.hpp"

namespace queuectl {

// Every column of a job; status as a name; payload and result as JSON.
nlohmann::ordered_json job_json(const Job& job);
// Where `show`'s values start: after the longest field name (progress_note) and its colon.
inline constexpr std::size_t kJobKeyWidth = 15;
// A job's last reported progress for a table cell: "40% table 3 of 8", "40%", the note
// alone, or "-".
std::string progress_text(const Job& job);
// One job, described: a "field:  value" line each, in the schema's order; times with how
// far they are from `now` (without it, from the job's updated_at: right for a job a command
// has just written); payload and result as indented JSON and last_error one line per line,
// each a block under its field.
Output job_view(const Job& job, const std::optional<std::string>& now = std::nullopt);

// Which table a list of jobs gets. claimed (claim): id, attempts, lease, token, payload:
// what a worker needs next. listing (list): status, priority, age, run_at and lease;
// the token only in -o wide.
enum class JobsTable { claimed, listing };
// Many jobs: an array document, one object a line in NDJSON, a table (times relative to
// `now`, else to each job's updated_at), and a wide table with absolute times, worker,
// token and group key. `tables` false leaves the tables out (-o json and ndjson print
// none: a claim of 1,000 jobs need not work out 2,000 relative times). `ndjson` true
// writes only the NDJSON text, a job at a time without a document (claim -o ndjson | ack
// --from - is the pipe workers script; --field needs the document).
Output jobs_view(const std::vector<Job>& jobs, const std::optional<std::string>& now = std::nullopt,
                 JobsTable kind = JobsTable::claimed, bool tables = true, bool ndjson = false);
// One job as one NDJSON line, newline included: the same text as dump_json(job_json(job)),
// written field by field.
void append_job_ndjson(std::string& out, const Job& job);
Output stats_view(const std::vector<QueueStats>& stats);
// Busy and blocked groups: state (processing, waiting, blocked), the head and its queue.
Output groups_view(const std::vector<GroupHead>& groups,
                   const std::optional<std::string>& now = std::nullopt);
Output migrations_view(const std::vector<MigrationState>& states, bool applied_now);
// A plain object: document as given, a two-column table of its fields.
Output object_view(const nlohmann::ordered_json& object);

// A lease's time left for people: "9m58s", "expired 12s ago", "no lease" (none).
std::string time_left_text(std::optional<double> seconds_left);

}  // namespace queuectl
