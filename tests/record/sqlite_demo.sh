#!/usr/bin/env bash
# Records a real program shipped by Debian, sqlite3 on an in-memory database, through
# `tierkit record --via valgrind` (lackey + a simulated 8 MiB LLC), then shows the trace
# with `tierkit trace info` and replays it with `tierkit compare --trace`.
# Fails unless the trace has more than 1000 pages and compare printed result rows.
#
# Under lackey every instruction and data access becomes a line (hundreds of times slower
# than native), so the workload is sized to finish in under a minute: 1500 rows of
# 2.5 KB (about 4 MB of table), an index on k, indexed and full-scan queries.
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
"$tierkit" compare --trace "$trace" --policies none,lru,tierkit --ratios 1:8 | tee "$out/compare.txt"
rows=$(grep -cE '^ *(none|lru|tierkit)\b' "$out/compare.txt" || true)
if [ "$rows" -lt 3 ]; then
    echo "FAIL: compare printed $rows policy rows (need 3)" >&2
    exit 1
fi
echo "OK: sqlite3 trace with $pages pages; compare printed $rows rows"
