"""Suggests each program's --sample-every from a short calibration recording's sidecar.

A sidecar (corpus/record.sh) holds the records kept, the sample rate S they were kept at
and the instructions they span, so misses = records x S and instructions per miss follow.
Native time is estimated as instructions / IPS plus misses x MISS_NS (a rough model: no PMU
counts instructions here; the defaults assume ~2 G instructions/s and 8 ns of bandwidth per
64-byte miss). The suggestion is the power of two in [1, 64] whose 5M records span the time
closest (in ratio) to TARGET_S seconds.

Usage: suggest_rate.py SIDECAR.json... [--target-s 5] [--records 5000000]
"""
import argparse
import json
import math

IPS = 2e9
MISS_NS = 8.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sidecars", nargs="+")
    ap.add_argument("--target-s", type=float, default=5.0)
    ap.add_argument("--records", type=int, default=5_000_000)
    a = ap.parse_args()
    print(f"{'program':<10} {'S':>3} {'instr/miss':>11} {'us per miss':>12} {'suggested S':>11} {'5M records span':>16}")
    for path in a.sidecars:
        d = json.load(open(path))
        misses = d["records"] * d["sample_every"]
        ipm = d["instructions"] / misses
        per_miss_s = ipm / IPS + MISS_NS * 1e-9
        span1 = a.records * per_miss_s  # seconds spanned at S = 1
        best = min((2 ** k for k in range(7)), key=lambda s: abs(math.log(span1 * s / a.target_s)))
        print(f"{d['program']:<10} {d['sample_every']:>3} {ipm:>11.1f} {per_miss_s * 1e6:>12.3f} {best:>11} "
              f"{span1 * best:>14.1f} s")


if __name__ == "__main__":
    main()
