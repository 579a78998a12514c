#!/usr/bin/env bash
# `queuectl top` under a real terminal: a detached tmux session of 80x24 runs a shell; top
# runs in it on an SQLite database. Checked: it draws (title, a queue row), refreshes (jobs
# enqueued from outside show up), quits on q, on Ctrl-C and on SIGTERM with exit 0, and
# leaves the terminal as it was (stty settings equal before and after, the main screen back
# with what it showed, the cursor visible again).
#
# Usage: tests/top/test_top_tty.sh path/to/queuectl
set -euo pipefail

bin=$(realpath "$1")
command -v tmux >/dev/null || {
  echo "tmux is not installed: run scripts/install-deps.sh" >&2
  exit 1
}
work=$(mktemp -d)
sock="$work/tmux.sock"
db="sqlite://$work/queue.db"
t() { tmux -S "$sock" "$@"; }
cleanup() {
  t kill-server 2>/dev/null || true
  # The killed shell may still be writing as it goes: try again once.
  rm -rf "$work" 2>/dev/null || { sleep 0.5; rm -rf "$work"; } || true
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  echo "--- the pane:" >&2
  t capture-pane -p -t top >&2 || true
  exit 1
}

# Waits up to 10 s for the pane to show a line matching the extended regex $1.
wait_for() {
  for _ in $(seq 1 100); do
    if t capture-pane -p -t top | grep -Eq -- "$1"; then return 0; fi
    sleep 0.1
  done
  fail "the pane never showed /$1/"
}

pane_var() { t display-message -p -t top "#{$1}"; }

"$bin" --db "$db" -q migrate
for _ in 1 2 3; do "$bin" --db "$db" enqueue emails '{}' >/dev/null; done

# A plain shell with a known prompt, in a terminal of 80 columns and 24 rows.
t -f /dev/null new-session -d -s top -x 80 -y 24 "env -i PATH=$PATH TERM=screen HOME=$work HISTFILE=/dev/null PS1='shell\$ ' bash --norc --noprofile"
t set-option -t top status off >/dev/null
t resize-window -t top -x 80 -y 24 >/dev/null 2>&1 || true
wait_for '^shell\$'

# One run of top, ended by $1 ("q", "C-c" or "TERM").
run_top() {
  local how=$1
  # Each run starts at 80x24, whatever an earlier run's resize left: once the window reads
  # 80 columns (tmux applies a resize asynchronously; a detached session was seen back at
  # the previous size).
  local tries
  for ((tries = 0; tries < 50; tries++)); do
    t resize-window -t top -x 80 -y 24 >/dev/null 2>&1 || true
    [[ $(pane_var pane_width) == 80 && $(pane_var pane_height) == 24 ]] && break
    sleep 0.1
  done
  [[ $(pane_var pane_width) == 80 ]] || fail "the pane is $(pane_var pane_width) columns, not 80"
  # stty sets the terminal's own size as well: the pty of a detached session was seen
  # still at an earlier run's 60 columns although tmux reported 80.
  t send-keys -t top "clear; stty cols 80 rows 24; echo before-top-$how; stty -g > $work/stty.before; '$bin' --db '$db' top --interval 0.2s; echo exit-code=\$?; stty -g > $work/stty.after" Enter
  wait_for '^queuectl top '
  wait_for '^emails +3 '
  [[ $(pane_var alternate_on) == 1 ]] || fail "top did not switch to the alternate screen"
  [[ $(pane_var cursor_flag) == 0 ]] || fail "the cursor is visible while top runs"
  t capture-pane -p -t top | grep -q "before-top-$how" && fail "the shell's screen shows through"
  # Every line fits the 80 columns (tmux would wrap a longer one onto the next row, where
  # the header check below would then fail).
  t capture-pane -p -t top | grep -Eq '^QUEUE +READY +SCHED +PROC +EXPIRED +FAILED +DONE/M +OLDEST +FLAGS$' ||
    fail "no queue header"
  # Refresh: two more jobs, enqueued by someone else, show up.
  "$bin" --db "$db" enqueue emails '{}' >/dev/null
  "$bin" --db "$db" enqueue emails '{}' >/dev/null
  wait_for '^emails +5 '
  if [[ $how == q ]]; then
    # SIGWINCH: a narrower window gets a frame fitted to it (the footer cut with "…"),
    # at once, not at the next refresh.
    t resize-window -t top -x 60 -y 20
    wait_for '^q quit .*…$'
    t resize-window -t top -x 80 -y 24
    wait_for '^q quit .*acks delete$'
  fi
  if [[ $how == TERM ]]; then
    local shell_pid top_pid
    shell_pid=$(pane_var pane_pid)
    top_pid=$(pgrep -P "$shell_pid" -x queuectl)
    kill -TERM "$top_pid"
  else
    t send-keys -t top "$how"
  fi
  wait_for '^exit-code='
  t capture-pane -p -t top | grep -q '^exit-code=0$' || fail "top ($how) did not exit 0"
  t capture-pane -p -t top | grep -q "^before-top-$how$" || fail "the main screen did not come back"
  t capture-pane -p -t top | grep -q '^queuectl top ' && fail "top's frame is left on the screen"
  [[ $(pane_var alternate_on) == 0 ]] || fail "still on the alternate screen after top ($how)"
  [[ $(pane_var cursor_flag) == 1 ]] || fail "the cursor is still hidden after top ($how)"
  wait_for '^shell\$'
  cmp -s "$work/stty.before" "$work/stty.after" ||
    fail "stty settings changed: $(cat "$work/stty.before") -> $(cat "$work/stty.after")"
  # Back to 3 ready jobs for the next run.
  "$bin" --db "$db" claim emails --limit 2 >/dev/null
  echo "ok: top quits on $how and restores the terminal"
}

run_top q
run_top C-c
run_top TERM
