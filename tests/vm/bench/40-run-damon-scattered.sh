#!/bin/sh
# run-damon-scattered: guest/30-run-damon's setting (the default policy over a 128 MiB Zipf
# workload first touched on node 1, node 0 cut to 32 MiB above its high watermarks, small per-CPU
# free lists) with the hot pages shuffled one by one over the whole buffer (--cluster-pages 1), so
# every DAMON region mixes hot and cold pages: where the hottest and coldest 512 pages are 7 s
# after READY, in a 10 s run.
# vmtest-timeout: 120
. /vmtest/guest/lib.sh
small_pcp_lists
share() { awk -v n="$(kv node$1 "$2")" -v t="$(kv total "$2")" 'BEGIN { printf "%d", (t > 0 ? n * 100 / t : 0) }'; }
echo 0 > $HP
echo "  node0: $(node0_share 32)"
tierkit run --policy tierkit --source damon --cpu-budget 0 --status-every 1 -- zipf_reader --mib 128 \
    --first-touch-node 1 --cluster-pages 1 --seconds 10 --hot-out /tmp/s.hot --cold-out /tmp/s.cold > /tmp/s.out 2> /tmp/s.err &
tpid=$!
ready=$(wait_line /tmp/s.out '^READY' 30) || { fail run-damon-scattered "workload never READY: $(cat /tmp/s.out /tmp/s.err | head -5)"; exit 0; }
wpid=$(kv pid "$ready")
sleep 7
hot=$(placement "$wpid" /tmp/s.hot); cold=$(placement "$wpid" /tmp/s.cold); all=$(placement "$wpid" "$(kv addr "$ready")")
wait $tpid; rc=$?
echo "  hot: $hot"; echo "  cold: $cold"; echo "  buffer: $all"
grep -v '^tierkit: status' /tmp/s.err | sed 's/^/  tierkit: /' | head -30
sum=$(sed -n '/^tierkit: summary/,$p' /tmp/s.err | tr '\n' ' ')
bench run-damon-scattered hot_node0_pct=$(share 0 "$hot") cold_node1_pct=$(share 1 "$cold") \
    promoted_pages=$(kv promoted_pages "$sum") buffer_node0_pages=$(kv node0 "$all") cluster_pages=1 seconds=10 tierkit_exit=$rc
