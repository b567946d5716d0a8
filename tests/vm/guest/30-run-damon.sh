#!/bin/sh
# `tierkit run --policy tierkit --source damon` (the default policy) on a Zipf workload whose buffer
# (128 MiB) is four times node 0's share for it (32 MiB above node 0's high watermarks: the rest of
# node 0 is taken by 2 MiB huge pages reserved on it). The workload first-touches node 1, as memory
# allocated on a CXL server whose DRAM is already taken does: first-touch placement then leaves the
# hot set on the slow tier (0% on node 0, so the margin measures tierkit alone). numa_balancing is
# 0: nothing but tierkit moves pages. Its hot pages lie in 64-page (256 KiB) clusters, as hot
# arrays and arenas do: DAMON watches regions, not pages, and a region that mixes hot and cold pages
# reads as lukewarm. An independent move_pages query (the placement tool) measures, every 3 s while
# the workload runs, where its hottest and coldest pages (512 each) are, until the bars below are
# all met or 90 s have passed; then the workload is stopped (SIGTERM: it checks its data and exits):
#   run-damon          hot set's node 0 share beats first touch by >= 30 points, promoted_pages > 0,
#                      the workload's checksum is intact, summary ends with ended=target-exited
#   run-damon-cold     at the same query, the cold set is on node 1 (>= 60%) and the hot set's node 0
#                      share beats the cold set's by >= 20 points (a policy blind to heat moves both
#                      alike, and node 0's room holds a quarter of the buffer: it cannot meet them)
# The time the bars took is reported (time_to_bars_s), not asserted: the hot set's share grows
# while DAMON's samples visit the buffer's regions in turns, at a pace set by how fast the guest
# runs (docs/BENCHMARKS.md, Live: placement).
# The run has no CPU budget (--cpu-budget 0): the scenario asserts placement, and the budget's
# price on it depends on how slow the emulation is that day (docs/LIVE.md, the CPU budget).
# vmtest-timeout: 250
. /vmtest/guest/lib.sh
MIB=128 SHARE=32 CLUSTER=64 MARGIN=30 COLD_MIN=60 SELECT=20 EVERY=3 BOUND=90
ZIPF="zipf_reader --mib $MIB --first-touch-node 1"

small_pcp_lists

echo 0 > $HP
echo "  node0: $(node0_share $SHARE)"

# Baseline: first touch, no tierkit. With numa_balancing=0 nothing moves it later, so one
# query a second after READY is the placement at any time.
$ZIPF --cluster-pages $CLUSTER --seconds 2 --hot-out /tmp/b.hot > /tmp/b.out 2>&1 &
bpid=$!
ready=$(wait_line /tmp/b.out '^READY' 30) || { fail run-damon "baseline workload never READY: $(cat /tmp/b.out)"; exit 0; }
sleep 1
bhot=$(placement "$(kv pid "$ready")" /tmp/b.hot)
wait $bpid
echo "  first touch: hot $bhot"
base=$(share 0 "$bhot")

ooms=$(dmesg | grep -c 'Out of memory')
echo "  node0 before the run: $(node0_share $SHARE)"
tierkit run --policy tierkit --source damon --cpu-budget 0 --status-every 1 -- \
    $ZIPF --cluster-pages $CLUSTER --seconds 0 --hot-out /tmp/r.hot --cold-out /tmp/r.cold > /tmp/r.out 2> /tmp/r.err &
tpid=$!
ready=$(wait_line /tmp/r.out '^READY' 30) || {
    fail run-damon "workload never READY under tierkit: $(cat /tmp/r.out /tmp/r.err | head -5 | tr '\n' ' ')"
    exit 0
}
wpid=$(kv pid "$ready")
t0=$(cs)
# met: whether the hot and cold queries meet every bar.
met() {
    [ $((hotp - base)) -ge $MARGIN ] && [ "$coldn1" -ge $COLD_MIN ] && [ $((hotp - coldn0)) -ge $SELECT ]
}
poll_bars "$wpid" /tmp/r.hot /tmp/r.cold
all=$(placement "$wpid" "$(kv addr "$ready")")
echo "  t=${t}s buffer: $all"
echo "  hot/cold node0 % by second:$trail"
kill -TERM "$wpid"
wait $tpid; rc=$?
sed 's/^/  tierkit: /' /tmp/r.err | grep -v '^  tierkit: tierkit: status' | head -30
grep '^tierkit: status' /tmp/r.err | tail -3 | sed 's/^/  /'
sed 's/^/  workload: /' /tmp/r.out
sum=$(sed -n '/^tierkit: summary/,$p' /tmp/r.err | tr '\n' ' ')
promoted=$(kv promoted_pages "$sum")

why=""
[ "$rc" = 0 ] || why="$why tierkit-exit-$rc"
grep -q '^CHECKSUM_OK ' /tmp/r.out || why="$why no-CHECKSUM_OK"
[ "$(dmesg | grep -c 'Out of memory')" = "$ooms" ] || why="$why OOM-kill($(dmesg | grep 'Out of memory' | tail -1 | cut -c1-120))"
[ -n "$sum" ] || why="$why no-summary"
[ "$(kv ended "$sum")" = target-exited ] || why="$why ended=$(kv ended "$sum")"
[ "${promoted:-0}" -gt 0 ] || why="$why promoted_pages=${promoted:-missing}"
[ "$(kv total "$hot")" -gt 0 ] 2>/dev/null || why="$why no-hot-placement($hot)"
[ $((hotp - base)) -ge $MARGIN ] || why="$why hot-node0-${hotp}%-not-${MARGIN}-points-above-first-touch-${base}%-after-${t}s"
details="hot set ($CLUSTER-page clusters) on node0 ${hotp}% vs first touch ${base}% (margin >= $MARGIN) after ${t} s"
details="$details, promoted_pages=$promoted demoted_pages=$(kv demoted_pages "$sum") move_errors=$(kv move_errors "$sum"), checksum ok"
if [ -z "$why" ]; then pass run-damon "$details"; else fail run-damon "$why ($details)"; fi

why=""
[ "$coldn1" -ge $COLD_MIN ] || why="$why cold-node1-${coldn1}%-below-${COLD_MIN}%"
[ $((hotp - coldn0)) -ge $SELECT ] || why="$why hot-node0-${hotp}%-not-${SELECT}-points-above-cold-node0-${coldn0}%"
details="cold set on node1 ${coldn1}% (>= $COLD_MIN), on node0 ${coldn0}% vs hot ${hotp}% (gap >= $SELECT) after ${t} s"
if [ -z "$why" ]; then pass run-damon-cold "$details"; else fail run-damon-cold "$why ($details)"; fi
ttb=$t; met || ttb=none
bench run-damon time_to_bars_s=$ttb bound_s=$BOUND hot_node0_pct=$hotp first_touch_pct=$base cold_node1_pct=$coldn1 \
    promoted_pages=${promoted:-0} buffer_node0_pages=$(kv node0 "$all") mib=$MIB node0_share_mib=$SHARE cluster_pages=$CLUSTER
