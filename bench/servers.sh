# bench/servers.sh — sourced by the benchmark scripts that need throwaway servers, or their
# binaries built:
#
#   source "$ROOT/bench/servers.sh"
#   bench_build queuectl queue_bench   # built in $BUILD_DIR, unless SKIP_BUILD=1
#   bench_servers qpipe      # TMP=/tmp/qpipe.XXXXXX, servers started in it, their URLs exported
#
# On exit, whatever happens, the servers are stopped and $TMP is removed (KEEP_TMP=1 keeps
# it). Needs ROOT (the repository), BUILD_DIR (for bench_build), a say() that prints progress
# and a die() that prints and exits.

# The CMake targets named (incrementally, configured first if need be) in $BUILD_DIR, unless
# SKIP_BUILD=1 (then the binaries already there are used as they are).
bench_build() {
  [[ ${SKIP_BUILD:-0} == 1 ]] && return 0
  say "building $* in $BUILD_DIR"
  [[ -f $BUILD_DIR/CMakeCache.txt ]] ||
    cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD_DIR" -j2 --target "$@" >/dev/null
}

bench_servers() {
  TMP=$(mktemp -d "/tmp/$1.XXXXXX")
  trap bench_servers_cleanup EXIT
  trap 'exit 130' INT TERM
  printf '\n== starting throwaway servers in %s\n' "$TMP" >&2
  local server_env
  server_env=$("$ROOT/scripts/test-servers.sh" start "$TMP") || die "the servers did not start"
  eval "$server_env"
}

bench_servers_cleanup() {
  local rc=$?
  "$ROOT/scripts/test-servers.sh" stop "$TMP" >/dev/null 2>&1 || true
  if [[ ${KEEP_TMP:-0} == 1 ]]; then
    echo "${0##*/}: kept $TMP" >&2
  else
    rm -rf -- "$TMP"
  fi
  exit $rc
}
