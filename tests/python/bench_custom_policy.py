"""The cost of a policy written in Python: an LRU policy in Python against the built-in
`lru` (promote on sampled slow access, demote the least recently sampled fast page, 100
kHz of samples), on the same zipf run. Not part of pytest; run it with the package
installed:

    target/pyenv/bin/python tests/python/bench_custom_policy.py
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any

import tierkit

RUN: dict[str, Any] = {"workload": "zipf", "ratio": "1:16", "pages": 16_384, "accesses": 2_000_000, "alpha": 0.9}


class PyLru(tierkit.Policy):
    """The built-in `lru` policy's rules, in Python."""

    name = "py-lru"

    def __init__(self) -> None:
        self.fast: OrderedDict[int, None] = OrderedDict()

    def sources(self) -> dict[str, Any]:
        return {"samples": {"rate_hz": 100_000}, "allocations": True}

    def touch(self, page: int) -> None:
        self.fast[page] = None
        self.fast.move_to_end(page)

    def on_events(self, events: list[tuple[Any, ...]], ctx: tierkit.PolicyCtx) -> None:
        for event in events:
            kind = event[0]
            if kind == "sample" or kind == "alloc":
                page, tier = event[1], event[2]
                if tier == 0:
                    self.touch(page)
                elif kind == "sample":
                    if ctx.free_pages(0) <= ctx.queued and self.fast:
                        victim, _ = self.fast.popitem(last=False)
                        ctx.demote(victim)
                    ctx.promote(page)
                    self.touch(page)
            elif kind == "free":
                self.fast.pop(event[1], None)

    def on_moved(self, results: list[tuple[int, int, str]]) -> None:
        for page, to, status in results:
            if to == 0 and status != "moved" and status != "already-there":
                self.fast.pop(page, None)


def timed(policy: object) -> tuple[float, dict[str, Any]]:
    """Best of three wall times of one run, and its summary."""
    best = float("inf")
    summary: dict[str, Any] = {}
    for _ in range(3):
        start = time.perf_counter()
        summary = tierkit.simulate(policy=policy, **RUN).summary
        best = min(best, time.perf_counter() - start)
    return best, summary


def main() -> None:
    # simulate also runs the all-local and oracle references of the row (a grid of
    # "all-local" runs exactly those two): time them alone to take them out.
    refs, _ = timed("all-local")
    builtin, b = timed("lru")
    python, p = timed(PyLru())
    events = p["accesses"]
    print(f"run: {RUN}")
    print(f"built-in lru: {builtin:.2f} s, fast hit ratio {b['fast_hit_ratio']:.3f}")
    print(f"python lru:   {python:.2f} s, fast hit ratio {p['fast_hit_ratio']:.3f}")
    print(f"references (all-local, oracle) every call also runs: {refs:.2f} s; {events} accesses")
    print(f"python / built-in, whole simulate call: {python / builtin:.1f}x")
    print(f"python / built-in, the policy's run alone: {(python - refs) / max(builtin - refs, 1e-3):.1f}x")


if __name__ == "__main__":
    main()
