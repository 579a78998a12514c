#!/usr/bin/env bash
# Writes queuectl's man page from the program's own help, so that the two cannot drift:
# help2man turns `queuectl --help` and `--version` into the page, and each command's
# `queuectl help COMMAND` becomes a subsection of COMMANDS. CMake runs it at every build
# that changes the binary (target manpage, part of ALL).
# Usage: scripts/make-manpage.sh path/to/queuectl path/to/queuectl.1
set -euo pipefail

if (($# != 2)); then
    echo "usage: $0 QUEUECTL_BINARY OUTPUT.1" >&2
    exit 2
fi
bin=$1 out=$2
include=$(mktemp "${TMPDIR:-/tmp}/queuectl-man.XXXXXX")
trap 'rm -f "$include"' EXIT

# Text for roff's no-fill mode: backslashes escaped, and a line starting with "." or "'"
# (which roff would take as a request) guarded with \&.
as_roff() { sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"; }

commands=$("$bin" __complete commands)
{
    echo "[COMMANDS]"
    echo "Each command's own help, as \`queuectl help COMMAND\` prints it."
    for cmd in $commands; do
        echo ".SS \"queuectl $cmd\""
        echo ".nf"
        # (Without the global options, which OPTIONS above describes once.)
        "$bin" help "$cmd" | sed '/^Global options (/,/^$/d' | as_roff
        echo ".fi"
    done
    echo "[SEE ALSO]"
    echo "The README of the source distribution: URLs, workers, the reaper, named locks,"
    echo "ordered groups, sharing the table with your own SQL."
} >"$include"

# A fixed environment: the help text must not depend on who builds it.
env -i PATH="$PATH" LC_ALL=C.UTF-8 help2man --no-info --section 1 \
    --name "run and administer a job queue kept in an SQL table" \
    --include "$include" --output "$out.tmp" "$bin"
mv "$out.tmp" "$out"
