#!/usr/bin/env bash
# Tests the shell completions in completions/ against a real queuectl binary and
# a scratch SQLite database:
#   bash  sources completions/queuectl.bash and calls _queuectl the way bash does
#         (COMP_WORDS/COMP_CWORD/COMP_LINE/COMP_POINT), then checks COMPREPLY;
#   zsh   syntax check, autoload through compinit, then real completions typed
#         into an interactive zsh on a pseudo-terminal (zsh/zpty);
#   fish  syntax check, then `complete -C` on command lines.
# Usage: tests/completions/test_completions.sh [path/to/queuectl]
# Prints one line per check and ends with "N passed, M failed"; exits 1 on any failure.
set -euo pipefail

BIN=${1:-/work/main/build/queuectl}
if [[ ! -x $BIN ]]; then
    echo "test_completions: no executable queuectl at $BIN" >&2
    exit 2
fi
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
COMPDIR=$ROOT/completions

TMP=$(mktemp -d "${TMPDIR:-/tmp}/queuectl-completions.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
# Everything the shells or queuectl might write stays in $TMP.
export HOME=$TMP/home XDG_CONFIG_HOME=$TMP/config XDG_DATA_HOME=$TMP/data XDG_CACHE_HOME=$TMP/cache
mkdir -p "$HOME" "$XDG_CONFIG_HOME" "$XDG_DATA_HOME" "$XDG_CACHE_HOME"
# File names complete from here, whatever directory ctest runs the script in.
mkdir -p "$TMP/cwd/completions" "$TMP/cwd/tests"
cd "$TMP/cwd"
export QUEUECTL_DB=sqlite://$TMP/q.db
unset QUEUECTL_DB_PASSWORD
PATH=$(dirname "$BIN"):$PATH
export PATH
ALT=sqlite://$TMP/alt.db        # a second database, only reachable through --db
MISSING=sqlite://$TMP/missing.db # never created by the fixture

passed=0 failed=0
ok() { passed=$((passed + 1)); printf 'ok   %s\n' "$1"; }
not_ok() {
    failed=$((failed + 1))
    printf 'FAIL %s\n' "$1"
    printf '     expected: %s\n' "$2"
    printf '     actual:   %s\n' "$3"
}
# expect_eq NAME EXPECTED ACTUAL: words compared as sorted sets, one per line.
lines() { tr -s '[:space:]' '\n' <<<"$1" | sed '/^$/d'; }
sorted() { lines "$1" | LC_ALL=C sort | paste -sd' ' -; }
expect_eq() {
    local name=$1 want got
    want=$(sorted "$2") got=$(sorted "$3")
    if [[ $want == "$got" ]]; then ok "$name"; else not_ok "$name" "[$want]" "[$got]"; fi
}
# expect_has NAME "WORD..." ACTUAL: every WORD is one of ACTUAL's words.
expect_has() {
    local name=$1 w missing="" wants
    read -ra wants <<<"$2"
    for w in "${wants[@]}"; do
        lines "$3" | grep -qxF -- "$w" || missing+=" $w"
    done
    if [[ -z $missing ]]; then ok "$name"; else not_ok "$name" "contains $2" "[$(sorted "$3")] lacks$missing"; fi
}
# expect_seq NAME EXPECTED ACTUAL: the same words in the same order.
expect_seq() {
    local name=$1 want got
    want=$(lines "$2" | paste -sd' ' -) got=$(lines "$3" | paste -sd' ' -)
    if [[ $want == "$got" ]]; then ok "$name"; else not_ok "$name" "[$want]" "[$got]"; fi
}
# expect_text NAME EXPECTED ACTUAL: the same text, line for line.
expect_text() {
    if [[ $2 == "$3" ]]; then ok "$1"; else
        not_ok "$1" "the lines marked - (first 10 differences)" \
            "$(diff <(printf '%s\n' "$2") <(printf '%s\n' "$3") | sed -n 's/^</-/p; s/^>/+/p' | head -n 10 | paste -sd'|' -)"
    fi
}
expect_empty_file() { # NAME FILE
    if [[ ! -s $2 ]]; then ok "$1"; else not_ok "$1" "no output on stderr" "$(head -c 300 "$2")"; fi
}

# --- fixture -----------------------------------------------------------------
queuectl -q migrate >/dev/null
queuectl -q enqueue emails '{"to":"a@example.com"}' >/dev/null
queuectl -q enqueue reports '{}' >/dev/null
queuectl -q --db "$ALT" migrate >/dev/null
queuectl -q --db "$ALT" enqueue nightly '{}' >/dev/null
queuectl -q --db "$ALT" enqueue mail:high '{}' >/dev/null
# reports is paused; a mistyped queue paused and resumed again leaves nothing to offer.
queuectl -q pause reports >/dev/null
queuectl -q pause emials 2>/dev/null
queuectl -q resume emials >/dev/null
expect_eq "fixture: __complete queues lists emails and reports" \
    "emails reports" "$(queuectl __complete queues)"
# Schedules (cron): hourly and nightly here, sync:fast (a ":" for bash's word break) in ALT.
queuectl -q cron add nightly '0 3 * * *' reports >/dev/null
queuectl -q cron add hourly @hourly emails >/dev/null
queuectl -q --db "$ALT" cron add sync:fast '@every 10s' nightly >/dev/null
expect_eq "fixture: __complete schedules lists hourly and nightly" \
    "hourly nightly" "$(queuectl __complete schedules)"
# Help folds a long description onto lines of its own, under column 30: joined again here.
unfold_help() {
    awk '/^ {30}[^ ]/ && have {line = line " " substr($0, 31); next}
         {if (have) print line; line = $0; have = 1}
         END {if (have) print line}'
}

# The commands `queuectl --help` lists, in its order: "NAME<TAB>Description" lines.
HELP_CMDS=$(queuectl --help | unfold_help | sed -n 's/^  \([a-z][a-z-]*\)  \+\(.*\)$/\1\t\2/p')
HELP_NAMES=$(cut -f1 <<<"$HELP_CMDS" | paste -sd' ' -)
expect_has "fixture: queuectl --help lists the commands (groups and queue among them)" \
    "migrate enqueue leases groups retry cancel resume queue reap lock" "$HELP_NAMES"
# The subcommands `queuectl cron --help` lists, in its order: "NAME<TAB>Description" lines.
CRON_CMDS=$(queuectl cron --help | unfold_help | sed -n 's/^  \([a-z][a-z-]*\)  \+\(.*\)$/\1\t\2/p')
CRON_NAMES=$(cut -f1 <<<"$CRON_CMDS" | paste -sd' ' -)
expect_has "fixture: queuectl cron --help lists its subcommands" \
    "add remove pause resume list show trigger apply tick" "$CRON_NAMES"
# The help text of enqueue --group-key.
GROUP_KEY_HELP=$(queuectl enqueue --help | unfold_help | sed -n 's/^  --group-key TEXT  \+//p')
if [[ -n $GROUP_KEY_HELP ]]; then ok "fixture: queuectl enqueue --help describes --group-key"; else
    not_ok "fixture: queuectl enqueue --help describes --group-key" "a --group-key line" "none"; fi

# --- bash --------------------------------------------------------------------
echo "# bash $BASH_VERSION"
# shellcheck source-path=SCRIPTDIR source=../../completions/queuectl.bash
source "$COMPDIR/queuectl.bash"
expect_eq "bash: registered with complete -F _queuectl queuectl" \
    "complete -F _queuectl queuectl" "$(complete -p queuectl)"

# bash_complete LINE: completes at the end of LINE as bash would, printing
# COMPREPLY one per line (stderr to $TMP/bash.err). COMP_WORDS is split the
# way readline splits it: at blanks and at the COMP_WORDBREAKS characters
# ":" and "=", which become words of their own.
bash_complete() {
    local line=$1 w="" kind="" c k i
    COMP_WORDS=()
    for ((i = 0; i < ${#line}; i++)); do
        c=${line:i:1}
        case $c in
            [[:space:]]) k=space ;;
            [:=]) k="break" ;;
            *) k=word ;;
        esac
        if [[ $k != "$kind" && -n $w ]]; then
            COMP_WORDS+=("$w")
            w=""
        fi
        [[ $k == space ]] || w+=$c
        kind=$k
    done
    COMP_WORDS+=("$w") # the word being completed ("" after a blank)
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMP_LINE=$line
    COMP_POINT=${#line}
    COMPREPLY=()
    (
        set -u
        _queuectl queuectl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}" 2>"$TMP/bash.err"
        printf '%s\n' "${COMPREPLY[@]}"
    )
}
# bcheck eq|has NAME LINE EXPECTED
bcheck() {
    local how=$1 name=$2 line=$3 want=$4 got
    if ! got=$(bash_complete "$line"); then
        not_ok "bash: $name" "_queuectl returns 0" "it failed: $(cat "$TMP/bash.err")"
        return
    fi
    "expect_$how" "bash: $name" "$want" "$got"
    expect_empty_file "bash: $name: nothing on stderr" "$TMP/bash.err"
}

bcheck eq "queuectl cl<TAB> -> claim" "queuectl cl" "claim"
bcheck seq "queuectl <TAB> -> every command, in the order of queuectl --help, then help" "queuectl " "$HELP_NAMES help"
bcheck eq "queuectl he<TAB> -> help" "queuectl he" "help"
bcheck eq "queuectl help cl<TAB> -> claim" "queuectl help cl" "claim"
bcheck seq "queuectl help <TAB> -> every command" "queuectl help " "$HELP_NAMES"
bcheck eq "queuectl help claim <TAB> -> nothing" "queuectl help claim " ""
bcheck eq "queuectl resume <TAB> -> the paused queues" "queuectl resume " "reports"
bcheck eq "queuectl pause <TAB> -> the queues not paused" "queuectl pause " "emails"
bcheck eq "queuectl --db ALT resume <TAB> -> nothing paused there" "queuectl --db $ALT resume " ""
bcheck eq "queuectl claim <TAB> -> queues from \$QUEUECTL_DB" "queuectl claim " "emails reports"
bcheck eq "queuectl claim em<TAB> -> emails" "queuectl claim em" "emails"
bcheck eq "queuectl claim emails <TAB> -> nothing (one queue only)" "queuectl claim emails " ""
bcheck eq "queuectl list --status f<TAB> -> failed" "queuectl list --status f" "failed"
bcheck eq "queuectl list --status w<TAB> -> waiting" "queuectl list --status w" "waiting"
bcheck eq "queuectl list --status=f<TAB> -> failed" "queuectl list --status=f" "failed"
bcheck eq "queuectl list --status ready,p<TAB> -> ready,processing" "queuectl list --status ready,p" "ready,processing"
bcheck eq "queuectl purge --status done,<TAB> -> the other finished statuses" \
    "queuectl purge --status done," "done,failed done,canceled"
bcheck eq "queuectl retry --status <TAB> -> failed canceled" "queuectl retry --status " "failed canceled"
bcheck eq "queuectl migrate --status <TAB> -> nothing (a flag there)" "queuectl migrate --status " ""
bcheck has "queuectl claim emails --l<TAB> has --lease --limit" "queuectl claim emails --l" "--lease --limit"
bcheck eq "queuectl claim emails --l<TAB> is exactly --lease --limit" "queuectl claim emails --l" "--lease --limit"
bcheck has "queuectl -o <TAB> has json" "queuectl -o " "json"
bcheck eq "queuectl -o <TAB> -> table wide json ndjson prometheus" "queuectl -o " "table wide json ndjson prometheus"
bcheck eq "queuectl -o json cl<TAB> -> claim (option value skipped)" "queuectl -o json cl" "claim"
bcheck eq "queuectl --db ALT cl<TAB> -> claim (URL with colons skipped)" "queuectl --db $ALT cl" "claim"
bcheck has "queuectl --<TAB> has global options" "queuectl --" "--db --db-password-file --output --quiet --verbose --max-payload --help"
bcheck eq "queuectl --db MISSING claim <TAB> -> no queues" "queuectl --db $MISSING claim " ""
bcheck eq "queuectl --db ALT claim <TAB> -> queues of that db" "queuectl --db $ALT claim " "nightly mail:high"
bcheck eq "queuectl claim --db=ALT <TAB> -> queues of that db" "queuectl claim --db=$ALT " "nightly mail:high"
bcheck eq "queuectl --db ALT claim mail:<TAB> -> high (after the ':' word break)" "queuectl --db $ALT claim mail:" "high"
# Inside an open quote readline does not break at ':': the whole name, or the line would
# become claim "high".
bcheck eq "queuectl --db ALT claim \"mail:h<TAB> -> mail:high (no word break in quotes)" "queuectl --db $ALT claim \"mail:h" "mail:high"
bcheck eq "queuectl --db ALT claim 'mail:<TAB> -> mail:high" "queuectl --db $ALT claim 'mail:" "mail:high"
bcheck eq "queuectl stats emails <TAB> -> the other queues" "queuectl stats emails " "reports"
bcheck eq "queuectl work emails <TAB> -> --" "queuectl work emails " "--"
bcheck has "queuectl work emails -- ech<TAB> -> commands" "queuectl work emails -- ech" "echo"
bcheck eq "queuectl show <TAB> -> nothing (a job id)" "queuectl show " ""
bcheck eq "queuectl claim --lease <TAB> -> nothing (a duration)" "queuectl claim --lease " ""
# groups QUEUE [--blocked] [--limit N]
bcheck eq "queuectl gr<TAB> -> groups" "queuectl gr" "groups"
bcheck eq "queuectl groups <TAB> -> queues" "queuectl groups " "emails reports"
bcheck eq "queuectl --db ALT groups <TAB> -> queues of that db" "queuectl --db $ALT groups " "nightly mail:high"
bcheck eq "queuectl groups emails <TAB> -> nothing (one queue only)" "queuectl groups emails " ""
bcheck has "queuectl groups emails --<TAB> has --blocked --limit" "queuectl groups emails --" "--blocked --limit --db --help"
bcheck eq "queuectl groups emails --b<TAB> -> --blocked" "queuectl groups emails --b" "--blocked"
bcheck eq "queuectl groups emails --l<TAB> -> --limit" "queuectl groups emails --l" "--limit"
bcheck eq "queuectl groups --limit <TAB> -> nothing (a count)" "queuectl groups --limit " ""
bcheck eq "queuectl groups --limit 5 <TAB> -> queues (option value skipped)" "queuectl groups --limit 5 " "emails reports"
bcheck eq "queuectl groups --blocked <TAB> -> queues (a flag)" "queuectl groups --blocked " "emails reports"
# queue QUEUE [--strict-groups on|off]
bcheck eq "queuectl qu<TAB> -> queue" "queuectl qu" "queue"
bcheck eq "queuectl queue <TAB> -> queues" "queuectl queue " "emails reports"
bcheck eq "queuectl --db ALT queue mail:<TAB> -> high" "queuectl --db $ALT queue mail:" "high"
bcheck eq "queuectl queue emails <TAB> -> nothing (one queue only)" "queuectl queue emails " ""
bcheck has "queuectl queue emails --<TAB> has --strict-groups" "queuectl queue emails --" "--strict-groups --db --help"
bcheck eq "queuectl queue emails --s<TAB> -> --strict-groups" "queuectl queue emails --s" "--strict-groups"
bcheck eq "queuectl queue emails --strict-groups <TAB> -> on off" "queuectl queue emails --strict-groups " "on off"
bcheck eq "queuectl queue emails --strict-groups o<TAB> -> on off" "queuectl queue emails --strict-groups o" "on off"
bcheck eq "queuectl queue emails --strict-groups=of<TAB> -> off" "queuectl queue emails --strict-groups=of" "off"
bcheck eq "queuectl queue emails --rate-per-key <TAB> -> on off" "queuectl queue emails --rate-per-key " "on off"
bcheck eq "queuectl queue emails --rate <TAB> -> none" "queuectl queue emails --rate " "none"
bcheck has "queuectl queue emails --<TAB> has --rate and --burst" "queuectl queue emails --" "--rate --burst --rate-per-key"
bcheck eq "queuectl queue --strict-groups on <TAB> -> queues (option value skipped)" "queuectl queue --strict-groups on " "emails reports"
bcheck eq "queuectl queue emails --dead-letter <TAB> -> none and queues" "queuectl queue emails --dead-letter " "none emails reports"
bcheck eq "queuectl queue emails --max-processing 3 <TAB> -> nothing (value skipped)" "queuectl queue emails --max-processing 3 " ""
bcheck eq "queuectl move --from <TAB> -> queues, not files" "queuectl move --from " "emails reports"
bcheck eq "queuectl move --all --to <TAB> -> queues" "queuectl move --all --to " "emails reports"
# lock --print-key NAME; leases --unleased; reap --unleased --older-than DUR
bcheck eq "queuectl lock --p<TAB> -> --print-key" "queuectl lock --p" "--print-key"
bcheck eq "queuectl lock --c<TAB> -> --conflict-exit-code" "queuectl lock --c" "--conflict-exit-code"
bcheck eq "queuectl claim --wa<TAB> -> --wait" "queuectl claim --wa" "--wait"
bcheck eq "queuectl leases --u<TAB> -> --unleased" "queuectl leases --u" "--unleased"
bcheck eq "queuectl reap --u<TAB> -> --unleased" "queuectl reap --u" "--unleased"
bcheck eq "queuectl reap --unleased --ol<TAB> -> --older-than" "queuectl reap --unleased --ol" "--older-than"
bcheck eq "queuectl reap --older-than <TAB> -> nothing (a duration)" "queuectl reap --older-than " ""
bcheck eq "queuectl reap --older-than 2h <TAB> -> queues (option value skipped)" "queuectl reap --older-than 2h " "emails reports"
# list --newest-first --before ID; retry --queue QUEUE (ids only as positionals); --field
bcheck eq "queuectl list --n<TAB> -> --newest-first" "queuectl list --n" "--newest-first"
bcheck eq "queuectl list --b<TAB> -> --before" "queuectl list --b" "--before"
bcheck eq "queuectl retry --queue <TAB> -> queues" "queuectl retry --queue " "emails reports"
bcheck eq "queuectl retry <TAB> -> nothing (job ids)" "queuectl retry " ""
bcheck eq "queuectl claim emails --field id,lock_t<TAB> -> lock_token" "queuectl claim emails --field id,lock_t" "id,lock_token"
# Field names come from the binary (`queuectl __complete fields`), the list --field checks.
bcheck eq "queuectl list --field dead<TAB> -> dead_from" "queuectl list --field dead" "dead_from"
# cron SUB: its subcommands, schedule names (NAME), queues (add's QUEUE, tick --queue), apply's FILE
bcheck eq "queuectl cr<TAB> -> cron" "queuectl cr" "cron"
bcheck seq "queuectl cron <TAB> -> its subcommands, in the order of queuectl cron --help" "queuectl cron " "$CRON_NAMES"
bcheck eq "queuectl cron p<TAB> -> pause" "queuectl cron p" "pause"
bcheck eq "queuectl cron pause <TAB> -> schedules" "queuectl cron pause " "hourly nightly"
bcheck eq "queuectl cron resume <TAB> -> schedules" "queuectl cron resume " "hourly nightly"
bcheck eq "queuectl cron remove n<TAB> -> nightly" "queuectl cron remove n" "nightly"
bcheck eq "queuectl cron show <TAB> -> schedules" "queuectl cron show " "hourly nightly"
bcheck eq "queuectl cron trigger <TAB> -> schedules" "queuectl cron trigger " "hourly nightly"
bcheck eq "queuectl cron pause nightly <TAB> -> nothing (one name only)" "queuectl cron pause nightly " ""
bcheck eq "queuectl --db ALT cron trigger <TAB> -> schedules of that db" "queuectl --db $ALT cron trigger " "sync:fast"
bcheck eq "queuectl cron --db=ALT show sync:<TAB> -> fast (after the ':' word break)" "queuectl cron --db=$ALT show sync:" "fast"
bcheck eq "queuectl --db MISSING cron pause <TAB> -> no schedules" "queuectl --db $MISSING cron pause " ""
bcheck eq "queuectl cron show --next 5 <TAB> -> schedules (option value skipped)" "queuectl cron show --next 5 " "hourly nightly"
bcheck eq "queuectl cron add x '0 3 * * *' <TAB> -> queues" "queuectl cron add x '0 3 * * *' " "emails reports"
bcheck eq "queuectl cron add --tz UTC x @daily <TAB> -> queues (option value skipped)" "queuectl cron add --tz UTC x @daily " "emails reports"
bcheck eq "queuectl cron add x @daily emails <TAB> -> nothing (a payload)" "queuectl cron add x @daily emails " ""
bcheck eq "queuectl cron add --misfire <TAB> -> once skip all" "queuectl cron add --misfire " "once skip all"
bcheck eq "queuectl cron add --overlap=<TAB> -> allow skip" "queuectl cron add --overlap=" "allow skip"
bcheck eq "queuectl cron add x --misfire-l<TAB> -> --misfire-limit" "queuectl cron add x --misfire-l" "--misfire-limit"
bcheck eq "queuectl cron show --n<TAB> -> --next" "queuectl cron show --n" "--next"
bcheck eq "queuectl cron list --s<TAB> -> nothing (not list's --status)" "queuectl cron list --s" ""
bcheck eq "queuectl cron list <TAB> -> nothing" "queuectl cron list " ""
bcheck has "queuectl cron apply <TAB> has - and files" "queuectl cron apply " "- completions tests"
bcheck eq "queuectl cron apply --p<TAB> -> --prune" "queuectl cron apply --p" "--prune"
bcheck eq "queuectl cron tick --queue <TAB> -> queues" "queuectl cron tick --queue " "emails reports"
bcheck eq "queuectl help cr<TAB> -> cron" "queuectl help cr" "cron"
# work --no-housekeeping; queue --retain DUR|none
bcheck eq "queuectl work emails --no<TAB> -> --no-housekeeping" "queuectl work emails --no" "--no-housekeeping"
bcheck eq "queuectl queue emails --re<TAB> -> --retain" "queuectl queue emails --re" "--retain"
bcheck eq "queuectl queue emails --retain <TAB> -> none" "queuectl queue emails --retain " "none"
bcheck eq "queuectl queue --retain 14d <TAB> -> queues (option value skipped)" "queuectl queue --retain 14d " "emails reports"
IFS_BEFORE=$IFS
bash_complete "queuectl claim " >/dev/null
_queuectl >/dev/null 2>&1 || true
expect_eq "bash: _queuectl leaves IFS alone" "$(printf %q "$IFS_BEFORE")" "$(printf %q "$IFS")"

# --- zsh ---------------------------------------------------------------------
if command -v zsh >/dev/null; then
    echo "# $(zsh --version)"
    if err=$(zsh -n "$COMPDIR/_queuectl" 2>&1); then ok "zsh: zsh -n _queuectl"; else not_ok "zsh: zsh -n _queuectl" "no syntax error" "$err"; fi
    got=$(zsh -f -c 'fpath=("$1" $fpath); autoload -U compinit; compinit -u -d "$2/zcompdump"
        autoload +X _queuectl && whence -w _queuectl && print -r -- "compdef=${_comps[queuectl]}"' \
        zsh "$COMPDIR" "$TMP" 2>&1) || true
    expect_eq "zsh: compinit finds #compdef queuectl and loads _queuectl" \
        "_queuectl: function compdef=_queuectl" "$got"

    # Real completions: an interactive zsh on a pseudo-terminal, with Tab bound
    # to a widget that runs the completion system and records every match
    # (compadd is wrapped) in a file, then "DONE" (zsh-driver.zsh, zsh-setup.zsh).
    zlines=(
        "queuectl cl"
        "queuectl claim "
        "queuectl lock --c"
        "queuectl claim --wa"
        "queuectl --db $MISSING claim "
        "queuectl --db $ALT claim "
        "queuectl claim --db $ALT "
        "queuectl list --status f"
        "queuectl list --status w"
        "queuectl retry --status "
        "queuectl claim emails --l"
        "queuectl -o "
        "queuectl stats emails "
        "queuectl work emails -- ech"
        "queuectl gr"
        "queuectl groups "
        "queuectl --db $ALT groups "
        "queuectl groups emails --b"
        "queuectl groups emails --l"
        "queuectl groups --limit 5 "
        "queuectl qu"
        "queuectl queue "
        "queuectl queue --db $ALT "
        "queuectl queue emails --s"
        "queuectl queue emails --strict-groups "
        "queuectl queue emails --strict-groups=o"
        "queuectl queue --strict-groups on "
        "queuectl queue emails --dead-letter "
        "queuectl move --from "
        "queuectl enqueue emails --gr"
        "queuectl lock --p"
        "queuectl leases --u"
        "queuectl reap --u"
        "queuectl reap --older-than 2h "
        "queuectl list --n"
        "queuectl retry --queue "
        "queuectl resume "
        "queuectl pause "
        "queuectl he"
        "queuectl help cl"
        "queuectl list --field dead"
        "queuectl cron "
        "queuectl cron pause "
        "queuectl --db $ALT cron trigger "
        "queuectl cron show --next 5 "
        "queuectl cron add x '0 3 * * *' "
        "queuectl cron add --misfire "
        "queuectl cron add --overlap "
        "queuectl cron show --n"
        "queuectl cron tick --queue "
        "queuectl work emails --no"
        "queuectl queue emails --re"
    )
    if zout=$(QC_TMP=$TMP QC_COMPDIR=$COMPDIR QC_SETUP=$ROOT/tests/completions/zsh-setup.zsh \
        zsh -f "$ROOT/tests/completions/zsh-driver.zsh" "${zlines[@]}" 2>&1); then
        zhits() { awk -v l="### $1" '$0 == l {on = 1; next} /^### / {on = 0} on' <<<"$zout"; }
        expect_eq "zsh: queuectl cl<TAB> -> claim" "claim" "$(zhits "queuectl cl")"
        expect_eq "zsh: queuectl claim <TAB> -> emails reports" "emails reports" "$(zhits "queuectl claim ")"
        expect_eq "zsh: queuectl --db MISSING claim <TAB> -> no queues" "" "$(zhits "queuectl --db $MISSING claim ")"
        expect_eq "zsh: queuectl --db ALT claim <TAB> -> queues of that db" "nightly mail:high" "$(zhits "queuectl --db $ALT claim ")"
        expect_eq "zsh: queuectl claim --db ALT <TAB> -> queues of that db" "nightly mail:high" "$(zhits "queuectl claim --db $ALT ")"
        expect_eq "zsh: queuectl list --status f<TAB> -> failed" "failed" "$(zhits "queuectl list --status f")"
        expect_eq "zsh: queuectl list --status w<TAB> -> waiting" "waiting" "$(zhits "queuectl list --status w")"
        expect_eq "zsh: queuectl retry --status <TAB> -> failed canceled" "failed canceled" "$(zhits "queuectl retry --status ")"
        expect_eq "zsh: queuectl claim emails --l<TAB> -> --lease --limit" "--lease --limit" "$(zhits "queuectl claim emails --l")"
        expect_has "zsh: queuectl -o <TAB> has json" "json table wide ndjson prometheus" "$(zhits "queuectl -o ")"
        expect_eq "zsh: queuectl stats emails <TAB> -> reports" "reports" "$(zhits "queuectl stats emails ")"
        expect_has "zsh: queuectl work emails -- ech<TAB> has echo" "echo" "$(zhits "queuectl work emails -- ech")"
        expect_eq "zsh: queuectl gr<TAB> -> groups" "groups" "$(zhits "queuectl gr")"
        expect_eq "zsh: queuectl groups <TAB> -> emails reports" "emails reports" "$(zhits "queuectl groups ")"
        expect_eq "zsh: queuectl --db ALT groups <TAB> -> queues of that db" "nightly mail:high" "$(zhits "queuectl --db $ALT groups ")"
        expect_eq "zsh: queuectl groups emails --b<TAB> -> --blocked" "--blocked" "$(zhits "queuectl groups emails --b")"
        expect_eq "zsh: queuectl groups emails --l<TAB> -> --limit" "--limit" "$(zhits "queuectl groups emails --l")"
        expect_eq "zsh: queuectl groups --limit 5 <TAB> -> emails reports" "emails reports" "$(zhits "queuectl groups --limit 5 ")"
        expect_eq "zsh: queuectl qu<TAB> -> queue" "queue" "$(zhits "queuectl qu")"
        expect_eq "zsh: queuectl lock --p<TAB> -> --print-key" "--print-key" "$(zhits "queuectl lock --p")"
        expect_eq "zsh: queuectl lock --c<TAB> -> --conflict-exit-code" "--conflict-exit-code" "$(zhits "queuectl lock --c")"
        expect_eq "zsh: queuectl claim --wa<TAB> -> --wait" "--wait" "$(zhits "queuectl claim --wa")"
        expect_eq "zsh: queuectl leases --u<TAB> -> --unleased" "--unleased" "$(zhits "queuectl leases --u")"
        expect_eq "zsh: queuectl reap --u<TAB> -> --unleased" "--unleased" "$(zhits "queuectl reap --u")"
        expect_eq "zsh: queuectl reap --older-than 2h <TAB> -> emails reports" "emails reports" "$(zhits "queuectl reap --older-than 2h ")"
        expect_eq "zsh: queuectl list --n<TAB> -> --newest-first" "--newest-first" "$(zhits "queuectl list --n")"
        expect_eq "zsh: queuectl retry --queue <TAB> -> emails reports" "emails reports" "$(zhits "queuectl retry --queue ")"
        expect_eq "zsh: queuectl queue <TAB> -> emails reports" "emails reports" "$(zhits "queuectl queue ")"
        expect_eq "zsh: queuectl queue --db ALT <TAB> -> queues of that db" "nightly mail:high" "$(zhits "queuectl queue --db $ALT ")"
        expect_eq "zsh: queuectl queue emails --s<TAB> -> --strict-groups" "--strict-groups" "$(zhits "queuectl queue emails --s")"
        expect_eq "zsh: queuectl queue emails --strict-groups <TAB> -> on off" "on off" "$(zhits "queuectl queue emails --strict-groups ")"
        expect_eq "zsh: queuectl queue emails --strict-groups=o<TAB> -> on off" "on off" "$(zhits "queuectl queue emails --strict-groups=o")"
        expect_eq "zsh: queuectl queue --strict-groups on <TAB> -> emails reports" "emails reports" "$(zhits "queuectl queue --strict-groups on ")"
        expect_eq "zsh: queuectl queue emails --dead-letter <TAB> -> none emails reports" "emails none reports" "$(zhits "queuectl queue emails --dead-letter ")"
        expect_eq "zsh: queuectl move --from <TAB> -> emails reports" "emails reports" "$(zhits "queuectl move --from ")"
        expect_eq "zsh: queuectl enqueue emails --gr<TAB> -> --group-key" "--group-key" "$(zhits "queuectl enqueue emails --gr")"
        expect_eq "zsh: queuectl resume <TAB> -> the paused queues" "reports" "$(zhits "queuectl resume ")"
        expect_eq "zsh: queuectl pause <TAB> -> the queues not paused" "emails" "$(zhits "queuectl pause ")"
        expect_eq "zsh: queuectl he<TAB> -> help" "help" "$(zhits "queuectl he")"
        expect_eq "zsh: queuectl help cl<TAB> -> claim" "claim" "$(zhits "queuectl help cl")"
        expect_eq "zsh: queuectl list --field dead<TAB> -> dead_from" "dead_from" "$(zhits "queuectl list --field dead")"
        expect_eq "zsh: queuectl cron <TAB> -> its subcommands" "$CRON_NAMES" "$(zhits "queuectl cron ")"
        expect_eq "zsh: queuectl cron pause <TAB> -> schedules" "hourly nightly" "$(zhits "queuectl cron pause ")"
        expect_eq "zsh: queuectl --db ALT cron trigger <TAB> -> schedules of that db" "sync:fast" "$(zhits "queuectl --db $ALT cron trigger ")"
        expect_eq "zsh: queuectl cron show --next 5 <TAB> -> schedules" "hourly nightly" "$(zhits "queuectl cron show --next 5 ")"
        expect_eq "zsh: queuectl cron add x '0 3 * * *' <TAB> -> emails reports" "emails reports" "$(zhits "queuectl cron add x '0 3 * * *' ")"
        expect_eq "zsh: queuectl cron add --misfire <TAB> -> once skip all" "once skip all" "$(zhits "queuectl cron add --misfire ")"
        expect_eq "zsh: queuectl cron add --overlap <TAB> -> allow skip" "allow skip" "$(zhits "queuectl cron add --overlap ")"
        expect_eq "zsh: queuectl cron show --n<TAB> -> --next" "--next" "$(zhits "queuectl cron show --n")"
        expect_eq "zsh: queuectl cron tick --queue <TAB> -> emails reports" "emails reports" "$(zhits "queuectl cron tick --queue ")"
        expect_eq "zsh: queuectl work emails --no<TAB> -> --no-housekeeping" "--no-housekeeping" "$(zhits "queuectl work emails --no")"
        expect_eq "zsh: queuectl queue emails --re<TAB> -> --retain" "--retain" "$(zhits "queuectl queue emails --re")"
    else
        not_ok "zsh: interactive completion on a pty" "the driver runs" "$zout"
    fi

    # The commands array of _queuectl, evaluated by zsh: the commands of --help in
    # its order, each described as there (first letter in lower case).
    # shellcheck disable=SC2016 # zsh expands these
    # (Renamed: $commands is zsh's table of external commands.)
    got=$(sed -n '/^ *commands=($/,/^ *)$/{s/^\( *\)commands=(/\1qc_commands=(/;p}' "$COMPDIR/_queuectl" |
        zsh -f -c 'eval "$(cat)"; for c in $qc_commands; print -r -- "${c%%:*}	${c#*:}"' 2>&1) || true
    expect_text "zsh: the commands and their descriptions are those of queuectl --help, in its order" \
        "$(awk -F'\t' '{ print $1 "\t" tolower(substr($2, 1, 1)) substr($2, 2) }' <<<"$HELP_CMDS")" "$got"
    # shellcheck disable=SC2016 # zsh expands these
    got=$(sed -n '/^ *cron_commands=($/,/^ *)$/p' "$COMPDIR/_queuectl" |
        zsh -f -c 'eval "$(cat)"; for c in $cron_commands; print -r -- "${c%%:*}	${c#*:}"' 2>&1) || true
    expect_text "zsh: the cron subcommands and their descriptions are those of queuectl cron --help, in its order" \
        "$(awk -F'\t' '{ print $1 "\t" tolower(substr($2, 1, 1)) substr($2, 2) }' <<<"$CRON_CMDS")" "$got"
    want="'--group-key=[${GROUP_KEY_HELP,}]"
    if grep -qF -- "$want" "$COMPDIR/_queuectl"; then ok "zsh: enqueue --group-key described as in queuectl enqueue --help"; else
        not_ok "zsh: enqueue --group-key described as in queuectl enqueue --help" "$want" "$(grep -F -- "'--group-key=" "$COMPDIR/_queuectl")"; fi
else
    not_ok "zsh: installed" "zsh on PATH (apt-get install -y zsh)" "not found"
fi

# --- fish --------------------------------------------------------------------
if command -v fish >/dev/null; then
    echo "# $(fish --version)"
    if err=$(fish --no-execute "$COMPDIR/queuectl.fish" 2>&1); then ok "fish: fish --no-execute queuectl.fish"; else not_ok "fish: fish --no-execute queuectl.fish" "no syntax error" "$err"; fi
    # fcheck eq|has NAME LINE EXPECTED: candidates of `complete -C LINE`.
    fcheck() {
        local how=$1 name=$2 line=$3 want=$4 got
        # shellcheck disable=SC2016 # $argv is fish's
        if ! got=$(fish --no-config -c 'source $argv[1]; and complete -C $argv[2]' "$COMPDIR/queuectl.fish" "$line" 2>"$TMP/fish.err"); then
            not_ok "fish: $name" "fish exits 0" "$(cat "$TMP/fish.err")"
            return
        fi
        "expect_$how" "fish: $name" "$want" "$(cut -f1 <<<"$got")"
        expect_empty_file "fish: $name: nothing on stderr" "$TMP/fish.err"
    }
    fcheck eq "queuectl cl<TAB> -> claim" "queuectl cl" "claim"
    fcheck eq "queuectl he<TAB> -> help" "queuectl he" "help"
    fcheck eq "queuectl help cl<TAB> -> claim" "queuectl help cl" "claim"
    fcheck eq "queuectl resume <TAB> -> the paused queues" "queuectl resume " "reports"
    fcheck eq "queuectl pause <TAB> -> the queues not paused" "queuectl pause " "emails"
    fcheck eq "queuectl claim <TAB> -> emails reports" "queuectl claim " "emails reports"
    fcheck eq "queuectl --db MISSING claim <TAB> -> no queues" "queuectl --db $MISSING claim " ""
    fcheck eq "queuectl --db ALT claim <TAB> -> queues of that db" "queuectl --db $ALT claim " "nightly mail:high"
    fcheck eq "queuectl --db ALT cl<TAB> -> claim (URL skipped)" "queuectl --db $ALT cl" "claim"
    fcheck eq "queuectl list --status f<TAB> -> failed" "queuectl list --status f" "failed"
    fcheck eq "queuectl list --status w<TAB> -> waiting" "queuectl list --status w" "waiting"
    fcheck eq "queuectl list --status ready,p<TAB> -> ready,processing" "queuectl list --status ready,p" "ready,processing"
    fcheck eq "queuectl claim emails --l<TAB> -> --lease --limit" "queuectl claim emails --l" "--lease --limit"
    fcheck eq "queuectl -o <TAB> -> table wide json ndjson prometheus" "queuectl -o " "table wide json ndjson prometheus"
    fcheck eq "queuectl stats emails <TAB> -> reports" "queuectl stats emails " "reports"
    fcheck eq "queuectl work emails <TAB> -> --" "queuectl work emails " "--"
    fcheck has "queuectl work emails -- ech<TAB> has echo" "queuectl work emails -- ech" "echo"
    fcheck eq "queuectl gr<TAB> -> groups" "queuectl gr" "groups"
    fcheck eq "queuectl groups <TAB> -> emails reports" "queuectl groups " "emails reports"
    fcheck eq "queuectl --db ALT groups <TAB> -> queues of that db" "queuectl --db $ALT groups " "nightly mail:high"
    fcheck eq "queuectl groups emails <TAB> -> nothing (one queue only)" "queuectl groups emails " ""
    fcheck eq "queuectl groups emails --b<TAB> -> --blocked" "queuectl groups emails --b" "--blocked"
    fcheck eq "queuectl groups emails --l<TAB> -> --limit" "queuectl groups emails --l" "--limit"
    fcheck eq "queuectl groups --limit <TAB> -> nothing (a count)" "queuectl groups --limit " ""
    fcheck eq "queuectl groups --limit 5 <TAB> -> emails reports (value skipped)" "queuectl groups --limit 5 " "emails reports"
    fcheck eq "queuectl qu<TAB> -> queue" "queuectl qu" "queue"
    fcheck eq "queuectl lock --p<TAB> -> --print-key" "queuectl lock --p" "--print-key"
    fcheck eq "queuectl lock --c<TAB> -> --conflict-exit-code" "queuectl lock --c" "--conflict-exit-code"
    fcheck eq "queuectl claim --wa<TAB> -> --wait" "queuectl claim --wa" "--wait"
    fcheck eq "queuectl leases --u<TAB> -> --unleased" "queuectl leases --u" "--unleased"
    fcheck eq "queuectl reap --u<TAB> -> --unleased" "queuectl reap --u" "--unleased"
    fcheck eq "queuectl reap --older-than 2h <TAB> -> emails reports (value skipped)" "queuectl reap --older-than 2h " "emails reports"
    fcheck eq "queuectl list --n<TAB> -> --newest-first" "queuectl list --n" "--newest-first"
    fcheck eq "queuectl retry --queue <TAB> -> emails reports" "queuectl retry --queue " "emails reports"
    fcheck eq "queuectl queue <TAB> -> emails reports" "queuectl queue " "emails reports"
    fcheck eq "queuectl queue --db ALT <TAB> -> queues of that db" "queuectl queue --db $ALT " "nightly mail:high"
    fcheck eq "queuectl queue emails <TAB> -> nothing (one queue only)" "queuectl queue emails " ""
    fcheck eq "queuectl queue emails --s<TAB> -> --strict-groups" "queuectl queue emails --s" "--strict-groups"
    fcheck eq "queuectl queue emails --strict-groups <TAB> -> on off" "queuectl queue emails --strict-groups " "on off"
    fcheck eq "queuectl queue emails --strict-groups=o<TAB> -> on off" "queuectl queue emails --strict-groups=o" \
        "--strict-groups=on --strict-groups=off"
    fcheck eq "queuectl queue --strict-groups on <TAB> -> emails reports (value skipped)" "queuectl queue --strict-groups on " "emails reports"
    fcheck eq "queuectl queue emails --dead-letter <TAB> -> none and queues" "queuectl queue emails --dead-letter " "emails none reports"
    fcheck eq "queuectl move --from <TAB> -> queues" "queuectl move --from " "emails reports"
    fcheck eq "queuectl list --field dead<TAB> -> dead_from" "queuectl list --field dead" "dead_from"
    fcheck eq "queuectl list --field id,lock_t<TAB> -> id,lock_token" "queuectl list --field id,lock_t" "id,lock_token"
    fcheck eq "queuectl cr<TAB> -> cron" "queuectl cr" "cron"
    fcheck eq "queuectl cron <TAB> -> its subcommands" "queuectl cron " "$CRON_NAMES"
    fcheck eq "queuectl cron pause <TAB> -> schedules" "queuectl cron pause " "hourly nightly"
    fcheck eq "queuectl cron remove n<TAB> -> nightly" "queuectl cron remove n" "nightly"
    fcheck eq "queuectl cron pause nightly <TAB> -> nothing (one name only)" "queuectl cron pause nightly " ""
    fcheck eq "queuectl --db ALT cron trigger <TAB> -> schedules of that db" "queuectl --db $ALT cron trigger " "sync:fast"
    fcheck eq "queuectl --db MISSING cron pause <TAB> -> no schedules" "queuectl --db $MISSING cron pause " ""
    fcheck eq "queuectl cron show --next 5 <TAB> -> schedules (value skipped)" "queuectl cron show --next 5 " "hourly nightly"
    fcheck eq "queuectl cron add x '0 3 * * *' <TAB> -> emails reports" "queuectl cron add x '0 3 * * *' " "emails reports"
    fcheck eq "queuectl cron add --misfire <TAB> -> once skip all" "queuectl cron add --misfire " "once skip all"
    fcheck eq "queuectl cron add --overlap <TAB> -> allow skip" "queuectl cron add --overlap " "allow skip"
    fcheck eq "queuectl cron show --n<TAB> -> --next" "queuectl cron show --n" "--next"
    fcheck eq "queuectl cron list --s<TAB> -> nothing (not list's --status)" "queuectl cron list --s" ""
    fcheck has "queuectl cron apply <TAB> has - and files" "queuectl cron apply " "- completions/ tests/"
    fcheck eq "queuectl cron tick --queue <TAB> -> emails reports" "queuectl cron tick --queue " "emails reports"
    fcheck eq "queuectl work emails --no<TAB> -> --no-housekeeping" "queuectl work emails --no" "--no-housekeeping"
    fcheck eq "queuectl queue emails --re<TAB> -> --retain" "queuectl queue emails --re" "--retain"
    fcheck eq "queuectl queue emails --retain <TAB> -> none" "queuectl queue emails --retain " "none"
    # Descriptions: fish prints "candidate<TAB>description".
    # shellcheck disable=SC2016
    got=$(fish --no-config -c 'source $argv[1]; and complete -C "queuectl "' "$COMPDIR/queuectl.fish" 2>&1) || true
    expect_text "fish: the commands and their descriptions are those of queuectl --help" \
        "$(LC_ALL=C sort <<<"$HELP_CMDS"$'\n'"help	Show the overview, or a command's help")" "$(LC_ALL=C sort <<<"$got")"
    # shellcheck disable=SC2016
    got=$(fish --no-config -c 'source $argv[1]; and complete -C "queuectl cron "' "$COMPDIR/queuectl.fish" 2>&1) || true
    expect_text "fish: the cron subcommands and their descriptions are those of queuectl cron --help" \
        "$(LC_ALL=C sort <<<"$CRON_CMDS")" "$(LC_ALL=C sort <<<"$got")"
    # shellcheck disable=SC2016 # a literal $needs_command
    expect_seq "fish: the commands are defined in the order of queuectl --help, then help" "$HELP_NAMES help" \
        "$(sed -n 's/^complete -c queuectl -n \$needs_command -a \([a-z-]*\) .*/\1/p' "$COMPDIR/queuectl.fish")"
    # shellcheck disable=SC2016
    got=$(fish --no-config -c 'source $argv[1]; and complete -C "queuectl enqueue emails --group-k"' "$COMPDIR/queuectl.fish" 2>&1) || true
    expect_text "fish: enqueue --group-key described as in queuectl enqueue --help" "--group-key	$GROUP_KEY_HELP" "$got"
    # shellcheck disable=SC2016
    got=$(fish --no-config -c 'set -p fish_complete_path $argv[1]; complete -C "queuectl cl"' "$COMPDIR" 2>&1 | cut -f1) || true
    expect_eq "fish: autoloads queuectl.fish from fish_complete_path" "claim" "$got"
else
    not_ok "fish: installed" "fish on PATH (apt-get install -y fish)" "not found"
fi

if [[ ! -e $TMP/missing.db ]]; then ok "completing with --db MISSING created no file"; else
    not_ok "completing with --db MISSING created no file" "no $TMP/missing.db" "it exists"
fi
echo "$passed passed, $failed failed"
((failed == 0))
