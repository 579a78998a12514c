// The checks on the values of a database URL's query parameters, and the error every
// check on a URL throws: a part of DbUrl::parse (core/db_url.cpp), in a file of its own.
#pragma once

#include <string>

#include "core/db_url.hpp"
#include "core/errors.hpp"

namespace queuectl {

// "invalid database URL: WHY", exit 2.
UsageError bad_url(const std::string& why);

// Refuses a query parameter whose value the driver would refuse when connecting. Without
// this, such a URL fails like a server that cannot be reached (SOCI's MySQL backend says
// only "Malformed connection string."): exit 75, and cron retries what can never work.
// Also checks queuectl's own ?pooling=. Never shows a password's value.
void check_param_value(Backend backend, const std::string& key, const std::string& value);

}  // namespace queuectl
