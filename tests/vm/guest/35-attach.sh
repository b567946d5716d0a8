#!/bin/sh
# `tierkit attach PID` on a running workload whose buffer first-touched node 1, with the lru policy
# (every sampled slow-tier access promotes: plenty to decide and to move within seconds; how well
# the default policy places pages is 30-run-damon's question):
#   attach-dry-run  `--dry-run --duration 4` decides (would-promote > 0) but moves nothing: the
#                   placement of every buffer page is the same before and after
#   attach          `--duration 6` promotes, prints its summary (ended=duration), exits 0 and
#                   leaves the target running; the target's checksum is intact at its exit
# vmtest-timeout: 70
. /vmtest/guest/lib.sh
# Node 0 whole again, should a scenario killed at its time limit have left huge pages reserved on it.
echo 0 > /sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages

zipf_reader --mib 64 --first-touch-node 1 --seconds 0 --hot-out /tmp/a.hot > /tmp/a.out 2>&1 &
wpid=$!
ready=$(wait_line /tmp/a.out '^READY' 30) || { fail attach "workload never READY: $(cat /tmp/a.out)"; exit 0; }
range=$(kv addr "$ready")
# summary FILE: the summary block of a tierkit stderr file, on one line.
summary() { sed -n '/^tierkit: summary/,$p' "$1" | tr '\n' ' '; }
# the per-node page counts of the whole buffer (ENOENT/EFAULT included)
layout() { placement "$wpid" "$range" | cut -d' ' -f2-; }

before=$(layout)
tierkit attach "$wpid" --policy lru --dry-run --duration 4 --status-every 1 > /tmp/d.log 2>&1
rc=$?
after=$(layout)
sum=$(summary /tmp/d.log)
echo "  dry run: before $before"
echo "  dry run: after  $after"
sed 's/^/  dry run: /' /tmp/d.log | tail -15
why=""
[ "$rc" = 0 ] || why="$why exit-$rc"
[ -n "$sum" ] || why="$why no-summary"
[ "$before" = "$after" ] || why="$why placement-changed"
[ "$(kv promoted_pages "$sum")" -gt 0 ] 2>/dev/null || why="$why would-promote=$(kv promoted_pages "$sum")"
kill -0 "$wpid" 2>/dev/null || why="$why target-gone"
details="would promote $(kv promoted_pages "$sum") demote $(kv demoted_pages "$sum") pages; placement unchanged: $after"
if [ -z "$why" ]; then pass attach-dry-run "$details"; else fail attach-dry-run "$why ($details)"; fi

tierkit attach "$wpid" --policy lru --duration 6 --status-every 1 > /tmp/t.log 2>&1
rc=$?
alive=yes; kill -0 "$wpid" 2>/dev/null || alive=no
hot=$(placement "$wpid" /tmp/a.hot)
kill -TERM "$wpid"; wait "$wpid"; wrc=$?
sum=$(summary /tmp/t.log)
sed 's/^/  attach: /' /tmp/t.log | tail -15
sed 's/^/  workload: /' /tmp/a.out
echo "  hot after attach: $hot"
why=""
[ "$rc" = 0 ] || why="$why exit-$rc"
[ -n "$sum" ] || why="$why no-summary"
[ "$(kv ended "$sum")" = duration ] || why="$why ended=$(kv ended "$sum")"
[ "$(kv promoted_pages "$sum")" -gt 0 ] 2>/dev/null || why="$why promoted_pages=$(kv promoted_pages "$sum")"
[ "$alive" = yes ] || why="$why target-not-running-after-detach"
[ "$wrc" = 0 ] && grep -q '^CHECKSUM_OK ' /tmp/a.out || why="$why target-rc-$wrc-no-CHECKSUM_OK"
details="promoted_pages=$(kv promoted_pages "$sum") demoted_pages=$(kv demoted_pages "$sum")"
details="$details move_errors=$(kv move_errors "$sum"), hot set node0=$(kv node0 "$hot")/$(kv total "$hot"), target ran on, checksum ok"
if [ -z "$why" ]; then pass attach "$details"; else fail attach "$why ($details)"; fi
