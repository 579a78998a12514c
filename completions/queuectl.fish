# fish completion for queuectl
#
# Install: copy to ~/.config/fish/completions/queuectl.fish (per user) or to
# /usr/share/fish/vendor_completions.d/queuectl.fish (system-wide; see
# `pkg-config --variable completionsdir fish`, or /etc/fish/completions).
#
# Queue names come from the database through `queuectl __complete queues` (schedule
# names, for cron, through `queuectl __complete schedules`), which honours --db /
# --db-password-file typed on the line and $QUEUECTL_DB otherwise, and prints
# nothing on any error.

# Options that take a value, for command $argv[1] (global ones included);
# $argv[2] is the subcommand of cron.
function __queuectl_valued
    set -l v --db --db-password-file -o --output --field --max-payload
    switch "$argv[1]"
        case cron
            switch "$argv[2]"
                case add
                    set -a v --tz --misfire --misfire-limit --misfire-after --overlap --priority --max-attempts --group-key
                case show
                    set -a v --next --fires
                case tick
                    set -a v --queue --batch
            end
        case batch
            test "$argv[2]" = create; and set -a v --on-success --on-failure
        case migrate
            set -a v --lock-wait
        case enqueue
            set -a v --priority --delay --run-at --max-attempts --dedupe-key --group-key --after --on-parent-failure --batch --from
        case claim
            set -a v --limit --lease --worker
        case ack
            set -a v --token --result --from
        case fail
            set -a v --token --error --retry-in
        case extend
            set -a v --token --lease --progress --note --checkpoint
        case release
            set -a v --token
        case work
            set -a v --concurrency --batch --lease --timeout --max-jobs --grace --worker --poll-interval
        case list
            set -a v --status --limit --after --before --group-key --error
        case leases
            set -a v --expiring-within --older-than --worker --limit
        case groups
            set -a v --limit
        case top
            set -a v --interval --failures
        case serve
            set -a v --listen --auth-file --tls-cert --tls-key --threads --refresh --request-timeout
        case retry
            set -a v --queue --status --older-than --group-key --error
        case cancel
            set -a v --queue --status --group-key --error --batch
        case purge
            set -a v --older-than --status --batch
        case move
            set -a v --from --to --batch
        case queue
            set -a v --dead-letter --max-processing --strict-groups --retain --keep-done --rate --burst --rate-per-key
        case reap
            set -a v --batch --older-than
        case lock
            set -a v --wait
        case bench
            set -a v --strategy --clients --jobs --batch --work --duration
        case keda
            set -a v --per-pod
    end
    printf '%s\n' $v
end

# Reads the tokens before the cursor and prints five lines: the subcommand (or
# an empty line), how many positionals follow it, 1 when a "--" came after it
# (work/lock: the command to run follows), how many words follow that "--", and
# the subcommand of cron (or an empty line; the positionals are then those after it).
# Values of options (--db URL, --lease 5m) are skipped, unlike with
# __fish_use_subcommand, so `queuectl --db URL cl<TAB>` still completes commands.
function __queuectl_state
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l cmd ''
    set -l sub ''
    set -l npos 0
    set -l dashdash 0
    set -l npostdash 0
    set -l valued (__queuectl_valued '')
    set -l skip 0
    for t in $tokens
        if test $dashdash -eq 1
            set npostdash (math $npostdash + 1)
            continue
        end
        if test $skip -eq 1
            set skip 0
            continue
        end
        switch $t
            case --
                test -n "$cmd"; and set dashdash 1
            case '--*=*' '-o?*'
            case '-*'
                contains -- $t $valued; and set skip 1
            case '*'
                if test -z "$cmd"
                    set cmd $t
                    set valued (__queuectl_valued $cmd)
                else if test "$cmd" = cron -o "$cmd" = batch; and test -z "$sub"
                    set sub $t
                    set valued (__queuectl_valued $cmd $sub)
                else
                    set npos (math $npos + 1)
                end
        end
    end
    printf '%s\n' "$cmd" $npos $dashdash $npostdash "$sub"
end

function __queuectl_needs_command
    set -l s (__queuectl_state)
    test -z "$s[1]"
end

# True when the word under the cursor is a queue name: the first positional of
# a command taking a queue (any positional for stats; the third of cron add).
function __queuectl_wants_queue
    set -l s (__queuectl_state)
    test $s[3] -eq 0; or return 1
    switch $s[1]
        case stats
            return 0
        case enqueue claim work list leases groups purge pause resume queue reap keda
            test $s[2] -eq 0
        case cron
            test "$s[5]" = add -a $s[2] -eq 2
        case '*'
            return 1
    end
end

# True for `queuectl cron SUB` with SUB one of $argv (conditions of the options
# of cron's subcommands: __fish_seen_subcommand_from would take `cron list` for list).
function __queuectl_cron_sub
    set -l s (__queuectl_state)
    test "$s[1]" = cron -a $s[3] -eq 0; and contains -- "$s[5]" $argv
end

# True for `queuectl batch SUB` with SUB one of $argv.
function __queuectl_batch_sub
    set -l s (__queuectl_state)
    test "$s[1]" = batch -a $s[3] -eq 0; and contains -- "$s[5]" $argv
end

# True when the word under the cursor is the subcommand of batch.
function __queuectl_wants_batch_command
    set -l s (__queuectl_state)
    test "$s[1]" = batch -a -z "$s[5]" -a $s[3] -eq 0
end

# True when the word under the cursor is the subcommand of cron.
function __queuectl_wants_cron_command
    set -l s (__queuectl_state)
    test "$s[1]" = cron -a -z "$s[5]" -a $s[3] -eq 0
end

# True when the word under the cursor is the NAME of a cron subcommand taking one.
function __queuectl_wants_schedule
    __queuectl_cron_sub add remove pause resume show trigger; and test (__queuectl_state)[2] -eq 0
end

# True when the word under the cursor is the FILE of cron apply.
function __queuectl_wants_cron_file
    __queuectl_cron_sub apply; and test (__queuectl_state)[2] -eq 0
end

# True when the word under the cursor is the COMMAND of `help COMMAND`.
function __queuectl_wants_help_topic
    set -l s (__queuectl_state)
    test "$s[1]" = help -a $s[2] -eq 0 -a $s[3] -eq 0
end

# True when `work QUEUE` / `lock NAME` wait for the "--" before the command.
function __queuectl_wants_dashdash
    set -l s (__queuectl_state)
    contains -- "$s[1]" work lock; and test $s[2] -ge 1 -a $s[3] -eq 0
end

function __queuectl_after_dashdash
    set -l s (__queuectl_state)
    test $s[3] -eq 1
end

# Completes the command line after "--" as a command of its own.
function __queuectl_complete_command
    set -l tokens (commandline -opc)
    set -l i (contains -i -- -- $tokens)
    __fish_complete_subcommand --commandline $tokens[(math $i + 1)..-1] (commandline -ct)
end

# `queuectl __complete $argv[1]`, passing on --db / --db-password-file.
function __queuectl_lookup
    set -l tokens (commandline -opc)
    set -l prog $tokens[1]
    string match -q -- '*/*' $prog; and test -x $prog; or set prog queuectl
    set -l dbargs
    set -l n (count $tokens)
    for i in (seq 2 $n)
        switch $tokens[$i]
            case --
                break
            case --db --db-password-file
                test $i -lt $n; and set -a dbargs $tokens[$i] $tokens[(math $i + 1)]
            case '--db=*' '--db-password-file=*'
                set -a dbargs $tokens[$i]
        end
    end
    command $prog $dbargs __complete $argv[1] 2>/dev/null </dev/null
end

# Queue names from the database.
function __queuectl_queues
    set -l tokens (commandline -opc)
    # resume offers the paused queues, pause the others.
    set -l which queues
    switch (__queuectl_state)[1]
        case pause
            set which unpaused-queues
        case resume
            set which paused-queues
    end
    set -l queues (__queuectl_lookup $which)
    # `stats` takes several queues: do not offer those already named.
    if contains -- stats $tokens
        for q in $queues
            contains -- $q $tokens; or echo $q
        end
    else
        printf '%s\n' $queues
    end
end

# Status names after --status; comma lists complete their last element.
function __queuectl_statuses
    set -l statuses ready waiting processing done failed canceled
    set -l cmd (__queuectl_state)[1]
    switch $cmd
        case retry
            set statuses failed canceled
        case cancel
            set statuses ready waiting failed processing
        case purge
            set statuses done failed canceled
    end
    set -l cur (commandline -ct)
    set cur (string replace -r -- '^--status=' '' $cur)
    set -l prefix ''
    if string match -q -- '*,*' $cur
        set prefix (string replace -r -- ',[^,]*$' ',' $cur)
    end
    set -l have (string split , -- $prefix)
    for s in $statuses
        contains -- $s $have; or echo $prefix$s
    end
end

# Field names after --field, from the binary itself (no database needed); comma lists
# complete their last element.
function __queuectl_fields
    set -l prog (commandline -opc)[1]
    string match -q -- '*/*' $prog; and test -x $prog; or set prog queuectl
    set -l cur (string replace -r -- '^--field=' '' (commandline -ct))
    set -l prefix ''
    if string match -q -- '*,*' $cur
        set prefix (string replace -r -- ',[^,]*$' ',' $cur)
    end
    set -l have (string split , -- $prefix)
    for f in (command $prog __complete fields 2>/dev/null </dev/null)
        contains -- $f $have; or echo $prefix$f
    end
end

# No file names unless an option asks for one.
complete -c queuectl -f

# Global options (accepted before and after the subcommand).
complete -c queuectl -s h -l help -d 'Print help and exit'
complete -c queuectl -l db -x -a 'postgresql:// mysql:// sqlite:///' -d 'Database URL (default: $QUEUECTL_DB or local SQLite)'
complete -c queuectl -l db-password-file -r -F -d 'Read the database password from this file'
complete -c queuectl -s o -l output -x -a 'table wide json ndjson prometheus' -d 'Output format'
complete -c queuectl -s q -l quiet -d 'Print only data; no diagnostics'
complete -c queuectl -s v -l verbose -d 'More diagnostics on stderr'
complete -c queuectl -l field -x -a '(__queuectl_fields)' -d 'Print only these fields of each job, tab-separated'
complete -c queuectl -l max-payload -x -d 'Largest payload accepted, in bytes'
complete -c queuectl -n __fish_use_subcommand -l version -d 'Print the version and exit'

# Subcommands.
set -l needs_command '__fish_use_subcommand; or __queuectl_needs_command'
complete -c queuectl -n $needs_command -a migrate -d 'Create or upgrade the queue schema (idempotent)'
complete -c queuectl -n $needs_command -a enqueue -d 'Add a job to a queue (or many with --from)'
complete -c queuectl -n $needs_command -a cron -d 'Recurring jobs: schedules in the database, each tick one job'
complete -c queuectl -n $needs_command -a batch -d 'Jobs enqueued together, and one callback job when all have finished'
complete -c queuectl -n $needs_command -a claim -d 'Take due jobs from a queue, each with a lease'
complete -c queuectl -n $needs_command -a ack -d 'Mark a claimed job done (needs its lock token)'
complete -c queuectl -n $needs_command -a fail -d 'Record a failed attempt: retry after backoff or fail'
complete -c queuectl -n $needs_command -a extend -d 'Push a live lease to now + DUR (heartbeat)'
complete -c queuectl -n $needs_command -a release -d 'Give a claimed job back: ready now, attempt returned'
complete -c queuectl -n $needs_command -a work -d 'Run a command once per job, as a queue worker'
complete -c queuectl -n $needs_command -a show -d 'Show one job with every column'
complete -c queuectl -n $needs_command -a list -d 'List jobs, oldest (or newest) first, a page at a time'
complete -c queuectl -n $needs_command -a stats -d 'Per-queue counts: ready, scheduled, processing, ...'
complete -c queuectl -n $needs_command -a leases -d 'Show processing jobs, their workers and time left'
complete -c queuectl -n $needs_command -a groups -d 'Ordered groups that are busy or blocked, with their heads'
complete -c queuectl -n $needs_command -a top -d 'Live view: queues, busiest workers, newest failures (q quits)'
complete -c queuectl -n $needs_command -a bench -d 'Compare ways of taking jobs with several clients, in scratch tables'
complete -c queuectl -n $needs_command -a serve -d 'A web view of the queues, and its JSON API'
complete -c queuectl -n $needs_command -a retry -d 'Put failed or canceled jobs back to ready'
complete -c queuectl -n $needs_command -a cancel -d 'Cancel ready or failed jobs (processing ones with --force)'
complete -c queuectl -n $needs_command -a purge -d 'Delete finished jobs older than a cutoff'
complete -c queuectl -n $needs_command -a move -d 'Send dead letters back to their queue (or elsewhere)'
complete -c queuectl -n $needs_command -a pause -d 'Pause a queue: claims get nothing until resume'
complete -c queuectl -n $needs_command -a resume -d 'Resume a paused queue'
complete -c queuectl -n $needs_command -a queue -d 'Show or change a queue\'s settings (dead letters, limit, strict groups)'
complete -c queuectl -n $needs_command -a reap -d 'Return jobs whose leases expired (for cron)'
complete -c queuectl -n $needs_command -a lock -d 'Run a command while holding a database named lock'
complete -c queuectl -n $needs_command -a keda -d 'Print a KEDA trigger (YAML) that scales the workers of a queue on Kubernetes'
# help COMMAND (not in the list of queuectl --help)
complete -c queuectl -n $needs_command -a help -d "Show the overview, or a command's help"
complete -c queuectl -n __queuectl_wants_help_topic -a 'migrate enqueue cron claim ack fail extend release work show list stats leases groups top bench serve retry cancel purge move pause resume queue reap lock keda'

# Queue names, "--" and the command run by work/lock.
complete -c queuectl -n __queuectl_wants_queue -a '(__queuectl_queues)' -d Queue
complete -c queuectl -n __queuectl_wants_dashdash -a -- -d 'Then the command to run'
complete -c queuectl -n __queuectl_after_dashdash -a '(__queuectl_complete_command)'

# cron: its subcommands, schedule names, the file of apply.
complete -c queuectl -n __queuectl_wants_cron_command -a add -d 'Add a schedule, or replace the one of that name'
complete -c queuectl -n __queuectl_wants_cron_command -a remove -d 'Remove a schedule and its history (its jobs stay)'
complete -c queuectl -n __queuectl_wants_cron_command -a pause -d 'Stop a schedule firing (its ticks meanwhile are not run later)'
complete -c queuectl -n __queuectl_wants_cron_command -a resume -d 'Let a paused schedule fire again, from its next tick after now'
complete -c queuectl -n __queuectl_wants_cron_command -a list -d 'The schedules: next run in their zone and in UTC, last run and its job'
complete -c queuectl -n __queuectl_wants_cron_command -a show -d 'One schedule: its next fire times and its recent fires with their jobs'
complete -c queuectl -n __queuectl_wants_cron_command -a trigger -d 'Fire a schedule now, once (its ticks go on as before)'
complete -c queuectl -n __queuectl_wants_cron_command -a apply -d 'Make a file of schedules the truth (for CI and configuration management)'
complete -c queuectl -n __queuectl_wants_cron_command -a tick -d 'Fire what is due now, once, and exit (for a system cron or a CronJob)'
complete -c queuectl -n __queuectl_wants_schedule -a '(__queuectl_lookup schedules)' -d Schedule
complete -c queuectl -n __queuectl_wants_cron_file -F -a - -d 'Read stdin'

# migrate
complete -c queuectl -n '__fish_seen_subcommand_from migrate' -l status -d 'List the migrations and whether each is applied'
complete -c queuectl -n '__fish_seen_subcommand_from migrate' -l print -d 'Print the SQL of every migration instead of applying it'
complete -c queuectl -n '__fish_seen_subcommand_from migrate' -l lock-wait -x -d 'How long, in all, to wait for locks (default 15s)'
# enqueue
complete -c queuectl -n '__fish_seen_subcommand_from enqueue' -l priority -x -d 'Larger runs first (default 0)'
complete -c queuectl -n '__fish_seen_subcommand_from enqueue' -l delay -x -d 'Run no earlier than now + DUR (e.g. 30s, 5m)'
complete -c queuectl -n '__fish_seen_subcommand_from enqueue' -l run-at -x -d 'Run no earlier than TIME (RFC 3339)'
complete -c queuectl -n '__fish_seen_subcommand_from enqueue' -l max-attempts -x -d 'Attempts before the job fails (default 25)'
complete -c queuectl -n '__fish_seen_subcommand_from enqueue' -l dedupe-key -x -d 'Unique per queue: an existing job with this key is returned'
complete -c queuectl -n '__fish_seen_subcommand_from enqueue' -l group-key -x -d 'Ordered group: jobs of a queue with one key run one at a time, in id order'
complete -c queuectl -n '__fish_seen_subcommand_from enqueue' -l after -x -d 'Run only after these jobs are done (ids, comma-separated)'
complete -c queuectl -n '__fish_seen_subcommand_from enqueue' -l on-parent-failure -x -a 'cancel run wait' -d 'When a parent fails for good or is canceled'
complete -c queuectl -n '__fish_seen_subcommand_from enqueue' -l batch -x -d 'Add the job to this open batch'
complete -c queuectl -n '__fish_seen_subcommand_from enqueue' -l from -r -F -d 'Read NDJSON jobs from FILE or -'
# claim
complete -c queuectl -n '__fish_seen_subcommand_from claim' -l limit -x -d 'Jobs to claim at most (default 1)'
complete -c queuectl -n '__fish_seen_subcommand_from claim' -l lease -x -d 'Lease length (default 30s)'
complete -c queuectl -n '__fish_seen_subcommand_from claim' -l worker -x -d 'Worker identity (default host:pid)'
complete -c queuectl -n '__fish_seen_subcommand_from claim' -l wait -x -d 'When nothing is due, wait up to DUR for a job'
# ack
complete -c queuectl -n '__fish_seen_subcommand_from ack' -l token -x -d 'The lock_token claim returned'
complete -c queuectl -n '__fish_seen_subcommand_from ack' -l result -x -d 'Result to store, as JSON'
complete -c queuectl -n '__fish_seen_subcommand_from ack' -l from -r -F -d 'Ack many from FILE or - (NDJSON)'
# fail
complete -c queuectl -n '__fish_seen_subcommand_from fail' -l token -x -d 'The lock_token claim returned'
complete -c queuectl -n '__fish_seen_subcommand_from fail' -l error -x -d 'What went wrong (kept as last_error)'
complete -c queuectl -n '__fish_seen_subcommand_from fail' -l retry-in -x -d 'Retry after exactly DUR instead of the backoff'
complete -c queuectl -n '__fish_seen_subcommand_from fail' -l permanent -d 'Fail now, whatever attempts remain'
# extend
complete -c queuectl -n '__fish_seen_subcommand_from extend' -l token -x -d 'The lock_token claim returned'
complete -c queuectl -n '__fish_seen_subcommand_from extend' -l lease -x -d 'New lease from now (default 30s)'
complete -c queuectl -n '__fish_seen_subcommand_from extend' -l progress -x -d 'How far the job is, 0-100'
complete -c queuectl -n '__fish_seen_subcommand_from extend' -l note -x -d 'A line saying what the job is doing'
complete -c queuectl -n '__fish_seen_subcommand_from extend' -l checkpoint -x -d 'JSON to resume from (- reads stdin)'
# release
complete -c queuectl -n '__fish_seen_subcommand_from release' -l token -x -d 'The lock_token claim returned'
# work
complete -c queuectl -n '__fish_seen_subcommand_from work' -l concurrency -x -d 'Jobs run at once (default 1)'
complete -c queuectl -n '__fish_seen_subcommand_from work' -l batch -x -d 'Jobs per claim (default: all free slots)'
complete -c queuectl -n '__fish_seen_subcommand_from work' -l lease -x -d 'Lease per job, kept alive while it runs (default 30s)'
complete -c queuectl -n '__fish_seen_subcommand_from work' -l timeout -x -d 'Stop a job after DUR and fail it'
complete -c queuectl -n '__fish_seen_subcommand_from work' -l max-jobs -x -d 'Exit after claiming N jobs'
complete -c queuectl -n '__fish_seen_subcommand_from work' -l drain -d 'Exit 0 once nothing is due'
complete -c queuectl -n '__fish_seen_subcommand_from work' -l grace -x -d 'On SIGTERM/SIGINT, let running jobs finish this long'
complete -c queuectl -n '__fish_seen_subcommand_from work' -l worker -x -d 'Worker identity (default host:pid)'
complete -c queuectl -n '__fish_seen_subcommand_from work' -l no-housekeeping -d "Do not fire the queue's schedules, reap its expired leases or delete its finished jobs past retention"
complete -c queuectl -n '__fish_seen_subcommand_from work' -l poll-interval -x -d 'Longest pause between claims when idle (default 5s)'
# list (not cron list)
complete -c queuectl -n '__fish_seen_subcommand_from list; and not __queuectl_cron_sub list' -l status -x -a '(__queuectl_statuses)' -d 'Only these statuses'
complete -c queuectl -n '__fish_seen_subcommand_from list; and not __queuectl_cron_sub list' -l limit -x -d 'Jobs per page (default 100)'
complete -c queuectl -n '__fish_seen_subcommand_from list; and not __queuectl_cron_sub list' -l after -x -d 'Only ids above this one (paging oldest first: the last id shown)'
complete -c queuectl -n '__fish_seen_subcommand_from list; and not __queuectl_cron_sub list' -l newest-first -d 'Newest job first (highest id)'
complete -c queuectl -n '__fish_seen_subcommand_from list; and not __queuectl_cron_sub list' -l before -x -d 'Only ids below this one (paging --newest-first: the last id shown)'
complete -c queuectl -n '__fish_seen_subcommand_from list; and not __queuectl_cron_sub list' -l group-key -x -d 'Only jobs of this group key'
complete -c queuectl -n '__fish_seen_subcommand_from list; and not __queuectl_cron_sub list' -l error -x -d 'Only jobs whose last error contains this text (case-sensitive)'
# leases
complete -c queuectl -n '__fish_seen_subcommand_from leases' -l expired -d 'Only leases that have already expired'
complete -c queuectl -n '__fish_seen_subcommand_from leases' -l unleased -d 'Only processing jobs without a lease (lock_until NULL)'
complete -c queuectl -n '__fish_seen_subcommand_from leases' -l expiring-within -x -d 'Only leases ending within DUR'
complete -c queuectl -n '__fish_seen_subcommand_from leases' -l older-than -x -d 'Only jobs in processing for more than DUR'
complete -c queuectl -n '__fish_seen_subcommand_from leases' -l worker -x -d 'Only leases held by this worker'
complete -c queuectl -n '__fish_seen_subcommand_from leases' -l limit -x -d 'At most N leases (default 1000)'
# groups
complete -c queuectl -n '__fish_seen_subcommand_from groups' -l blocked -d 'Only groups blocked by a failed head (strict mode)'
complete -c queuectl -n '__fish_seen_subcommand_from groups' -l limit -x -d 'At most N groups (default 100)'
# top
complete -c queuectl -n '__fish_seen_subcommand_from top' -l once -d 'Print one frame and exit (also -o json)'
complete -c queuectl -n '__fish_seen_subcommand_from top' -l interval -x -d 'Time between frames (default 1s, at least 100ms)'
complete -c queuectl -n '__fish_seen_subcommand_from top' -l failures -x -d 'With --once: list the N newest failures (default 5)'
# stats
complete -c queuectl -n '__fish_seen_subcommand_from stats' -l exact -d 'Count every done, failed and canceled job (reads the whole history)'
# serve
complete -c queuectl -n '__fish_seen_subcommand_from serve' -l listen -x -d 'HOST:PORT to listen on (default 127.0.0.1:8080; port 0: any)'
complete -c queuectl -n '__fish_seen_subcommand_from serve' -l allow-writes -d 'Let the page retry, cancel, move, pause, resume and purge'
complete -c queuectl -n '__fish_seen_subcommand_from serve' -l read-only -d 'Refuse every write (the default)'
complete -c queuectl -n '__fish_seen_subcommand_from serve' -l auth-file -r -F -d 'Users (USER:HASH) and bearer tokens (token:HASH) who may sign in'
complete -c queuectl -n '__fish_seen_subcommand_from serve' -l tls-cert -r -F -d 'Serve HTTPS with this PEM certificate'
complete -c queuectl -n '__fish_seen_subcommand_from serve' -l tls-key -r -F -d '... and this PEM private key'
complete -c queuectl -n '__fish_seen_subcommand_from serve' -l threads -x -d 'Requests served at once (default 8)'
complete -c queuectl -n '__fish_seen_subcommand_from serve' -l refresh -x -d 'How often the page refreshes (default 2s)'
complete -c queuectl -n '__fish_seen_subcommand_from serve' -l request-timeout -x -d 'Close a connection slower than this to send a request or read an answer (default 30s)'
complete -c queuectl -n '__fish_seen_subcommand_from serve' -l hash-password -d 'Read a password on stdin, print its bcrypt hash for --auth-file'
# retry
complete -c queuectl -n '__fish_seen_subcommand_from retry' -l queue -x -a '(__queuectl_queues)' -d 'Every failed job of this queue, instead of ids'
complete -c queuectl -n '__fish_seen_subcommand_from retry' -l status -x -a '(__queuectl_statuses)' -d 'With --queue: failed (default) and/or canceled'
complete -c queuectl -n '__fish_seen_subcommand_from retry' -l older-than -x -d 'With --queue: only jobs finished over DUR ago'
complete -c queuectl -n '__fish_seen_subcommand_from retry' -l group-key -x -d 'With --queue: only jobs of this group key'
complete -c queuectl -n '__fish_seen_subcommand_from retry' -l error -x -d 'With --queue: only jobs whose last error contains this text (case-sensitive)'
# cancel
complete -c queuectl -n '__fish_seen_subcommand_from cancel' -l force -d 'Also cancel processing jobs'
complete -c queuectl -n '__fish_seen_subcommand_from cancel' -l queue -x -a '(__queuectl_queues)' -d 'Every matching job of this queue, instead of ids'
complete -c queuectl -n '__fish_seen_subcommand_from cancel' -l status -x -a '(__queuectl_statuses)' -d 'With --queue: ready, waiting, failed, processing (with --force); default ready,waiting,failed'
complete -c queuectl -n '__fish_seen_subcommand_from cancel' -l group-key -x -d 'With --queue: only jobs of this group key'
complete -c queuectl -n '__fish_seen_subcommand_from cancel' -l error -x -d 'With --queue: only jobs whose last error contains this text (case-sensitive)'
complete -c queuectl -n '__fish_seen_subcommand_from cancel' -l batch -x -d 'With --queue: jobs canceled per transaction (default 1000)'
# move
complete -c queuectl -n '__fish_seen_subcommand_from move' -l from -x -a '(__queuectl_queues)' -d 'Every dead letter in this (dead-letter) queue'
complete -c queuectl -n '__fish_seen_subcommand_from move' -l all -d 'Every dead letter of every queue'
complete -c queuectl -n '__fish_seen_subcommand_from move' -l to -x -a '(__queuectl_queues)' -d 'Into this queue instead of the queue each gave up in'
complete -c queuectl -n '__fish_seen_subcommand_from move' -l batch -x -d 'Jobs moved per transaction (default 1000)'
complete -c queuectl -n '__fish_seen_subcommand_from move' -l dry-run -d 'List what would move; change nothing'
# purge
complete -c queuectl -n '__fish_seen_subcommand_from purge' -l older-than -x -d 'Finished more than DUR ago (required)'
complete -c queuectl -n '__fish_seen_subcommand_from purge' -l status -x -a '(__queuectl_statuses)' -d 'Which finished jobs (default all)'
complete -c queuectl -n '__fish_seen_subcommand_from purge' -l batch -x -d 'Rows deleted per transaction (default 1000)'
complete -c queuectl -n '__fish_seen_subcommand_from purge' -l dry-run -d 'Count what would be deleted; delete nothing'
# queue
complete -c queuectl -n '__fish_seen_subcommand_from queue' -l dead-letter -x -a 'none (__queuectl_queues)' -d 'Where a job that gives up goes (none: stay failed here)'
complete -c queuectl -n '__fish_seen_subcommand_from queue' -l max-processing -x -d 'At most N jobs processing at once (0: no limit)'
complete -c queuectl -n '__fish_seen_subcommand_from queue' -l strict-groups -x -a 'on off' -d 'A failed job blocks the rest of its group (on) or not (off, default)'
complete -c queuectl -n '__fish_seen_subcommand_from queue' -l retain -x -a none -d 'Workers delete its finished jobs older than DUR (none: keep them, the default)'
complete -c queuectl -n '__fish_seen_subcommand_from queue' -l rate -x -a none -d 'At most N jobs started per second, minute or hour: N/s, N/m, N/h (none: no limit)'
complete -c queuectl -n '__fish_seen_subcommand_from queue' -l burst -x -d 'With --rate: starts saved up while quiet (default: N of the rate)'
complete -c queuectl -n '__fish_seen_subcommand_from queue' -l rate-per-key -x -a 'on off' -d 'With --rate: a bucket per group key (on) or one for the queue (off, default)'
complete -c queuectl -n '__fish_seen_subcommand_from queue' -l keep-done -x -a 'on off' -d 'off: an ack deletes its job; on: keep done jobs (default)'
# reap
complete -c queuectl -n '__fish_seen_subcommand_from reap' -l batch -x -d 'Jobs per transaction (default 1000)'
complete -c queuectl -n '__fish_seen_subcommand_from reap' -l dry-run -d 'Show what would happen; change nothing'
complete -c queuectl -n '__fish_seen_subcommand_from reap' -l no-lock -d 'Do not take the queuectl:reap named lock'
complete -c queuectl -n '__fish_seen_subcommand_from reap' -l unleased -d 'Return processing jobs without a lease instead (needs --older-than)'
complete -c queuectl -n '__fish_seen_subcommand_from reap' -l older-than -x -d 'With --unleased: only jobs in processing for more than DUR'
# lock
complete -c queuectl -n '__fish_seen_subcommand_from lock' -l wait -x -d 'Wait up to DUR for the lock (default: do not wait)'
complete -c queuectl -n '__fish_seen_subcommand_from lock' -l print-key -d 'Print the key the database locks for the name; take nothing'
complete -c queuectl -n '__fish_seen_subcommand_from lock' -s E -l conflict-exit-code -x -d 'Exit code when the lock is busy (default 5)'
# bench
complete -c queuectl -n '__fish_seen_subcommand_from bench' -l strategy -x -a 'naive for-update skip-locked claim' -d 'Comma list of naive, for-update, skip-locked, claim (default all)'
complete -c queuectl -n '__fish_seen_subcommand_from bench' -l clients -x -d 'Clients at once, each its own connection (4)'
complete -c queuectl -n '__fish_seen_subcommand_from bench' -l jobs -x -d 'Jobs per strategy (200)'
complete -c queuectl -n '__fish_seen_subcommand_from bench' -l batch -x -d 'Jobs per claim (1)'
complete -c queuectl -n '__fish_seen_subcommand_from bench' -l work -x -d 'Simulated work per job, a sleep (20ms; 0 for none)'
complete -c queuectl -n '__fish_seen_subcommand_from bench' -l duration -x -d 'Longest run per strategy (60s)'
# keda
complete -c queuectl -n '__fish_seen_subcommand_from keda' -l per-pod -x -d 'Jobs one pod takes: its work --concurrency, or with --scaled-job its --max-jobs (default 1)'
complete -c queuectl -n '__fish_seen_subcommand_from keda' -l scaled-job -d 'For a ScaledJob (a Kubernetes Job per job) instead of a ScaledObject'
# cron add, show, apply, tick
complete -c queuectl -n '__queuectl_cron_sub add' -l tz -x -d 'IANA time zone of the schedule (default UTC)'
complete -c queuectl -n '__queuectl_cron_sub add' -l misfire -x -a 'once skip all' -d 'Ticks missed while nothing fired: once (default), skip or all'
complete -c queuectl -n '__queuectl_cron_sub add' -l misfire-limit -x -d 'With --misfire all: at most N missed ticks run, the latest (default 100)'
complete -c queuectl -n '__queuectl_cron_sub add' -l misfire-after -x -d 'A tick later than this counts as missed (default 60s)'
complete -c queuectl -n '__queuectl_cron_sub add' -l overlap -x -a 'allow skip' -d 'Allow (default), or skip: no new job while the last one is ready or processing'
complete -c queuectl -n '__queuectl_cron_sub add' -l priority -x -d 'Priority of each job (default 0)'
complete -c queuectl -n '__queuectl_cron_sub add' -l max-attempts -x -d 'Attempts of each job (default 25)'
complete -c queuectl -n '__queuectl_cron_sub add' -l group-key -x -d 'Ordered group of each job'
complete -c queuectl -n '__queuectl_cron_sub show' -l next -x -d 'How many coming fire times to show (default 5)'
complete -c queuectl -n '__queuectl_cron_sub show' -l fires -x -d 'How many recent fires to show (default 10, at most 100 are kept)'
complete -c queuectl -n '__queuectl_cron_sub apply' -l prune -d 'Also remove the schedules the file does not name'
complete -c queuectl -n '__queuectl_cron_sub apply' -l dry-run -d 'Print what would change; write nothing'
complete -c queuectl -n '__queuectl_cron_sub tick' -l queue -x -a '(__queuectl_queues)' -d 'Only the schedules of this queue (default: all)'
complete -c queuectl -n '__queuectl_cron_sub tick' -l batch -x -d 'Schedules per transaction (default 100)'
# batch
complete -c queuectl -n __queuectl_wants_batch_command -a create -d 'Open a new batch; prints its id'
complete -c queuectl -n __queuectl_wants_batch_command -a close -d 'Say no more jobs will join; calls back now if every member has finished'
complete -c queuectl -n __queuectl_wants_batch_command -a show -d 'A batch: its state, counts and callback'
complete -c queuectl -n '__queuectl_batch_sub create' -l on-success -x -d 'Callback when every member is done: QUEUE PAYLOAD'
complete -c queuectl -n '__queuectl_batch_sub create' -l on-failure -x -d 'Callback when a member failed for good or was canceled: QUEUE PAYLOAD'
