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
    cat <<'ROFF'
[EXIT STATUS]
.TP
.B 0
success (also an empty claim: no job due is not an error)
.TP
.B 1
an error not covered below: wrong credentials, missing privileges, an unmigrated database
.TP
.B 2
bad usage or bad input; nothing was written
.TP
.B 3
lease lost: the token is wrong, the lease expired and was reaped, or the job is not processing
.TP
.B 4
not found: no job with that id
.TP
.B 5
a named lock is held by someone else (\fBlock \-E\fR chooses another code)
.TP
.B 75
temporary: the database is unreachable, or contention lasted past the lock waits and
retries; run again later
[ENVIRONMENT]
.TP
.B QUEUECTL_DB
the database URL when \fB\-\-db\fR is not given
.TP
.B QUEUECTL_DB_PASSWORD
the database password, in place of one in the URL (\fB\-\-db\-password\-file\fR wins)
.TP
.B XDG_DATA_HOME\fR, \fBHOME
without a URL, the SQLite file is $XDG_DATA_HOME/queuectl/queue.db
(~/.local/share/queuectl/queue.db)
.TP
.B QUEUECTL_NAMED_LOCKS
\fBrow\fR: named locks are rows of queuectl_locks on every backend, as on Galera;
\fBauto\fR (default): the database's own named locks where they hold
.TP
.B COLUMNS
the width tables are fitted to when stdout is not a terminal
.TP
.B TZ
the time zone of a \fB\-\-run\-at\fR time given without an offset
ROFF
    echo "[SEE ALSO]"
    echo "The docs/ folder of the source distribution, a page per topic: connecting and URLs,"
    echo "workers, leases and the reaper, named locks, ordered groups, queue policies, sharing"
    echo "the table with your own SQL, scaling out, operating, exit codes, the command reference."
} >"$include"

# A fixed environment: the help text must not depend on who builds it.
env -i PATH="$PATH" LC_ALL=C.UTF-8 help2man --no-info --section 1 \
    --name "run and administer a job queue kept in an SQL table" \
    --include "$include" --output "$out.tmp" "$bin"
mv "$out.tmp" "$out"
