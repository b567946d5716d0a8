"""Tiering policies written in Python.

Subclass :class:`Policy` (or write any class with the same methods) and pass an instance
wherever a policy name goes::

    class PromoteOnSample(tierkit.Policy):
        def sources(self):
            return {"samples": {"rate_hz": 10_000}}

        def on_events(self, events, ctx):
            for kind, page, *rest in events:
                if kind == "sample" and rest[0] != 0 and ctx.free_pages(0) > ctx.queued:
                    ctx.promote(page)

    tierkit.simulate("zipf", PromoteOnSample())
    tierkit.compare("zipf", policies=["tierkit", PromoteOnSample()])

The simulator calls the hooks as it calls a built-in policy's (crates/core/src/policy.rs):

``sources()``
    Once, before the run: the access information wanted, as a dict with any of
    ``"samples": {"rate_hz": F}`` or ``{"period": N}`` (plus ``"slow_tiers_only"``,
    ``"words"``), ``"hint_faults": {"window_pages", "period_ns", "slow_tiers_only"}``,
    ``"accessed": {"sample_interval_ns", "aggregation_interval_ns", "regions"}``,
    ``"device_topk": {"k", "query_period_ns", "words", "exact"}``, ``"allocations": bool``.
``on_events(events, ctx)``
    Once per delivery (a simulated chunk of 4096 accesses), with every event of the
    delivery in one list of tuples, the kind first: ``("sample", page, tier, write,
    time_ns)``, ``("hint_fault", page, tier, since_protect_ns, time_ns)``,
    ``("accessed", first_page, pages, count)``, ``("topk", page, word, count)``,
    ``("alloc", page, tier)``, ``("free", page)``.
``on_tick(telemetry, ctx)``
    Every ``tick_interval_ns`` (default 100 ms of simulated time), with a dict:
    ``now_ns``, ``interval_ns``, ``fast_hit_ratio``, ``mechanism_cpu_ns`` and ``tiers``
    (per tier: ``accesses``, ``request_rate``, ``occupancy``, ``latency_ns``,
    ``free_pages``, ``capacity_pages``).
``on_moved(results)`` (optional)
    The outcome of the queued migrations: a list of ``(page, to_tier, status)`` with
    status ``"moved"``, ``"no-space"``, ``"not-resident"``, ...
``metadata_bytes()`` (optional)
    Bytes of the policy's own metadata, reported as ``tracking_bytes``.

``ctx`` is valid during the call only. It reads the memory view -- ``ctx.now_ns``,
``ctx.tiers`` (count, fastest is 0), ``ctx.free_pages(tier)``,
``ctx.capacity_pages(tier)``, ``ctx.tier_of(page)`` (None when not resident),
``ctx.queued`` (migrations not executed yet) -- and queues migrations with
``ctx.promote(page)``, ``ctx.demote(page)`` and ``ctx.migrate(page, tier)``. Hooks
return None.

Every run gets its own ``copy.deepcopy`` of the instance, so a run starts from the
instance's state as given and repeated runs with one seed give the same numbers. An
exception in a hook (or a hook returning something else than None) ends the run with
:class:`PolicyError`, whose ``__cause__`` is the original exception and its traceback.

Speed
-----
Each delivery costs one Python call plus one tuple per event, so the cost grows with the
events the policy asks for. ``tests/python/bench_custom_policy.py`` (not part of pytest)
runs the built-in ``lru`` and the same rules in Python (``PyLru``: 100 kHz of samples,
an ``OrderedDict`` as the LRU list) on zipf, 16,384 pages, 2 million accesses, 1:16.
Both reach the same fast hit ratio (0.164). On a shared 2-core machine the Python
policy's run took 9-13x the built-in's (about 0.8-1.2 s against 0.07-0.13 s), or about 5x
per ``simulate`` call, which also runs the all-local and oracle references (0.14 s).
"""

from __future__ import annotations

from typing import Any

from ._tierkit import PolicyCtx

__all__ = ["Policy", "PolicyCtx", "Event"]

#: One event: a tuple whose first item names its kind (see the module documentation).
Event = tuple[Any, ...]


class Policy:
    """Base class of policies written in Python; override the hooks you need.

    ``name`` is the name in results (default: the class name).
    ``tick_interval_ns`` is the time between :meth:`on_tick` calls.
    """

    name: str | None = None
    tick_interval_ns: int = 100_000_000

    def sources(self) -> dict[str, Any] | None:
        """The access information this policy needs; None asks for nothing."""
        return None

    def on_events(self, events: list[Event], ctx: PolicyCtx) -> None:
        """Handles one delivery of events."""

    def on_tick(self, telemetry: dict[str, Any], ctx: PolicyCtx) -> None:
        """Periodic work: thresholds, aging, demotion scans."""

    def on_moved(self, results: list[tuple[int, int, str]]) -> None:
        """The outcome of queued migrations."""

    def metadata_bytes(self) -> int:
        """Bytes of this policy's own metadata."""
        return 0
