#!/usr/bin/env python3
"""Cache-mode LRU speed: tierkit against libCacheSim on the same oracleGeneral trace.

Usage: bench_lru.py TIERKIT_BINARY WORKDIR [PAGES REQUESTS]

Writes a scrambled Zipf(0.99) trace with `tierkit trace write` (default 4M pages, 50M
requests), then runs LRU with a cache of 1/17 of the objects (ratio 1:16) through both
and prints requests per second, the ratio, and both miss counts (which must be equal).
Both figures come from the same run on the same machine.
"""
import re
import subprocess
import sys
import time
from pathlib import Path

import libcachesim as lcs


def main() -> int:
    binary, work = sys.argv[1], Path(sys.argv[2])
    pages, requests = (int(sys.argv[3]), int(sys.argv[4])) if len(sys.argv) > 4 else (4 << 20, 50_000_000)
    work.mkdir(parents=True, exist_ok=True)
    trace = work / f"zipf-{pages}-{requests}.oracleGeneral.bin"
    if not trace.exists():
        subprocess.run([binary, "trace", "write", "--workload", "zipf", "--pages", str(pages),
                        "--accesses", str(requests), "-o", str(trace)], check=True)
    common = ["--workload", "trace", "--opt", f"path={trace}", "--ratio", "1:16", "--cache-mode"]
    out = subprocess.run([binary, "bench", "--policies", "lru-cache", *common], check=True,
                         capture_output=True, text=True).stdout
    ours = float(re.search(r"lru-cache\s+([\d.]+) M accesses/s", out).group(1)) * 1e6
    row = subprocess.run([binary, "sim", "--policy", "lru-cache", "--json", *common], check=True,
                         capture_output=True, text=True).stdout
    fast_pages = int(re.search(r'"fast_pages": (\d+)', row).group(1))
    our_miss = float(re.search(r'"miss_ratio": ([\d.e-]+)', row).group(1))

    reader = lcs.TraceReader(str(trace), lcs.TraceType.ORACLE_GENERAL_TRACE)
    cache = lcs.LRU(cache_size=fast_pages * 4096)
    start = time.perf_counter()
    their_miss, _ = cache.process_trace(reader)
    theirs = requests / (time.perf_counter() - start)
    print(out.strip())
    print(f"cache {fast_pages} objects (1/17 of the trace's objects), {requests} requests")
    print(f"tierkit lru-cache: {ours / 1e6:.2f} M req/s, miss ratio {our_miss:.6f}")
    print(f"libCacheSim LRU:   {theirs / 1e6:.2f} M req/s, miss ratio {their_miss:.6f}")
    print(f"ratio tierkit / libCacheSim: {ours / theirs:.2f}x")
    return 0 if round(our_miss * requests) == round(their_miss * requests) else 1


if __name__ == "__main__":
    sys.exit(main())
