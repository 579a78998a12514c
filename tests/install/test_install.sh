#!/usr/bin/env bash
# Installs a built tree into a scratch prefix with `cmake --install` and checks that the
# binary, its driver modules, the man page and the three shell completions land where they
# belong, that the installed binary runs a SQLite command, that
# `man -l` renders the page, and that the page describes every command.
# Usage: tests/install/test_install.sh path/to/build
# Prints one line per check and ends with "N passed, M failed"; exits 1 on any failure.
set -euo pipefail

BUILD=${1:?usage: $0 BUILD_DIR}
PREFIX=$(mktemp -d "${TMPDIR:-/tmp}/queuectl-install.XXXXXX")
trap 'rm -rf "$PREFIX"' EXIT

passed=0 failed=0
ok() { passed=$((passed + 1)); printf 'ok   %s\n' "$1"; }
not_ok() { failed=$((failed + 1)); printf 'FAIL %s\n     %s\n' "$1" "$2"; }

if out=$(cmake --install "$BUILD" --prefix "$PREFIX" 2>&1); then ok "cmake --install $BUILD --prefix $PREFIX"; else
    not_ok "cmake --install $BUILD --prefix $PREFIX" "$out"
fi

for f in bin/queuectl share/man/man1/queuectl.1 \
    share/bash-completion/completions/queuectl \
    share/zsh/vendor-completions/_queuectl \
    share/fish/vendor_completions.d/queuectl.fish; do
    if [[ -s $PREFIX/$f ]]; then ok "installed $f"; else not_ok "installed $f" "missing or empty"; fi
done
if [[ -x $PREFIX/bin/queuectl ]] && "$PREFIX/bin/queuectl" --version | grep -q '^queuectl '; then
    ok "the installed binary runs"
else
    not_ok "the installed binary runs" "$PREFIX/bin/queuectl --version failed"
fi
# The driver modules (one per backend, loaded at run time) land in LIBDIR/queuectl, where the
# installed binary finds them: a SQLite command works from the install alone.
for driver in postgresql mysql sqlite; do
    if [[ -n $(find "$PREFIX" -path "*/queuectl/queuectl-$driver.so" -type f 2>/dev/null) ]]; then
        ok "installed the $driver driver"
    else
        not_ok "installed the $driver driver" "no queuectl/queuectl-$driver.so under $PREFIX"
    fi
done
if out=$("$PREFIX/bin/queuectl" --db "sqlite:$PREFIX/installed.db" -q migrate 2>&1) &&
    out=$("$PREFIX/bin/queuectl" --db "sqlite:$PREFIX/installed.db" -o json stats 2>&1); then
    ok "the installed binary loads its SQLite driver"
else
    not_ok "the installed binary loads its SQLite driver" "$out"
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
for pair in queuectl.bash:share/bash-completion/completions/queuectl \
    _queuectl:share/zsh/vendor-completions/_queuectl \
    queuectl.fish:share/fish/vendor_completions.d/queuectl.fish; do
    src=${pair%%:*} dst=${pair#*:}
    if cmp -s "$root/completions/$src" "$PREFIX/$dst"; then ok "$dst is completions/$src"; else
        not_ok "$dst is completions/$src" "the files differ"
    fi
done

page=$PREFIX/share/man/man1/queuectl.1
if text=$(MANWIDTH=100 man -l "$page" 2>"$PREFIX/man.err" | col -b) && [[ -n $text ]] &&
    [[ ! -s $PREFIX/man.err ]]; then
    ok "man -l renders the page without warnings"
else
    not_ok "man -l renders the page without warnings" "$(head -c 500 "$PREFIX/man.err")"
    text=""
fi
missing=""
for cmd in $("$BUILD/queuectl" __complete commands); do
    # Each command has its subsection, with its usage line and options.
    grep -qE "^ +queuectl $cmd\$" <<<"$text" || missing+=" $cmd(section)"
    grep -qF "Usage: queuectl $cmd " <<<"$text" || missing+=" $cmd(usage)"
done
if [[ -z $missing ]]; then ok "the page describes every command"; else
    not_ok "the page describes every command" "missing:$missing"
fi
for word in "--db" "--output" "Exit codes" "QUEUECTL_DB" "EXIT STATUS" "ENVIRONMENT" \
    "QUEUECTL_DB_PASSWORD" "XDG_DATA_HOME"; do
    if grep -qF -- "$word" <<<"$text"; then ok "the page mentions $word"; else
        not_ok "the page mentions $word" "not found"
    fi
done

echo "$passed passed, $failed failed"
((failed == 0))
