#!/bin/sh
# `tierkit advise --deploy`: the simulator's prediction checked live. The Zipf reader (128 MiB,
# first touch on node 1, 64-page hot clusters) is recorded through DAMON for REC seconds, without
# address-space randomization (as --deploy runs it, so that the trace's pages are the deployed run's
# addresses); `advise --trace` predicts tierkit at 1:3 (node 0 is cut to SHARE MiB above its
# watermarks: a quarter of the buffer) and deploys it on the same program (--deploy-source damon,
# no CPU budget) for RUN seconds; then the program runs alone (`none`). Asserts:
#   advise-deploy       advise recommends a policy and deploys it; the program's checksum is intact
#   advise-predicted    the hot set's fast-tier residency measured live (weighted by the trace's
#                       accesses, the deploy line's measured_hot_fast) lies within TOL points of the
#                       prediction, and the deployed policy keeps more of the hot set's pages on node 0
#                       than `none` does (both unweighted, in the hold at the end of each run)
# The scenario also polls the hot set's node-0 share every 10 s during the deployment and prints the
# series, so that a run shows how far the placement had come.
# vmtest-timeout: 900
. /vmtest/guest/lib.sh
MIB=128 SHARE=32 REC=60 RUN=120 HOLD=8
ZIPF="zipf_reader --mib $MIB --first-touch-node 1 --cluster-pages 64"

trap 'echo 0 > $HP' EXIT
echo 0 > $HP
echo "  node0: $(node0_share $SHARE)"

linux64 -R tierkit record --via damon -o /tmp/ad.tktrace -- $ZIPF --seconds $REC > /tmp/ad-rec.out 2> /tmp/ad-rec.err
rrc=$?
sed 's/^/  record: /' /tmp/ad-rec.out | grep -v '^  record: READS'
tierkit trace info --json --top 65536 /tmp/ad.tktrace > /tmp/ad-info.json 2> /tmp/ad-info.err
pages=$(sed -n 's/^  "pages": \([0-9]*\),$/\1/p' /tmp/ad-info.json)
k=$((${pages:-0} / 4))
grep -o '"address": "0x[0-9a-f]*"' /tmp/ad-info.json | cut -d'"' -f4 | head -n $k > /tmp/ad-hot.txt
echo "  trace: $pages pages, hot set (a quarter) $(wc -l < /tmp/ad-hot.txt) pages"

tierkit advise --trace /tmp/ad.tktrace --policies tierkit --ratios 1:3 --deploy --deploy-source damon \
    --deploy-cpu-budget 0 -- $ZIPF --seconds $RUN --hold $HOLD > /tmp/ad.out 2> /tmp/ad.err &
apid=$!
ready=$(wait_line /tmp/ad.out '^READY' 600)
wpid=$(kv pid "$ready")
series="" t=0
while [ -n "$wpid" ] && kill -0 "$wpid" 2>/dev/null; do
    if grep -q '^HOLD ' /tmp/ad.out; then
        deployed=$(share 0 "$(placement "$wpid" /tmp/ad-hot.txt)")
        break
    fi
    sleep 10; t=$((t + 10))
    q=$(placement "$wpid" /tmp/ad-hot.txt)
    series="$series ${t}s:$(share 0 "$q")"
done
wait $apid; arc=$?
sed 's/^/  advise: /' /tmp/ad.out | grep -v -E '^  advise: (READS|CHURN)'
tail -5 /tmp/ad.err | sed 's/^/  advise stderr: /'
echo "  hot set on node 0 during the deployment (%):$series"
deploy=$(grep '^deploy: ' /tmp/ad.out)

linux64 -R $ZIPF --seconds 20 --hold $HOLD > /tmp/ad-none.out 2>&1 &
npid=$!
nready=$(wait_line /tmp/ad-none.out '^READY' 120)
wait_line /tmp/ad-none.out '^HOLD ' 300 > /dev/null
none=$(share 0 "$(placement "$(kv pid "$nready")" /tmp/ad-hot.txt)")
wait $npid

why=""
[ "$rrc" = 0 ] || why="$why record-exit-$rrc"
[ "$arc" = 0 ] || why="$why advise-exit-$arc"
[ -n "$deploy" ] || why="$why no-deploy-line"
grep -q '^CHECKSUM_OK ' /tmp/ad.out || why="$why no-CHECKSUM_OK"
[ "$(kv addr "$ready")" = "$(kv addr "$nready")" ] || why="$why addresses-differ($(kv addr "$ready")/$(kv addr "$nready"))"
if [ -z "$why" ]; then pass advise-deploy "$(kv policy "$deploy") at $(kv ratio "$deploy")"; else fail advise-deploy "$why"; fi

# tenths V: a fraction (0.4873) in tenths of a point (487).
tenths() { awk -v v="$1" 'BEGIN { if (v == "" || v == "-") exit; printf "%d", v * 1000 + 0.5 }'; }
pred=$(tenths "$(kv predicted_hot_fast "$deploy")")
meas=$(tenths "$(kv measured_hot_fast "$deploy")")
detail="hot set on node 0 (weighted, %): predicted $(kv predicted_hot_fast "$deploy") measured $(kv measured_hot_fast "$deploy"); pages: deployed ${deployed:-none}% none ${none:-none}%"
echo "  $detail"
bench advise-deploy $(echo "$deploy" | sed 's/^deploy: //') none_hot_pages_fast_pct=${none:-} deployed_hot_pages_fast_pct=${deployed:-}
