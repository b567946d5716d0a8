#!/usr/bin/env bash
# Records a real program shipped by Debian, sqlite3 on an in-memory database, through
# `tierkit record --via valgrind` (tierkit's Valgrind tool, built with gcc on first use,
# and a simulated 8 MiB LLC), then shows the trace with `tierkit trace info` and replays
# it with `tierkit compare --trace`.
# Fails unless the trace has more than 1000 pages and a clock (instructions), the
# recorder was tierkit's tool where gcc is installed, and compare printed result rows.
#
# The workload is the one docs/TRACES.md times the tool against lackey on (1500 rows of
# 2.5 KB, about 4 MB of table, an index on k, indexed and full-scan queries): seconds
# under the tool, minutes under lackey (the fallback without gcc).
#
# Usage: tests/record/sqlite_demo.sh TIERKIT OUTDIR
set -euo pipefail
tierkit=${1:?usage: sqlite_demo.sh TIERKIT OUTDIR}
out=${2:?usage: sqlite_demo.sh TIERKIT OUTDIR}
mkdir -p "$out"
sql="$out/workload.sql"
trace="$out/sqlite.tktrace"
cat >"$sql" <<'SQL'
CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, v BLOB);
CREATE INDEX t_k ON t(k);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 1500)
INSERT INTO t SELECT i, (i * 7919) % 1500, zeroblob(2500) FROM c;
SELECT count(*) FROM t WHERE k BETWEEN 100 AND 300;
SELECT length(v) FROM t WHERE id = 1234;
SELECT sum(length(v)) FROM t WHERE k IN (5, 50, 500, 1500);
SELECT count(*) FROM t WHERE +k % 7 = 3;
SQL

"$tierkit" record --via valgrind --llc 8MiB -o "$trace" -- sqlite3 :memory: <"$sql" | tee "$out/record.txt"
"$tierkit" trace info "$trace" | tee "$out/info.txt"
pages=$("$tierkit" trace info --json "$trace" | sed -n 's/^ *"pages": \([0-9]*\),*$/\1/p')
if [ -z "$pages" ] || [ "$pages" -le 1000 ]; then
    echo "FAIL: the trace has ${pages:-no} pages (need more than 1000)" >&2
    exit 1
fi
instructions=$("$tierkit" trace info --json "$trace" | sed -n 's/^ *"instructions": \([0-9]*\),*$/\1/p')
if [ -z "$instructions" ] || [ "$instructions" -le 1000000 ]; then
    echo "FAIL: the trace's clock says ${instructions:-no} instructions (need more than 1000000)" >&2
    exit 1
fi
if command -v gcc >/dev/null && ! grep -q '^recorder: tk_record$' "$out/record.txt"; then
    echo "FAIL: gcc is installed but the recording did not use tierkit's Valgrind tool" >&2
    exit 1
fi
"$tierkit" compare --trace "$trace" --policies none,lru,tierkit --ratios 1:8 | tee "$out/compare.txt"
rows=$(grep -cE '^ *(none|lru|tierkit)\b' "$out/compare.txt" || true)
if [ "$rows" -lt 3 ]; then
    echo "FAIL: compare printed $rows policy rows (need 3)" >&2
    exit 1
fi
echo "OK: sqlite3 trace with $pages pages over $instructions instructions ($(sed -n 's/^recorder: //p' "$out/record.txt")); compare printed $rows rows"
