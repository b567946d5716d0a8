#!/bin/sh
# A soak: `tierkit run --policy tierkit --source damon` on a target that lives as real programs do
# for SOAK seconds (60 in `make test`; `vmtest_soak_seconds=S` on the kernel command line for a
# longer run by hand, see tests/vm/README.md): it forks a child that rewrites its copy of the buffer
# and reads it (tierkit moves only a target's private pages, MPOL_MF_MOVE: pages still shared
# copy-on-write with a child come back EACCES and stay), unmaps the buffer's tail and maps it back in a loop (--munmap-churn), and moves its
# hot set every 10 s (--shift-every), on a 128 MiB buffer first touched on node 1 with 32 MiB of
# node 0 left for it, so that tierkit both promotes and demotes all along. Asserts:
#   soak-data       tierkit exits 0 with ended=target-exited; the parent's and the child's
#                   checksums are intact; tierkit printed no panic and no error line beyond the
#                   summary's count of the per-page errors the kernel's move_pages returned
#   soak-rss        tierkit's RSS stays flat: the largest `rss` of its status lines in the run's
#                   second half is at most 1.25x + 2 MiB of the first one after WARM seconds (its
#                   tables are sized by the target's footprint, which does not grow; a leak of one
#                   allocation per tick, event or move grows without bound)
#   soak-placement  the pages tierkit reports moved are what the kernel migrated:
#                   - the pages it reports moved are at most the kernel's count of pages migrated
#                     over the run (/proc/vmstat pgmigrate_success: move_pages counts there, as
#                     anything else that migrates, such as compaction), plus 0.5% of them: a tail
#                     page unmapped and mapped again between tierkit's locating it and its move,
#                     the new page already on the fast node, reads as moved (tierkit locates the
#                     pages of each batch just before it moves them; without that, 2% more);
#                   - after the read phase the target touches nothing for HOLD seconds (--hold);
#                     each status line from the second one printed in that time on is set beside
#                     the target's pages per node in /proc/PID/numa_maps (the same pages, counted by
#                     the kernel), read just before and just after the line appeared. Where the two
#                     reads agree (tierkit moved nothing around the line), a line printed JUDGE s or
#                     more into the hold says what numa_maps says, to the tenth of a point (the
#                     view is rebuilt at most 50x its CPU cost apart, a few seconds in the guest:
#                     the lines before may still count the tail as it was before its last
#                     remapping); at least two such lines. (Until 2026-11-27 a rebuild's cost was
#                     timed by the wall clock, which a busy guest stretched: two runs held a stale
#                     view through the whole hold, 3.6-3.8 points above numa_maps.)
#                   While the target still runs the two cannot be compared: its tail is unmapped
#                   and mapped again every few milliseconds, and tierkit learns of new pages when
#                   it next reads the maps (at most 2% of a core; seconds apart in the guest).
# The daemon's RSS at the start and the end, the moves and the shifts are printed as a VMBENCH line,
# with node 0's lowest free memory in the run (with and without its per-CPU lists) beside its
# watermarks; an OOM kill in the run fails soak-data and prints the kernel's report.
# vmtest-timeout: 540
. /vmtest/guest/lib.sh
SOAK=60
for arg in $(cat /proc/cmdline); do
    case "$arg" in vmtest_soak_seconds=*) SOAK=${arg#*=} ;; esac
done
MIB=128 SHARE=32 SHIFT=10 WARM=10 EVERY=2 HOLD=30 JUDGE=12

trap 'echo 0 > $HP' EXIT
echo 0 > $HP
echo "  node0: $(node0_share $SHARE)"
# What else holds memory as the soak starts (a guest OOM once killed the target and its child
# 15 s in, with no other trace of why): each node's free memory and the files in /tmp (tmpfs).
echo "  memory: node1_free=$(awk '/MemFree/ { print int($4 / 1024) }' /sys/devices/system/node/node1/meminfo)MiB tmp=$(du -sm /tmp | cut -f1)MiB"
# node0_zone_pages: node 0's free pages summed over its zones (`pages free` of /proc/zoneinfo, what
# the allocator checks against the watermarks), its min, low and high watermarks, and its free
# pages with those on the per-CPU lists, in MiB.
node0_zone_pages() {
    awk '$1 == "Node" { n = $2 } n != "0," { next }
        $1 == "pages" && $2 == "free" { f += $3 } $1 == "min" { m += $2 } $1 == "low" { l += $2 } $1 == "high" { h += $2 }
        $1 == "count:" { c += $2 }
        END { printf "%d %d %d %d %d\n", f * 4 / 1024, m * 4 / 1024, l * 4 / 1024, h * 4 / 1024, (f + c) * 4 / 1024 }' /proc/zoneinfo
}
# Node 0's free memory through the run, twice a second: how near its min watermark tierkit's
# promotions and the target's own allocations take it (below min, a kernel allocation that only
# node 0 can serve fails and the OOM killer runs).
ooms_before=$(dmesg | grep -c 'Out of memory')
# reclaim: kswapd's reclaim runs (woken by an allocation that found a node below its low watermark
# and fell into the slow path, as a move_pages allocation bound to node 0 does; the target's own
# faults fall back to node 1 instead) and direct-reclaim stalls, since boot.
reclaim() { awk '$1 == "pageoutrun" { r = $2 } $1 ~ /^allocstall_/ { s += $2 } END { print r + 0, s + 0 }' /proc/vmstat; }
reclaim_before=$(reclaim)
(while :; do node0_zone_pages; sleep 0.5; done) > /tmp/s.free 2>/dev/null &
watch_pid=$!
# migrated: the kernel's count of pages migrated since boot.
migrated() { awk '$1 == "pgmigrate_success" { print $2 }' /proc/vmstat; }
migrated_before=$(migrated)
tierkit run --policy tierkit --source damon --cpu-budget 0 --status-every $EVERY -- \
    zipf_reader --mib $MIB --first-touch-node 1 --cluster-pages 64 --fork-private --munmap-churn \
    --shift-every $SHIFT --seconds $SOAK --hold $HOLD > /tmp/s.out 2> /tmp/s.err &
tpid=$!
ready=$(wait_line /tmp/s.out '^READY' 60) || {
    fail soak-data "workload never READY under tierkit: $(cat /tmp/s.out /tmp/s.err | head -5 | tr '\n' ' ')"
    exit 0
}
wpid=$(kv pid "$ready")
range=$(kv addr "$ready")
# status N: the Nth status line of tierkit's stderr (empty if not yet printed).
status() { grep '^tierkit: status' /tmp/s.err | sed -n "${1}p"; }
# t_of LINE: the whole seconds since tierkit's start of a status line ("[5.3s]", "[1m07s]").
t_of() { echo "$1" | sed -n 's/^tierkit: status \[\([0-9ms.]*\)\].*/\1/p' | awk -F m 'NF == 2 { print $1 * 60 + int($2); next } { print int($1) }'; }
# statuses_from S: the status lines from S seconds on.
statuses_from() { grep '^tierkit: status' /tmp/s.err | while read -r l; do [ "$(t_of "$l")" -ge "$1" ] && echo "$l"; done; }
# numa_pct: the target's fast-tier (node 0) share of its pages in numa_maps, in tenths of a point.
numa_pct() {
    awk '{ for (i = 1; i <= NF; i++) { if ($i ~ /^N0=/) a += substr($i, 4); else if ($i ~ /^N[0-9]+=/) b += substr($i, 4) } }
        END { if (a + b > 0) printf "%d", a * 1000 / (a + b) + 0.5 }' /proc/$wpid/numa_maps 2>/dev/null
}
# tenths LINE: the fast-tier share of a status line, in tenths of a point.
tenths() { echo "$1" | sed -n 's/.*fast tier \([0-9]*\)\.\([0-9]\)%.*/\1\2/p' | sed 's/^0*\([0-9]\)/\1/'; }
# In the hold, each status line from the second on beside numa_maps read just before and just
# after it appeared: where the two reads agree, nothing moved around the line, and the line must say
# what numa_maps says once JUDGE seconds of the hold have passed (a rebuild of the view since).
checks="" worst=0 last="" judged=0 bad=""
if wait_line /tmp/s.out '^HOLD ' $((SOAK * 4 + 120)) > /dev/null; then
    n=$(($(grep -c '^tierkit: status' /tmp/s.err) + 2))
    before=$(numa_pct) t0=""
    while kill -0 "$wpid" 2>/dev/null; do
        line=$(status $n)
        if [ -z "$line" ]; then sleep 0.1; continue; fi
        after=$(numa_pct); ours=$(tenths "$line"); t=$(t_of "$line")
        # Read after the hold ended (the target verifies its buffer, tierkit moves again): not compared.
        grep -q '^HELD' /tmp/s.out && break
        [ -n "$after" ] && [ -n "$ours" ] && kill -0 "$wpid" 2>/dev/null || break
        n=$((n + 1)) t0=${t0:-$t}
        if [ "$before" != "$after" ]; then
            checks="$checks ${t}s:$ours/$before-$after(moving)" before=$after
            continue
        fi
        before=$after
        d=$((ours - after)); [ $d -lt 0 ] && d=$((-d))
        [ $d -gt $worst ] && worst=$d
        last=$d
        checks="$checks ${t}s:$ours/$after"
        if [ $((t - t0)) -ge $JUDGE ]; then
            judged=$((judged + 1))
            [ $d -le 1 ] || bad="$bad ${t}s"
        fi
    done
fi
wait $tpid; rc=$?
kill $watch_pid 2>/dev/null
# lowest: node 0's lowest free memory in the run and its watermarks, in MiB.
lowest=$(sort -n /tmp/s.free | head -1)
with_lists=$(cut -d' ' -f5 /tmp/s.free | sort -n | head -1)
reclaim_after=$(reclaim)
memory="node0_free_min=$(echo "$lowest" | cut -d' ' -f1)MiB with_lists_min=${with_lists}MiB wmark_min=$(echo "$lowest" | cut -d' ' -f2)MiB low=$(echo "$lowest" | cut -d' ' -f3)MiB high=$(echo "$lowest" | cut -d' ' -f4)MiB"
memory="$memory kswapd_runs=$((${reclaim_after% *} - ${reclaim_before% *})) reclaim_stalls=$((${reclaim_after#* } - ${reclaim_before#* }))"
echo "  memory: $memory"
if [ "$(dmesg | grep -c 'Out of memory')" != "$ooms_before" ]; then
    # The OOM killer's report (its warning-level lines do not reach the console at loglevel 4).
    dmesg | sed -n '/invoked oom-killer/,/Killed process/p' | grep -v -E '^\[ *[0-9.]*\]  ?(\? |[a-z_]+\+0x)' | head -60 | sed 's/^/  oom: /'
fi
grep '^tierkit: status' /tmp/s.err | awk 'NR % 5 == 1' | sed 's/^/  /'
sed -n '/summary after/,$p' /tmp/s.err | sed 's/^/  /'
sed 's/^/  workload: /' /tmp/s.out
sum=$(sed -n '/^tierkit: summary/,$p' /tmp/s.err | tr '\n' ' ')

why=""
[ "$rc" = 0 ] || why="$why tierkit-exit-$rc"
[ "$(dmesg | grep -c 'Out of memory')" = "$ooms_before" ] || why="$why OOM-kill($memory)"
[ "$(kv ended "$sum")" = target-exited ] || why="$why ended=$(kv ended "$sum")"
grep -q '^CHECKSUM_OK ' /tmp/s.out || why="$why no-CHECKSUM_OK"
grep -q '^CHILD CHECKSUM_OK ' /tmp/s.out || why="$why no-child-CHECKSUM_OK"
shifts=$(kv shifts "$(grep '^READS' /tmp/s.out)")
[ "${shifts:-0}" -ge $((SOAK / SHIFT - 1)) ] || why="$why shifts=${shifts:-none}"
errs=$(grep -i -E 'panick|error' /tmp/s.err | grep -v -E '^ *errors: |move_errors=')
[ -z "$errs" ] || why="$why error-lines($(echo "$errs" | head -3 | tr '\n' ' '))"
if [ -z "$why" ]; then
    pass soak-data "${SOAK}s: checksums ok (parent, child), shifts=$shifts promoted_pages=$(kv promoted_pages "$sum") demoted_pages=$(kv demoted_pages "$sum") move_errors=$(kv move_errors "$sum")"
else
    fail soak-data "$why"
fi

# rss_of LINE: the rss of a status line in KiB.
rss_of() { echo "$1" | sed -n 's/.*| rss \([0-9.]*\) MiB.*/\1/p' | awk '{ printf "%d", $1 * 1024 }'; }
start=$(statuses_from $WARM | head -1)
start_kib=$(rss_of "$start")
peak_kib=$(statuses_from $((SOAK / 2)) | while read -r l; do rss_of "$l"; echo; done | sort -n | tail -1)
end_kib=$(rss_of "$(grep '^tierkit: status' /tmp/s.err | tail -1)")
bound=$((start_kib * 5 / 4 + 2048))
if [ "${start_kib:-0}" -gt 0 ] && [ "${peak_kib:-0}" -gt 0 ] && [ "$peak_kib" -le $bound ]; then
    pass soak-rss "rss ${start_kib} KiB at ${WARM}s, at most ${peak_kib} KiB in the second half (bound ${bound}), ${end_kib} KiB at the end"
else
    fail soak-rss "rss ${start_kib:-none} KiB at ${WARM}s, ${peak_kib:-none} KiB in the second half (bound ${bound})"
fi

moved=$(($(kv promoted_pages "$sum") + $(kv demoted_pages "$sum")))
kernel=$(($(migrated) - migrated_before))
why=""
[ "$moved" -gt 0 ] && [ "$moved" -le $((kernel + moved / 200)) ] || why="$why moved=$moved-kernel=$kernel"
[ "$judged" -ge 2 ] || why="$why still-status-lines-judged=$judged"
[ -z "$bad" ] || why="$why status-not-numa_maps-at:$bad"
detail="moved ${moved} pages, the kernel migrated ${kernel}; fast tier in the hold, status/numa_maps (tenths of %):${checks:- none}"
if [ -z "$why" ]; then pass soak-placement "$detail"; else fail soak-placement "$why: $detail"; fi
bench soak seconds=$SOAK rss_start_kib=${start_kib:-0} rss_end_kib=${end_kib:-0} shifts=${shifts:-0} \
    promoted_pages=$(kv promoted_pages "$sum") demoted_pages=$(kv demoted_pages "$sum") placement_gap_max_tenths=$worst placement_gap_last_tenths=${last:-} \
    view_rebuilds=$(kv view_rebuilds "$sum") cpu_ms_view=$(kv cpu_ms_view "$sum") $memory
