"""Parameter sweeps: every combination of a grid of :func:`tierkit.simulate` arguments.

::

    from tierkit.sweep import sweep
    df = sweep({"workload": ["zipf", "gups"], "policy": ["tierkit", "tpp"],
                "ratio": ["1:16", "1:8"], "seed": [1, 2], "pages": [4096]})

Each key is a keyword argument of :func:`tierkit.simulate` (``workload``, ``policy``,
``ratio``, ``seed``, ``pages``, ``accesses``, workload options such as ``alpha``, ...)
and each value the list of values to try. The result has one row per combination, in
the order of :func:`itertools.product` over the grid's keys: the swept values first
(named ``param_<key>`` when the key collides with a summary column, e.g.
``param_policy`` for a Python policy object), then the run's summary.

The Ray backend needs ``pip install ray`` (not in the Makefile's venv: it is large);
tests/python/test_sweep.py checks it against the local backend on ``ray.init(num_cpus=2)``
when ray is installed and is skipped otherwise.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pandas as pd

from . import TierkitError, simulate

__all__ = ["sweep", "combinations"]

#: Keys every combination needs.
_REQUIRED = ("workload", "policy")


def combinations(grid: Mapping[str, Iterable[Any]]) -> list[dict[str, Any]]:
    """Every combination of `grid`'s values, as keyword-argument dicts, in product order."""
    keys = list(grid)
    missing = [k for k in _REQUIRED if k not in grid]
    if missing:
        raise TierkitError(f"sweep grid: missing {', '.join(missing)} (every run needs a workload and a policy)")
    values = []
    for k in keys:
        v = grid[k]
        if isinstance(v, (str, bytes)) or not isinstance(v, Iterable):
            raise TierkitError(f"sweep grid: {k} must be a list of values, got {type(v).__name__}")
        values.append(list(v))
        if not values[-1]:
            raise TierkitError(f"sweep grid: {k} has no values")
    return [dict(zip(keys, combo)) for combo in itertools.product(*values)]


def _label(value: Any) -> Any:
    """`value` as a DataFrame cell: Python policy objects by their name."""
    if isinstance(value, (str, int, float, bool, tuple)) or value is None:
        return value
    return getattr(value, "name", None) or type(value).__name__


def _summary(kw: dict[str, Any]) -> dict[str, Any]:
    """The summary of one run."""
    return simulate(**kw).summary


def _run_local(runs: list[dict[str, Any]], jobs: int) -> list[dict[str, Any]]:
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(_summary, runs))


def _run_ray(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    try:
        import ray  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        raise TierkitError(
            "sweep backend 'ray': ray is not installed (pip install ray), or use backend='local'"
        ) from None
    if not ray.is_initialized():
        ray.init()
    one = ray.remote(_summary)
    return list(ray.get([one.remote(kw) for kw in runs]))


def sweep(grid: Mapping[str, Iterable[Any]], backend: str = "local", jobs: int | None = None) -> pd.DataFrame:
    """Runs :func:`tierkit.simulate` on every combination of `grid` and returns one
    DataFrame (see the module documentation for its columns).

    ``backend="local"`` runs ``jobs`` simulations at a time in threads (default one per
    core; runs release the GIL, Python policies take it per call); ``backend="ray"`` sends
    each run to a Ray cluster (``ray.init()`` unless already initialized).
    """
    runs = combinations(grid)
    if backend == "local":
        summaries = _run_local(runs, jobs or os.cpu_count() or 1)
    elif backend == "ray":
        summaries = _run_ray(runs)
    else:
        raise TierkitError(f"sweep backend {backend!r}: expected 'local' or 'ray'")
    rows = []
    for kw, summary in zip(runs, summaries):
        row: dict[str, Any] = {}
        for k, v in kw.items():
            label = _label(v)
            if k in summary and summary[k] != label:
                row[f"param_{k}"] = label
            elif k not in summary:
                row[k] = label
        rows.append({**row, **summary})
    return pd.DataFrame(rows)
