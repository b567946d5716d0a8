#!/bin/sh
# The fault matrix. Every case: the workload's checksum is intact (where it is not the one
# killed), tierkit exits with its summary as the CLI contract says (or, after SIGKILL, the next
# tierkit start repairs what it left), no kdamond is left on, no state file is left in
# /run/tierkit, and numa_balancing/demotion_enabled are back to their values from before.
# The DAMON cases run the lru policy (every sampled slow-tier access promotes): tierkit is then
# busy moving pages when the fault hits, which the default policy, promoting a few pages a
# second under TCG, would rarely be. The workloads first-touch node 1, so there is work to do.
#   fault-target-killed   the target is SIGKILLed while tierkit moves its pages: tierkit exits
#                         with the target's status (137) and a summary with ended=target-exited
#   fault-sigterm         tierkit (damon) is SIGTERMed while it moves pages: summary with
#                         ended=signal, the target runs on
#   fault-sigterm-kernel  tierkit --source kernel is SIGTERMed: summary knobs=restored, knobs back
#   fault-sigkill         tierkit (damon) is SIGKILLed while it moves pages: its kdamond is left on;
#                         `tierkit run --source kernel --duration 2 -- true` turns it off
#   fault-sigkill-kernel  tierkit --source kernel is SIGKILLed: numa_balancing stays 2 and the state
#                         file stays; the next `tierkit run --source kernel ... -- true` restores them
#   fault-survivor        the target of the four cases above (the same process; its pages are put
#                         back on node 1 before the SIGKILL case) ends with its checksum intact
#   fault-node0-full      node 0 is filled (2 MiB huge pages reserved on it, plus a node_hog) so
#                         promotions are refused (by the kernel with ENOMEM, or by tierkit, which
#                         reads no room, without a call): tierkit counts them and survives, and
#                         nothing is OOM-killed (node 1, like CXL memory onlined movable, serves no
#                         kernel allocation: pushing node 0 to its min watermark makes the kernel
#                         OOM-kill; the hog, at oom_score_adj 1000, is then the victim, which frees
#                         its 96 MiB and keeps the guest alive to report it)
#   fault-mlock           half the buffer is mlocked
#   fault-fork-threads    two reader threads and a forked copy-on-write child
#   fault-munmap          the target unmaps and remaps part of its buffer while being migrated
# vmtest-timeout: 240
. /vmtest/guest/lib.sh
trap 'echo 0 > $HP' EXIT
echo 0 > $HP
knobs() { echo "numa_balancing=$(cat /proc/sys/kernel/numa_balancing) demotion=$(cat /sys/kernel/mm/numa/demotion_enabled)"; }
KNOBS0=$(knobs)

# summary FILE: the summary block of a tierkit stderr file, on one line.
summary() { sed -n '/^tierkit: summary/,$p' "$1" | tr '\n' ' '; }
# alive PID: the process exists and is not a zombie.
alive() { s=$(awk '{ print $3 }' /proc/$1/stat 2>/dev/null); [ -n "$s" ] && [ "$s" != Z ] && [ "$s" != X ]; }
# leftovers: what a cleanly finished tierkit must not leave behind ("" when nothing).
leftovers() {
    out=""
    [ "$(knobs)" = "$KNOBS0" ] || out="$out knobs-changed($(knobs))"
    on=$(kdamonds_on); [ -z "$on" ] || out="$out kdamond-on($on)"
    for f in /run/tierkit/knobs.json /run/tierkit/damon.json; do [ -e "$f" ] && out="$out state-file-${f##*/}"; done
    echo "$out"
}
# wait_exit PID SECONDS: waits for background job PID, SIGKILLing it after SECONDS; sets rc to its
# status (not in a command substitution: a subshell cannot wait for this shell's children).
wait_exit() {
    (sleep "$2"; kill -9 "$1" 2>/dev/null) &
    wd=$!
    wait "$1"; rc=$?
    kill "$wd" 2>/dev/null
}
# moving PID RANGE SECONDS: waits until the node-0 page count of RANGE grows between two queries
# 0.2 s apart (tierkit is migrating right now); prints "a->b", fails after SECONDS.
moving() {
    last=$(kv node0 "$(placement "$1" "$2")"); i=0
    while [ $i -lt $(($3 * 5)) ]; do
        sleep 0.2; i=$((i + 1))
        now=$(kv node0 "$(placement "$1" "$2")")
        [ "${now:-0}" -gt "${last:-0}" ] && { echo "$last->$now"; return 0; }
        last=$now
    done
    return 1
}
# verdict NAME WHY DETAILS
verdict() { if [ -z "$2" ]; then pass "$1" "$3"; else fail "$1" "$2 ($3)"; fi; }
show() { sed "s/^/  $1: /" "$2" | grep -v ': tierkit: status' | tail -14; }

# --- The target is SIGKILLed while tierkit migrates its pages.
tierkit run --policy lru --source damon --status-every 1 -- \
    zipf_reader --mib 64 --first-touch-node 1 --seconds 0 > /tmp/tk.out 2> /tmp/tk.err &
tpid=$!
why=""
if ready=$(wait_line /tmp/tk.out '^READY' 30); then
    wpid=$(kv pid "$ready")
    mv=$(moving "$wpid" "$(kv addr "$ready")" 15) || why="$why no-migration-seen"
    kill -9 "$wpid"
    wait_exit $tpid 15
else
    why="$why workload-never-READY"; wait_exit $tpid 1
fi
show target-killed /tmp/tk.err
sum=$(summary /tmp/tk.err)
[ "$rc" = 137 ] || why="$why tierkit-exit-$rc(want-137)"
[ -n "$sum" ] || why="$why no-summary"
[ "$(kv ended "$sum")" = target-exited ] || why="$why ended=$(kv ended "$sum")"
why="$why$(leftovers)"
verdict fault-target-killed "$why" "SIGKILL while node0 pages went $mv: exit $rc, ended=$(kv ended "$sum") promoted_pages=$(kv promoted_pages "$sum") move_errors=$(kv move_errors "$sum")"

# --- One long-lived target for the tierkit signal cases (started by the first, kept after it).
tierkit run --policy lru --source damon --status-every 1 -- \
    zipf_reader --mib 64 --first-touch-node 1 --seconds 0 > /tmp/s.out 2> /tmp/s1.err &
tpid=$!
ready=$(wait_line /tmp/s.out '^READY' 30) || { fail fault-sigterm "workload never READY: $(cat /tmp/s.out /tmp/s1.err)"; exit 0; }
wpid=$(kv pid "$ready"); range=$(kv addr "$ready")
why=""
mv=$(moving "$wpid" "$range" 15) || why="$why no-migration-seen"
kill -TERM $tpid
wait_exit $tpid 15
show sigterm /tmp/s1.err
sum=$(summary /tmp/s1.err)
[ -n "$sum" ] || why="$why no-summary"
[ "$(kv ended "$sum")" = signal ] || why="$why ended=$(kv ended "$sum")"
alive "$wpid" || why="$why target-gone"
why="$why$(leftovers)"
verdict fault-sigterm "$why" "SIGTERM while node0 pages went $mv: exit $rc, ended=$(kv ended "$sum") promoted_pages=$(kv promoted_pages "$sum"), target runs on"

tierkit attach "$wpid" --source kernel --status-every 1 > /tmp/s2.err 2>&1 &
tpid=$!
why=""
wait_line /tmp/s2.err '^tierkit: status' 15 > /dev/null || why="$why no-status-line"
during=$(knobs)
kill -TERM $tpid
wait_exit $tpid 15
show sigterm-kernel /tmp/s2.err
sum=$(summary /tmp/s2.err)
[ "$rc" = 0 ] || why="$why exit-$rc"
[ -n "$sum" ] || why="$why no-summary"
[ "$(kv ended "$sum")" = signal ] || why="$why ended=$(kv ended "$sum")"
[ "$(kv knobs "$sum")" = restored ] || why="$why knobs=$(kv knobs "$sum")"
alive "$wpid" || why="$why target-gone"
why="$why$(leftovers)"
verdict fault-sigterm-kernel "$why" "during: $during; after SIGTERM: $(knobs), summary knobs=$(kv knobs "$sum")"

echo "  back to node 1: $(move_pid "$wpid" "$range" --to 1)"
tierkit attach "$wpid" --policy lru --source damon --status-every 1 > /tmp/s3.err 2>&1 &
tpid=$!
why=""
mv=$(moving "$wpid" "$range" 15) || why="$why no-migration-seen"
kill -9 $tpid
wait $tpid
left=$(kdamonds_on "$wpid")
[ -n "$left" ] || why="$why no-kdamond-left-after-SIGKILL(test-is-vacuous)"
tierkit run --source kernel --duration 2 -- true > /tmp/s4.err 2>&1; rc=$?
show recovery /tmp/s4.err
[ "$rc" = 0 ] || why="$why recovery-run-exit-$rc"
[ -z "$(kdamonds_on "$wpid")" ] || why="$why kdamond-still-on($(kdamonds_on "$wpid"))"
alive "$wpid" || why="$why target-gone"
why="$why$(leftovers)"
verdict fault-sigkill "$why" "SIGKILL while node0 pages went $mv left kdamond $left on; the next tierkit start turned it off"

tierkit attach "$wpid" --source kernel --status-every 1 > /tmp/s5.err 2>&1 &
tpid=$!
why=""
wait_line /tmp/s5.err '^tierkit: status' 15 > /dev/null || why="$why no-status-line"
kill -9 $tpid
wait $tpid
left="$(knobs) state=$(ls /run/tierkit 2>/dev/null | tr '\n' ',')"
[ "$(cat /proc/sys/kernel/numa_balancing)" = 2 ] && [ -e /run/tierkit/knobs.json ] || why="$why nothing-left-after-SIGKILL($left)"
tierkit run --source kernel --duration 2 -- true > /tmp/s6.err 2>&1; rc=$?
show recovery-kernel /tmp/s6.err
[ "$rc" = 0 ] || why="$why recovery-run-exit-$rc"
alive "$wpid" || why="$why target-gone"
why="$why$(leftovers)"
verdict fault-sigkill-kernel "$why" "after SIGKILL: $left; after the next run: $(knobs)"

kill -TERM "$wpid"
wait_line /tmp/s.out '^CHECKSUM_' 30 > /dev/null
sed 's/^/  survivor: /' /tmp/s.out
if grep -q '^CHECKSUM_OK ' /tmp/s.out; then
    pass fault-survivor "the target of five tierkit sessions (SIGTERM x2, SIGKILL x2, recovery) kept its checksum"
else
    fail fault-survivor "$(grep -E '^CHECKSUM|ERROR' /tmp/s.out || echo 'no checksum line')"
fi

# run_case NAME ZIPF-OPTIONS...: tierkit run --policy lru --source damon over a 64 MiB workload on
# node 1 for 4 s; sets rc, sum, why (checksum, exit status 0, summary,
# ended=target-exited, leftovers, no OOM kill during the case).
run_case() {
    n=$1; shift
    ooms=$(dmesg | grep -c 'Out of memory')
    tierkit run --policy lru --source damon --status-every 1 -- \
        zipf_reader --mib 64 --first-touch-node 1 --seconds 4 "$@" > /tmp/$n.out 2> /tmp/$n.err &
    wait_exit $! 40
    show "$n" /tmp/$n.err
    sed "s/^/  $n workload: /" /tmp/$n.out
    sum=$(summary /tmp/$n.err)
    why=""
    [ "$rc" = 0 ] || why="$why exit-$rc"
    grep -q '^CHECKSUM_OK ' /tmp/$n.out || why="$why no-CHECKSUM_OK"
    [ -n "$sum" ] || why="$why no-summary"
    [ "$(kv ended "$sum")" = target-exited ] || why="$why ended=$(kv ended "$sum")"
    why="$why$(leftovers)"
    [ "$(dmesg | grep -c 'Out of memory')" = "$ooms" ] || why="$why OOM-kill($(dmesg | grep 'Out of memory' | tail -1 | cut -c1-120))"
}
counts() { echo "promoted_pages=$(kv promoted_pages "$sum") move_errors=$(kv move_errors "$sum")"; }

run_case mlock --mlock 0.5
grep -q '^MLOCKED bytes=[1-9]' /tmp/mlock.out || why="$why nothing-mlocked"
verdict fault-mlock "$why" "$(counts), $(grep '^MLOCKED' /tmp/mlock.out)"

run_case fork-threads --threads 2 --fork
grep -q '^CHILD CHECKSUM_OK ' /tmp/fork-threads.out || why="$why no-CHILD-CHECKSUM_OK"
verdict fault-fork-threads "$why" "$(counts), parent and child checksums ok"

run_case munmap --munmap-churn
churn=$(sed -n 's/^CHURN cycles=\([0-9]*\).*/\1/p' /tmp/munmap.out)
[ "${churn:-0}" -gt 0 ] || why="$why no-churn"
verdict fault-munmap "$why" "$(counts), churn cycles=$churn"

# --- Node 0 full: huge pages, then a 96 MiB node_hog, take node 0 down to 4 MiB above its low
# watermarks (kswapd's threshold; below the min watermark the kernel refuses to migrate pages to
# node 0, and kernel allocations, which node 1 cannot serve, start OOM-killing).
low=$(awk '$1 == "Node" { n = $2 } n == "0," && $1 == "low" { s += $2 } END { print int(s * 4 / 1024) }' /proc/zoneinfo)
free=$(awk '/MemFree/ { print int($4 / 1024) }' /sys/devices/system/node/node0/meminfo)
echo $(((free - low - 4 - 96) / 2)) > $HP
node_hog --node 0 --mib 96 > /tmp/hog.out 2>&1 &
hog=$!
wait_line /tmp/hog.out '^HOG' 30 > /dev/null || echo "  node0-full: node_hog: $(cat /tmp/hog.out)"
echo "  node0-full: hugepages=$(cat $HP) hog=96MiB node0 free $(awk '/MemFree/ { print int($4 / 1024) }' /sys/devices/system/node/node0/meminfo) MiB (low watermarks $low MiB)"
run_case node0-full
alive $hog || why="$why node_hog-killed"
kill $hog 2>/dev/null; wait $hog
echo 0 > $HP
# Refused: by the kernel (move_errors) or, when tierkit's room reading saw node 0 full, without a
# call (held_back_no_room).
errs=$(kv move_errors "$sum") held=$(kv held_back_no_room "$sum")
[ $((${errs:-0} + ${held:-0})) -gt 0 ] || why="$why move_errors=${errs:-missing} held_back_no_room=${held:-missing}"
verdict fault-node0-full "$why" "$(counts) ($(sed -n 's/^ *errors: *//p' /tmp/node0-full.err))"
