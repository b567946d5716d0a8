#!/bin/sh
# `tierkit run --policy tierkit --source damon` (the default policy) on a Zipf workload whose buffer
# (128 MiB) is four times node 0's share for it (32 MiB above node 0's high watermarks: the rest of
# node 0 is taken by 2 MiB huge pages reserved on it). The workload first-touches node 1, as memory
# allocated on a CXL server whose DRAM is already taken does: first-touch placement then leaves the
# hot set on the slow tier (0% on node 0, so the margin measures tierkit alone). numa_balancing is
# 0: nothing but tierkit moves pages. Its hot pages lie in 64-page (256 KiB) clusters, as hot
# arrays and arenas do: DAMON watches regions, not pages, and a region that mixes hot and cold pages
# reads as lukewarm. An independent move_pages query (the placement tool) then measures, while the
# workload still runs, where its hottest and coldest pages (512 each) are:
#   run-damon          hot set's node 0 share beats first touch by >= 30 points, promoted_pages > 0,
#                      the workload's checksum is intact, summary ends with ended=target-exited
#   run-damon-cold     cold set stayed on node 1 (>= 60%) and the hot set's node 0 share beats the
#                      cold set's by >= 20 points (a policy blind to heat moves both alike)
# The hot set's share grows about linearly while DAMON's samples visit the buffer's pages in turn
# (a 16 s cycle here: 17/31/50/68% at 3/6/9/13 s); a CI run on a busier machine reached only 31%
# at 13 s, so the last query is at 21 s. Runs so far: hot 60-93% at 13 s, cold on node 1 79-95%;
# the bars leave room for a slower machine, while a heat-blind policy (hot = cold) or no tiering
# (hot 0%) fails.
# The runs have no CPU budget (--cpu-budget 0): the scenario asserts placement, and the budget's
# price on it depends on how slow the emulation is that day (tcg-slowdown 4.7-12.8x). Measured by
# hand: the default 2% (in the guest, 5-13 times stricter than 2% of a native core) left the hot
# set at 44 and 48% at 21 s against 61 and 75% without a budget; --cpu-budget 14 at 85% and 59%,
# and 38% in a CI run whose guest was 12.8x slower than the host (docs/LIVE.md, the CPU budget).
# Then, reported only (VMBENCH run-damon-scattered): the same run with the hot pages shuffled one
# by one over the whole buffer, where every DAMON region mixes hot and cold pages.
# vmtest-timeout: 90
. /vmtest/guest/lib.sh
MIB=128 SHARE=32 SECS=24 SCATTER_SECS=10 CLUSTER=64 MARGIN=30 COLD_MIN=60 SELECT=20
ZIPF="zipf_reader --mib $MIB --first-touch-node 1"

# The kernel keeps freed pages in per-CPU lists (here up to 27 MiB a CPU). tierkit's room counts
# them, but huge pages cannot be reserved from them: with the lists that large node 0's real room
# drifted 10-40 MiB above the share (node0_share reserves against MemFree), enough to take in the
# cold set too. Small lists keep the share what it says for the scenario.
PCP=/proc/sys/vm/percpu_pagelist_high_fraction
pcp_was=$(cat $PCP)
echo 100000 > $PCP
trap 'echo 0 > $HP; echo $pcp_was > $PCP' EXIT
# pct PART WHOLE: PART as a whole percentage of WHOLE.
pct() { [ "${2:-0}" -gt 0 ] && echo $(($1 * 100 / $2)) || echo 0; }
# share NODE QUERY: the percentage of the queried pages on NODE.
share() { pct "$(kv node$1 "$2")" "$(kv total "$2")"; }

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

# tiered RUN CLUSTER SECS: `tierkit run` over the workload for SECS seconds; queries the hot
# set's placement along the way and, at SECS-3 s after READY while the workload still runs, the
# hot set, the cold set and the whole buffer. Sets hot, cold, all, rc, sum (the summary on one
# line) and wpid; files /tmp/RUN.{out,err,hot,cold}.
tiered() {
    r=$1
    tierkit run --policy tierkit --source damon --cpu-budget 0 --status-every 1 -- \
        $ZIPF --cluster-pages $2 --seconds $3 --hot-out /tmp/$r.hot --cold-out /tmp/$r.cold > /tmp/$r.out 2> /tmp/$r.err &
    tpid=$!
    ready=$(wait_line /tmp/$r.out '^READY' 30) || return 1
    wpid=$(kv pid "$ready")
    prev=0
    last=$(($3 - 3))
    for t in 3 6 9 12 15 18 $last; do
        [ $t -gt $prev ] && [ $t -le $last ] || continue
        sleep $((t - prev)); prev=$t
        hot=$(placement "$wpid" /tmp/$r.hot)
        echo "  $r t=${t}s hot: $hot"
    done
    cold=$(placement "$wpid" /tmp/$r.cold)
    all=$(placement "$wpid" "$(kv addr "$ready")")
    echo "  $r t=${prev}s cold: $cold"
    echo "  $r t=${prev}s buffer: $all"
    wait $tpid; rc=$?
    sed "s/^/  $r tierkit: /" /tmp/$r.err | grep -v "^  $r tierkit: tierkit: status" | head -30
    grep '^tierkit: status' /tmp/$r.err | tail -3 | sed "s/^/  $r /"
    sed "s/^/  $r workload: /" /tmp/$r.out
    sum=$(sed -n '/^tierkit: summary/,$p' /tmp/$r.err | tr '\n' ' ')
}

ooms=$(dmesg | grep -c 'Out of memory')
echo "  node0 before the run: $(node0_share $SHARE)"
tiered r $CLUSTER $SECS || {
    fail run-damon "workload never READY under tierkit: $(cat /tmp/r.out /tmp/r.err | head -5 | tr '\n' ' ')"
    exit 0
}
hotp=$(share 0 "$hot"); coldn1=$(share 1 "$cold"); coldn0=$(share 0 "$cold")
promoted=$(kv promoted_pages "$sum")

why=""
[ "$rc" = 0 ] || why="$why tierkit-exit-$rc"
grep -q '^CHECKSUM_OK ' /tmp/r.out || why="$why no-CHECKSUM_OK"
[ "$(dmesg | grep -c 'Out of memory')" = "$ooms" ] || why="$why OOM-kill($(dmesg | grep 'Out of memory' | tail -1 | cut -c1-120))"
[ -n "$sum" ] || why="$why no-summary"
[ "$(kv ended "$sum")" = target-exited ] || why="$why ended=$(kv ended "$sum")"
[ "${promoted:-0}" -gt 0 ] || why="$why promoted_pages=${promoted:-missing}"
[ "$(kv total "$hot")" -gt 0 ] 2>/dev/null || why="$why no-hot-placement($hot)"
[ $((hotp - base)) -ge $MARGIN ] || why="$why hot-node0-${hotp}%-not-${MARGIN}-points-above-first-touch-${base}%"
details="hot set ($CLUSTER-page clusters) on node0 ${hotp}% vs first touch ${base}% (margin >= $MARGIN), promoted_pages=$promoted"
details="$details demoted_pages=$(kv demoted_pages "$sum") move_errors=$(kv move_errors "$sum"), checksum ok"
if [ -z "$why" ]; then pass run-damon "$details"; else fail run-damon "$why ($details)"; fi

why=""
[ "$coldn1" -ge $COLD_MIN ] || why="$why cold-node1-${coldn1}%-below-${COLD_MIN}%"
[ $((hotp - coldn0)) -ge $SELECT ] || why="$why hot-node0-${hotp}%-not-${SELECT}-points-above-cold-node0-${coldn0}%"
details="cold set on node1 ${coldn1}% (>= $COLD_MIN), on node0 ${coldn0}% vs hot ${hotp}% (gap >= $SELECT)"
if [ -z "$why" ]; then pass run-damon-cold "$details"; else fail run-damon-cold "$why ($details)"; fi
bench run-damon hot_node0_pct=$hotp first_touch_pct=$base cold_node1_pct=$coldn1 promoted_pages=${promoted:-0} \
    buffer_node0_pages=$(kv node0 "$all") mib=$MIB node0_share_mib=$SHARE cluster_pages=$CLUSTER seconds=$SECS

# Scattered hot pages: reported, not asserted.
echo "  node0 before the scattered run: $(node0_share $SHARE)"
if tiered s 1 $SCATTER_SECS; then
    bench run-damon-scattered hot_node0_pct=$(share 0 "$hot") cold_node1_pct=$(share 1 "$cold") \
        promoted_pages=$(kv promoted_pages "$sum") buffer_node0_pages=$(kv node0 "$all") cluster_pages=1 \
        seconds=$SCATTER_SECS tierkit_exit=$rc
else
    bench run-damon-scattered error=workload-never-READY
fi
