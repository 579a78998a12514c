#!/usr/bin/env bash
# Runs every test: installs what is missing, builds, starts throwaway PostgreSQL and
# MariaDB servers in a temporary folder, runs ctest on all three backends, and stops
# the servers again, also when a test fails. Extra arguments go to ctest
# (e.g. `scripts/test.sh -R contract`).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"

root=$(pwd -P)
servers=$(bash "$root/scripts/scratch-dir.sh" queuectl-servers)
# By absolute path: the trap runs after `cd build` below.
watch_pid=""
cleanup() {
  if [[ -n $watch_pid ]]; then
    kill "$watch_pid" 2>/dev/null || true
    bash "$root/scripts/resource-watch.sh" report "$servers/resources.log" || true
  fi
  bash "$root/scripts/test-servers.sh" stop "$servers" >/dev/null 2>&1 || true
  rm -rf "$servers"
}
trap cleanup EXIT INT TERM

# A server that cannot start fails the run here (an assignment from a failing command
# substitution stops set -e; `eval "$(...)"` alone would not). Its logs say why.
if ! server_env=$(bash "$root/scripts/test-servers.sh" start "$servers"); then
  echo "test.sh: the throwaway PostgreSQL/MariaDB servers did not start; logs:" >&2
  tail -n 30 "$servers"/*.log >&2 || true
  exit 1
fi
eval "$server_env"
export QUEUECTL_TEST_PG_URL QUEUECTL_TEST_MYSQL_URL QUEUECTL_TEST_PGBOUNCER_URL

# Memory and stalls, sampled beside the tests and summed up at the end (a run that ran out
# of memory, or stood still as a whole, then says so).
bash "$root/scripts/resource-watch.sh" run "$servers/resources.log" >/dev/null 2>&1 &
watch_pid=$!

cd build
# Four suites at a time on CI's two cores: a suite mostly waits (for servers, timers and the
# processes it starts; a whole CLI suite uses about a fifth of a core), and suites that share
# a database run one after another whatever -j says (tests/CMakeLists.txt).
ctest --output-on-failure -j4 "$@"
