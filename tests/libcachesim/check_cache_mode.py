#!/usr/bin/env python3
"""tierkit's cache mode against libCacheSim: the same oracleGeneral trace, the same cache
size, identical miss counts for LRU and CLOCK.

Usage: check_cache_mode.py TIERKIT_BINARY WORKDIR

Needs the `libcachesim` package (PyPI). If it cannot be imported this script fails: a
comparison that did not run must not pass.
"""
import json
import struct
import subprocess
import sys
from pathlib import Path

try:
    import libcachesim as lcs
except ImportError as e:  # fail loudly, never skip
    sys.exit(f"FAIL: the libcachesim package is not installed ({e}); `make test` installs it in target/pyenv")

RECORD = struct.Struct("<IQIq")  # clock_time, obj_id, obj_size, next_access_vtime


def write_trace(path: Path, ids: list[int]) -> None:
    """oracleGeneral records; next_access_vtime = the 1-based index of the next request to
    the same object (libCacheSim's traceConv convention), -1 when there is none."""
    nxt = [-1] * len(ids)
    last: dict[int, int] = {}
    for i in range(len(ids) - 1, -1, -1):
        nxt[i] = last[ids[i]] + 1 if ids[i] in last else -1
        last[ids[i]] = i
    with path.open("wb") as f:
        for i, obj in enumerate(ids):
            f.write(RECORD.pack(i, obj, 4096, nxt[i]))


def tierkit_cache(binary: str, trace: Path, policy: str, ratio: str) -> tuple[int, int, int]:
    out = subprocess.run(
        [binary, "sim", "--workload", "trace", "--opt", f"path={trace}", "--policy", policy,
         "--ratio", ratio, "--cache-mode", "--json"],
        check=True, capture_output=True, text=True,
    ).stdout
    row = json.loads(out)["rows"][0]
    return round(row["miss_ratio"] * row["accesses"]), row["accesses"], row["fast_pages"]


def libcachesim_misses(trace: Path, algo, cache_objects: int) -> int:
    reader = lcs.TraceReader(str(trace), lcs.TraceType.ORACLE_GENERAL_TRACE)
    cache = algo(cache_size=cache_objects * 4096)
    n = sum(1 for _ in lcs.TraceReader(str(trace), lcs.TraceType.ORACLE_GENERAL_TRACE))
    miss_ratio, _ = cache.process_trace(reader)
    return round(miss_ratio * n)


def main() -> int:
    binary, work = sys.argv[1], Path(sys.argv[2])
    work.mkdir(parents=True, exist_ok=True)
    failures = 0
    cases = 0
    for alpha, objects, requests in [(0.99, 20_000, 300_000), (0.8, 50_000, 300_000)]:
        ids = [r.obj_id for r in lcs.create_zipf_requests(objects, requests, alpha=alpha, obj_size=4096, seed=7)]
        trace = work / f"zipf-{alpha}.oracleGeneral.bin"
        write_trace(trace, ids)
        for policy, algo in [("lru-cache", lcs.LRU), ("clock-cache", lcs.Clock)]:
            for ratio in ["1:32", "1:16", "1:8"]:
                cases += 1
                ours, n, size = tierkit_cache(binary, trace, policy, ratio)
                theirs = libcachesim_misses(trace, algo, size)
                status = "ok" if ours == theirs else "MISMATCH"
                failures += ours != theirs
                print(f"{status}: zipf({alpha}) {policy:<12} {ratio:>5} cache {size:>6} objects: "
                      f"tierkit {ours} misses, libCacheSim {theirs} misses of {n}")
    # The same comparison as one command: `tierkit bench --against libcachesim`.
    bench = [binary, "bench", "--workload", "trace", "--opt", f"path={trace}", "--cache-mode",
             "--against", "libcachesim", "--python", sys.executable]
    out = subprocess.run([*bench, "--policies", "lru-cache,clock-cache"], capture_output=True, text=True)
    cases += 1
    identical = [line for line in out.stdout.splitlines() if "libCacheSim" in line and line.endswith(": identical)")]
    bench_ok = out.returncode == 0 and len(identical) == 2
    failures += not bench_ok
    print(f"{'ok' if bench_ok else 'FAIL'}: bench --against libcachesim: exit {out.returncode}, "
          f"{len(identical)} of 2 identical comparisons\n{out.stdout}{out.stderr}")
    out = subprocess.run([*bench, "--policies", "lru"], capture_output=True, text=True)
    cases += 1
    refused = out.returncode != 0 and "lru has no libCacheSim counterpart" in out.stderr
    failures += not refused
    print(f"{'ok' if refused else 'FAIL'}: bench --against libcachesim refuses a tiering policy: {out.stderr.strip()}")
    print(f"libcachesim: {cases - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
