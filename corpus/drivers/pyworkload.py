"""Pure-Python data processing on CPython (Debian's python3): the kind of script that loads a
JSON export and crunches it with dicts, lists, sorting and string formatting.

setup: writes WORK/shop.json (seeded): USERS users and ORDERS orders of 1-6 line items over
20k products.
run: json.load (the load phase: a large graph of dicts, lists and strings), TK_START, then
ROUNDS rounds of: revenue per product and per country (dict aggregation over every item), a
join of orders to users, the top orders by value (sort with a key), per-user order
histories (dict of lists), a text report (string formatting) and an update of every
order's status.

Usage: pyworkload.py setup|run WORK [ORDERS] [ROUNDS]
"""
import collections
import itertools
import json
import os
import random
import sys
import time

USERS = 100_000


def setup(path, orders):
    rng = random.Random(5)
    countries = ["DE", "FR", "US", "GB", "JP", "BR", "IN", "CN", "ES", "IT", "NL", "SE", "PL", "CA"]
    words = ["alpha", "beta", "gamma", "delta", "omega", "nova", "prime", "ultra", "eco", "smart"]
    users = [{"id": u, "name": f"user{u:06d}", "email": f"user{u}@example.org",
              "country": rng.choice(countries), "since": f"20{rng.randint(10, 24)}-{rng.randint(1, 12):02d}"}
             for u in range(USERS)]
    products = [f"{rng.choice(words)}-{rng.choice(words)}-{p}" for p in range(20_000)]
    cum = list(itertools.accumulate(1 / (i + 1) for i in range(len(products))))
    out = []
    for o in range(orders):
        items = [{"product": p, "qty": rng.randint(1, 5), "price": round(rng.uniform(1, 300), 2)}
                 for p in rng.choices(products, cum_weights=cum, k=rng.randint(1, 6))]
        out.append({"id": o, "user": int(rng.paretovariate(1.2) * 10) % USERS, "items": items,
                    "status": rng.choice(["new", "paid", "shipped"]), "note": rng.choice(words) * rng.randint(0, 3)})
    with open(path + ".tmp", "w") as f:
        json.dump({"users": users, "orders": out}, f)
    os.replace(path + ".tmp", path)


def one_round(db, r):
    users = {u["id"]: u for u in db["users"]}
    per_product = collections.defaultdict(float)
    per_country = collections.Counter()
    histories = collections.defaultdict(list)
    for o in db["orders"]:
        total = 0.0
        for it in o["items"]:
            v = it["qty"] * it["price"]
            per_product[it["product"]] += v
            total += v
        o["total"] = round(total, 2)
        u = users[o["user"]]
        per_country[u["country"]] += total
        histories[u["name"]].append(o["id"])
    top = sorted(db["orders"], key=lambda o: (-o["total"], o["id"]))[:1000]
    report = "\n".join(f"{o['id']:>8} {users[o['user']]['email']:<30} {o['total']:>10.2f} {len(o['items'])}"
                       for o in top)
    best = sorted(per_product.items(), key=lambda kv: kv[1], reverse=True)[:50]
    busiest = max(histories.items(), key=lambda kv: len(kv[1]))
    for o in db["orders"]:
        if o["status"] == "paid" and (o["id"] + r) % 3 == 0:
            o["status"] = "shipped"
    return len(report), best[0][0], busiest[0], per_country.most_common(1)[0][0]


def main():
    mode, work = sys.argv[1], sys.argv[2]
    orders = int(sys.argv[3]) if len(sys.argv) > 3 else 1_000_000
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    path = os.path.join(work, f"shop-{orders}.json")
    if mode == "setup":
        if not os.path.exists(path):
            setup(path, orders)
        return
    with open(path) as f:
        db = json.load(f)
    os.write(1, b"TK_START\n")
    t0, c0 = time.monotonic(), time.process_time()
    for r in range(rounds):
        res = one_round(db, r)
    print(f"measured: {rounds} rounds over {orders} orders in {time.monotonic() - t0:.1f} s "
          f"(cpu {time.process_time() - c0:.1f} s); {res}", file=sys.stderr)


if __name__ == "__main__":
    main()
