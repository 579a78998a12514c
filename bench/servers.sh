# bench/servers.sh — sourced by the benchmark scripts that need throwaway servers:
#
#   source "$ROOT/bench/servers.sh"
#   bench_servers qpipe      # TMP=/tmp/qpipe.XXXXXX, servers started in it, their URLs exported
#
# On exit, whatever happens, the servers are stopped and $TMP is removed (KEEP_TMP=1 keeps
# it). Needs ROOT (the repository) and a die() that prints and exits.

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
