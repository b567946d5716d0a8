"""Runs release the GIL: other Python threads keep running during a simulation."""

from __future__ import annotations

import threading
import time

import tierkit


def run() -> None:
    tierkit.simulate("zipf", "tierkit", pages=16384, accesses=2_000_000)


def test_simulation_runs_without_the_gil():
    start = time.perf_counter()
    run()
    duration = time.perf_counter() - start
    worker = threading.Thread(target=run)
    stamps = [time.perf_counter()]
    worker.start()
    while worker.is_alive():
        stamps.append(time.perf_counter())
    worker.join()
    stamps.append(time.perf_counter())
    longest_pause = max(b - a for a, b in zip(stamps, stamps[1:]))
    # Holding the GIL would stop this loop for the whole run.
    assert longest_pause < duration / 3, (longest_pause, duration)
