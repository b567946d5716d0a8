"""Writes the SQL scripts of the sqlite3 OLTP program (sysbench's oltp_read_write shape).

build.sql creates TABLES tables sbtest1..N of ROWS rows each (id INTEGER PRIMARY KEY, k
INTEGER indexed, c 119-char and pad 59-char strings of digit groups, all derived from the
id, so the database is the same bytes on every run).

run.sql: a 1 GiB page cache, the warm-up (full scans of every table and index, output to
/dev/null), `.print TK_START` on stdout, then TXNS transactions, each: 10 point selects, a
range select, a range sum, an ordered range, a distinct range (100 ids each), an indexed
update, a non-indexed update, a delete and an insert of the same id. Ids follow sysbench's
`special` distribution: 75% fall on 1% of the ids (spread over the table by a fixed
permutation), the rest uniformly. Seeded.

Usage: sqlite_oltp.py OUTDIR TABLES ROWS TXNS [SEED]
"""
import os
import random
import sys


def build_sql(tables, rows):
    out = [".output /dev/null", "PRAGMA page_size=4096;", "PRAGMA journal_mode=OFF;", "PRAGMA synchronous=OFF;"]
    digits = ("printf('%011d-%011d-%011d-%011d-%011d-%011d-%011d-%011d-%011d-%011d', "
              + ", ".join(f"(i * {p}) % 99999999999" for p in
                          (2654435761, 40503, 2246822519, 3266489917, 668265263,
                           374761393, 1181783497, 2870177450, 1609587929, 3432918353)) + ")")
    pad = ("printf('%011d-%011d-%011d-%011d-%011d', "
           + ", ".join(f"(i * {p}) % 99999999999" for p in (1103515245, 22695477, 134775813, 214013, 69069)) + ")")
    for t in range(1, tables + 1):
        out.append(f"CREATE TABLE sbtest{t}(id INTEGER PRIMARY KEY, k INTEGER NOT NULL DEFAULT 0, "
                   f"c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '');")
        out.append(f"WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {rows}) "
                   f"INSERT INTO sbtest{t} SELECT i, (i * 7919 + {t}) % {rows} + 1, {digits}, {pad} FROM s;")
        out.append(f"CREATE INDEX k_{t} ON sbtest{t}(k);")
    return "\n".join(out) + "\n"


def run_sql(tables, rows, txns, rng):
    hot = max(1, rows // 100)
    perm = list(range(1, rows + 1))
    random.Random(12345).shuffle(perm)
    hot_ids = perm[:hot]

    def rid():
        return rng.choice(hot_ids) if rng.random() < 0.75 else rng.randint(1, rows)

    def s():
        return "-".join(f"{rng.randint(0, 99999999999):011d}" for _ in range(10))

    out = [".output /dev/null", "PRAGMA cache_size=-1048576;", "PRAGMA mmap_size=0;",
           "PRAGMA journal_mode=MEMORY;", "PRAGMA synchronous=OFF;", "PRAGMA temp_store=MEMORY;"]
    for t in range(1, tables + 1):
        out.append(f"SELECT count(*), sum(length(c)), sum(length(pad)) FROM sbtest{t};")
        out.append(f"SELECT count(*) FROM sbtest{t} INDEXED BY k_{t} WHERE k > 0;")
    out += [".output", ".print TK_START", ".output /dev/null"]
    for _ in range(txns):
        t = rng.randint(1, tables)
        tb = f"sbtest{t}"
        out.append("BEGIN;")
        for _ in range(10):
            out.append(f"SELECT c FROM {tb} WHERE id={rid()};")
        for q in (f"SELECT c FROM {tb} WHERE id BETWEEN {{a}} AND {{b}};",
                  f"SELECT SUM(k) FROM {tb} WHERE id BETWEEN {{a}} AND {{b}};",
                  f"SELECT c FROM {tb} WHERE id BETWEEN {{a}} AND {{b}} ORDER BY c;",
                  f"SELECT DISTINCT c FROM {tb} WHERE id BETWEEN {{a}} AND {{b}} ORDER BY c;"):
            a = rid()
            out.append(q.format(a=a, b=a + 99))
        out.append(f"UPDATE {tb} SET k=k+1 WHERE id={rid()};")
        out.append(f"UPDATE {tb} SET c='{s()}' WHERE id={rid()};")
        i = rid()
        out.append(f"DELETE FROM {tb} WHERE id={i};")
        out.append(f"INSERT INTO {tb} (id, k, c, pad) VALUES ({i}, {rng.randint(1, rows)}, '{s()}', '{s()[:59]}');")
        out.append("COMMIT;")
    return "\n".join(out) + "\n"


def main():
    outdir, tables, rows, txns = sys.argv[1], *map(int, sys.argv[2:5])
    rng = random.Random(int(sys.argv[5]) if len(sys.argv) > 5 else 1)
    with open(os.path.join(outdir, "build.sql"), "w") as f:
        f.write(build_sql(tables, rows))
    with open(os.path.join(outdir, "run.sql"), "w") as f:
        f.write(run_sql(tables, rows, txns, rng))


if __name__ == "__main__":
    main()
