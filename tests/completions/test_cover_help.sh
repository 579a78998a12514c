#!/usr/bin/env bash
# Every command and every option the program's own help shows is offered by each shell
# completion in completions/: `queuectl --help` (commands, global options) and, for each
# command, `queuectl help COMMAND` (its options and the global ones). A flag added to a
# command but not to one of the three scripts fails here, naming the shell, command and flag.
#   bash  sources completions/queuectl.bash and calls _queuectl on "queuectl CMD -";
#   zsh   types "queuectl CMD -<TAB>" into an interactive zsh on a pseudo-terminal
#         (zsh/zpty) and records every match;
#   fish  `complete -C "queuectl CMD -"`.
# Usage: tests/completions/test_cover_help.sh [path/to/queuectl]
set -euo pipefail

BIN=${1:-/work/main/build/queuectl}
if [[ ! -x $BIN ]]; then
    echo "test_cover_help: no executable queuectl at $BIN" >&2
    exit 2
fi
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
COMPDIR=$ROOT/completions

TMP=$(mktemp -d "${TMPDIR:-/tmp}/queuectl-cover-help.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
export HOME=$TMP/home XDG_CONFIG_HOME=$TMP/config XDG_DATA_HOME=$TMP/data XDG_CACHE_HOME=$TMP/cache
mkdir -p "$HOME" "$XDG_CONFIG_HOME" "$XDG_DATA_HOME" "$XDG_CACHE_HOME"
export QUEUECTL_DB=sqlite://$TMP/missing.db # never created: no queue names to look up
unset QUEUECTL_DB_PASSWORD
PATH=$(dirname "$BIN"):$PATH
export PATH

passed=0 failed=0
ok() { passed=$((passed + 1)); printf 'ok   %s\n' "$1"; }
not_ok() { failed=$((failed + 1)); printf 'FAIL %s\n     %s\n' "$1" "$2"; }

# The options a help text lists: the first column of lines "  -x,--long TYPE  text".
help_flags() { sed -n 's/^  \(-[^ ]*\).*/\1/p' | tr ',' '\n' | sed 's/=.*//' | LC_ALL=C sort -u; }

# --- what the help shows -------------------------------------------------------
TOP_HELP=$(queuectl --help)
COMMANDS=$(sed -n 's/^  \([a-z][a-z-]*\)  \+.*$/\1/p' <<<"$TOP_HELP")
COMMANDS+=$'\n'help # not in the list (the footer names it), a command all the same
declare -A FLAGS
FLAGS[_top]=$(help_flags <<<"$TOP_HELP")
for cmd in $COMMANDS; do
    FLAGS[$cmd]=$(queuectl help "$cmd" | help_flags)
done
# Guard against a help format this parser no longer reads: it would check nothing.
if [[ $(wc -w <<<"$COMMANDS") -ge 20 && ${FLAGS[claim]} == *--lease* && ${FLAGS[claim]} == *--db* &&
    ${FLAGS[_top]} == *--version* ]]; then
    ok "help parsed: $(wc -w <<<"$COMMANDS") commands; claim has --lease and the global --db"
else
    not_ok "help parsed" "commands: [$COMMANDS] claim: [${FLAGS[claim]}]"
fi

# cover SHELL WHAT WANTED OFFERED: every word of WANTED is among OFFERED.
cover() {
    local shell=$1 what=$2 w missing=""
    for w in $3; do
        grep -qxF -- "$w" <<<"$4" || missing+=" $w"
    done
    if [[ -z $missing ]]; then ok "$shell: $what"; else not_ok "$shell: $what" "not offered:$missing"; fi
}

# --- bash --------------------------------------------------------------------
# shellcheck source-path=SCRIPTDIR source=../../completions/queuectl.bash
source "$COMPDIR/queuectl.bash"
bash_offers() { # LINE: the candidates for the end of LINE
    (
        COMP_LINE=$1 COMP_POINT=${#1}
        read -ra COMP_WORDS <<<"$1"
        [[ $1 == *" " ]] && COMP_WORDS+=("")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        COMPREPLY=()
        _queuectl queuectl "${COMP_WORDS[COMP_CWORD]}" "" 2>/dev/null
        printf '%s\n' "${COMPREPLY[@]}"
    )
}
cover bash "queuectl <TAB> offers every command" "$COMMANDS" "$(bash_offers "queuectl ")"
cover bash "queuectl -<TAB> offers every option of queuectl --help" "${FLAGS[_top]}" "$(bash_offers "queuectl -")"
for cmd in $COMMANDS; do
    cover bash "queuectl $cmd -<TAB> offers every option of queuectl help $cmd" "${FLAGS[$cmd]}" \
        "$(bash_offers "queuectl $cmd -")"
done

# --- zsh ---------------------------------------------------------------------
if command -v zsh >/dev/null; then
        zlines=("queuectl " "queuectl -")
    for cmd in $COMMANDS; do zlines+=("queuectl $cmd -"); done
    if QC_COMPDIR=$COMPDIR QC_TMP=$TMP QC_SETUP=$ROOT/tests/completions/zsh-setup.zsh \
        zsh -f "$ROOT/tests/completions/zsh-driver.zsh" "${zlines[@]}" >"$TMP/zsh.out" 2>&1; then
        zsh_offers() { # LINE: the matches recorded for LINE ("=" of --opt= dropped)
            awk -v want="### $1" '$0 == want { on = 1; next } /^### / { on = 0 } on' "$TMP/zsh.out" | sed 's/=$//'
        }
        cover zsh "queuectl <TAB> offers every command" "$COMMANDS" "$(zsh_offers "queuectl ")"
        cover zsh "queuectl -<TAB> offers every option of queuectl --help" "${FLAGS[_top]}" "$(zsh_offers "queuectl -")"
        for cmd in $COMMANDS; do
            cover zsh "queuectl $cmd -<TAB> offers every option of queuectl help $cmd" "${FLAGS[$cmd]}" \
                "$(zsh_offers "queuectl $cmd -")"
        done
    else
        not_ok "zsh: completions typed on a pseudo-terminal" "$(tail -n 5 "$TMP/zsh.out")"
    fi
else
    not_ok "zsh: installed" "zsh on PATH (apt-get install -y zsh)"
fi

# --- fish --------------------------------------------------------------------
if command -v fish >/dev/null; then
    fish_offers() { # LINE: the candidates fish offers at the end of LINE
        # shellcheck disable=SC2016 # $argv is fish's
        fish --no-config -c 'source $argv[1]; and complete -C $argv[2]' "$COMPDIR/queuectl.fish" "$1" 2>&1 | cut -f1
    }
    cover fish "queuectl <TAB> offers every command" "$COMMANDS" "$(fish_offers "queuectl ")"
    cover fish "queuectl -<TAB> offers every option of queuectl --help" "${FLAGS[_top]}" "$(fish_offers "queuectl -")"
    for cmd in $COMMANDS; do
        cover fish "queuectl $cmd -<TAB> offers every option of queuectl help $cmd" "${FLAGS[$cmd]}" \
            "$(fish_offers "queuectl $cmd -")"
    done
else
    not_ok "fish: installed" "fish on PATH (apt-get install -y fish)"
fi

echo "$passed passed, $failed failed"
((failed == 0))
