// Views: turn results into Output (a JSON document, NDJSON items and a table).
#pragma once

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
// One job: a vertical "field  value" table.
Output job_view(const Job& job);
// Many jobs: an array document, one object a line in NDJSON, a summary table.
Output jobs_view(const std::vector<Job>& jobs);
Output stats_view(const std::vector<QueueStats>& stats);
// Busy and blocked groups: state (processing, waiting, blocked), the head and its queue.
Output groups_view(const std::vector<GroupHead>& groups);
Output migrations_view(const std::vector<MigrationState>& states, bool applied_now);
// A plain object: document as given, a two-column table of its fields.
Output object_view(const nlohmann::ordered_json& object);

}  // namespace queuectl
