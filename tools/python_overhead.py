"""Python overhead: `tierkit.simulate` against `tierkit sim --json` on the same run.

Usage: target/pyenv/bin/python tools/python_overhead.py target/release/tierkit [REPS] [ACCESSES]

Alternates the two REPS times (default 7) on zipf / tierkit policy / 1:16 / 65,536 pages /
ACCESSES accesses (default 3M) (each call also runs the all-local and oracle references, as the CLI does),
checks that both give the same throughput, and prints the median times and their ratio
(docs/BENCHMARKS.md, "Python package").
"""

import json
import statistics
import subprocess
import sys
import time

import tierkit


def main() -> None:
    binary = sys.argv[1]
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    accesses = int(sys.argv[3]) if len(sys.argv) > 3 else 3_000_000
    run = dict(workload="zipf", policy="tierkit", ratio="1:16", pages=65536, accesses=accesses, seed=1)
    cli = [binary, "sim", "--workload", "zipf", "--policy", "tierkit", "--ratio", "1:16", "--pages", "65536",
           "--accesses", str(accesses), "--seed", "1", "--json"]
    py_times, cli_times = [], []
    for _ in range(reps):
        start = time.perf_counter()
        result = tierkit.simulate(**run)
        py_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        out = subprocess.run(cli, capture_output=True, check=True).stdout
        cli_times.append(time.perf_counter() - start)
        row = json.loads(out)
        row = row["rows"][0] if isinstance(row, dict) else row[0]
        if result.summary["throughput"] != row["throughput"]:
            sys.exit(f"different results: {result.summary['throughput']} vs {row['throughput']}")
    py, cl = statistics.median(py_times), statistics.median(cli_times)
    print(f"simulate median {py:.3f} s, CLI median {cl:.3f} s, ratio {py / cl:.3f} ({reps} runs each, same results)")


if __name__ == "__main__":
    main()
