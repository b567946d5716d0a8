#!/bin/sh
# `tierkit profile --duration 3 -- zipf_reader ...` prints a heat report: a header, then per
# interval an "all mappings" line and one line per mapping with hot/warm/cold fractions that add
# up to 100%; it ends with ended=duration and leaves the workload running (its checksum is
# intact). Checked for both methods: DAMON (the default here) and refs (clear_refs + smaps), and
# once with --json. The workload is strongly skewed (--alpha 1.5 over 64 MiB): with refs, which
# sees single pages, its buffer cannot come out all hot or all cold.
# vmtest-timeout: 90
. /vmtest/guest/lib.sh
# Node 0 whole again, should a scenario killed at its time limit have left huge pages reserved on it.
echo 0 > /sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages

# check OUT NAME: the text report in OUT is well formed; prints why not ("" when it is).
check() {
    why=""
    grep -q '^tierkit profile: pid [0-9]*, ' "$1" || why="$why no-header"
    grep -q '^tierkit profile: ended=duration' "$1" || why="$why not-ended=duration($(grep '^tierkit profile: ended' "$1"))"
    lines=$(grep -E 'hot +[0-9.]+% +warm +[0-9.]+% +cold +[0-9.]+%' "$1")
    [ -n "$lines" ] || why="$why no-heat-lines"
    echo "$lines" | grep -q 'all mappings' || why="$why no-all-mappings-line"
    echo "$lines" | grep -q '\[anon\]' || why="$why no-[anon]-mapping"
    bad=$(echo "$lines" | awk '{ for (i = 1; i < NF; i++) if ($i == "hot") h = $(i + 1); else if ($i == "warm") w = $(i + 1); else if ($i == "cold") c = $(i + 1)
        s = h + w + c; if (s < 99.5 || s > 100.5) n++ } END { print n + 0 }')
    [ "$bad" = 0 ] || why="$why $bad-lines-not-summing-to-100%"
    echo "$why"
}
# anon FIELD OUT: the last [anon] line's FIELD (hot, warm, cold) percentage, whole.
anon() { grep '\[anon\]' "$2" | tail -1 | awk -v f="$1" '{ for (i = 1; i < NF; i++) if ($i == f) { v = $(i + 1); sub(/%/, "", v); printf "%d", v } }'; }

for src in damon refs; do
    tierkit profile --source $src --duration 3 -- zipf_reader --mib 64 --alpha 1.5 --seconds 6 > /tmp/p.$src 2> /tmp/p.$src.err
    rc=$?
    wait_line /tmp/p.$src '^CHECKSUM_' 20 > /dev/null   # the workload reads on after the report ends
    sed "s/^/  $src: /" /tmp/p.$src.err
    grep -v '^READ' /tmp/p.$src | sed "s/^/  $src: /" | tail -12
    why=$(check /tmp/p.$src)
    [ "$rc" = 0 ] || why="$why exit-$rc"
    grep -q '^CHECKSUM_OK ' /tmp/p.$src || why="$why workload-no-CHECKSUM_OK"
    hot=$(anon hot /tmp/p.$src); warm=$(anon warm /tmp/p.$src); cold=$(anon cold /tmp/p.$src)
    if [ $src = refs ] && { [ "${hot:-0}" -ge 99 ] || [ $((${warm:-0} + ${cold:-0})) -ge 99 ]; }; then
        why="$why refs-sees-no-skew(hot=$hot%)"
    fi
    details="[anon] hot $hot% warm $warm% cold $cold%, $(grep -c 'all mappings' /tmp/p.$src) interval(s), workload checksum ok"
    if [ -z "$why" ]; then pass profile-$src "$details"; else fail profile-$src "$why ($details)"; fi
done

zipf_reader --mib 16 --seconds 6 > /tmp/pj.out 2>&1 &
wpid=$!
wait_line /tmp/pj.out '^READY' 20 > /dev/null
tierkit profile --json --duration 2 $wpid > /tmp/pj.json 2> /tmp/pj.err
rc=$?
kill -TERM $wpid; wait $wpid
why=""
[ "$rc" = 0 ] || why="$why exit-$rc"
for key in '"pid": *'$wpid '"ended": *"duration"' '"snapshots"' '"hot"' '"warm"' '"cold"' '"mappings"'; do
    grep -q "$key" /tmp/pj.json || why="$why no-$key"
done
grep -q '^CHECKSUM_OK ' /tmp/pj.out || why="$why workload-no-CHECKSUM_OK"
if [ -z "$why" ]; then
    pass profile-json "attached to pid $wpid: $(grep -c '"hot"' /tmp/pj.json) hot/warm/cold entries, ended=duration"
else
    fail profile-json "$why: $(head -c 300 /tmp/pj.json) $(cat /tmp/pj.err)"
fi
