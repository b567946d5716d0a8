"""Policies written in Python, driven by the Rust engine."""

from __future__ import annotations

from typing import Any

import pytest

import tierkit

RUN = {"pages": 4096, "accesses": 200_000, "alpha": 0.9}


class HotThreshold(tierkit.Policy):
    """Promotes a slow page once it was sampled `threshold` times, making room by
    demoting the fast page sampled least."""

    def __init__(self, threshold: int = 2) -> None:
        self.threshold = threshold
        self.counts: dict[int, int] = {}
        self.fast: set[int] = set()
        self.ticks = 0
        self.moved = 0

    def sources(self) -> dict[str, Any]:
        return {"samples": {"rate_hz": 20_000}, "allocations": True}

    def on_events(self, events: list[tuple[Any, ...]], ctx: tierkit.PolicyCtx) -> None:
        for event in events:
            if event[0] == "alloc" and event[2] == 0:
                self.fast.add(event[1])
            if event[0] != "sample":
                continue
            page, tier = event[1], event[2]
            n = self.counts.get(page, 0) + 1
            self.counts[page] = n
            if tier == 0 or n < self.threshold:
                continue
            if ctx.free_pages(0) <= ctx.queued and self.fast:
                victim = min(self.fast, key=lambda p: self.counts.get(p, 0))
                if self.counts.get(victim, 0) >= n:
                    continue
                self.fast.discard(victim)
                ctx.demote(victim)
            ctx.promote(page)

    def on_tick(self, telemetry: dict[str, Any], ctx: tierkit.PolicyCtx) -> None:
        self.ticks += 1
        assert len(telemetry["tiers"]) == ctx.tiers

    def on_moved(self, results: list[tuple[int, int, str]]) -> None:
        for page, to, status in results:
            if status == "moved" and to == 0:
                self.fast.add(page)
                self.moved += 1


def test_threshold_policy_beats_none_on_zipf():
    mine = tierkit.simulate("zipf", HotThreshold(), **RUN)
    none = tierkit.simulate("zipf", "none", **RUN)
    assert mine.summary["policy"] == "HotThreshold"
    assert mine.summary["promotions"] > 0
    assert mine.summary["fast_hit_ratio"] > none.summary["fast_hit_ratio"] + 0.05
    assert mine.timeline["promotions"].sum() == mine.summary["promotions"]


def test_named_policy_and_deterministic_for_a_seed():
    class Named(HotThreshold):
        name = "hot2"

    a = tierkit.simulate("zipf", Named(), seed=3, **RUN).summary
    b = tierkit.simulate("zipf", Named(), seed=3, **RUN).summary
    c = tierkit.simulate("zipf", Named(), seed=4, **RUN).summary
    assert a["policy"] == "hot2"
    assert a == b
    assert a != c


def test_each_run_gets_a_copy():
    policy = HotThreshold()
    first = tierkit.simulate("zipf", policy, **RUN).summary
    assert policy.counts == {}  # the instance itself did not run
    assert tierkit.simulate("zipf", policy, **RUN).summary == first


def test_compare_mixes_names_and_objects():
    df = tierkit.compare("zipf", policies=["tierkit", HotThreshold(), "none"], ratios=["1:16", "1:8"], **RUN)
    assert list(df["policy"]) == ["tierkit", "HotThreshold", "none"] * 2
    assert list(df["ratio"]) == ["1:16"] * 3 + ["1:8"] * 3
    single = tierkit.simulate("zipf", HotThreshold(), ratio="1:8", **RUN).summary
    row = df[(df["policy"] == "HotThreshold") & (df["ratio"] == "1:8")].iloc[0].to_dict()
    assert row == single
    alone = tierkit.compare("zipf", policies=["tierkit"], ratios=["1:16"], **RUN)
    assert df.iloc[0].to_dict() == alone.iloc[0].to_dict()


class Raises(tierkit.Policy):
    def sources(self) -> dict[str, Any]:
        return {"samples": {"rate_hz": 10_000}}

    def on_events(self, events: list[tuple[Any, ...]], ctx: tierkit.PolicyCtx) -> None:
        raise KeyError("page 42 unknown")


def test_raising_policy_gives_policy_error_with_cause():
    with pytest.raises(tierkit.PolicyError, match=r"policy Raises: on_events\(\) raised KeyError: 'page 42 unknown'") as e:
        tierkit.simulate("zipf", Raises(), **RUN)
    assert isinstance(e.value.__cause__, KeyError)
    assert e.value.__cause__.__traceback__ is not None
    assert isinstance(e.value, tierkit.TierkitError)


class WrongArity:
    def on_events(self, events: list[Any]) -> None:
        pass

    def on_tick(self, telemetry: dict[str, Any], ctx: Any) -> None:
        pass


def test_wrong_signature_is_named():
    with pytest.raises(tierkit.PolicyError, match=r"policy WrongArity: on_events\(events.* cannot be called as on_events\(events, ctx\): too many"):
        tierkit.simulate("zipf", WrongArity(), **RUN)


def test_missing_hook_is_named():
    class NoTick:
        def on_events(self, events: Any, ctx: Any) -> None:
            pass

    with pytest.raises(tierkit.PolicyError, match=r"NoTick: has no method on_tick\(telemetry, ctx\)"):
        tierkit.compare("zipf", policies=[NoTick()], ratios="1:16", **RUN)
    with pytest.raises(tierkit.PolicyError, match=r"NoTick: has no method on_tick"):
        tierkit.compare("zipf", policies=NoTick(), ratios="1:16", **RUN)


@pytest.mark.parametrize(
    ("sources", "message"),
    [
        ([1, 2], r"sources\(\): must return a dict or None, got list"),
        ({"sample": {}}, r"sources\(\): sources: unknown key \"sample\""),
        ({"samples": {"rate_hz": 10, "period": 3}}, r"give exactly one of rate_hz and period"),
        ({"samples": {"rate_hz": "fast"}}, r"samples: rate_hz has the wrong type \(str\)"),
    ],
)
def test_bad_sources_are_explained(sources: object, message: str):
    class Bad(tierkit.Policy):
        def sources(self) -> Any:
            return sources

    with pytest.raises(tierkit.PolicyError, match=message):
        tierkit.simulate("zipf", Bad(), **RUN)


def test_hook_returning_a_value_is_an_error():
    class Returns(HotThreshold):
        def on_tick(self, telemetry: dict[str, Any], ctx: tierkit.PolicyCtx) -> Any:
            return [1, 2, 3]

    with pytest.raises(tierkit.PolicyError, match=r"on_tick\(\) must return None .* got list"):
        tierkit.simulate("zipf", Returns(), **RUN)


def test_ctx_reads_memory_and_is_closed_after_the_call():
    seen: dict[str, Any] = {}

    class Probe(tierkit.Policy):
        def on_tick(self, telemetry: dict[str, Any], ctx: tierkit.PolicyCtx) -> None:
            if not seen:
                seen["ctx"] = ctx
                seen["tiers"] = ctx.tiers
                seen["cap"] = [ctx.capacity_pages(t) for t in range(ctx.tiers)]
                seen["tier_of_0"] = ctx.tier_of(0)
                seen["missing"] = ctx.tier_of(10**9)
                with pytest.raises(ValueError, match="tier 9"):
                    ctx.free_pages(9)

    r = tierkit.simulate("zipf", Probe(), **RUN)
    assert seen["tiers"] == 2
    assert seen["cap"][0] == r.summary["fast_pages"]
    assert seen["tier_of_0"] in (0, 1)
    assert seen["missing"] is None
    with pytest.raises(RuntimeError, match="after its hook returned"):
        seen["ctx"].tier_of(0)
