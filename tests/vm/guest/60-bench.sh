#!/bin/sh
# Benchmarks (VMBENCH lines; the figures are reported, not asserted):
#   move-throughput  tierkit moving a running workload's 256 MiB from node 1 to node 0 versus a raw
#                    move_pages loop (move_pid, 512-page calls) moving the same pages of the same
#                    process. The workload reads near-uniformly (--alpha 0.01) so every DAMON region
#                    is accessed, and tierkit runs the lru-cache policy (every sampled slow-tier
#                    access promotes), so it has more to move than move_pages can do. Both are
#                    timed the same way, from outside: the placement tool polls the node-0 page
#                    count every 0.5 s; the rate is the best over any two polls >= 2 s apart. The raw
#                    loop runs first and then moves the pages back; a second pair runs in the
#                    opposite order (tierkit, then raw), and the two pairs' summed rates give
#                    both_pairs_tierkit_pct_of_raw. Both run beside the workload's
#                    reader thread; tierkit also beside its kdamond. Goal: tierkit >= 90% of raw.
#                    The raw loop also runs beside a dry-running tierkit (same source and policy:
#                    the kdamond and the monitoring load the vCPUs as when tierkit moves), and
#                    tierkit's rate is reported against that too. Also reported: CPU time per moved page, tierkit's (the summary's cpu split,
#                    moves phase) against the raw loop's (its own user + system time), which
#                    leaves out what the two wall-clock rates also measure: the share of the two
#                    vCPUs each got beside the reader thread and (tierkit's) kdamond.
#   mover-only       `tierkit move PID --to fast --range R` (the daemon's mover without a source or
#                    a policy) against the raw loop right after it, both self-timed, beside the
#                    reader thread only: pages/s, CPU per page and calls.
#   move-command     (asserted) `tierkit move` moved what it reports, nearly the whole range.
#   move-accounting  (asserted) the summary's promoted_pages are pages that really moved.
#   status-cadence   (asserted) tierkit's status lines (--status-every 1) keep coming while it moves
#                    pages (at least 3); the longest gap is reported as a VMBENCH line, not asserted.
#   tcg-slowdown     the emulation's slowdown: tierkit's own simulator benchmark (one thread,
#                    CPU-bound: `tierkit bench --policies tierkit --pages 65536 --accesses 5000000`)
#                    in the guest against the same command on the host, best of three on each
#                    side (run.sh passes the host's rate as vmtest_host_ref on the kernel command
#                    line).
#   self-cost        tierkit (default policy, DAMON) attached to a 1 GiB workload interleaved
#                    over both nodes, node 0 left with 32 MiB of room (huge pages reserved): after a
#                    12 s warm-up from its first status line, its own CPU share over 10 s
#                    (utime+stime of /proc/PID/stat), the kdamond's share, and its RSS; the
#                    summary's cpu split says where the time went. Twice: first with
#                    --cpu-budget 0 (DAMON polled every aggregation interval: the baseline), then
#                    with the default budget (2% of a core). Goals: <= 2% of a core and <= 32 MiB.
#   cpu-budget       (asserted) in the budgeted run, tierkit stretched its polls (status lines). Under TCG every CPU figure is inflated by
#                    the emulation: the share divided by the tcg-slowdown factor is reported beside it
#                    as an estimate for the same work on the host's CPU.
# vmtest-timeout: 200
. /vmtest/guest/lib.sh
# Node 0 whole again, should a scenario killed at its time limit have left huge pages reserved on it.
echo 0 > $HP
trap 'echo 0 > $HP' EXIT
HZ=100
cs() { awk '{ printf "%d", $1 * 100 }' /proc/uptime; }        # uptime in centiseconds
ticks() { [ -n "$1" ] && awk '{ print $14 + $15 }' /proc/$1/stat 2>/dev/null; }  # utime + stime
rate() { awk -v n="$1" -v c="$2" 'BEGIN { printf "%d", (c > 0 ? n * 100 / c : 0) }'; }

# watch PID RANGE JOB: polls the node-0 page count of RANGE every 0.5 s while background job JOB
# runs, until 95% of the pages are on node 0; sets trail to "centiseconds:count ...".
watch() {
    trail=""; i=0; want=$(($(kv total "$(placement $1 "$2")") * 95 / 100))
    while [ $i -lt 120 ] && kill -0 $3 2>/dev/null; do
        sleep 0.5; i=$((i + 1))
        n=$(kv node0 "$(placement $1 "$2")")
        trail="$trail $(cs):${n:-0}"
        [ "${n:-0}" -ge $want ] && break
    done
}
# best TRAIL: the highest pages/s between two polls at least 2 s apart (1 s when the whole move
# took less than 2 s), and the rate from the first poll that saw a moved page to the last one
# ("best first_to_last").
best() {
    echo "$1" | tr ' ' '\n' | awk -F: 'BEGIN { n = 0 } NF == 2 { t[n] = $1; c[n] = $2; n++ }
        END { for (gap = 200; gap >= 100 && b == 0; gap -= 100)
                  for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (t[j] - t[i] >= gap) {
                      r = (c[j] - c[i]) * 100 / (t[j] - t[i]); if (r > b) b = r; break }
              f = 1
              while (f < n && c[f] <= c[0]) f++
              e = 0
              if (f < n) e = (c[n - 1] - c[f - 1]) * 100 / (t[n - 1] - t[f - 1])
              printf "%d %d", b, e }'
}

# --- Move throughput. Both movers are timed the same way (watch + best), beside the same
# workload; move_pid also times its own calls.
zipf_reader --mib 256 --alpha 0.01 --first-touch-node 1 --seconds 0 > /tmp/m.out 2>&1 &
wpid=$!
ready=$(wait_line /tmp/m.out '^READY' 30) || { fail bench-move "workload never READY: $(cat /tmp/m.out)"; exit 0; }
range=$(kv addr "$ready")
move_pid $wpid "$range" --to 0 --batch 512 > /tmp/raw.out 2>&1 &
watch $wpid "$range" $!
wait $!
raw_trail=$trail
raw_best=$(best "$raw_trail")
echo "  raw: $(cat /tmp/raw.out)"
echo "  raw: node0 pages by time (cs:count):$raw_trail"
echo "  raw back: $(move_pid $wpid "$range" --to 1 --batch 512)"
# The raw loop again, beside a dry-running tierkit with the same source and policy: the kdamond
# and tierkit's monitoring load the two vCPUs as they do when tierkit moves, and only the mover
# differs.
tierkit attach $wpid --dry-run --policy lru-cache --source damon --status-every 1 --duration 30 > /tmp/dry.log 2>&1 &
dpid=$!
wait_line /tmp/dry.log '^tierkit: status' 20 > /dev/null
move_pid $wpid "$range" --to 0 --batch 512 > /tmp/raw2.out 2>&1 &
watch $wpid "$range" $!
wait $!
kill -TERM $dpid 2>/dev/null; wait $dpid
raw2_best=$(best "$trail")
echo "  raw beside a dry run: $(cat /tmp/raw2.out)"
echo "  raw beside a dry run back: $(move_pid $wpid "$range" --to 1 --batch 512)"
start=$(placement $wpid "$range")
echo "  start: $start"
tierkit attach $wpid --policy lru-cache --source damon --status-every 1 --duration 40 > /tmp/tm.log 2>&1 &
tpid=$!
watch $wpid "$range" $tpid
kill -TERM $tpid 2>/dev/null; wait $tpid
end=$(placement $wpid "$range")
tk_trail=$trail
# A second pair in the opposite order, tierkit first and the raw loop after it, so that neither
# mover always has the first turn: the rates of one mover swing by up to 1.6x from run to run here.
echo "  back for pair 2: $(move_pid $wpid "$range" --to 1 --batch 512)"
tierkit attach $wpid --policy lru-cache --source damon --status-every 0 --duration 40 > /tmp/tm2.log 2>&1 &
tpid2=$!
watch $wpid "$range" $tpid2
kill -TERM $tpid2 2>/dev/null; wait $tpid2
tk2_best=$(best "$trail")
echo "  tierkit (pair 2): node0 pages by time (cs:count):$trail"
echo "  back for pair 2: $(move_pid $wpid "$range" --to 1 --batch 512)"
move_pid $wpid "$range" --to 0 --batch 512 > /tmp/raw3.out 2>&1 &
watch $wpid "$range" $!
wait $!
raw3_best=$(best "$trail")
echo "  raw (pair 2): $(cat /tmp/raw3.out)"
# The mover alone: `tierkit move` (the daemon's mover, no source, no policy) against the raw loop,
# back to back, each timing its own calls; both run beside the reader thread only.
tierkit move $wpid --to slow --range "$range" > /tmp/tmv_slow.out 2> /tmp/tmv_slow.err
echo "  tierkit move --to slow: $(cat /tmp/tmv_slow.out)"
before=$(kv node0 "$(placement $wpid "$range")")
tierkit move $wpid --to fast --range "$range" > /tmp/tmv.out 2> /tmp/tmv.err
after=$(kv node0 "$(placement $wpid "$range")")
echo "  tierkit move --to fast: $(cat /tmp/tmv.out)"
sed 's/^/  /' /tmp/tmv.err | head -3
echo "  raw back: $(move_pid $wpid "$range" --to 1 --batch 512)"
move_pid $wpid "$range" --to 0 --batch 512 > /tmp/raw4.out 2>&1
echo "  raw (mover pair): $(cat /tmp/raw4.out)"
kill -9 $wpid; wait $wpid
# Asserted: `tierkit move` moved what it says it moved, and (nearly) the whole range.
mv_moved=$(kv moved "$(cat /tmp/tmv.out)")
# (A little slack, as for move-accounting: a huge page is one unit of the mover.)
diff=$((${after:-0} - ${before:-0}))
if [ -n "$mv_moved" ] && [ "$mv_moved" -le $((diff + 1024)) ] && [ "$mv_moved" -ge $((diff - 1024)) ] &&
    [ "${after:-0}" -ge $(($(kv total "$start") * 95 / 100)) ] &&
    [ "$(kv complete "$(cat /tmp/tmv.out)")" = true ]; then
    pass move-command "tierkit move --to fast moved $mv_moved pages; node 0 held $before of the range's pages before, $after after"
else
    fail move-command "tierkit move said moved=${mv_moved:-?} but node 0 went from $before to $after pages: $(cat /tmp/tmv.out /tmp/tmv.err | tr '\n' ' ' | cut -c1-300)"
fi
mv_rate=$(kv pages_per_s "$(cat /tmp/tmv.out)"); raw4_rate=$(kv pages_per_s "$(cat /tmp/raw4.out)")
mv_us=$(awk -v c="$(kv cpu_seconds "$(cat /tmp/tmv.out)")" -v n="$mv_moved" 'BEGIN { printf "%.1f", (n > 0 ? c * 1e6 / n : 0) }')
raw4_us=$(awk -v c="$(kv cpu_seconds "$(cat /tmp/raw4.out)")" -v n="$(kv moved "$(cat /tmp/raw4.out)")" \
    'BEGIN { printf "%.1f", (n > 0 ? c * 1e6 / n : 0) }')
bench mover-only pages=$(kv total "$start") tierkit_move_pages_per_s=${mv_rate:-0} raw_pages_per_s=${raw4_rate:-0} \
    tierkit_pct_of_raw=$(rate "${mv_rate%.*}" "${raw4_rate%.*}") tierkit_cpu_us_per_page=$mv_us raw_cpu_us_per_page=$raw4_us \
    tierkit_calls=$(kv calls "$(cat /tmp/tmv.out)") raw_calls=$(kv calls "$(cat /tmp/raw4.out)")
grep -E '^tierkit: (status|ended=)' /tmp/tm.log | sed 's/^/  /'
echo "  tierkit: node0 pages by time (cs:count):$tk_trail"
tk_best=$(best "$tk_trail")
raw_rate=${raw_best% *}; tk_rate=${tk_best% *}; raw2_rate=${raw2_best% *}
raw3_rate=${raw3_best% *}; tk2_rate=${tk2_best% *}
pct=$(rate "$tk_rate" "$raw_rate")
pct2=$(rate "$tk_rate" "$raw2_rate")
pct3=$(rate "$tk2_rate" "$raw3_rate")
both=$(rate $((tk_rate + tk2_rate)) $((raw_rate + raw3_rate)))
fields=$(grep '^tierkit: ended=' /tmp/tm.log)
raw_us=$(awk -v c="$(kv cpu_seconds "$(cat /tmp/raw.out)")" -v n="$(kv moved "$(cat /tmp/raw.out)")" \
    'BEGIN { printf "%.1f", (n > 0 ? c * 1e6 / n : 0) }')
tk_us=$(awk -v c="$(kv cpu_ms_moves "$fields")" -v n="$(kv promoted_pages "$fields")" \
    'BEGIN { printf "%.1f", (n > 0 ? c * 1e3 / n : 0) }')
cpu_pct=$(awk -v r="$raw_us" -v t="$tk_us" 'BEGIN { printf "%d", (t > 0 ? r * 100 / t : 0) }')
bench move-throughput pages=$(kv total "$start") raw_pages_per_s=$raw_rate tierkit_pages_per_s=$tk_rate \
    tierkit_pct_of_raw=$pct raw_first_to_last=${raw_best#* } tierkit_first_to_last=${tk_best#* } \
    raw_self_timed_pages_per_s=$(kv pages_per_s "$(cat /tmp/raw.out)") raw_cpu_us_per_page=$raw_us \
    tierkit_moves_cpu_us_per_page=$tk_us raw_cpu_pct_of_tierkit=$cpu_pct raw_beside_dry_run_pages_per_s=$raw2_rate \
    tierkit_pct_of_raw_beside_dry_run=$pct2 pair2_tierkit_pages_per_s=$tk2_rate pair2_raw_pages_per_s=$raw3_rate \
    pair2_tierkit_pct_of_raw=$pct3 both_pairs_tierkit_pct_of_raw=$both raw_batch=512 policy=lru-cache source=damon
if [ "${raw_rate:-0}" -gt 0 ] && [ "${tk_rate:-0}" -gt 0 ]; then
    pass bench-move "best 2-s rate: raw $raw_rate pages/s alone, $raw2_rate beside a dry run; tierkit $tk_rate pages/s ($pct% / $pct2% of raw); pair 2 (tierkit first): $tk2_rate vs $raw3_rate ($pct3%); both pairs $both% (goal >= 90%)"
else
    fail bench-move "no measurement: raw=[$(cat /tmp/raw.out)] tierkit trail:$trail"
fi
# Status lines keep their cadence (--status-every 1) while tierkit moves pages: a move round is
# cut into steps with a status check between them.
stamps=$(grep '^tierkit: status \[' /tmp/tm.log | awk -F'[][]' '{ sub(/s$/, "", $2); print $2 }' | tr '\n' ' ')
gap=$(echo "$stamps" | tr ' ' '\n' | awk 'NF { if (n++ && $1 - p > g) g = $1 - p; p = $1 } END { printf "%.1f", g }')
# Asserted: status lines keep coming while tierkit moves — one a second is asked for; at least one
# for every two whole seconds tierkit ran until 95% of the pages were on node 0 (from the placement
# polls: the first came 0.5 s after tierkit started), and at least one (a loop that held the status
# line back during its moves printed one when they ended). The gap between them is a measurement
# (timing under TCG depends on the machine), reported, not asserted.
ran_s=$(echo "$tk_trail" | tr ' ' '\n' | awk -F: 'NF == 2 { if (!n++) f = $1; l = $1 } END { printf "%d", (l - f) / 100 + 0.5 }')
want=$((ran_s / 2)); [ $want -ge 1 ] || want=1
lines=$(echo "$stamps" | wc -w)
bench status-cadence "longest_gap_s=$gap lines=$lines moving_s=$ran_s"
if [ "$lines" -ge $want ]; then
    pass status-cadence "status lines kept coming during the moves (--status-every 1): $lines over ${ran_s} s of moves (>= $want), longest gap ${gap} s over [$stamps]"
else
    fail status-cadence "$lines status lines over ${ran_s} s of moves (want >= $want): [$stamps]"
fi
# tierkit's count of promoted pages against the pages that really went to node 0 (nothing else
# moves them, and nothing was demoted) — a little slack for the workload's other mappings.
sum=$(sed -n '/^tierkit: summary/,$p' /tmp/tm.log | tr '\n' ' ')
moved=$(($(kv node0 "$end") - $(kv node0 "$start")))
promoted=$(kv promoted_pages "$sum")
if [ "${promoted:-0}" -gt 0 ] && [ "$promoted" -le $((moved + 1024)) ] && [ "$(kv demoted_pages "$sum")" = 0 ]; then
    pass move-accounting "summary promoted_pages=$promoted, placement saw $moved pages arrive on node 0"
else
    fail move-accounting "summary promoted_pages=$promoted demoted_pages=$(kv demoted_pages "$sum") but placement saw only $moved of the buffer's pages arrive on node 0"
fi

# --- The emulation's slowdown (nothing else runs now).
host_ref=$(sed -n 's/.*vmtest_host_ref=\([0-9.]*\).*/\1/p' /proc/cmdline)
guest_ref=$(for i in 1 2 3; do tierkit bench --policies tierkit --pages 65536 --accesses 5000000 2>/dev/null; done |
    awk '$1 == "tierkit" && $2 > best { best = $2 } END { print best + 0 }')
slowdown=$(awk -v h="${host_ref:-0}" -v g="${guest_ref:-0}" 'BEGIN { printf "%.1f", (g > 0 ? h / g : 0) }')
bench tcg-slowdown host_m_accesses_per_s=${host_ref:-0} guest_m_accesses_per_s=${guest_ref:-0} factor=$slowdown

# --- tierkit's own cost at steady state on a 1 GiB target.
# self_cost BUDGET: one run with --cpu-budget BUDGET; sets cpu, kcpu, rss, hwm, stretched (status
# lines that show the budget's stretch) and log (the run's status lines and summary).
self_cost() {
    zipf_reader --mib 1024 --first-touch-node interleave --seconds 0 > /tmp/c.out 2>&1 &
    cpid=$!
    ready=$(wait_line /tmp/c.out '^READY' 60) || { cpu=""; log="1 GiB workload never READY: $(cat /tmp/c.out)"; return; }
    # Node 0 as a busy server's DRAM: 32 MiB of room left, so tierkit fills it within seconds and
    # then exchanges pages (steady state) instead of filling a free node 0 for minutes.
    echo "  node0: $(node0_share 32)"
    tierkit attach $cpid --source damon --cpu-budget "$1" --status-every 4 > /tmp/tc.log 2>&1 &
    tpid=$!
    # The window starts at the first status line (the process view of 1 GiB is built by then).
    wait_line /tmp/tc.log '^tierkit: status' 30 > /dev/null
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
    stretched=$(grep -c 'budget: 1 poll in' /tmp/tc.log)
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
    fail bench-cost "${cpu:+baseline: }$log $base_log"
    exit 0
fi
native=$(awk -v c="$cpu" -v f="$slowdown" 'BEGIN { printf "%.1f", (f > 0 ? c / f : 0) }')
ratio=$(awk -v c="$cpu" -v b="$base_cpu" 'BEGIN { printf "%.2f", (b > 0 ? c / b : 0) }')
bench self-cost target_mib=1024 window_s=10 cpu_budget_pct=2 tierkit_cpu_pct=$cpu kdamond_cpu_pct=$kcpu \
    no_budget_tierkit_cpu_pct=$base_cpu no_budget_kdamond_cpu_pct=$base_kcpu cpu_ratio_to_no_budget=$ratio \
    rss_kib=${rss:-0} rss_peak_kib=${hwm:-0} tcg_slowdown=$slowdown cpu_pct_over_slowdown=$native \
    goal_cpu_pct=2 goal_rss_mib=32
pass bench-cost "tierkit ${cpu}% of a core under TCG at --cpu-budget 2 (${ratio}x of ${base_cpu}% without a budget; ${native}% over the ${slowdown}x slowdown; + kdamond ${kcpu}%), rss $((rss / 1024)) MiB (peak $((hwm / 1024)) MiB) on a 1 GiB target"
# Asserted: over its budget on a full node 0, tierkit stretched its polls (the status line says so).
if [ "$stretched" -gt 0 ]; then
    pass cpu-budget "over its 2% budget with node 0 full, tierkit polled DAMON less often ($stretched status lines with 'budget: 1 poll in N')"
else
    fail cpu-budget "tierkit at ${cpu}% of a core never stretched its polls: $(echo "$log" | tr '\n' ' ' | cut -c1-400)"
fi
