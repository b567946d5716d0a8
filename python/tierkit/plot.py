"""Figures of tierkit results with matplotlib; each function returns a ``Figure``.

::

    import tierkit, tierkit.plot as tp
    df = tierkit.compare(["zipf", "gups"], policies=["tierkit", "tpp"], ratios=["1:32", "1:16", "1:8"])
    tp.throughput_vs_ratio(df).savefig("throughput.png")
    runs = [tierkit.simulate("hotset-shift", p) for p in ("tierkit", "memtis")]
    tp.hit_ratio_over_time(runs).savefig("hits.png")
    tp.migration_over_time(runs).savefig("migration.png")
    tp.page_heatmap("hotset-shift").savefig("heat.png")

Results carry no per-page data, so :func:`page_heatmap` counts accesses from the
workload's generated stream itself (cheap: no simulation), not from a run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from . import SimResult, _size, _tierkit

__all__ = ["throughput_vs_ratio", "hit_ratio_over_time", "migration_over_time", "page_heatmap"]

#: Axis labels of each summary metric :func:`throughput_vs_ratio` can draw.
METRIC_LABELS = {
    "throughput": "throughput (accesses/s)",
    "fast_hit_ratio": "fast-tier hit ratio",
    "pct_of_all_local": "% of all-local throughput",
    "pct_of_oracle": "% of oracle throughput",
    "miss_ratio": "miss ratio",
    "migrated_bytes": "migrated bytes",
}


def _fast_share(ratio: str) -> float:
    """The fast tier's share of the footprint of a ``"F:S"`` ratio, for ordering."""
    fast, slow = (int(p) for p in ratio.split(":"))
    return fast / (fast + slow)


def throughput_vs_ratio(df: pd.DataFrame, metric: str = "throughput") -> Figure:
    """One panel per workload of a :func:`tierkit.compare` DataFrame: `metric` against
    the fast:slow ratio (smallest fast share left), one line per policy."""
    if metric not in METRIC_LABELS:
        raise ValueError(f"metric {metric!r}: expected one of {', '.join(METRIC_LABELS)}")
    missing = {"workload", "policy", "ratio", metric} - set(df.columns)
    if missing:
        raise ValueError(f"DataFrame lacks column(s) {', '.join(sorted(missing))}: pass tierkit.compare's result")
    workloads = list(dict.fromkeys(df["workload"]))
    ratios = sorted(dict.fromkeys(df["ratio"]), key=_fast_share)
    fig = Figure(figsize=(5 * len(workloads), 4), layout="constrained")
    axes = fig.subplots(1, len(workloads), squeeze=False)[0]
    for ax, workload in zip(axes, workloads):
        rows = df[df["workload"] == workload]
        for policy in dict.fromkeys(rows["policy"]):
            line = rows[rows["policy"] == policy].set_index("ratio")[metric].reindex(ratios)
            ax.plot(ratios, line.to_numpy(), marker="o", label=str(policy))
        ax.set_title(str(workload))
        ax.set_xlabel("fast:slow capacity ratio")
        ax.set_ylabel(METRIC_LABELS[metric])
        ax.legend()
    return fig


def _named(results: Iterable[SimResult] | Mapping[str, SimResult]) -> list[tuple[str, SimResult]]:
    if isinstance(results, Mapping):
        return [(str(k), v) for k, v in results.items()]
    if isinstance(results, SimResult):
        results = [results]
    return [(f"{r.summary['policy']} ({r.summary['workload']} {r.summary['ratio']})", r) for r in results]


def _over_time(ylabel: str) -> tuple[Figure, Any]:
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.subplots()
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel(ylabel)
    return fig, ax


def hit_ratio_over_time(results: Iterable[SimResult] | Mapping[str, SimResult]) -> Figure:
    """Fast-tier hit ratio per timeline interval, one line per :func:`tierkit.simulate`
    result (a mapping's keys label the lines)."""
    fig, ax = _over_time("fast-tier hit ratio")
    for label, r in _named(results):
        t = r.timeline
        ax.plot(t["end_ns"] / 1e9, t["fast_hit_ratio"], label=label)
    ax.set_ylim(0, 1)
    ax.legend()
    return fig


def migration_over_time(results: Iterable[SimResult] | Mapping[str, SimResult]) -> Figure:
    """Migration traffic (MB/s of promotions plus demotions) per timeline interval, one
    line per :func:`tierkit.simulate` result."""
    fig, ax = _over_time("migration traffic (MB/s)")
    for label, r in _named(results):
        t = r.timeline
        seconds = t["end_ns"].diff().fillna(t["end_ns"]) / 1e9
        ax.plot(t["end_ns"] / 1e9, t["migrated_bytes"] / seconds.clip(lower=1e-12) / 1e6, label=label)
    ax.legend()
    return fig


def page_heatmap(
    workload: str,
    seed: int = 1,
    *,
    page_bins: int = 128,
    time_bins: int = 100,
    pages: int | None = None,
    footprint: int | None = None,
    accesses: int | None = None,
    options: Mapping[str, object] | None = None,
    **params: object,
) -> Figure:
    """Accesses of `workload`'s generated stream per (time, page range), as a heat map:
    time left to right in ``time_bins`` equal shares of the stream, the footprint bottom
    to top in ``page_bins`` equal page ranges. Sizes and options as for
    :func:`tierkit.simulate`."""
    counts = _tierkit.heatmap(workload, _size(pages, footprint, accesses, options, params), seed, page_bins, time_bins)
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.subplots()
    grid = [list(col) for col in zip(*counts)]  # rows: page bins, columns: time bins
    image = ax.imshow(grid, aspect="auto", origin="lower", cmap="inferno", interpolation="nearest")
    fig.colorbar(image, ax=ax, label="accesses")
    ax.set_title(f"{workload}: page hotness")
    ax.set_xlabel(f"time (1/{time_bins} of the stream)")
    ax.set_ylabel(f"page range (1/{page_bins} of the footprint)")
    return fig
