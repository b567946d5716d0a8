#!/bin/busybox sh
# /init of the VM tests' initramfs: mounts the pseudo file systems, hot-plugs node 1's
# soft-reserved RAM through dax_hmem -> kmem (a CPU-less node in a lower memory tier, the way
# CXL memory in system-ram mode appears), runs the selected scenarios of one suite, each under a
# time limit, and powers off. Kernel command line:
#   vmtest_suite=DIR    guest (default): the tests, /vmtest/guest/NN-*.sh, each printing VMTEST
#                       lines; bench: the benchmarks, /vmtest/bench/NN-*.sh, printing VMBENCH lines
#   vmtest_only=a,b     run only the scenarios named a and b ("workload" or "10-workload")
#   vmtest_timeout=S    default per-scenario limit in seconds (a script can set its own with a
#                       "# vmtest-timeout: S" line)
#   vmtest_min_limit=S  raise every scenario's limit to at least S seconds (a long run by hand,
#                       such as the 10-minute soak: vmtest_soak_seconds=600)
# Markers for run.sh: VMTEST_BEGIN, VMTEST/VMBENCH/VMNOTE lines, VMTEST_END.
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug
mkdir -p /sys/fs/cgroup
mount -t cgroup2 cgroup2 /sys/fs/cgroup && echo +memory > /sys/fs/cgroup/cgroup.subtree_control
echo "VMTEST_BEGIN kernel=$(uname -r) uptime=$(cut -d' ' -f1 /proc/uptime)"

ONLY=""
DEFAULT_TIMEOUT=60
MIN_LIMIT=0
SUITE=guest
for arg in $(cat /proc/cmdline); do
    case "$arg" in
        vmtest_suite=*) SUITE=${arg#*=} ;;
        vmtest_only=*) ONLY=$(echo "${arg#*=}" | tr ',' ' ') ;;
        vmtest_timeout=*) DEFAULT_TIMEOUT=${arg#*=} ;;
        vmtest_min_limit=*) MIN_LIMIT=${arg#*=} ;;
    esac
done

# --- Tier setup: soft-reserved range -> dax_hmem device -> rebound to kmem -> node 1 online.
tier_setup() {
    for m in device_dax kmem dax_hmem; do
        insmod /lib/modules/$m.ko || { echo "VMTEST tier-hotplug FAIL insmod $m.ko failed"; return; }
    done
    i=0
    while [ ! -e /sys/bus/dax/devices/dax0.0 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
    found=""
    for d in /sys/bus/dax/devices/dax*; do
        [ -e "$d" ] || continue
        n=${d##*/}
        found="$found $n"
        drv=$(readlink $d/driver); drv=${drv##*/}
        echo "VMNOTE tier-setup $n target_node=$(cat $d/target_node) size=$(cat $d/size) driver=${drv:-none}"
        [ "$drv" = kmem ] && continue
        [ -n "$drv" ] && echo "$n" > /sys/bus/dax/drivers/$drv/unbind
        echo "$n" > /sys/bus/dax/drivers/kmem/new_id
        drv=$(readlink $d/driver); echo "VMNOTE tier-setup $n now bound to ${drv##*/}"
    done
    [ -n "$found" ] || { echo "VMTEST tier-hotplug FAIL no dax device (is node 1 soft-reserved by memmap=?)"; return; }
    mib=$(awk '/MemTotal/ {print int($4 / 1024)}' /sys/devices/system/node/node1/meminfo 2>/dev/null)
    if [ "${mib:-0}" -gt 0 ]; then
        echo "VMTEST tier-hotplug PASS node1 online with ${mib} MiB through$found -> kmem"
    else
        echo "VMTEST tier-hotplug FAIL node1 has no memory after binding$found to kmem"
    fi
    for t in /sys/devices/virtual/memory_tiering/memory_tier*; do
        [ -e "$t/nodelist" ] && echo "VMNOTE tier-setup ${t##*/} nodes=$(cat $t/nodelist)"
    done
}
tier_setup

# --- Scenario isolation: what a scenario may leave behind is undone (and reported) before the
# next one starts. Scenarios assert their own cleanup; this only keeps later ones independent.
KNOBS="/proc/sys/kernel/numa_balancing /sys/kernel/mm/numa/demotion_enabled /proc/sys/vm/percpu_pagelist_high_fraction"
snapshot_knobs() {
    SNAP=""
    for k in $KNOBS; do SNAP="$SNAP $k=$(cat $k 2>/dev/null)"; done
}
restore_after() {  # restore_after NAME
    for p in /proc/[0-9]*; do
        pid=${p#/proc/}
        [ "$pid" = 1 ] && continue
        [ -e "$p/exe" ] || continue   # kernel threads have no executable
        cmd=$(tr '\0' ' ' < $p/cmdline 2>/dev/null | cut -c1-60)
        kill -9 "$pid" 2>/dev/null
        case "$cmd" in timeout\ *) continue ;; esac   # the scenario's own time-limit watcher
        echo "VMNOTE $1 killed leftover pid $pid ($cmd)"
    done
    for kv in $SNAP; do
        k=${kv%%=*}; v=${kv#*=}
        now=$(cat $k 2>/dev/null)
        if [ "$now" != "$v" ]; then
            echo "VMNOTE $1 left $k=$now (was $v): restored"
            echo "$v" > "$k"
        fi
    done
    for s in /sys/kernel/mm/damon/admin/kdamonds/*/state; do
        [ -e "$s" ] && [ "$(cat $s)" = on ] && { echo "VMNOTE $1 left a kdamond on: stopped"; echo off > "$s"; }
    done
    [ -e /sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds ] && echo 0 > /sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds
    for c in /sys/fs/cgroup/*/; do
        [ -e "$c/cgroup.procs" ] || continue
        rmdir "$c" 2>/dev/null && echo "VMNOTE $1 left cgroup ${c%/}: removed"
    done
}

MATCHED=""
selected() {  # selected NAME BASE
    [ -z "$ONLY" ] && return 0
    for o in $ONLY; do [ "$o" = "$1" ] || [ "$o" = "$2" ] && { MATCHED="$MATCHED $o"; return 0; }; done
    return 1
}

secs() { cut -d. -f1 /proc/uptime; }

# A scenario's result lines: a test must print a VMTEST line, a benchmark a VMBENCH line (or a
# VMTEST ... FAIL line when it could not measure).
MARK=VMTEST
[ "$SUITE" = bench ] && MARK=VMBENCH
# /tmp is emptied before every scenario: a file left by an earlier one (a READY line read before
# the new workload truncated its output file) must not pass for this one's.
fresh_tmp() {
    rm -rf /tmp/* /tmp/.[!.]* 2>/dev/null
    mkdir -p /tmp/vmtest
}
[ -d /vmtest/$SUITE ] || echo "VMTEST suite FAIL no scenario directory /vmtest/$SUITE"
for s in /vmtest/$SUITE/[0-9][0-9]-*.sh; do
    [ -e "$s" ] || continue
    base=${s##*/}; base=${base%.sh}; name=${base#[0-9][0-9]-}
    selected "$name" "$base" || continue
    limit=$(sed -n 's/^# vmtest-timeout: *\([0-9][0-9]*\).*/\1/p' "$s" | head -1)
    limit=${limit:-$DEFAULT_TIMEOUT}
    [ "$limit" -ge "$MIN_LIMIT" ] || limit=$MIN_LIMIT
    fresh_tmp
    out=/tmp/vmtest/$base.out
    snapshot_knobs
    echo "VMSCENARIO $base start uptime=$(cut -d' ' -f1 /proc/uptime) limit=${limit}s"
    t0=$(secs)
    # The scenario runs in its own session; when it ends or its time is up, whatever is left of
    # its process group is killed too, so nothing holds the pipe to tee open.
    (
        cd /tmp
        setsid sh -c 'echo $$ > /tmp/vmtest/pgid; exec timeout -s KILL "$0" sh "$1"' "$limit" "$s" 2>&1
        echo "$?" > /tmp/vmtest/$base.rc
        kill -9 -"$(cat /tmp/vmtest/pgid)" 2>/dev/null
    ) | tee "$out"
    rc=$(cat /tmp/vmtest/$base.rc)
    took=$(( $(secs) - t0 ))
    if [ "$rc" = 137 ] && [ "$took" -ge $((limit - 1)) ]; then
        echo "VMTEST $name FAIL timed out after ${limit}s (killed)"
    elif [ "$rc" != 0 ] && ! grep -q '^VMTEST [^ ]* FAIL' "$out"; then
        echo "VMTEST $name FAIL exited with status $rc without reporting a failure"
    elif ! grep -q "^$MARK " "$out" && ! grep -q '^VMTEST [^ ]* FAIL' "$out"; then
        echo "VMTEST $name FAIL printed no $MARK line"
    fi
    restore_after "$name"
    echo "VMSCENARIO $base end uptime=$(cut -d' ' -f1 /proc/uptime) took=${took}s"
done

# A name that matched no scenario (a typo) must not pass as a run of nothing.
for o in $ONLY; do
    case " $MATCHED " in *" $o "*) ;; *) echo "VMTEST $o FAIL no scenario named $o in /vmtest/$SUITE" ;; esac
done
echo "VMTEST_END uptime=$(cut -d' ' -f1 /proc/uptime)"
sync
poweroff -f
