#!/bin/sh
#   tcg-slowdown  the emulation's slowdown: tierkit's own simulator benchmark (one thread,
#                 CPU-bound: `tierkit bench --policies tierkit --pages 65536 --accesses 5000000 --repeat 1`)
#                 in the guest against the same command on the host, best of three on each side
#                 (run.sh --bench passes the host's rate as vmtest_host_ref on the kernel command
#                 line).
#   self-cost     tierkit (default policy, DAMON) attached to a 1 GiB workload interleaved over
#                 both nodes, node 0 left with 32 MiB of room (huge pages reserved): after a 12 s
#                 warm-up from its first status line, its own CPU share over 10 s (utime+stime of
#                 /proc/PID/stat), the kdamond's share, and its RSS; the summary's cpu split says
#                 where the time went. Twice: first with --cpu-budget 0 (DAMON polled every
#                 aggregation interval: the baseline), then with the default budget (2% of a
#                 core). Goals (reported as goal_*): <= 2% of a core and <= 32 MiB. Under TCG every
#                 CPU figure is inflated by the emulation: the share divided by the tcg-slowdown
#                 factor is reported beside it as an estimate for the same work on the host's CPU.
# vmtest-timeout: 580
. /vmtest/guest/lib.sh
trap 'echo 0 > $HP' EXIT
echo 0 > $HP
HZ=100
ticks() { [ -n "$1" ] && awk '{ print $14 + $15 }' /proc/$1/stat 2>/dev/null; }  # utime + stime

# --- The emulation's slowdown (nothing else runs now).
host_ref=$(sed -n 's/.*vmtest_host_ref=\([0-9.]*\).*/\1/p' /proc/cmdline)
guest_ref=$(for i in 1 2 3; do tierkit bench --policies tierkit --pages 65536 --accesses 5000000 --repeat 1 2>/dev/null; done |
    awk '$1 == "tierkit" && $2 > best { best = $2 } END { print best + 0 }')
slowdown=$(awk -v h="${host_ref:-0}" -v g="${guest_ref:-0}" 'BEGIN { printf "%.1f", (g > 0 ? h / g : 0) }')
bench tcg-slowdown host_m_accesses_per_s=${host_ref:-0} guest_m_accesses_per_s=${guest_ref:-0} factor=$slowdown

# --- tierkit's own cost at steady state on a 1 GiB target.
# self_cost BUDGET: one run with --cpu-budget BUDGET; sets cpu, kcpu, rss, hwm and log (the run's
# status lines and summary). Its files are removed first: the second run must not read the first
# one's READY or status line.
self_cost() {
    rm -f /tmp/c.out /tmp/tc.log
    zipf_reader --mib 1024 --first-touch-node interleave --seconds 0 > /tmp/c.out 2>&1 &
    cpid=$!
    ready=$(wait_line /tmp/c.out '^READY' 90) || { cpu=""; log="1 GiB workload never READY: $(cat /tmp/c.out)"; return; }
    # Node 0 as a busy server's DRAM: 32 MiB of room left, so tierkit fills it within seconds and
    # then exchanges pages (steady state) instead of filling a free node 0 for minutes.
    echo "  node0: $(node0_share 32)"
    tierkit attach $cpid --source damon --cpu-budget "$1" --status-every 4 > /tmp/tc.log 2>&1 &
    tpid=$!
    # The window starts at the first status line (the process view of 1 GiB is built by then).
    wait_line /tmp/tc.log '^tierkit: status' 60 > /dev/null
    kd="" i=0
    while [ -z "$kd" ] && [ $i -lt 20 ]; do
        kd=$(cat /sys/kernel/mm/damon/admin/kdamonds/*/pid 2>/dev/null | grep -v -- '-' | head -1)
        [ -n "$kd" ] || sleep 0.2; i=$((i + 1))
    done
    sleep 12
    t0=$(cs); c0=$(ticks $tpid); k0=$(ticks "$kd")
    sleep 10
    t1=$(cs); c1=$(ticks $tpid); k1=$(ticks "$kd")
    rss=$(awk '/VmRSS/ { print $2 }' /proc/$tpid/status)
    hwm=$(awk '/VmHWM/ { print $2 }' /proc/$tpid/status)
    kill -TERM $tpid; wait $tpid
    kill -9 $cpid; wait $cpid
    echo 0 > $HP
    log=$(grep -E '^tierkit: (managing|status|ended=)|own cost|cpu split' /tmp/tc.log)
    echo "$log" | sed "s/^/  budget $1%: /"
    cpu="" kcpu=""
    [ -n "$c1" ] && [ -n "$rss" ] || { log="tierkit was not running during the window: $(tail -3 /tmp/tc.log | tr '\n' ' ')"; return; }
    cpu=$(awk -v c=$((c1 - c0)) -v t=$((t1 - t0)) -v hz=$HZ 'BEGIN { printf "%.1f", (t > 0 ? c * 100 * 100 / hz / t : 0) }')
    kcpu=$(awk -v c=$((${k1:-0} - ${k0:-0})) -v t=$((t1 - t0)) -v hz=$HZ 'BEGIN { printf "%.1f", (t > 0 ? c * 100 * 100 / hz / t : 0) }')
}
# The baseline first: no budget, DAMON polled every aggregation interval.
self_cost 0
base_cpu=$cpu base_kcpu=$kcpu base_log=$log
self_cost 2
if [ -z "$cpu" ] || [ -z "$base_cpu" ]; then
    fail self-cost "${cpu:+baseline: }$log $base_log"
    exit 0
fi
bench self-cost target_mib=1024 window_s=10 cpu_budget_pct=2 tierkit_cpu_pct=$cpu kdamond_cpu_pct=$kcpu \
    no_budget_tierkit_cpu_pct=$base_cpu no_budget_kdamond_cpu_pct=$base_kcpu \
    cpu_ratio_to_no_budget=$(awk -v c="$cpu" -v b="$base_cpu" 'BEGIN { printf "%.2f", (b > 0 ? c / b : 0) }') \
    rss_kib=${rss:-0} rss_peak_kib=${hwm:-0} tcg_slowdown=$slowdown \
    cpu_pct_over_slowdown=$(awk -v c="$cpu" -v f="$slowdown" 'BEGIN { printf "%.1f", (f > 0 ? c / f : 0) }') \
    goal_cpu_pct=2 goal_rss_mib=32
