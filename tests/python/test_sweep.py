"""tierkit.sweep: every combination of a grid, each equal to its own simulate call."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import tierkit
from tierkit.sweep import combinations
from test_custom_policy import HotThreshold

SMALL = {"pages": [2048], "accesses": [100_000]}


def test_local_sweep_rows_are_the_product_and_equal_simulate():
    grid = {"workload": ["zipf", "gups"], "policy": ["tierkit", "none"], "ratio": ["1:16", (1, 8)],
            "seed": [1, 2], **SMALL}
    df = tierkit.sweep(grid, jobs=2)
    assert len(df) == 2 * 2 * 2 * 2
    assert list(df["workload"][:4]) == ["zipf"] * 4
    assert list(df["seed"][:2]) == [1, 2]
    for i, kw in enumerate(combinations(grid)):
        expected = tierkit.simulate(**kw).summary
        got = df.iloc[i]
        for key, value in expected.items():
            assert got[key] == value or (value is None and got[key] is None), (kw, key)
    # A tuple ratio is kept as given beside the summary's "1:8".
    assert set(df["param_ratio"].dropna()) == {(1, 8)}


def test_sweep_with_a_python_policy_and_a_workload_option():
    df = tierkit.sweep({"workload": ["zipf"], "policy": [HotThreshold(), "tierkit"], "alpha": [0.8, 1.1], **SMALL})
    assert list(df["policy"]) == ["HotThreshold", "HotThreshold", "tierkit", "tierkit"]
    assert list(df["alpha"]) == [0.8, 1.1, 0.8, 1.1]
    one = tierkit.simulate("zipf", HotThreshold(), alpha=1.1, pages=2048, accesses=100_000).summary
    assert df.iloc[1]["fast_hit_ratio"] == one["fast_hit_ratio"]
    # A more skewed zipf gives a higher hit ratio for the same policy.
    assert df.iloc[1]["fast_hit_ratio"] > df.iloc[0]["fast_hit_ratio"]


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        ({"policy": ["none"]}, "missing workload"),
        ({"workload": "zipf", "policy": ["none"]}, "workload must be a list of values, got str"),
        ({"workload": ["zipf"], "policy": []}, "policy has no values"),
    ],
)
def test_bad_grids_are_explained(grid, message):
    with pytest.raises(tierkit.TierkitError, match=message):
        tierkit.sweep(grid)


def test_unknown_backend():
    with pytest.raises(tierkit.TierkitError, match="backend 'dask': expected 'local' or 'ray'"):
        tierkit.sweep({"workload": ["zipf"], "policy": ["none"]}, backend="dask")


@pytest.mark.skipif(importlib.util.find_spec("ray") is not None, reason="ray is installed")
def test_ray_backend_without_ray_says_so():
    with pytest.raises(tierkit.TierkitError, match="ray is not installed"):
        tierkit.sweep({"workload": ["zipf"], "policy": ["none"], **SMALL}, backend="ray")


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed (pip install ray)")
def test_ray_backend_equals_local():
    import ray

    ray.init(num_cpus=2)
    try:
        grid = {"workload": ["zipf"], "policy": ["tierkit", "none"], **SMALL}
        assert tierkit.sweep(grid, backend="ray").equals(tierkit.sweep(grid))
        # The scale-out route for recorded programs (`tierkit compare` has no cluster
        # backend): traces x policies x ratios, each trace on its own clock.
        corpus = Path(__file__).resolve().parents[2] / "corpus"
        traces = {"workload": ["trace"], "path": [str(corpus / "redis.tktrace"), str(corpus / "xz.tktrace")],
                  "limit": [100_000], "policy": ["tierkit", "none", "hemem"], "ratio": ["1:16", "1:8"]}
        on_ray = tierkit.sweep(traces, backend="ray")
        assert len(on_ray) == 2 * 3 * 2
        assert on_ray.equals(tierkit.sweep(traces))
    finally:
        ray.shutdown()
