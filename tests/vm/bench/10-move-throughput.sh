#!/bin/sh
# move-throughput: tierkit moving a running workload's 256 MiB from node 1 to node 0 versus a raw
# move_pages loop (move_pid, 512-page calls) moving the same pages of the same process. The
# workload reads near-uniformly (--alpha 0.01) so every DAMON region is accessed, and tierkit runs
# the lru-cache policy (every sampled slow-tier access promotes), so it has more to move than
# move_pages can do. Both are timed the same way, from outside: the placement tool polls the node-0
# page count every 0.5 s; the rate is the best over any two polls >= 2 s apart. The raw loop runs
# first and then moves the pages back; a second pair runs in the opposite order (tierkit, then
# raw), and the two pairs' summed rates give both_pairs_tierkit_pct_of_raw. Both run beside the
# workload's reader thread; tierkit also beside its kdamond. The raw loop also runs beside a
# dry-running tierkit (same source and policy: the kdamond and the monitoring load the vCPUs as
# when tierkit moves), and tierkit's rate is reported against that too. Also reported: CPU time per
# moved page, tierkit's (the summary's cpu split, moves phase) against the raw loop's (its own user
# + system time), which leaves out what the two wall-clock rates also measure: the share of the
# two vCPUs each got beside the reader thread and (tierkit's) kdamond.
# vmtest-timeout: 620
. /vmtest/guest/lib.sh
echo 0 > $HP
rate() { awk -v n="$1" -v c="$2" 'BEGIN { printf "%d", (c > 0 ? n * 100 / c : 0) }'; }
# best TRAIL: the highest pages/s between two polls at least 2 s apart (1 s when the whole move
# took less than 2 s), and the rate from the first poll that saw a moved page to the last one
# ("best first_to_last").
best() {
    echo "$1" | tr ' ' '\n' | awk -F: 'BEGIN { n = 0 } NF == 2 { t[n] = $1; c[n] = $2; n++ }
        END { for (gap = 200; gap >= 100 && b == 0; gap -= 100)
                  for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (t[j] - t[i] >= gap) {
                      r = (c[j] - c[i]) * 100 / (t[j] - t[i]); if (r > b) b = r; break }
              f = 1
              while (f < n && c[f] <= c[0]) f++
              e = 0
              if (f < n) e = (c[n - 1] - c[f - 1]) * 100 / (t[n - 1] - t[f - 1])
              printf "%d %d", b, e }'
}

zipf_reader --mib 256 --alpha 0.01 --first-touch-node 1 --seconds 0 > /tmp/m.out 2>&1 &
wpid=$!
ready=$(wait_line /tmp/m.out '^READY' 60) || { fail move-throughput "workload never READY: $(cat /tmp/m.out)"; exit 0; }
range=$(kv addr "$ready")
move_pid $wpid "$range" --to 0 --batch 512 > /tmp/raw.out 2>&1 &
watch_moves $wpid "$range" $!
wait $!
raw_trail=$trail
raw_best=$(best "$raw_trail")
echo "  raw: $(cat /tmp/raw.out)"
echo "  raw: node0 pages by time (cs:count):$raw_trail"
echo "  raw back: $(move_pid $wpid "$range" --to 1 --batch 512)"
# The raw loop again, beside a dry-running tierkit with the same source and policy: the kdamond
# and tierkit's monitoring load the two vCPUs as they do when tierkit moves, and only the mover
# differs.
tierkit attach $wpid --dry-run --policy lru-cache --source damon --status-every 1 --duration 30 > /tmp/dry.log 2>&1 &
dpid=$!
wait_line /tmp/dry.log '^tierkit: status' 20 > /dev/null
move_pid $wpid "$range" --to 0 --batch 512 > /tmp/raw2.out 2>&1 &
watch_moves $wpid "$range" $!
wait $!
kill -TERM $dpid 2>/dev/null; wait $dpid
raw2_best=$(best "$trail")
echo "  raw beside a dry run: $(cat /tmp/raw2.out)"
echo "  raw beside a dry run back: $(move_pid $wpid "$range" --to 1 --batch 512)"
start=$(placement $wpid "$range")
echo "  start: $start"
tierkit attach $wpid --policy lru-cache --source damon --status-every 1 --duration 40 > /tmp/tm.log 2>&1 &
tpid=$!
watch_moves $wpid "$range" $tpid
kill -TERM $tpid 2>/dev/null; wait $tpid
tk_trail=$trail
# A second pair in the opposite order, tierkit first and the raw loop after it, so that neither
# mover always has the first turn: the rates of one mover swing by up to 1.6x from run to run here.
echo "  back for pair 2: $(move_pid $wpid "$range" --to 1 --batch 512)"
tierkit attach $wpid --policy lru-cache --source damon --status-every 0 --duration 40 > /tmp/tm2.log 2>&1 &
tpid2=$!
watch_moves $wpid "$range" $tpid2
kill -TERM $tpid2 2>/dev/null; wait $tpid2
tk2_best=$(best "$trail")
echo "  tierkit (pair 2): node0 pages by time (cs:count):$trail"
echo "  back for pair 2: $(move_pid $wpid "$range" --to 1 --batch 512)"
move_pid $wpid "$range" --to 0 --batch 512 > /tmp/raw3.out 2>&1 &
watch_moves $wpid "$range" $!
wait $!
raw3_best=$(best "$trail")
echo "  raw (pair 2): $(cat /tmp/raw3.out)"
kill -9 $wpid; wait $wpid
grep -E '^tierkit: (status|ended=)' /tmp/tm.log | sed 's/^/  /'
echo "  tierkit: node0 pages by time (cs:count):$tk_trail"
tk_best=$(best "$tk_trail")
raw_rate=${raw_best% *}; tk_rate=${tk_best% *}; raw2_rate=${raw2_best% *}
raw3_rate=${raw3_best% *}; tk2_rate=${tk2_best% *}
if [ "${raw_rate:-0}" -le 0 ] || [ "${tk_rate:-0}" -le 0 ]; then
    fail move-throughput "no measurement: raw=[$(cat /tmp/raw.out)] tierkit trail:$tk_trail"
    exit 0
fi
fields=$(grep '^tierkit: ended=' /tmp/tm.log)
raw_us=$(awk -v c="$(kv cpu_seconds "$(cat /tmp/raw.out)")" -v n="$(kv moved "$(cat /tmp/raw.out)")" \
    'BEGIN { printf "%.1f", (n > 0 ? c * 1e6 / n : 0) }')
tk_us=$(awk -v c="$(kv cpu_ms_moves "$fields")" -v n="$(kv promoted_pages "$fields")" \
    'BEGIN { printf "%.1f", (n > 0 ? c * 1e3 / n : 0) }')
bench move-throughput pages=$(kv total "$start") raw_pages_per_s=$raw_rate tierkit_pages_per_s=$tk_rate \
    tierkit_pct_of_raw=$(rate "$tk_rate" "$raw_rate") raw_first_to_last=${raw_best#* } tierkit_first_to_last=${tk_best#* } \
    raw_self_timed_pages_per_s=$(kv pages_per_s "$(cat /tmp/raw.out)") raw_cpu_us_per_page=$raw_us \
    tierkit_moves_cpu_us_per_page=$tk_us raw_cpu_pct_of_tierkit=$(awk -v r="$raw_us" -v t="$tk_us" 'BEGIN { printf "%d", (t > 0 ? r * 100 / t : 0) }') \
    raw_beside_dry_run_pages_per_s=$raw2_rate tierkit_pct_of_raw_beside_dry_run=$(rate "$tk_rate" "$raw2_rate") \
    pair2_tierkit_pages_per_s=$tk2_rate pair2_raw_pages_per_s=$raw3_rate pair2_tierkit_pct_of_raw=$(rate "$tk2_rate" "$raw3_rate") \
    both_pairs_tierkit_pct_of_raw=$(rate $((tk_rate + tk2_rate)) $((raw_rate + raw3_rate))) raw_batch=512 policy=lru-cache source=damon
