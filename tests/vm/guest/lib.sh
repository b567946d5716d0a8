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
