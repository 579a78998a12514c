# bash completion for queuectl                                -*- shell-script -*-
#
# Install: copy to /usr/share/bash-completion/completions/queuectl (system-wide),
# or ~/.local/share/bash-completion/completions/queuectl (per user), or source it
# from ~/.bashrc. Needs nothing from the bash-completion package.
#
# Queue names come from the database through `queuectl __complete queues` (schedule
# names, for cron, through `queuectl __complete schedules`), which honours --db /
# --db-password-file typed on the line and $QUEUECTL_DB otherwise, and prints
# nothing on any error.

# Words of the line up to the cursor, split the way the shell would split them
# (whitespace outside quotes; quotes and backslashes removed). We reparse
# COMP_LINE instead of trusting COMP_WORDS because bash also splits words at
# the characters in COMP_WORDBREAKS (":" and "="), which tears apart database
# URLs (sqlite:///x.db) and queue names such as mail:high.
# Sets _queuectl_words (all words, the last one being the word being completed).
_queuectl_split() {
    local line=$1 word="" quote="" c i have=0
    _queuectl_words=()
    for ((i = 0; i < ${#line}; i++)); do
        c=${line:i:1}
        if [[ -n $quote ]]; then
            if [[ $c == "$quote" ]]; then
                quote=""
            elif [[ $c == \\ && $quote == '"' && $((i + 1)) -lt ${#line} ]]; then
                i=$((i + 1))
                word+=${line:i:1}
            else
                word+=$c
            fi
            continue
        fi
        case $c in
            [[:space:]])
                if ((have)); then
                    _queuectl_words+=("$word")
                    word="" have=0
                fi
                ;;
            \' | \")
                quote=$c have=1
                ;;
            \\)
                have=1
                if ((i + 1 < ${#line})); then
                    i=$((i + 1))
                    word+=${line:i:1}
                fi
                ;;
            *)
                word+=$c have=1
                ;;
        esac
    done
    _queuectl_words+=("$word") # the word under the cursor, possibly empty
    _queuectl_quote=$quote       # the quote it is in, if one is open
}

# The commands, in the order of `queuectl --help` (help, not listed there, comes last).
_queuectl_commands="migrate enqueue cron batch claim ack fail extend release work show list stats leases groups top bench serve retry cancel purge move pause resume queue reap lock keda"

# The subcommands of cron, in the order of `queuectl cron --help`.
_queuectl_cron_commands="add remove pause resume list show trigger apply tick"
# The subcommands of batch.
_queuectl_batch_commands="create close show"

# Options that take a value, for command $1 (global ones included); $2 is the
# subcommand of cron.
_queuectl_valued() {
    local v="--db --db-password-file -o --output --field --max-payload"
    case $1 in
        cron)
            case ${2-} in
                add) v+=" --tz --misfire --misfire-limit --misfire-after --overlap --priority --max-attempts --group-key" ;;
                show) v+=" --next --fires" ;;
                tick) v+=" --queue --batch" ;;
            esac
            ;;
        batch)
            case ${2-} in
                create) v+=" --on-success --on-failure" ;;
            esac
            ;;
        enqueue) v+=" --priority --delay --run-at --max-attempts --dedupe-key --group-key --after --on-parent-failure --batch --from" ;;
        migrate) v+=" --lock-wait" ;;
        claim) v+=" --limit --lease --worker --wait" ;;
        ack) v+=" --token --result --from" ;;
        fail) v+=" --token --error --retry-in" ;;
        extend) v+=" --token --lease --progress --note --checkpoint" ;;
        release) v+=" --token" ;;
        work) v+=" --concurrency --batch --lease --timeout --max-jobs --grace --worker --poll-interval" ;;
        list) v+=" --status --limit --after --before --group-key --error" ;;
        leases) v+=" --expiring-within --older-than --worker --limit" ;;
        groups) v+=" --limit" ;;
        top) v+=" --interval --failures" ;;
        serve) v+=" --listen --auth-file --tls-cert --tls-key --threads --refresh --request-timeout" ;;
        retry) v+=" --queue --status --older-than --group-key --error" ;;
        cancel) v+=" --queue --status --group-key --error --batch" ;;
        purge) v+=" --older-than --status --batch" ;;
        move) v+=" --from --to --batch" ;;
        queue) v+=" --dead-letter --max-processing --strict-groups --retain --keep-done --rate --burst --rate-per-key" ;;
        reap) v+=" --batch --older-than" ;;
        lock) v+=" --wait -E --conflict-exit-code" ;;
        bench) v+=" --strategy --clients --jobs --batch --work --duration" ;;
        keda) v+=" --per-pod" ;;
    esac
    printf '%s\n' "$v"
}

# Options of command $1 (or the global ones when $1 is empty); $2 is the
# subcommand of cron.
_queuectl_options() {
    local g="--db --db-password-file -o --output --field -q --quiet -v --verbose --max-payload --version -h --help"
    case $1 in
        "") printf '%s\n' "$g"; return ;;
        cron)
            case ${2-} in
                add) printf '%s' "--tz --misfire --misfire-limit --misfire-after --overlap --priority --max-attempts --group-key" ;;
                show) printf '%s' "--next --fires" ;;
                apply) printf '%s' "--prune --dry-run" ;;
                tick) printf '%s' "--queue --batch" ;;
            esac
            ;;
        batch)
            case ${2-} in
                create) printf '%s' "--on-success --on-failure" ;;
            esac
            ;;
        migrate) printf '%s' "--status --print --lock-wait" ;;
        enqueue) printf '%s' "--priority --delay --run-at --max-attempts --dedupe-key --group-key --after --on-parent-failure --batch --from" ;;
        claim) printf '%s' "--limit --lease --worker --wait" ;;
        ack) printf '%s' "--token --result --from" ;;
        fail) printf '%s' "--token --error --retry-in --permanent" ;;
        extend) printf '%s' "--token --lease --progress --note --checkpoint" ;;
        release) printf '%s' "--token" ;;
        work) printf '%s' "--concurrency --batch --lease --timeout --max-jobs --drain --grace --worker --no-housekeeping --poll-interval" ;;
        list) printf '%s' "--status --limit --after --newest-first --before --group-key --error" ;;
        leases) printf '%s' "--expired --unleased --expiring-within --older-than --worker --limit" ;;
        groups) printf '%s' "--blocked --limit" ;;
        stats) printf '%s' "--exact" ;;
        top) printf '%s' "--once --interval --failures" ;;
        serve) printf '%s' "--listen --allow-writes --read-only --auth-file --tls-cert --tls-key --threads --refresh --request-timeout --hash-password" ;;
        retry) printf '%s' "--queue --status --older-than --group-key --error" ;;
        cancel) printf '%s' "--force --queue --status --group-key --error --batch" ;;
        purge) printf '%s' "--older-than --status --batch --dry-run" ;;
        move) printf '%s' "--from --all --to --batch --dry-run" ;;
        queue) printf '%s' "--dead-letter --max-processing --strict-groups --retain --keep-done --rate --burst --rate-per-key" ;;
        reap) printf '%s' "--batch --dry-run --no-lock --unleased --older-than" ;;
        lock) printf '%s' "--wait --print-key -E --conflict-exit-code" ;;
        bench) printf '%s' "--strategy --clients --jobs --batch --work --duration" ;;
        keda) printf '%s' "--per-pod --scaled-job" ;;
    esac
    # Global options are accepted after the subcommand too.
    printf ' %s\n' "$g"
}

_queuectl() {
    local -a _queuectl_words
    local line=${COMP_LINE:0:COMP_POINT}
    [[ -n $line ]] || line="${COMP_WORDS[*]:0:COMP_CWORD+1}"
    _queuectl_split "$line"

    local n=${#_queuectl_words[@]}
    local cur=${_queuectl_words[n - 1]}
    local prog=${_queuectl_words[0]}
    # Run the queuectl the user is completing when it is typed as a path.
    [[ $prog == */* && -x $prog ]] || prog=queuectl

    # sub: the subcommand of cron; npos then counts the positionals after it.
    local cmd="" sub="" npos=0 dashdash=0 npostdash=0 prev="" w i
    local -a dbargs=()
    local valued
    valued=" $(_queuectl_valued "") "
    for ((i = 1; i < n - 1; i++)); do
        w=${_queuectl_words[i]}
        if ((dashdash)); then
            npostdash=$((npostdash + 1))
            continue
        fi
        case $w in
            --)
                [[ -n $cmd ]] && dashdash=1
                ;;
            --db=* | --db-password-file=*)
                dbargs+=("${w%%=*}" "${w#*=}")
                ;;
            --*=* | -o?*) ;;
            -*)
                if [[ $valued == *" $w "* ]]; then
                    if ((i + 1 < n - 1)); then
                        i=$((i + 1))
                        case $w in
                            --db | --db-password-file) dbargs+=("$w" "${_queuectl_words[i]}") ;;
                        esac
                    else
                        prev=$w # the value of $w is the word being completed
                    fi
                fi
                ;;
            *)
                if [[ -z $cmd ]]; then
                    cmd=$w
                    valued=" $(_queuectl_valued "$cmd") "
                elif [[ ($cmd == cron || $cmd == batch) && -z $sub ]]; then
                    sub=$w
                    valued=" $(_queuectl_valued "$cmd" "$sub") "
                else
                    npos=$((npos + 1))
                fi
                ;;
        esac
    done

    # The value of an option: after "--opt " or inside "--opt=".
    local opt="" vprefix=""
    if [[ -n $prev ]]; then
        opt=$prev
    elif ((!dashdash)) && [[ $cur == --*=* ]]; then
        opt=${cur%%=*} vprefix="${opt}=" cur=${cur#*=}
        [[ $valued == *" $opt "* ]] || opt=""
        [[ -n $opt ]] || { COMPREPLY=(); return 0; }
    elif ((!dashdash)) && [[ $cur == -o?* ]]; then
        opt=-o vprefix=-o cur=${cur#-o}
    fi

    local -a cands=()
    local files=0 nospace=0 list="" listprefix=""
    if [[ -n $opt ]]; then
        case $opt in
            -o | --output)
                list="table wide json ndjson prometheus"
                ;;
            --status | --strategy)
                case $cmd in
                    retry) list="failed canceled" ;;
                    cancel) list="ready waiting failed processing" ;;
                    purge) list="done failed canceled" ;;
                    bench) list="naive for-update skip-locked claim" ;;
                    *) list="ready waiting processing done failed canceled" ;;
                esac
                # Comma lists: complete the last element.
                if [[ $cur == *,* ]]; then
                    listprefix=${cur%,*}, cur=${cur##*,}
                    local s keep=""
                    for s in $list; do
                        [[ ,$listprefix == *",$s,"* ]] || keep+=" $s"
                    done
                    list=$keep
                fi
                ;;
            --strict-groups | --rate-per-key | --keep-done)
                list="on off"
                ;;
            --rate)
                # N/s, N/m or N/h, or none.
                list="none"
                ;;
            --misfire)
                list="once skip all"
                ;;
            --overlap)
                list="allow skip"
                ;;
            --on-parent-failure)
                list="cancel run wait"
                ;;
            --retain)
                # A duration, or none.
                list="none"
                ;;
            --queue | --to)
                list=$("$prog" "${dbargs[@]}" __complete queues 2>/dev/null </dev/null)
                ;;
            --dead-letter)
                list="none $("$prog" "${dbargs[@]}" __complete queues 2>/dev/null </dev/null)"
                ;;
            --field)
                # The binary's own list (it needs no database).
                list=$("$prog" __complete fields 2>/dev/null </dev/null)
                # Comma lists: complete the last element.
                if [[ $cur == *,* ]]; then
                    listprefix=${cur%,*}, cur=${cur##*,}
                fi
                ;;
            --db)
                list="postgresql:// mysql:// sqlite:///"
                nospace=1
                ;;
            --db-password-file | --auth-file | --tls-cert | --tls-key)
                files=1
                ;;
            --from)
                if [[ $cmd == move ]]; then
                    list=$("$prog" "${dbargs[@]}" __complete queues 2>/dev/null </dev/null)
                else
                    files=1
                    list="-"
                fi
                ;;
            *)
                COMPREPLY=()
                return 0
                ;;
        esac
    elif ((dashdash)); then
        # The command run by `work QUEUE -- CMD...` or `lock NAME -- CMD...`.
        if ((npostdash == 0)); then
            mapfile -t cands < <(compgen -c -- "$cur")
        else
            files=1
        fi
    elif [[ $cur == -* ]]; then
        list=$(_queuectl_options "$cmd" "$sub")
        [[ -n $cmd && ($cmd == work || $cmd == lock) ]] && list+=" --"
    elif [[ -z $cmd ]]; then
        list="$_queuectl_commands help"
    else
        case $cmd in
            help)
                ((npos == 0)) && list=$_queuectl_commands
                ;;
            pause | resume)
                # resume offers the paused queues, pause the others.
                local which=unpaused-queues
                [[ $cmd == resume ]] && which=paused-queues
                ((npos == 0)) && list=$("$prog" "${dbargs[@]}" __complete $which 2>/dev/null </dev/null)
                ;;
            enqueue | claim | work | list | leases | groups | purge | queue | reap | stats | keda)
                if ((npos == 0)) || [[ $cmd == stats ]]; then
                    list=$("$prog" "${dbargs[@]}" __complete queues 2>/dev/null </dev/null)
                    if [[ $cmd == stats ]] && ((npos > 0)); then
                        # Do not offer the queues already named.
                        local q keep="" typed=" ${_queuectl_words[*]:1:n-2} "
                        for q in $list; do
                            [[ $typed == *" $q "* ]] || keep+=" $q"
                        done
                        list=$keep
                    fi
                elif [[ $cmd == work ]]; then
                    list="--"
                fi
                ;;
            lock)
                ((npos >= 1)) && list="--"
                ;;
            batch)
                [[ -z $sub ]] && list=$_queuectl_batch_commands
                ;;
            cron)
                case $sub in
                    "")
                        list=$_queuectl_cron_commands
                        ;;
                    add | remove | pause | resume | show | trigger)
                        # NAME; add's third positional is its QUEUE.
                        if ((npos == 0)); then
                            list=$("$prog" "${dbargs[@]}" __complete schedules 2>/dev/null </dev/null)
                        elif [[ $sub == add ]] && ((npos == 2)); then
                            list=$("$prog" "${dbargs[@]}" __complete queues 2>/dev/null </dev/null)
                        fi
                        ;;
                    apply)
                        if ((npos == 0)); then
                            files=1
                            list="-"
                        fi
                        ;;
                esac
                ;;
        esac
    fi

    if [[ -n $list ]]; then
        local IFS=$' \t\n' c
        for c in $list; do
            [[ $c == "$cur"* ]] && cands+=("$vprefix$listprefix$c")
        done
    fi
    if ((files)); then
        local IFS=$'\n' f
        for f in $(compgen -f -- "$cur"); do
            cands+=("$vprefix$f")
        done
        # Readline then quotes them and marks directories with "/".
        compopt -o filenames 2>/dev/null || true
    fi
    if ((nospace)); then
        compopt -o nospace 2>/dev/null || true
    fi

    # Readline replaces only the text after the last COMP_WORDBREAKS character
    # of the word (e.g. after ":" in sqlite:///x or "=" in --status=f): drop
    # that part from every candidate.
    local full=$vprefix$listprefix$cur
    # Inside an open quote ("mail:h) readline breaks at none of them: nothing to drop.
    local breaks=${COMP_WORDBREAKS-$' \t\n"\'><=;|&(:'} head=""
    [[ -n ${_queuectl_quote-} ]] && breaks=""
    for ((i = ${#full} - 1; i >= 0; i--)); do
        if [[ $breaks == *"${full:i:1}"* ]]; then
            head=${full:0:i+1}
            break
        fi
    done
    COMPREPLY=()
    for c in "${cands[@]}"; do
        COMPREPLY+=("${c#"$head"}")
    done
    return 0
}

complete -F _queuectl queuectl
