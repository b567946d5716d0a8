#!/usr/bin/env bash
# Checks `tierkit report` in a real browser: runs a small comparison with timelines,
# renders its report, loads the page in headless Chromium and fails unless the DOM holds
# every figure (an <svg> with drawn lines or heat-map cells) and Chromium logged no
# console message or uncaught error. Also checks --png (a PNG per figure, of the figures'
# size, drawn by tierkit itself) and, first, that the checker itself fails on a page with
# a console error and on one without figures.
#
# Usage: check_chromium.sh TIERKIT_BIN [WORK_DIR]   (needs Debian's `chromium`, and
# `fonts-dejavu-core` for --png)
set -euo pipefail

bin=$(realpath "$1")
work=$(realpath -m "${2:-target/report-check}")
browser=${CHROMIUM:-chromium}
command -v "$browser" >/dev/null || { echo "check_chromium: $browser not found (apt-get install chromium)" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work"

# load PAGE OUT: the page's DOM into OUT.dom, Chromium's log into OUT.err.
load() {
	timeout 120 "$browser" --headless=new --no-sandbox --disable-gpu --enable-logging=stderr --v=0 \
		--dump-dom "file://$1" >"$2.dom" 2>"$2.err"
}

# check PAGE FIGURES: loads PAGE; fails (status 1, with the reason) unless its DOM has
# FIGURES figures, each drawn, and the log has no console output or uncaught error.
check() {
	local page=$1 want=$2 out=$work/$(basename "$1")
	load "$page" "$out" || { echo "chromium failed on $page: $(tail -3 "$out.err")"; return 1; }
	if grep -E "CONSOLE|Uncaught" "$out.err"; then
		echo "console output while loading $page"
		return 1
	fi
	local svgs charts lines cells
	svgs=$({ grep -o "<svg" "$out.dom" || true; } | wc -l)
	charts=$({ grep -o 'class="figure line-chart"' "$out.dom" || true; } | wc -l)
	# A series' line (and legend key) is 2 px wide; axes, ticks and grid lines are 1 px.
	lines=$({ grep -o '<polyline [^>]*stroke-width="2"' "$out.dom" || true; } | wc -l)
	cells=$({ grep -o '<rect class="cell"' "$out.dom" || true; } | wc -l)
	if [ "$svgs" -ne "$want" ]; then
		echo "$page: $svgs <svg> figures in the DOM, expected $want"
		return 1
	fi
	if [ "$charts" -gt 0 ] && [ "$lines" -lt "$charts" ]; then
		echo "$page: $charts line charts but only $lines lines drawn"
		return 1
	fi
	if [ "$charts" -lt "$svgs" ] && [ "$cells" -eq 0 ]; then
		echo "$page: heat maps without cells"
		return 1
	fi
	echo "$page: $svgs figures ($charts line charts, $lines lines, $cells heat-map cells), no console errors"
}

# The checker must catch what it is for.
printf '%s\n' '<!DOCTYPE html><html><body><svg width="10" height="10"></svg>' \
	'<script>console.error("deliberate")</script></body></html>' >"$work/console-error.html"
if check "$work/console-error.html" 1 >/dev/null; then
	echo "check_chromium: a page logging a console error passed" >&2
	exit 1
fi

# Two workloads x two ratios x four policies, 100 intervals each.
"$bin" compare --workload zipf,hotset-shift --ratios 1:16,1:8 --policies all-local,oracle,freqtier,tpp \
	--pages 4000 --accesses 200000 --json --timeline "$work/timeline" >"$work/results.json"
"$bin" report "$work/results.json" --timeline "$work/timeline" -o "$work/report.html" --png "$work/png"
# Per workload a throughput chart and a page-hotness map; per workload and ratio hit
# ratio, migration, hit ratio per interval.
figures=$((2 * 2 + 2 * 2 * 3))

sed 's/<svg[^>]*>.*<\/svg>//g' "$work/report.html" >"$work/no-figures.html"
if check "$work/no-figures.html" "$figures" >/dev/null; then
	echo "check_chromium: a page without its figures passed" >&2
	exit 1
fi

check "$work/report.html" "$figures"
rows=$(grep -c '"workload":' "$work/results.json")
shown=$({ grep -o '<tr class="result">' "$work/report.html.dom" || true; } | wc -l)
[ "$shown" -eq "$rows" ] || { echo "the page shows $shown result rows, the JSON has $rows" >&2; exit 1; }

pngs=0
for f in "$work"/png/*.png; do
	[ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '211PNG' ] || { echo "$f is not a PNG" >&2; exit 1; }
	# IHDR: width and height, 4 bytes each, big-endian, from byte 16.
	size=$(od -An -tu1 -j16 -N8 "$f" | awk '{print $1*16777216+$2*65536+$3*256+$4 "x" $5*16777216+$6*65536+$7*256+$8}')
	[ "$size" = 760x380 ] || { echo "$f is $size, not the figures' 760x380" >&2; exit 1; }
	pngs=$((pngs + 1))
done
[ "$pngs" -eq "$figures" ] || { echo "--png wrote $pngs PNGs, expected $figures" >&2; exit 1; }
# The report of the default compare (eight page-hotness maps of 64 x 50 cells) stays
# under 1 MB: cells of one colour level are drawn as one rectangle.
"$bin" compare --json >"$work/default.json"
"$bin" report "$work/default.json" -o "$work/default.html"
size=$(stat -c %s "$work/default.html")
[ "$size" -lt 1000000 ] || { echo "the default compare's report is $size bytes, over 1 MB" >&2; exit 1; }
timeout 120 "$browser" --headless=new --no-sandbox --disable-gpu --hide-scrollbars --window-size=1100,1600 \
	--screenshot="$work/report.png" "file://$work/report.html" 2>/dev/null

# The answer of `tierkit advise --json` (a corpus of one program beside it): one figure, slowdown
# against DRAM share, and a table row per size.
"$bin" trace write --workload zipf --pages 4000 --accesses 200000 -o "$work/zipf.tkt" >/dev/null
mkdir -p "$work/corpus"
cp "$work/zipf.tkt" "$work/corpus/kv.tktrace"
: >"$work/corpus/standins.toml"
"$bin" advise --trace "$work/zipf.tkt" --corpus "$work/corpus" --policies tierkit,lru --ratios 1:16,1:4,1:2 \
	--json 2>/dev/null >"$work/advice.json"
"$bin" report "$work/advice.json" -o "$work/advice.html"
check "$work/advice.html" 1
sizes=$({ grep -o '<tr class="size' "$work/advice.html.dom" || true; } | wc -l)
[ "$sizes" -eq 3 ] || { echo "the advice page shows $sizes sizes, the answer has 3" >&2; exit 1; }
timeout 120 "$browser" --headless=new --no-sandbox --disable-gpu --hide-scrollbars --window-size=1100,1200 \
	--screenshot="$work/advice.png" "file://$work/advice.html" 2>/dev/null
echo "report-check: ok ($figures figures, $pngs PNGs, the advice page; screenshots in $work/report.png, $work/advice.png)"
