# zsh zsh-driver.zsh LINE...: prints, per LINE, "### LINE" then the matches.
# An interactive zsh on a pseudo-terminal loads QC_SETUP (zsh-setup.zsh: completions from
# QC_COMPDIR, Tab recording every match in QC_TMP/zsh.hits); shared by test_completions.sh
# and test_cover_help.sh.
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
zpty -w qc ". ${(q)QC_SETUP}"
wait_for $QC_TMP/zsh.ready ready || { print "zsh did not start"; exit 4 }
for line in "$@"; do
  rm -f $QC_TMP/zsh.hits
  zpty -w -n qc "$line"$'\t'
  wait_for $QC_TMP/zsh.hits '^DONE$' || { print "no completion for: $line"; exit 5 }
  print -r -- "### $line"
  grep -v '^DONE$' $QC_TMP/zsh.hits | sort -u
done
zpty -d qc
