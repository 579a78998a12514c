#!/usr/bin/env bash
# Fails when a command file writes to stdout or stderr by itself. Commands hand their
# result to Context::print, print_report, print_summary or print_text and their diagnostics
# to Context::note, debug or say; only src/cli writes to the streams (ARCHITECTURE.md,
# "commands/"). Looks, outside comments and string literals, for the standard streams
# (std::cout, std::cerr, std::clog, stdout, stderr) and the C calls that write (printf,
# fprintf, puts, fputs, fwrite, write, ...) and for the Context's own streams (ctx.out,
# ctx.err: private now, so such a command would not compile either). Naming STDOUT_FILENO
# to ask for the terminal's width, or to hand it to src/cli's Screen, is allowed.
#
# Usage: commands_do_not_print.sh DIR    (the commands/ folder)
set -euo pipefail

dir=${1:?usage: commands_do_not_print.sh COMMANDS_DIR}
shopt -s nullglob
files=("$dir"/*.cpp "$dir"/*.hpp)
if [ ${#files[@]} -eq 0 ]; then
  echo "commands_do_not_print: no source files in $dir" >&2
  exit 2
fi

# A call of a free function, not a member (out.write is a stream's, reached only through
# a stream this check names): start of line or a character that cannot end a member access.
call='(^|[^.>[:alnum:]_:])((std)?::)?'
writers='(printf|vprintf|fprintf|vfprintf|dprintf|vdprintf|puts|fputs|putchar|fputc|putc|fwrite|write|writev|perror)'
streams='\b(std::)?(cout|cerr|clog|wcout|wcerr|wclog|stdout|stderr)\b'
context='\b[[:alnum:]_]*ctx[[:alnum:]_]*(\.|->)(out|err)_?\b'
pattern="${streams}|${context}|${call}${writers}[[:space:]]*\\("

found=0
for f in "${files[@]}"; do
  # Blank out character literals, string literals, /* */ comments on one line and // comments,
  # keeping the line numbers.
  while IFS=: read -r n _; do
    echo "$f:$n: writes to a stream itself: $(sed -n "${n}p" "$f" | sed 's/^[[:space:]]*//')"
    found=1
  done < <(sed -E -e "s/'([^'\\\\]|\\\\.)'/''/g" \
                  -e 's/"([^"\\]|\\.)*"/""/g' \
                  -e 's:/\*.*\*/::g' \
                  -e 's://.*$::' "$f" |
           grep -nE "$pattern" || true)
done

if [ $found -ne 0 ]; then
  echo "commands/ must not print: return an Output for Context::print (or print_report," >&2
  echo "print_summary, print_text) and send diagnostics through Context::note, debug or say." >&2
  exit 1
fi
echo "commands_do_not_print: ${#files[@]} file(s) in $dir write to no stream themselves"
