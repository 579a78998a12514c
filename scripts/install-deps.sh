#!/usr/bin/env bash
# Install everything needed to build and test queuectl on Debian 12 (bookworm).
#
# Usage: scripts/install-deps.sh
#
# If every package is already installed, apt is not touched at all (fast path).
# Runs as root; otherwise uses sudo when available.
set -euo pipefail

PACKAGES=(
  # toolchain
  g++ cmake make pkg-config
  # libraries
  libcli11-dev libsoci-dev libboost-dev nlohmann-json3-dev doctest-dev
  libsqlite3-dev libpq-dev libmariadb-dev libmariadb-dev-compat libutf8proc-dev
  libhowardhinnant-date-dev
  # `queuectl serve`: its HTTP server (with OpenSSL for HTTPS) and crypt(3) password hashes
  libcpp-httplib-dev libcrypt-dev openssl
  # databases (servers are only started by scripts/test-servers.sh, never as services)
  sqlite3 postgresql-15 postgresql-client-15 mariadb-server mariadb-client
  # the cluster suites (scripts/test-clusters.sh): Galera and its rsync state transfer,
  # jq and bc for their ledgers
  galera-4 rsync jq bc
  # curl: the HTTP checks of `queuectl serve` in the cluster suite and the benchmarks
  curl
  # a connection pooler in front of PostgreSQL (transaction and session pooling tests)
  pgbouncer
  # shell completion tests, process tools, `script` (a terminal for the progress tests)
  bash-completion zsh fish procps bsdutils
  # a real terminal of a fixed size for the full-screen `top` test (tests/top)
  tmux
  # the browser tests of `queuectl serve`: a real headless Chromium driven over WebDriver
  chromium chromium-driver fonts-dejavu-core
  # the man page, generated from --help at build time; man -l reads it in the install test
  help2man man-db
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  if [[ "$status" != "install ok installed" ]]; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

echo "install-deps: missing: ${missing[*]}"

if [[ $(id -u) -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "install-deps: not root and sudo is not available; run as root" >&2
  exit 1
fi

# Wait up to 10 minutes for another apt/dpkg holding the lock instead of failing.
apt_opts=(-o DPkg::Lock::Timeout=600)

"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" update
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get "${apt_opts[@]}" install -y --no-install-recommends "${PACKAGES[@]}"

echo "install-deps: done"
