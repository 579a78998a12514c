# Loaded by zsh-driver.zsh in the interactive zsh: compinit over QC_COMPDIR, compadd
# wrapped to record every match in QC_TMP/zsh.hits, and Tab bound to complete then write DONE.
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
