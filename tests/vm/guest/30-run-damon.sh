#!/bin/sh
# `tierkit run --policy tierkit --source damon` on a Zipf workload whose buffer (128 MiB) is four
# times node 0's share for it (32 MiB above node 0's high watermarks: the rest of node 0 is taken
# by 2 MiB huge pages reserved on it). The workload first-touches node 1, as memory allocated on a
# CXL server whose DRAM is already taken does: first-touch placement then leaves the hot set on the
# slow tier (0% on node 0, so the margin measures tierkit alone; with first touch on node 0 the
# baseline would be node 0's share of the buffer). numa_balancing is 0: nothing but tierkit moves
# pages. An independent move_pages query (the placement tool)
# then measures, while the workload still runs, where its hottest and coldest pages are:
#   run-damon          hot set's node 0 share beats first touch by >= 30 points, promoted_pages > 0,
#                      the workload's checksum is intact, summary ends with ended=target-exited
#   run-damon-cold     cold set stayed on node 1 (>= 60%: node 0 holds at most 1/4 of the buffer)
#                      and the hot set's node 0 share beats the cold set's by >= 20 points
#                      (a policy blind to heat puts both sets on node 0 at the same rate)
# vmtest-timeout: 80
. /vmtest/guest/lib.sh
HP=/sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages
MIB=128 SHARE=32 SECS=20 MARGIN=30 COLD_MIN=60 SELECT=20
ZIPF="zipf_reader --mib $MIB --first-touch-node 1"

# node0_share MIB: reserves node 0's free memory in 2 MiB huge pages until about MIB MiB stay free
# above its high watermarks; prints what is left.
node0_share() {
    high=$(awk '$1 == "Node" { n = $2 } n == "0," && $1 == "high" { s += $2 } END { print int(s * 4 / 1024) }' /proc/zoneinfo)
    free=$(awk '/MemFree/ { print int($4 / 1024) }' /sys/devices/system/node/node0/meminfo)
    echo $(((free - high - $1) / 2)) > $HP
    free=$(awk '/MemFree/ { print int($4 / 1024) }' /sys/devices/system/node/node0/meminfo)
    echo "hugepages=$(cat $HP) node0_free=${free}MiB high_wmark=${high}MiB"
}
trap 'echo 0 > $HP' EXIT
# pct PART WHOLE: PART as a whole percentage of WHOLE.
pct() { [ "${2:-0}" -gt 0 ] && echo $(($1 * 100 / $2)) || echo 0; }
# share NODE QUERY: the percentage of the queried pages on NODE.
share() { pct "$(kv node$1 "$2")" "$(kv total "$2")"; }

echo 0 > $HP
echo "  node0: $(node0_share $SHARE)"

# Baseline: first touch, no tierkit. With numa_balancing=0 nothing moves it later, so one
# query a second after READY is the placement at any time.
$ZIPF --seconds 2 --hot-out /tmp/b.hot --cold-out /tmp/b.cold > /tmp/b.out 2>&1 &
bpid=$!
ready=$(wait_line /tmp/b.out '^READY' 30) || { fail run-damon "baseline workload never READY: $(cat /tmp/b.out)"; exit 0; }
sleep 1
bhot=$(placement "$(kv pid "$ready")" /tmp/b.hot)
bcold=$(placement "$(kv pid "$ready")" /tmp/b.cold)
wait $bpid
echo "  first touch: hot $bhot"
echo "  first touch: cold $bcold"
base=$(share 0 "$bhot")

ooms=$(dmesg | grep -c 'Out of memory')
# tierkit run; the workload reads for SECS seconds, the placement is queried along the way and
# last at SECS-3 s after READY, while it still runs.
tierkit run --policy tierkit --source damon --status-every 1 -- \
    $ZIPF --seconds $SECS --hot-out /tmp/r.hot --cold-out /tmp/r.cold > /tmp/r.out 2> /tmp/r.err &
tpid=$!
ready=$(wait_line /tmp/r.out '^READY' 30) || {
    fail run-damon "workload never READY under tierkit: $(cat /tmp/r.out /tmp/r.err | head -5 | tr '\n' ' ')"
    exit 0
}
wpid=$(kv pid "$ready")
prev=0
for t in 4 8 12 $((SECS - 3)); do
    sleep $((t - prev)); prev=$t
    hot=$(placement "$wpid" /tmp/r.hot)
    echo "  t=${t}s hot: $hot"
done
cold=$(placement "$wpid" /tmp/r.cold)
all=$(placement "$wpid" "$(kv addr "$ready")")
echo "  t=${t}s cold: $cold"
echo "  t=${t}s buffer: $all"
wait $tpid; rc=$?
sed 's/^/  tierkit: /' /tmp/r.err | grep -v '^  tierkit: tierkit: status' | head -30
grep '^tierkit: status' /tmp/r.err | tail -3 | sed 's/^/  /'
sed 's/^/  workload: /' /tmp/r.out
sum=$(sed -n '/^tierkit: summary/,$p' /tmp/r.err | tr '\n' ' ')
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
details="hot set on node0 ${hotp}% vs first touch ${base}% (margin >= $MARGIN), promoted_pages=$promoted"
details="$details demoted_pages=$(kv demoted_pages "$sum") move_errors=$(kv move_errors "$sum"), checksum ok"
if [ -z "$why" ]; then pass run-damon "$details"; else fail run-damon "$why ($details)"; fi

why=""
[ "$coldn1" -ge $COLD_MIN ] || why="$why cold-node1-${coldn1}%-below-${COLD_MIN}%"
[ $((hotp - coldn0)) -ge $SELECT ] || why="$why hot-node0-${hotp}%-not-${SELECT}-points-above-cold-node0-${coldn0}%"
details="cold set on node1 ${coldn1}% (>= $COLD_MIN), on node0 ${coldn0}% vs hot ${hotp}% (gap >= $SELECT)"
if [ -z "$why" ]; then pass run-damon-cold "$details"; else fail run-damon-cold "$why ($details)"; fi
bench run-damon hot_node0_pct=$hotp first_touch_pct=$base cold_node1_pct=$coldn1 promoted_pages=${promoted:-0} \
    buffer_node0_pages=$(kv node0 "$all") mib=$MIB node0_share_mib=$SHARE seconds=$SECS
