"""DuckDB running TPC-H-like queries on data it generates itself (no tpch extension).

setup: writes WORK/tpch.duckdb with the eight TPC-H tables at scale factor SF, every column
derived from the row number through DuckDB's hash(), so the same DuckDB version writes the
same data (lineitem: 6M rows per unit of SF, 4 lines per order).
run: opens the database read-only, runs every query once (the warm-up: DuckDB's buffer pool
then holds the tables' blocks), writes TK_START, then runs ROUNDS rounds of TPC-H queries 1, 3, 5, 6, 10, 12, 14 and 18 on one thread.

Usage: duckdb_tpch.py setup|run WORK [SF] [ROUNDS]
"""
import os
import sys
import time

import duckdb

from tk_marker import start_marker

def gen_sql(sf):
    li = int(6_000_000 * sf)
    o, c, p, s = li // 4, int(150_000 * sf), int(200_000 * sf), int(10_000 * sf)

    def h(col, salt, mod):
        return f"((hash({col}, {salt}) % {mod})::BIGINT)"

    def pick(col, salt, xs):
        return "([" + ", ".join(f"'{x}'" for x in xs) + f"])[1 + {h(col, salt, len(xs))}::INT]"

    segs = ["AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD"]
    prios = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"]
    modes = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"]
    instr = ["DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"]
    types = [f"{a} {b} {c_}" for a in ("STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO")
             for b in ("ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED")
             for c_ in ("TIN", "NICKEL", "BRASS", "STEEL", "COPPER")]
    nations = ["ALGERIA", "ARGENTINA", "BRAZIL", "CANADA", "EGYPT", "ETHIOPIA", "FRANCE", "GERMANY", "INDIA",
               "INDONESIA", "IRAN", "IRAQ", "JAPAN", "JORDAN", "KENYA", "MOROCCO", "MOZAMBIQUE", "PERU", "CHINA",
               "ROMANIA", "SAUDI ARABIA", "VIETNAM", "RUSSIA", "UNITED KINGDOM", "UNITED STATES"]
    nation_region = [0, 1, 1, 1, 4, 0, 3, 3, 2, 2, 4, 4, 2, 4, 0, 0, 0, 1, 2, 3, 4, 2, 3, 3, 1]
    comment = lambda col, salt, n: f"substr(md5({col}::VARCHAR || '{salt}') || md5({col}::VARCHAR || '{salt}x'), 1, {n})"
    return [
        "CREATE TABLE region AS SELECT i AS r_regionkey, (['AFRICA', 'AMERICA', 'ASIA', 'EUROPE', 'MIDDLE EAST'])[i + 1] AS r_name, "
        f"{comment('i', 'r', 40)} AS r_comment FROM range(5) t(i)",
        "CREATE TABLE nation AS SELECT i AS n_nationkey, (" + repr(nations).replace('"', "'") + ")[i + 1] AS n_name, "
        "(" + repr(nation_region) + f")[i + 1] AS n_regionkey, {comment('i', 'n', 40)} AS n_comment FROM range(25) t(i)",
        f"CREATE TABLE supplier AS SELECT i + 1 AS s_suppkey, 'Supplier#' || lpad((i + 1)::VARCHAR, 9, '0') AS s_name, "
        f"{comment('i', 'sa', 25)} AS s_address, {h('i', 11, 25)}::INT AS s_nationkey, "
        f"'27-' || {h('i', 12, 900) } + 100 || '-' || {h('i', 13, 9000)} + 1000 AS s_phone, "
        f"({h('i', 14, 1100000)} - 100000) / 100.0 AS s_acctbal, {comment('i', 'sc', 60)} AS s_comment FROM range({s}) t(i)",
        f"CREATE TABLE customer AS SELECT i + 1 AS c_custkey, 'Customer#' || lpad((i + 1)::VARCHAR, 9, '0') AS c_name, "
        f"{comment('i', 'ca', 25)} AS c_address, {h('i', 21, 25)}::INT AS c_nationkey, "
        f"'13-' || {h('i', 22, 900)} + 100 || '-' || {h('i', 23, 9000)} + 1000 AS c_phone, "
        f"({h('i', 24, 1100000)} - 100000) / 100.0 AS c_acctbal, {pick('i', 25, segs)} AS c_mktsegment, "
        f"{comment('i', 'cc', 70)} AS c_comment FROM range({c}) t(i)",
        f"CREATE TABLE part AS SELECT i + 1 AS p_partkey, {comment('i', 'pn', 30)} AS p_name, "
        f"'Manufacturer#' || ({h('i', 31, 5)} + 1) AS p_mfgr, 'Brand#' || ({h('i', 31, 5)} + 1) || ({h('i', 32, 5)} + 1) AS p_brand, "
        f"{pick('i', 33, types)} AS p_type, ({h('i', 34, 50)} + 1)::INT AS p_size, "
        f"{pick('i', 35, ['SM CASE', 'SM BOX', 'MED BAG', 'MED PKG', 'LG CASE', 'LG BOX', 'JUMBO PACK', 'WRAP JAR'])} AS p_container, "
        f"(90000 + (i % 20001) + 100 * (i % 1000)) / 100.0 AS p_retailprice, {comment('i', 'pc', 14)} AS p_comment FROM range({p}) t(i)",
        f"CREATE TABLE partsupp AS SELECT i // 4 + 1 AS ps_partkey, ((i // 4 + (i % 4) * ({s} // 4 + (i // 4) // {s})) % {s}) + 1 AS ps_suppkey, "
        f"({h('i', 41, 9999)} + 1)::INT AS ps_availqty, ({h('i', 42, 99900)} + 100) / 100.0 AS ps_supplycost, "
        f"{comment('i', 'psc', 100)} AS ps_comment FROM range({p * 4}) t(i)",
        f"CREATE TABLE orders AS SELECT i + 1 AS o_orderkey, ({h('i', 51, c)} + 1) AS o_custkey, "
        f"{pick('i', 52, ['F', 'O', 'P'])} AS o_orderstatus, ({h('i', 53, 50000000)} + 90000) / 100.0 AS o_totalprice, "
        f"DATE '1992-01-01' + {h('i', 54, 2406)}::INT AS o_orderdate, {pick('i', 55, prios)} AS o_orderpriority, "
        f"'Clerk#' || lpad(({h('i', 56, 1000)} + 1)::VARCHAR, 9, '0') AS o_clerk, 0 AS o_shippriority, "
        f"{comment('i', 'oc', 50)} AS o_comment FROM range({o}) t(i)",
        f"CREATE TABLE lineitem AS SELECT o.o_orderkey AS l_orderkey, ({h('j', 61, p)} + 1) AS l_partkey, "
        f"({h('j', 62, s)} + 1) AS l_suppkey, (j % 4 + 1)::INT AS l_linenumber, ({h('j', 63, 50)} + 1)::DECIMAL(15,2) AS l_quantity, "
        f"(({h('j', 63, 50)} + 1) * (900 + {h('j', 61, p)} % 1000))::DECIMAL(15,2) AS l_extendedprice, "
        f"({h('j', 64, 11)} / 100.0)::DECIMAL(15,2) AS l_discount, ({h('j', 65, 9)} / 100.0)::DECIMAL(15,2) AS l_tax, "
        f"CASE WHEN o.o_orderdate + 60 > DATE '1995-06-17' THEN 'N' ELSE {pick('j', 66, ['R', 'A'])} END AS l_returnflag, "
        f"CASE WHEN o.o_orderdate + 60 > DATE '1995-06-17' THEN 'O' ELSE 'F' END AS l_linestatus, "
        f"o.o_orderdate + ({h('j', 67, 121)} + 1)::INT AS l_shipdate, o.o_orderdate + ({h('j', 68, 61)} + 30)::INT AS l_commitdate, "
        f"o.o_orderdate + ({h('j', 67, 121)} + {h('j', 69, 30)} + 2)::INT AS l_receiptdate, "
        f"{pick('j', 70, instr)} AS l_shipinstruct, {pick('j', 71, modes)} AS l_shipmode, {comment('j', 'lc', 27)} AS l_comment "
        f"FROM range({li}) t(j) JOIN orders o ON o.o_orderkey = j // 4 + 1 ORDER BY j",
    ]


QUERIES = {
    "q1": """SELECT l_returnflag, l_linestatus, sum(l_quantity), sum(l_extendedprice),
        sum(l_extendedprice * (1 - l_discount)), sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)),
        avg(l_quantity), avg(l_extendedprice), avg(l_discount), count(*)
        FROM lineitem WHERE l_shipdate <= DATE '1998-09-02' GROUP BY 1, 2 ORDER BY 1, 2""",
    "q3": """SELECT l_orderkey, sum(l_extendedprice * (1 - l_discount)) AS revenue, o_orderdate, o_shippriority
        FROM customer, orders, lineitem WHERE c_mktsegment = 'BUILDING' AND c_custkey = o_custkey
        AND l_orderkey = o_orderkey AND o_orderdate < DATE '1995-03-15' AND l_shipdate > DATE '1995-03-15'
        GROUP BY l_orderkey, o_orderdate, o_shippriority ORDER BY revenue DESC, o_orderdate LIMIT 10""",
    "q5": """SELECT n_name, sum(l_extendedprice * (1 - l_discount)) AS revenue
        FROM customer, orders, lineitem, supplier, nation, region
        WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND l_suppkey = s_suppkey
        AND c_nationkey = s_nationkey AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey
        AND r_name = 'ASIA' AND o_orderdate >= DATE '1994-01-01' AND o_orderdate < DATE '1995-01-01'
        GROUP BY n_name ORDER BY revenue DESC""",
    "q6": """SELECT sum(l_extendedprice * l_discount) FROM lineitem WHERE l_shipdate >= DATE '1994-01-01'
        AND l_shipdate < DATE '1995-01-01' AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24""",
    "q10": """SELECT c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) AS revenue, c_acctbal, n_name,
        c_address, c_phone, c_comment FROM customer, orders, lineitem, nation
        WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND o_orderdate >= DATE '1993-10-01'
        AND o_orderdate < DATE '1994-01-01' AND l_returnflag = 'R' AND c_nationkey = n_nationkey
        GROUP BY c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment
        ORDER BY revenue DESC LIMIT 20""",
    "q12": """SELECT l_shipmode, sum(CASE WHEN o_orderpriority IN ('1-URGENT', '2-HIGH') THEN 1 ELSE 0 END),
        sum(CASE WHEN o_orderpriority NOT IN ('1-URGENT', '2-HIGH') THEN 1 ELSE 0 END)
        FROM orders, lineitem WHERE o_orderkey = l_orderkey AND l_shipmode IN ('MAIL', 'SHIP')
        AND l_commitdate < l_receiptdate AND l_shipdate < l_commitdate AND l_receiptdate >= DATE '1994-01-01'
        AND l_receiptdate < DATE '1995-01-01' GROUP BY l_shipmode ORDER BY l_shipmode""",
    "q14": """SELECT 100.00 * sum(CASE WHEN p_type LIKE 'PROMO%' THEN l_extendedprice * (1 - l_discount) ELSE 0 END)
        / sum(l_extendedprice * (1 - l_discount)) FROM lineitem, part WHERE l_partkey = p_partkey
        AND l_shipdate >= DATE '1995-09-01' AND l_shipdate < DATE '1995-10-01'""",
    "q18": """SELECT c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity)
        FROM customer, orders, lineitem WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem GROUP BY l_orderkey
        HAVING sum(l_quantity) > 180) AND c_custkey = o_custkey AND o_orderkey = l_orderkey
        GROUP BY c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice ORDER BY o_totalprice DESC, o_orderdate LIMIT 100""",
}


def main():
    mode, work = sys.argv[1], sys.argv[2]
    sf = float(sys.argv[3]) if len(sys.argv) > 3 else 0.5
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    path = os.path.join(work, f"tpch-sf{sf}.duckdb")
    if mode == "setup":
        if os.path.exists(path):
            return
        if os.path.exists(path + ".tmp"):
            os.remove(path + ".tmp")
        con = duckdb.connect(path + ".tmp", config={"threads": 1})
        for stmt in gen_sql(sf):
            con.execute(stmt)
        con.close()
        os.replace(path + ".tmp", path)
        return
    con = duckdb.connect(path, read_only=True, config={"threads": 1})
    for q in QUERIES.values():  # warm-up: the buffer pool holds the tables' blocks
        con.execute(q).fetchall()
    start_marker()
    t0, c0 = time.monotonic(), time.process_time()
    for _ in range(rounds):
        for name, q in QUERIES.items():
            con.execute(q).fetchall()
    print(f"measured: {rounds} rounds of {len(QUERIES)} queries in {time.monotonic() - t0:.1f} s (cpu {time.process_time() - c0:.1f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
