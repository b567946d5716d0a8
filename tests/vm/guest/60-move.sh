#!/bin/sh
# tierkit moving a running workload's pages: a 256 MiB reader (near-uniform reads, --alpha 0.01,
# so every DAMON region is accessed) whose buffer first-touched node 1.
#   move-accounting  `tierkit attach PID --policy lru-cache --source damon` (every sampled slow-tier
#                    access promotes) until 95% of the buffer is on node 0: the summary's
#                    promoted_pages are pages that really arrived there (the placement tool's
#                    counts before and after; a little slack for the workload's other mappings),
#                    and nothing was demoted
#   status-cadence   its status lines (--status-every 1) keep coming while it moves pages: at least
#                    one for every two whole seconds of moves, and at least one (a loop that held
#                    the status line back during its moves printed one when they ended); the
#                    longest gap is reported (VMBENCH status-cadence), not asserted
#   move-command     `tierkit move PID --to slow`, then `--to fast` (the daemon's mover alone, no
#                    source or policy) each moved what it reports (the placement tool's node-0
#                    count changed by that much, give or take 1024 pages: a huge page is one unit
#                    of the mover), complete=true, and left >= 95% of the range on the target node
# How fast these moves go against a raw move_pages loop is the benchmarks' question
# (tests/vm/bench, `make vm-bench`).
# vmtest-timeout: 250
. /vmtest/guest/lib.sh
echo 0 > $HP

zipf_reader --mib 256 --alpha 0.01 --first-touch-node 1 --seconds 0 > /tmp/m.out 2>&1 &
wpid=$!
ready=$(wait_line /tmp/m.out '^READY' 60) || { fail move-accounting "workload never READY: $(cat /tmp/m.out)"; exit 0; }
range=$(kv addr "$ready")

start=$(placement $wpid "$range")
echo "  start: $start"
tierkit attach $wpid --policy lru-cache --source damon --status-every 1 --duration 60 > /tmp/tm.log 2>&1 &
tpid=$!
watch_moves $wpid "$range" $tpid
kill -TERM $tpid 2>/dev/null; wait $tpid
end=$(placement $wpid "$range")
echo "  end: $end"
echo "  node0 pages by time (cs:count):$trail"
grep -E '^tierkit: (status|ended=)' /tmp/tm.log | sed 's/^/  /'

# tierkit's count of promoted pages against the pages that really went to node 0 (nothing else
# moves them, and nothing was demoted).
sum=$(sed -n '/^tierkit: summary/,$p' /tmp/tm.log | tr '\n' ' ')
moved=$(($(kv node0 "$end") - $(kv node0 "$start")))
promoted=$(kv promoted_pages "$sum")
if [ "${promoted:-0}" -gt 0 ] && [ "$promoted" -le $((moved + 1024)) ] && [ "$(kv demoted_pages "$sum")" = 0 ]; then
    pass move-accounting "summary promoted_pages=$promoted, placement saw $moved pages arrive on node 0"
else
    fail move-accounting "summary promoted_pages=$promoted demoted_pages=$(kv demoted_pages "$sum") but placement saw only $moved of the buffer's pages arrive on node 0"
fi

# Seconds of moves: from the first placement poll (0.5 s after tierkit started) to the last.
stamps=$(grep '^tierkit: status \[' /tmp/tm.log | awk -F'[][]' '{ sub(/s$/, "", $2); print $2 }' | tr '\n' ' ')
gap=$(echo "$stamps" | tr ' ' '\n' | awk 'NF { if (n++ && $1 - p > g) g = $1 - p; p = $1 } END { printf "%.1f", g }')
ran_s=$(echo "$trail" | tr ' ' '\n' | awk -F: 'NF == 2 { if (!n++) f = $1; l = $1 } END { printf "%d", (l - f) / 100 + 0.5 }')
want=$((ran_s / 2)); [ $want -ge 1 ] || want=1
lines=$(echo "$stamps" | wc -w)
bench status-cadence "longest_gap_s=$gap lines=$lines moving_s=$ran_s"
if [ "$lines" -ge $want ]; then
    pass status-cadence "status lines kept coming during the moves (--status-every 1): $lines over ${ran_s} s of moves (>= $want), longest gap ${gap} s over [$stamps]"
else
    fail status-cadence "$lines status lines over ${ran_s} s of moves (want >= $want): [$stamps]"
fi

# move_to DIR NODE: `tierkit move --to DIR` over the range; why gets what is wrong, details what it did.
why="" details=""
move_to() {
    before=$(kv node0 "$(placement $wpid "$range")")
    tierkit move $wpid --to $1 --range "$range" > /tmp/mv.out 2> /tmp/mv.err
    rc=$?
    q=$(placement $wpid "$range")
    after=$(kv node0 "$q")
    echo "  tierkit move --to $1 (rc $rc): $(cat /tmp/mv.out)"
    sed 's/^/  /' /tmp/mv.err | head -3
    n=$(kv moved "$(cat /tmp/mv.out)")
    change=$((${after:-0} - ${before:-0})); [ $1 = slow ] && change=$((-change))
    [ "$rc" = 0 ] || why="$why $1:exit-$rc"
    [ -n "$n" ] && [ "$n" -le $((change + 1024)) ] && [ "$n" -ge $((change - 1024)) ] ||
        why="$why $1:said-moved=${n:-?}-but-node0-went-$before-to-$after"
    [ "$(kv complete "$(cat /tmp/mv.out)")" = true ] || why="$why $1:not-complete"
    [ "$(kv node$2 "$q")" -ge $(($(kv total "$q") * 95 / 100)) ] 2>/dev/null || why="$why $1:only-$(kv node$2 "$q")-of-$(kv total "$q")-on-node$2"
    details="$details --to $1 moved ${n:-?} (node 0: $before -> $after);"
}
move_to slow 1
move_to fast 0
kill -TERM $wpid; wait $wpid; wrc=$?
[ "$wrc" = 0 ] && grep -q '^CHECKSUM_OK ' /tmp/m.out || why="$why workload-rc-$wrc-no-CHECKSUM_OK"
if [ -z "$why" ]; then
    pass move-command "tierkit move moved what it reports:$details workload checksum ok"
else
    fail move-command "$why ($details)"
fi
