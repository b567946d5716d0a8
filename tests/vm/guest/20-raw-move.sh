#!/bin/sh
# The baseline of the move_pages benchmark: a raw syscall loop moving 4 KiB pages of its own
# buffer node0 -> node1 -> node0 (tierkit's mover is compared against the same page counts).
# vmtest-timeout: 70
. /vmtest/guest/lib.sh
for b in 1024 64; do
    out=$(raw_move --pages 16384 --batch $b --rounds 1 2>&1); rc=$?
    echo "  $out"
    if [ "$rc" = 0 ]; then
        pass raw-move-batch$b "moved=$(kv moved "$out") failed=0 data=ok"
    else
        fail raw-move-batch$b "rc=$rc $out"
    fi
    bench raw_move pages=16384 batch=$b pages_per_s=$(kv pages_per_s "$out") seconds=$(kv seconds "$out")
done
