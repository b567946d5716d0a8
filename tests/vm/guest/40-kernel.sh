#!/bin/sh
# `tierkit run --source kernel --duration 10 -- zipf_reader ...` turns on the kernel's own
# tiering while it runs (numa_balancing = 2, demotion_enabled = true, read from /proc and /sys
# during the run) and puts every knob it may touch back to its value from before (the summary
# says knobs=restored, and the state file /run/tierkit/knobs.json is gone). The workload
# first-touches node 1 and reads on after tierkit stops; its checksum must be intact.
# The kernel's promotions (pgpromote_success, tierkit's promoted_pages) are reported, not asserted:
# whether NUMA hint faults promote anything within 10 s under TCG is the kernel's business.
# vmtest-timeout: 70
. /vmtest/guest/lib.sh
# Node 0 whole again, should a scenario killed at its time limit have left huge pages reserved on it.
echo 0 > /sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages
KNOBS="/proc/sys/kernel/numa_balancing /sys/kernel/mm/numa/demotion_enabled
/proc/sys/kernel/numa_balancing_promote_rate_limit_MBps /sys/kernel/debug/sched/numa_balancing/scan_delay_ms
/sys/kernel/debug/sched/numa_balancing/scan_period_min_ms /sys/kernel/debug/sched/numa_balancing/scan_period_max_ms
/sys/kernel/debug/sched/numa_balancing/scan_size_mb /sys/kernel/debug/sched/numa_balancing/hot_threshold_ms"
knobs() { for k in $KNOBS; do printf '%s=%s ' "${k##*/}" "$(cat "$k" 2>/dev/null)"; done; }
vmstat() { awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat; }

before=$(knobs)
p0=$(vmstat pgpromote_success)
tierkit run --source kernel --duration 10 --status-every 2 -- \
    zipf_reader --mib 64 --first-touch-node 1 --seconds 13 --hot-out /tmp/k.hot > /tmp/k.out 2> /tmp/k.err &
tpid=$!
ready=$(wait_line /tmp/k.out '^READY' 30) || { fail kernel "workload never READY: $(cat /tmp/k.out /tmp/k.err)"; exit 0; }
wpid=$(kv pid "$ready")
wait_line /tmp/k.err '^tierkit: status' 15 > /dev/null
during_nb=$(cat /proc/sys/kernel/numa_balancing)
during_de=$(cat /sys/kernel/mm/numa/demotion_enabled)
during=$(knobs)
wait $tpid; rc=$?
after=$(knobs)
state=absent; [ -e /run/tierkit/knobs.json ] && state=present
hot=$(placement "$wpid" /tmp/k.hot)
wait_line /tmp/k.out '^CHECKSUM_' 20 > /dev/null   # not our child (it was tierkit's): wait for its verdict
p1=$(vmstat pgpromote_success)
echo "  before: $before"
echo "  during: $during"
echo "  after:  $after"
echo "  hot set when tierkit stopped: $hot"
sed 's/^/  tierkit: /' /tmp/k.err | tail -20
sed 's/^/  workload: /' /tmp/k.out
sum=$(sed -n '/^tierkit: summary/,$p' /tmp/k.err | tr '\n' ' ')

why=""
[ "$rc" = 0 ] || why="$why tierkit-exit-$rc"
[ "$during_nb" = 2 ] || why="$why numa_balancing-during=$during_nb"
[ "$during_de" = true ] || [ "$during_de" = 1 ] || why="$why demotion_enabled-during=$during_de"
[ "$before" = "$after" ] || why="$why knobs-not-restored"
[ "$state" = absent ] || why="$why state-file-left"
[ -n "$sum" ] || why="$why no-summary"
[ "$(kv knobs "$sum")" = restored ] || why="$why knobs=$(kv knobs "$sum")"
[ "$(kv ended "$sum")" = duration ] || why="$why ended=$(kv ended "$sum")"
grep -q '^CHECKSUM_OK ' /tmp/k.out || why="$why no-CHECKSUM_OK"
details="numa_balancing $during_nb/demotion $during_de while running, knobs equal before/after, summary knobs=restored"
details="$details, promoted_pages=$(kv promoted_pages "$sum") demoted_pages=$(kv demoted_pages "$sum")"
details="$details pgpromote_success+$((p1 - p0)), checksum ok"
if [ -z "$why" ]; then pass kernel "$details"; else fail kernel "$why ($details)"; fi
bench kernel-source promoted_pages=$(kv promoted_pages "$sum") pgpromote_success_delta=$((p1 - p0)) \
    hot_node0=$(kv node0 "$hot") hot_total=$(kv total "$hot") seconds=10
