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
expect_eq "fixture: __complete queues lists emails and reports" \
    "emails reports" "$(queuectl __complete queues)"

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
bcheck eq "queuectl <TAB> -> every command" "queuectl " \
    "migrate enqueue claim ack fail extend release work show list stats leases retry cancel purge pause resume reap lock"
bcheck eq "queuectl claim <TAB> -> queues from \$QUEUECTL_DB" "queuectl claim " "emails reports"
bcheck eq "queuectl claim em<TAB> -> emails" "queuectl claim em" "emails"
bcheck eq "queuectl claim emails <TAB> -> nothing (one queue only)" "queuectl claim emails " ""
bcheck eq "queuectl list --status f<TAB> -> failed" "queuectl list --status f" "failed"
bcheck eq "queuectl list --status=f<TAB> -> failed" "queuectl list --status=f" "failed"
bcheck eq "queuectl list --status ready,p<TAB> -> ready,processing" "queuectl list --status ready,p" "ready,processing"
bcheck eq "queuectl purge --status done,<TAB> -> the other finished statuses" \
    "queuectl purge --status done," "done,failed done,canceled"
bcheck eq "queuectl retry --status <TAB> -> failed canceled" "queuectl retry --status " "failed canceled"
bcheck eq "queuectl migrate --status <TAB> -> nothing (a flag there)" "queuectl migrate --status " ""
bcheck has "queuectl claim emails --l<TAB> has --lease --limit" "queuectl claim emails --l" "--lease --limit"
bcheck eq "queuectl claim emails --l<TAB> is exactly --lease --limit" "queuectl claim emails --l" "--lease --limit"
bcheck has "queuectl -o <TAB> has json" "queuectl -o " "json"
bcheck eq "queuectl -o <TAB> -> table json ndjson prometheus" "queuectl -o " "table json ndjson prometheus"
bcheck eq "queuectl -o json cl<TAB> -> claim (option value skipped)" "queuectl -o json cl" "claim"
bcheck eq "queuectl --db ALT cl<TAB> -> claim (URL with colons skipped)" "queuectl --db $ALT cl" "claim"
bcheck has "queuectl --<TAB> has global options" "queuectl --" "--db --db-password-file --output --quiet --verbose --max-payload --help"
bcheck eq "queuectl --db MISSING claim <TAB> -> no queues" "queuectl --db $MISSING claim " ""
bcheck eq "queuectl --db ALT claim <TAB> -> queues of that db" "queuectl --db $ALT claim " "nightly mail:high"
bcheck eq "queuectl claim --db=ALT <TAB> -> queues of that db" "queuectl claim --db=$ALT " "nightly mail:high"
bcheck eq "queuectl --db ALT claim mail:<TAB> -> high (after the ':' word break)" "queuectl --db $ALT claim mail:" "high"
bcheck eq "queuectl stats emails <TAB> -> the other queues" "queuectl stats emails " "reports"
bcheck eq "queuectl work emails <TAB> -> --" "queuectl work emails " "--"
bcheck has "queuectl work emails -- ech<TAB> -> commands" "queuectl work emails -- ech" "echo"
bcheck eq "queuectl show <TAB> -> nothing (a job id)" "queuectl show " ""
bcheck eq "queuectl claim --lease <TAB> -> nothing (a duration)" "queuectl claim --lease " ""
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
    # (compadd is wrapped) in a file, then "DONE".
    cat >"$TMP/zsh-setup.zsh" <<'EOF'
fpath=("$QC_COMPDIR" $fpath)
autoload -U compinit && compinit -u -d "$QC_TMP/zcompdump.pty"
compadd() {
  if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return; fi
  local -a hits
  builtin compadd -A hits "$@"
  print -rl -- $hits >>| $QC_TMP/zsh.hits
  builtin compadd "$@"
}
zle -C qc-complete complete-word _main_complete
qc-tab() { zle qc-complete; print -r -- DONE >>| $QC_TMP/zsh.hits; BUFFER=; CURSOR=0 }
zle -N qc-tab
bindkey '^I' qc-tab
print -r -- ready >| $QC_TMP/zsh.ready
EOF
    cat >"$TMP/zsh-driver.zsh" <<'EOF'
# zsh zsh-driver.zsh LINE...: prints, per LINE, "### LINE" then the matches.
zmodload zsh/zpty || exit 3
export TERM=xterm
wait_for() { # FILE PATTERN: read the pty (so it never blocks) until FILE matches
  local i junk
  for (( i = 0; i < 600; i++ )); do
    while zpty -rt qc junk 2>/dev/null; do :; done
    [[ -f $1 ]] && grep -q -- "$2" $1 && return 0
    sleep 0.1
  done
  return 1
}
zpty qc zsh -f -i
zpty -w qc ". ${(q)QC_TMP}/zsh-setup.zsh"
wait_for $QC_TMP/zsh.ready ready || { print "zsh did not start"; exit 4 }
for line in "$@"; do
  rm -f $QC_TMP/zsh.hits
  zpty -w -n qc "$line"$'\t'
  wait_for $QC_TMP/zsh.hits '^DONE$' || { print "no completion for: $line"; exit 5 }
  print -r -- "### $line"
  grep -v '^DONE$' $QC_TMP/zsh.hits | sort -u
done
zpty -d qc
EOF
    zlines=(
        "queuectl cl"
        "queuectl claim "
        "queuectl --db $MISSING claim "
        "queuectl --db $ALT claim "
        "queuectl claim --db $ALT "
        "queuectl list --status f"
        "queuectl retry --status "
        "queuectl claim emails --l"
        "queuectl -o "
        "queuectl stats emails "
        "queuectl work emails -- ech"
    )
    if zout=$(QC_TMP=$TMP QC_COMPDIR=$COMPDIR zsh -f "$TMP/zsh-driver.zsh" "${zlines[@]}" 2>&1); then
        zhits() { awk -v l="### $1" '$0 == l {on = 1; next} /^### / {on = 0} on' <<<"$zout"; }
        expect_eq "zsh: queuectl cl<TAB> -> claim" "claim" "$(zhits "queuectl cl")"
        expect_eq "zsh: queuectl claim <TAB> -> emails reports" "emails reports" "$(zhits "queuectl claim ")"
        expect_eq "zsh: queuectl --db MISSING claim <TAB> -> no queues" "" "$(zhits "queuectl --db $MISSING claim ")"
        expect_eq "zsh: queuectl --db ALT claim <TAB> -> queues of that db" "nightly mail:high" "$(zhits "queuectl --db $ALT claim ")"
        expect_eq "zsh: queuectl claim --db ALT <TAB> -> queues of that db" "nightly mail:high" "$(zhits "queuectl claim --db $ALT ")"
        expect_eq "zsh: queuectl list --status f<TAB> -> failed" "failed" "$(zhits "queuectl list --status f")"
        expect_eq "zsh: queuectl retry --status <TAB> -> failed canceled" "failed canceled" "$(zhits "queuectl retry --status ")"
        expect_eq "zsh: queuectl claim emails --l<TAB> -> --lease --limit" "--lease --limit" "$(zhits "queuectl claim emails --l")"
        expect_has "zsh: queuectl -o <TAB> has json" "json table ndjson prometheus" "$(zhits "queuectl -o ")"
        expect_eq "zsh: queuectl stats emails <TAB> -> reports" "reports" "$(zhits "queuectl stats emails ")"
        expect_has "zsh: queuectl work emails -- ech<TAB> has echo" "echo" "$(zhits "queuectl work emails -- ech")"
    else
        not_ok "zsh: interactive completion on a pty" "the driver runs" "$zout"
    fi
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
    fcheck eq "queuectl claim <TAB> -> emails reports" "queuectl claim " "emails reports"
    fcheck eq "queuectl --db MISSING claim <TAB> -> no queues" "queuectl --db $MISSING claim " ""
    fcheck eq "queuectl --db ALT claim <TAB> -> queues of that db" "queuectl --db $ALT claim " "nightly mail:high"
    fcheck eq "queuectl --db ALT cl<TAB> -> claim (URL skipped)" "queuectl --db $ALT cl" "claim"
    fcheck eq "queuectl list --status f<TAB> -> failed" "queuectl list --status f" "failed"
    fcheck eq "queuectl list --status ready,p<TAB> -> ready,processing" "queuectl list --status ready,p" "ready,processing"
    fcheck eq "queuectl claim emails --l<TAB> -> --lease --limit" "queuectl claim emails --l" "--lease --limit"
    fcheck eq "queuectl -o <TAB> -> table json ndjson prometheus" "queuectl -o " "table json ndjson prometheus"
    fcheck eq "queuectl stats emails <TAB> -> reports" "queuectl stats emails " "reports"
    fcheck eq "queuectl work emails <TAB> -> --" "queuectl work emails " "--"
    fcheck has "queuectl work emails -- ech<TAB> has echo" "queuectl work emails -- ech" "echo"
    # shellcheck disable=SC2016
    got=$(fish --no-config -c 'set -p fish_complete_path $argv[1]; complete -C "queuectl cl"' "$COMPDIR" 2>&1 | cut -f1) || true
    expect_eq "fish: autoloads queuectl.fish from fish_complete_path" "claim" "$got"
else
    not_ok "fish: installed" "fish on PATH (apt-get install -y fish)" "not found"
fi

if [[ -e $TMP/missing.db ]]; then
    echo "# note: completing with --db $MISSING created that file (queuectl opens SQLite read-write)"
fi
echo "$passed passed, $failed failed"
((failed == 0))
