"""Writes a deterministic ~SIZE-byte mixed text corpus for the compressors.

Three interleaved kinds of real-looking content, in 1 MiB chunks taken in a seeded order:
- source code: the .py files of Debian's python3.11 standard library (/usr/lib/python3.11),
  sorted by path (the same bytes for the same package version);
- web server access logs in the combined log format, with Zipf-distributed paths, clients
  and user agents (seeded);
- CSV rows of orders (ids, dates, prices, quantities, product names; seeded).

Usage: gen_text.py OUT SIZE_MIB [SEED]
"""
import itertools
import os
import random
import sys

CHUNK = 1 << 20


def source_chunks(root="/usr/lib/python3.11"):
    buf = bytearray()
    for dirpath, dirnames, filenames in sorted(os.walk(root)):
        dirnames.sort()
        for f in sorted(filenames):
            if f.endswith(".py"):
                with open(os.path.join(dirpath, f), "rb") as fh:
                    buf += b"# file: " + f.encode() + b"\n" + fh.read()
                while len(buf) >= CHUNK:
                    yield bytes(buf[:CHUNK])
                    del buf[:CHUNK]


def zipf_pick(rng, items, s=1.1):
    cum = list(itertools.accumulate(1.0 / (i + 1) ** s for i in range(len(items))))
    return lambda: rng.choices(items, cum_weights=cum, k=1)[0]


def log_chunks(rng):
    words = ["api", "v1", "v2", "users", "orders", "items", "search", "static", "img", "css", "js",
             "cart", "checkout", "login", "logout", "account", "settings", "help", "blog", "news"]
    paths = ["/" + "/".join(rng.choice(words) for _ in range(rng.randint(1, 4)))
             + rng.choice(["", ".html", ".json", ".png", ".css", "?page=" + str(rng.randint(1, 50))])
             for _ in range(5000)]
    ips = [f"{rng.randint(1, 223)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
           for _ in range(20000)]
    agents = [f"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/{rng.randint(500, 600)}.{rng.randint(1, 40)} "
              f"(KHTML, like Gecko) Chrome/{rng.randint(90, 130)}.0.{rng.randint(1000, 6000)}.{rng.randint(1, 200)} Safari/537.36"
              for _ in range(300)] + ["curl/7.88.1", "Googlebot/2.1 (+http://www.google.com/bot.html)"]
    path, ip, agent = zipf_pick(rng, paths), zipf_pick(rng, ips, 0.9), zipf_pick(rng, agents)
    status = zipf_pick(rng, [200, 304, 404, 301, 500, 403])
    t = 1700000000
    months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    while True:
        lines = []
        size = 0
        while size < CHUNK:
            t += rng.randint(0, 3)
            day, rem = divmod(t % (86400 * 28 * 12), 86400)
            line = (f'{ip()} - - [{day % 28 + 1:02d}/{months[day // 28 % 12]}/2024:{rem // 3600:02d}:'
                    f'{rem // 60 % 60:02d}:{rem % 60:02d} +0000] "GET {path()} HTTP/1.1" {status()} '
                    f'{rng.randint(200, 90000)} "-" "{agent()}"\n')
            lines.append(line)
            size += len(line)
        yield "".join(lines).encode()[:CHUNK]


def csv_chunks(rng):
    products = [f"{rng.choice(['red', 'blue', 'green', 'steel', 'oak', 'mini', 'pro'])} "
                f"{rng.choice(['chair', 'lamp', 'desk', 'cable', 'mug', 'phone case', 'backpack'])} "
                f"{rng.randint(1, 99)}" for _ in range(2000)]
    product = zipf_pick(rng, products)
    oid = 1
    while True:
        rows = []
        size = 0
        while size < CHUNK:
            row = (f"{oid},{rng.randint(1, 500000)},2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d},"
                   f"\"{product()}\",{rng.randint(1, 9)},{rng.randint(99, 99999) / 100:.2f},"
                   f"{rng.choice(['shipped', 'pending', 'delivered', 'returned'])}\n")
            rows.append(row)
            size += len(row)
            oid += 1
        yield "".join(rows).encode()[:CHUNK]


def main():
    out, size_mib = sys.argv[1], int(sys.argv[2])
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 42)
    kinds = [source_chunks(), log_chunks(random.Random(rng.random())), csv_chunks(random.Random(rng.random()))]
    with open(out + ".tmp", "wb") as fh:
        for _ in range(size_mib):
            k = rng.choices([0, 1, 2], [0.4, 0.35, 0.25])[0]
            chunk = next(kinds[k], None)
            if chunk is None:  # the sources ran out: logs instead
                chunk = next(kinds[1])
            fh.write(chunk)
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
