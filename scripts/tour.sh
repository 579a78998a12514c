#!/usr/bin/env bash
# Builds queuectl and takes it on a short tour of the embedded SQLite default:
# migrate, enqueue, claim, ack, stats. Uses a scratch data folder so that your own
# queue is untouched; set QUEUECTL_DB to tour another database.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target queuectl

export XDG_DATA_HOME="${XDG_DATA_HOME_TOUR:-$(mktemp -d /tmp/queuectl-tour-XXXXXX)}"
q=./build/queuectl
step() { printf '\n$ queuectl %s\n' "$*"; "$q" "$@"; }

step migrate
step enqueue emails '{"to":"ada@example.com","subject":"hello"}' --priority 10
step enqueue emails '{"to":"grace@example.com"}' --dedupe-key welcome-grace
step enqueue reports '{"month":"2026-11"}' --delay 1h
claimed=$("$q" claim emails --lease 2m --field id,lock_token)
printf '\n$ queuectl claim emails --lease 2m --field id,lock_token\n%s\n' "$claimed"
read -r id token <<<"$claimed"
step ack "$id" --token "$token" --result '{"sent":true}'
step stats
printf '\nThe tour used %s/queuectl/queue.db.\n' "$XDG_DATA_HOME"
