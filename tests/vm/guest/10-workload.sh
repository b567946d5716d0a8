#!/bin/sh
# The workload runs, keeps its checksum, and the independent placement tool sees its pages:
# all present on node 0 by default, mostly on node 1 with --first-touch-node 1.
# vmtest-timeout: 60
. /vmtest/guest/lib.sh

zipf_reader --mib 64 --seconds 3 --hot-out /tmp/w.hot > /tmp/w.out 2>&1 &
wpid=$!
ready=$(wait_line /tmp/w.out '^READY' 20) || { fail workload "no READY line: $(cat /tmp/w.out)"; exit 0; }
pid=$(kv pid "$ready"); range=$(kv addr "$ready"); hot=$(kv hot_pages "$ready")
hotq=$(placement "$pid" /tmp/w.hot)
allq=$(placement "$pid" "$range")
wait $wpid; rc=$?
echo "  $ready"; echo "  hot: $hotq"; echo "  all: $allq"; sed 's/^/  workload: /' /tmp/w.out
why=""
[ "$rc" = 0 ] && grep -q '^CHECKSUM_OK ' /tmp/w.out || why="$why rc=$rc-no-CHECKSUM_OK"
[ "$(kv total "$hotq")" = "$hot" ] || why="$why hot-file-has-$(kv total "$hotq")-of-$hot-pages"
[ "$(kv node0 "$hotq")" = "$hot" ] || why="$why hot-pages-not-all-on-node0"
[ "$(kv node0 "$allq")" = "$(kv total "$allq")" ] || why="$why buffer-not-all-on-node0($allq)"
if [ -z "$why" ]; then
    pass workload "checksum ok, $(kv total "$allq") pages on node0, hot set $hot pages"
else
    fail workload "$why"
fi
reads=$(sed -n 's/^READS .*per_s=\([0-9]*\).*/\1/p' /tmp/w.out)
bench workload reads_per_s=${reads:-0} mib=64 threads=1

# First touch on the slow node: the starting point tierkit must improve on.
zipf_reader --mib 32 --seconds 1 --first-touch-node 1 > /tmp/f.out 2>&1 &
fpid=$!
ready=$(wait_line /tmp/f.out '^READY' 20) || { fail workload-first-touch "no READY line: $(cat /tmp/f.out)"; exit 0; }
q=$(placement "$(kv pid "$ready")" "$(kv addr "$ready")")
wait $fpid; rc=$?
n1=$(kv node1 "$q"); total=$(kv total "$q")
if [ "$rc" = 0 ] && grep -q '^CHECKSUM_OK ' /tmp/f.out && [ "${n1:-0}" -ge $((total * 95 / 100)) ]; then
    pass workload-first-touch "$n1 of $total pages first touched on node1"
else
    fail workload-first-touch "rc=$rc $q $(tail -1 /tmp/f.out)"
fi

# The modes the fault matrix uses: threads, a forked COW child, mlock, munmap churn.
zipf_reader --mib 32 --seconds 2 --threads 2 --fork --mlock 0.25 --munmap-churn > /tmp/m.out 2>&1
rc=$?
sed 's/^/  modes: /' /tmp/m.out
churn=$(sed -n 's/^CHURN cycles=\([0-9]*\).*/\1/p' /tmp/m.out)
if [ "$rc" = 0 ] && grep -q '^CHECKSUM_OK ' /tmp/m.out && grep -q '^CHILD CHECKSUM_OK ' /tmp/m.out &&
    grep -q '^MLOCKED bytes=[1-9]' /tmp/m.out && [ "${churn:-0}" -gt 0 ]; then
    pass workload-modes "threads=2 fork mlock munmap-churn cycles=$churn: both checksums ok"
else
    fail workload-modes "rc=$rc churn=${churn:-none}: $(grep -E 'CHECKSUM|ERROR|FAILED' /tmp/m.out | tr '\n' ' ')"
fi

# The checksum is not vacuous: a word overwritten through /proc/PID/mem is caught.
zipf_reader --mib 8 --seconds 2 --hot-out /tmp/c.hot > /tmp/c.out 2>&1 &
cpid=$!
ready=$(wait_line /tmp/c.out '^READY' 20) || { fail workload-corruption "no READY line"; exit 0; }
addr=$(head -1 /tmp/c.hot)
printf 'CORRUPT!' | dd of="/proc/$(kv pid "$ready")/mem" bs=1 seek=$((addr + 64)) conv=notrunc 2>/dev/null
wait $cpid; rc=$?
if [ "$rc" = 1 ] && grep -q "^CHECKSUM_BAD .*addr=$(printf '0x%x' $((addr + 64)))" /tmp/c.out; then
    pass workload-corruption "a word overwritten at $(printf '0x%x' $((addr + 64))) is reported"
else
    fail workload-corruption "rc=$rc $(tail -1 /tmp/c.out)"
fi
