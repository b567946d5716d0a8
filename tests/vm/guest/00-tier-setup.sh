#!/bin/sh
# Node 1 is the CXL-like tier: online, with memory, CPU-less, in a lower kernel memory tier
# than node 0; DAMON's sysfs interface is there for tierkit's damon source.
# vmtest-timeout: 20
. /vmtest/guest/lib.sh
why=""
in_list 1 "$(cat /sys/devices/system/node/online)" || why="$why node1-offline"
mib=$(node_mib 1)
[ "${mib:-0}" -gt 0 ] || why="$why node1-no-memory"
[ -z "$(cat /sys/devices/system/node/node1/cpulist 2>/dev/null)" ] || why="$why node1-has-cpus"
in_list 1 "$(cat /sys/devices/system/node/has_cpu)" && why="$why node1-in-has_cpu"
t0=$(tier_of_node 0) || why="$why node0-in-no-memory-tier"
t1=$(tier_of_node 1) || why="$why node1-in-no-memory-tier"
[ -n "$t0" ] && [ -n "$t1" ] && [ "$t1" -le "$t0" ] && why="$why node1-tier-$t1-not-below-node0-tier-$t0"
[ -e /sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds ] || why="$why no-damon-sysfs"
details="node1=${mib}MiB cpus=none node0=memory_tier$t0 node1=memory_tier$t1 damon=/sys/kernel/mm/damon/admin"
if [ -z "$why" ]; then pass tier-setup "$details"; else fail tier-setup "$why ($details)"; fi
