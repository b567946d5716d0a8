#!/bin/sh
# mover-only: `tierkit move PID --to fast --range R` (the daemon's mover without a source or a
# policy) against the raw move_pages loop (move_pid, 512-page calls) right after it, on the same
# pages of a running 256 MiB workload (near-uniform reads), both self-timed, both beside the
# reader thread only: pages/s, CPU time per page and move_pages calls. Also reported: `tierkit
# move --to slow` on the same pages.
# vmtest-timeout: 330
. /vmtest/guest/lib.sh
echo 0 > $HP
zipf_reader --mib 256 --alpha 0.01 --first-touch-node 1 --seconds 0 > /tmp/m.out 2>&1 &
wpid=$!
ready=$(wait_line /tmp/m.out '^READY' 60) || { fail mover-only "workload never READY: $(cat /tmp/m.out)"; exit 0; }
range=$(kv addr "$ready")
echo "  raw to node 0 first: $(move_pid $wpid "$range" --to 0 --batch 512)"
tierkit move $wpid --to slow --range "$range" > /tmp/slow.out 2> /tmp/slow.err
echo "  tierkit move --to slow: $(cat /tmp/slow.out)"
tierkit move $wpid --to fast --range "$range" > /tmp/tmv.out 2> /tmp/tmv.err
echo "  tierkit move --to fast: $(cat /tmp/tmv.out)"
sed 's/^/  /' /tmp/tmv.err | head -3
echo "  raw back: $(move_pid $wpid "$range" --to 1 --batch 512)"
move_pid $wpid "$range" --to 0 --batch 512 > /tmp/raw.out 2>&1
echo "  raw: $(cat /tmp/raw.out)"
kill -9 $wpid; wait $wpid
tk=$(cat /tmp/tmv.out) raw=$(cat /tmp/raw.out)
if [ "$(kv moved "$tk")" -gt 0 ] 2>/dev/null && [ "$(kv moved "$raw")" -gt 0 ] 2>/dev/null; then :; else
    fail mover-only "no measurement: tierkit [$tk $(cat /tmp/tmv.err)] raw [$raw]"
    exit 0
fi
# us_per_page OUT: CPU microseconds per moved page of a MOVE line.
us_per_page() { awk -v c="$(kv cpu_seconds "$1")" -v n="$(kv moved "$1")" 'BEGIN { printf "%.1f", (n > 0 ? c * 1e6 / n : 0) }'; }
tk_rate=$(kv pages_per_s "$tk") raw_rate=$(kv pages_per_s "$raw")
bench mover-only pages=$(kv moved "$raw") tierkit_move_pages_per_s=$tk_rate raw_pages_per_s=$raw_rate \
    tierkit_pct_of_raw=$(awk -v t="$tk_rate" -v r="$raw_rate" 'BEGIN { printf "%d", (r > 0 ? t * 100 / r : 0) }') \
    tierkit_cpu_us_per_page=$(us_per_page "$tk") raw_cpu_us_per_page=$(us_per_page "$raw") \
    tierkit_calls=$(kv calls "$tk") raw_calls=$(kv calls "$raw") tierkit_to_slow_pages_per_s=$(kv pages_per_s "$(cat /tmp/slow.out)")
