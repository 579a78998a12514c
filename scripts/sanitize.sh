#!/usr/bin/env bash
# The whole test suite against an AddressSanitizer + UndefinedBehaviorSanitizer build
# (build-sanitize/), with throwaway servers as scripts/test.sh starts them. Any finding
# fails its test: UBSan stops at the first report, ASan at the first bad access. Leak
# checking stays off: the database client libraries keep process-lifetime allocations
# that LeakSanitizer would report as leaks.
#
#   bash scripts/sanitize.sh              # everything
#   bash scripts/sanitize.sh -R sqlite    # extra arguments go to ctest
set -euo pipefail
cd "$(dirname "$0")/.."

# -O1 -g1: instrumented code compiles slowly; this halves the build and keeps file:line in
# every report.
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQUEUECTL_SANITIZE=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" >/dev/null
cmake --build build-sanitize -j"$(nproc)"

root=$(pwd -P)
servers=$(bash "$root/scripts/scratch-dir.sh" queuectl-servers)
cleanup() {
  bash "$root/scripts/test-servers.sh" stop "$servers" >/dev/null 2>&1 || true
  rm -rf "$servers"
}
trap cleanup EXIT INT TERM
if ! server_env=$(bash "$root/scripts/test-servers.sh" start "$servers"); then
  echo "sanitize.sh: the throwaway PostgreSQL/MariaDB servers did not start" >&2
  exit 1
fi
eval "$server_env"
export QUEUECTL_TEST_PG_URL QUEUECTL_TEST_MYSQL_URL
# abort_on_error: a finding ends the process with a signal, which every test notices
# (a child of the cli tests exits 134 instead of its expected code).
# Every report is also written to a file under $reports (log_path), so that a finding in a
# process whose exit code no test looks at still fails the run below.
reports=$servers/sanitizer-reports
mkdir -p "$reports"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:log_path=$reports/asan
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1:log_path=$reports/ubsan

cd build-sanitize
status=0
ctest --output-on-failure -j2 "$@" || status=$?
if compgen -G "$reports/*" >/dev/null; then
  echo "sanitize.sh: sanitizer reports:" >&2
  cat "$reports"/* >&2
  status=1
fi
exit $status
