#!/bin/sh
# tierkit's CPU budget (--cpu-budget, default 2% of a core): `tierkit attach PID --source damon`
# (default policy and budget) on a 1 GiB workload interleaved over both nodes, with node 0 left
# 32 MiB of room (2 MiB huge pages reserved on the rest) so it is full within seconds and tierkit
# exchanges pages at steady state instead of filling node 0:
#   cpu-budget  over its budget with node 0 full, tierkit stretches its polls: a status line says
#               "budget: 1 poll in N" within 90 s of its first status line (polled: it passes as
#               soon as the line comes; its CPU share since is reported, not asserted).
# The share it keeps to, against a run without a budget, is a benchmark (tests/vm/bench, self-cost).
# vmtest-timeout: 300
. /vmtest/guest/lib.sh
trap 'echo 0 > $HP' EXIT
echo 0 > $HP
BOUND=90

zipf_reader --mib 1024 --first-touch-node interleave --seconds 0 > /tmp/c.out 2>&1 &
cpid=$!
wait_line /tmp/c.out '^READY' 90 > /dev/null || { fail cpu-budget "1 GiB workload never READY: $(cat /tmp/c.out)"; exit 0; }
echo "  node0: $(node0_share 32)"
tierkit attach $cpid --source damon --status-every 2 > /tmp/tc.log 2>&1 &
tpid=$!
wait_line /tmp/tc.log '^tierkit: status' 60 > /dev/null || { fail cpu-budget "no status line: $(head -5 /tmp/tc.log | tr '\n' ' ')"; exit 0; }
t0=$(cs)
c0=$(awk '{ print $14 + $15 }' /proc/$tpid/stat)
seen=$(wait_line /tmp/tc.log 'budget: 1 poll in' $BOUND)
took=$((($(cs) - t0) / 100))
c1=$(awk '{ print $14 + $15 }' /proc/$tpid/stat 2>/dev/null)
kill -TERM $tpid; wait $tpid
kill -TERM $cpid; wait $cpid
grep -E '^tierkit: (managing|status|ended=)|own cost|cpu split' /tmp/tc.log | sed 's/^/  /'
# Its CPU share (utime + stime, 100 ticks a second) from the first status line on: reported only.
share=$(awk -v c=$((${c1:-0} - ${c0:-0})) -v t="$took" 'BEGIN { printf "%.1f", (t > 0 ? c / t : 0) }')
if [ -n "$seen" ]; then
    pass cpu-budget "tierkit stretched its polls ${took} s after its first status line (at ${share}% of a core under TCG since): $seen"
else
    fail cpu-budget "no 'budget: 1 poll in N' status line within ${BOUND} s of the first; tierkit at ${share}% of a core: $(tail -4 /tmp/tc.log | tr '\n' ' ' | cut -c1-400)"
fi
