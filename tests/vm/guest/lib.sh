# Helpers sourced by the scenarios (". /vmtest/guest/lib.sh"). Result lines:
#   VMTEST <name> PASS|FAIL|SKIP <details>     VMBENCH <name> <key>=<value>...
pass() { n=$1; shift; echo "VMTEST $n PASS $*"; }
fail() { n=$1; shift; echo "VMTEST $n FAIL $*"; }
skip() { n=$1; shift; echo "VMTEST $n SKIP $*"; }
bench() { n=$1; shift; echo "VMBENCH $n $*"; }

# kv KEY LINE: the value of KEY=value in a line of space-separated pairs.
kv() { echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -1; }

# wait_line FILE REGEX SECONDS: waits until FILE has a line matching REGEX; prints it.
wait_line() {
    i=0
    while [ $i -lt $(($3 * 10)) ]; do
        grep -m1 -E "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}

# in_list N LIST: whether node N is in a kernel node list such as "0-1,3".
in_list() {
    for part in $(echo "$2" | tr ',' ' '); do
        lo=${part%-*}; hi=${part#*-}
        [ "$1" -ge "$lo" ] && [ "$1" -le "$hi" ] && return 0
    done
    return 1
}

# tier_of_node N: the number of the kernel memory tier (memory_tierX) holding node N.
tier_of_node() {
    for t in /sys/devices/virtual/memory_tiering/memory_tier*; do
        [ -e "$t/nodelist" ] && in_list "$1" "$(cat $t/nodelist)" && { echo "${t##*memory_tier}"; return 0; }
    done
    return 1
}

# node_mib N: MemTotal of node N in MiB.
node_mib() { awk '/MemTotal/ {print int($4 / 1024)}' /sys/devices/system/node/node$1/meminfo 2>/dev/null; }

# Node 0's 2 MiB huge pages: reserving them takes node 0's free memory away from everything else.
HP=/sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages
# node0_free: node 0's free memory in MiB as the page allocator's free lists hold it (MemFree). The
# free pages on the per-CPU lists (zoneinfo "count:", up to 27 MiB a CPU here) are left out: huge
# pages cannot be reserved from them, and counting them once reserved so much that the kernel's own
# allocations on node 0 ran out (OOM panic). The room tierkit sees is this plus those lists.
node0_free() {
    awk '/MemFree/ { print int($4 / 1024) }' /sys/devices/system/node/node0/meminfo
}
# node0_share MIB: reserves node 0's free memory in 2 MiB huge pages until about MIB MiB stay free
# above its high watermarks, the same twice 1 s apart (memory of the previous scenario's processes
# may still be coming free; memory is compacted when the kernel finds too few free 2 MiB blocks);
# prints what is left.
node0_share() {
    high=$(awk '$1 == "Node" { n = $2 } n == "0," && $1 == "high" { s += $2 } END { print int(s * 4 / 1024) }' /proc/zoneinfo)
    prev=-99
    for try in 1 2 3 4 5 6 7 8; do
        free=$(node0_free)
        extra=$(((free - high - $1) / 2))
        if [ $extra -le 2 ] && [ $extra -ge -2 ]; then
            [ $((free - prev)) -le 2 ] && [ $((prev - free)) -le 2 ] && break
            prev=$free
            sleep 1
            continue
        fi
        echo $(($(cat $HP) + extra)) > $HP
        echo 1 > /proc/sys/vm/compact_memory
        prev=-99
    done
    echo "hugepages=$(cat $HP) node0_free=${free}MiB high_wmark=${high}MiB above_high=$((free - high))MiB tries=$try"
}

# small_pcp_lists: keeps the kernel's per-CPU free lists small for the rest of the scenario, and at
# its exit gives node 0's huge pages back and restores the lists' size. The lists hold freed pages
# (here up to 27 MiB a CPU) that tierkit's room on node 0 counts but huge pages cannot be reserved
# from: with lists that large node 0's real room drifted 10-40 MiB above node0_share's share, enough
# to take in the cold set too, and the hot set's placement followed the drift.
PCP=/proc/sys/vm/percpu_pagelist_high_fraction
small_pcp_lists() {
    pcp_was=$(cat $PCP)
    echo 100000 > $PCP
    trap 'echo 0 > $HP; echo $pcp_was > $PCP' EXIT
}

# kdamonds_on [PID]: the kdamonds that are on (and, given PID, monitor PID), as "N:pid,pid".
kdamonds_on() {
    for d in /sys/kernel/mm/damon/admin/kdamonds/[0-9]*; do
        [ "$(cat $d/state 2>/dev/null)" = on ] || continue
        pids=$(cat $d/contexts/*/targets/*/pid_target 2>/dev/null | tr '\n' ',')
        [ -z "$1" ] || case ",$pids" in *",$1,"*) ;; *) continue ;; esac
        printf '%s:%s ' "${d##*/}" "$pids"
    done
}

# cs: the uptime in centiseconds.
cs() { awk '{ printf "%d", $1 * 100 }' /proc/uptime; }

# pct PART WHOLE: PART as a whole percentage of WHOLE.
pct() { [ "${2:-0}" -gt 0 ] && echo $(($1 * 100 / $2)) || echo 0; }
# share NODE QUERY: the percentage of the queried pages on NODE.
share() { pct "$(kv node$1 "$2")" "$(kv total "$2")"; }

# poll_bars PID HOT COLD [RANGE]: from t0 (cs) on, every EVERY s for at most BOUND s, queries where
# the pages of PID listed in the files HOT and COLD are (the placement tool), and with RANGE (START-END)
# those of the range, printing each query, until the caller's `met` holds. Sets hot and cold (the last
# queries), hotp (the hot set's node 0 share, %), coldn0 and coldn1 (the cold set's node 0 and node 1
# shares), allp (the range's node 0 share; 0 without RANGE), t (seconds from t0 to the last query)
# and trail (" t:hotp/coldn0" per query, " t:hotp/coldn0/allp" with RANGE).
poll_bars() {
    t=0 trail=""
    while [ $t -lt $BOUND ]; do
        t=$((t + EVERY))
        now=$((($(cs) - t0) / 100))
        [ $now -lt $t ] && sleep $((t - now))
        hot=$(placement "$1" "$2"); cold=$(placement "$1" "$3")
        t=$((($(cs) - t0) / 100))
        hotp=$(share 0 "$hot"); coldn1=$(share 1 "$cold"); coldn0=$(share 0 "$cold") allp=0
        if [ -n "${4:-}" ]; then
            all=$(placement "$1" "$4"); allp=$(share 0 "$all")
            trail="$trail $t:$hotp/$coldn0/$allp"
            echo "  t=${t}s hot: $hot | cold: $cold | range: $all"
        else
            trail="$trail $t:$hotp/$coldn0"
            echo "  t=${t}s hot: $hot | cold: $cold"
        fi
        met && break
    done
}

# watch_moves PID RANGE JOB: polls the node-0 page count of RANGE every 0.5 s (at most 120 times)
# while background job JOB runs, until 95% of the pages are on node 0; sets trail to
# "centiseconds:count ...".
watch_moves() {
    trail=""; i=0; want=$(($(kv total "$(placement $1 "$2")") * 95 / 100))
    while [ $i -lt 120 ] && kill -0 $3 2>/dev/null; do
        sleep 0.5; i=$((i + 1))
        n=$(kv node0 "$(placement $1 "$2")")
        trail="$trail $(cs):${n:-0}"
        [ "${n:-0}" -ge $want ] && break
    done
}
