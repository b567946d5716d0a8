"""Ctrl-C stops a long run: KeyboardInterrupt within about a second, nothing returned,
and the interpreter usable after."""

from __future__ import annotations

import _thread
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import tierkit

#: A run far longer than the test: its expected duration is measured, not assumed.
LONG_ACCESSES = 400_000_000
PAGES = 16384
#: Ctrl-C arrives this long after the call starts.
DELAY = 0.5


@pytest.fixture(autouse=True)
def python_handles_sigint():
    """Python's own SIGINT handler, as an interactive interpreter has it. A process started
    in the background by a non-interactive shell inherits SIGINT ignored, and Python then
    installs no handler: Ctrl-C would reach neither Python nor tierkit, whatever tierkit
    does (a CI job launched that way failed every test here)."""
    import signal

    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def seconds_per_access(policy: str | tierkit.Policy) -> float:
    """The measured cost of one generated access of `policy` at the test's footprint."""
    accesses = 400_000
    start = time.perf_counter()
    tierkit.simulate("zipf", policy, pages=PAGES, accesses=accesses)
    return (time.perf_counter() - start) / accesses


class Idle(tierkit.Policy):
    """A Python policy that never moves anything."""

    def on_tick(self, telemetry: dict[str, Any], ctx: tierkit.PolicyCtx) -> None:
        pass


CALLS: dict[str, tuple[str | tierkit.Policy, Callable[[], object]]] = {
    "simulate": ("lru", lambda: tierkit.simulate("zipf", "lru", pages=PAGES, accesses=LONG_ACCESSES)),
    "simulate-python-policy": (
        Idle(),
        lambda: tierkit.simulate("zipf", Idle(), pages=PAGES, accesses=LONG_ACCESSES),
    ),
    "compare": (
        "lru",
        lambda: tierkit.compare(["zipf"], ["lru"], "1:16", pages=PAGES, accesses=LONG_ACCESSES, jobs=2),
    ),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_ctrl_c_stops_a_long_run(name: str) -> None:
    policy, call = CALLS[name]
    would_take = seconds_per_access(policy) * LONG_ACCESSES
    assert would_take > 20 * DELAY, would_take  # the run is long enough to tell
    timer = threading.Timer(DELAY, _thread.interrupt_main)
    start = time.perf_counter()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        call()
    took = time.perf_counter() - start
    timer.join()
    assert took < DELAY + 1.0, (took, would_take)
    # The interpreter and the package work after the interrupt.
    r = tierkit.simulate("zipf", "lru", pages=4096, accesses=200_000)
    assert r.summary["accesses"] == 200_000
    assert len(r.timeline) > 0


def test_sigint_from_the_os_stops_a_run() -> None:
    import signal

    timer = threading.Timer(DELAY, signal.raise_signal, (signal.SIGINT,))
    start = time.perf_counter()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        tierkit.simulate("zipf", "lru", pages=PAGES, accesses=LONG_ACCESSES)
    timer.join()
    assert time.perf_counter() - start < DELAY + 1.0
