#!/usr/bin/env bash
# Watches the machine while the tests run, so that a run that fails for want of memory, or
# stalls as a whole, says so:
#   resource-watch.sh run LOG      every 10 s: the time, the memory available, what the
#                                  scratch tmpfs holds, and the three largest processes
#   resource-watch.sh report LOG   the lowest memory seen, with its largest processes, and
#                                  every gap of over 60 s between two samples (the whole
#                                  machine, this loop included, stood still)
set -uo pipefail

mode=${1:?usage: resource-watch.sh run|report LOG}
log=${2:?usage: resource-watch.sh run|report LOG}

case $mode in
  run)
    while true; do
      avail=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo)
      shm=$(df -Pm /dev/shm 2>/dev/null | awk 'NR == 2 { print $3 }')
      # Each with what tells servers apart: a mariadbd's --datadir or --port.
      top=$(ps -eo rss=,args= --sort=-rss | head -3 | awk '{
        name = $2; sub(".*/", "", name); extra = ""
        for (i = 3; i <= NF; i++) if ($i ~ /^--(datadir|port)=/) { extra = extra " " $i }
        printf "%s%s %d MiB; ", name, extra, $1 / 1024 }')
      echo "$(date +%s) available=${avail}MiB shm_used=${shm:-?}MiB largest: $top" >>"$log"
      sleep 10
    done
    ;;
  report)
    [[ -s $log ]] || exit 0
    echo "resource-watch: $(wc -l <"$log") samples, 10 s apart"
    first=$(head -1 "$log" | cut -d' ' -f1)
    sort -t= -k2 -n "$log" | head -1 |
      awk -v first="$first" '{ at = $1 - first; $1 = ""; printf "resource-watch: lowest memory, %d s into the run:%s\n", at, $0 }'
    # Every sample with under 4 GiB available: what grew, and when.
    awk -v first="$(head -1 "$log" | cut -d' ' -f1)" '{ split($2, a, "="); if (a[2] + 0 < 4096) { at = $1 - first; $1 = ""; printf "resource-watch: low, %d s in:%s\n", at, $0 } }' "$log" | head -20
    awk 'NR == 1 { first = $1 }
         { if (prev && $1 - prev > 60)
             printf "resource-watch: no sample for %d s, %d s into the run (the machine stood still)\n", $1 - prev, prev - first
           prev = $1 }' "$log"
    ;;
  *)
    echo "usage: resource-watch.sh run|report LOG" >&2
    exit 2
    ;;
esac
