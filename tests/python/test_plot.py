"""tierkit.plot: figures render to PNG and show what they claim."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

import tierkit  # noqa: E402
import tierkit.plot as tp  # noqa: E402

SMALL = {"pages": 2048, "accesses": 100_000}


def saved(fig, path: Path) -> Path:
    fig.savefig(path)
    assert path.stat().st_size > 1000
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return path


def test_throughput_vs_ratio(tmp_path: Path):
    df = tierkit.compare(["zipf", "gups"], policies=["tierkit", "none", "lru"], ratios=["1:8", "1:32", "1:16"],
                         **SMALL)
    fig = tp.throughput_vs_ratio(df)
    saved(fig, tmp_path / "tput.png")
    assert len(fig.axes) == 2
    ax = fig.axes[0]
    assert ax.get_title() == "zipf"
    assert ax.get_xlabel() == "fast:slow capacity ratio"
    assert ax.get_ylabel() == "throughput (accesses/s)"
    assert [line.get_label() for line in ax.get_lines()] == ["tierkit", "none", "lru"]
    # Ratios run from the smallest fast share to the largest, values from the frame.
    line = ax.get_lines()[0]
    assert list(line.get_xdata()) == ["1:32", "1:16", "1:8"]
    row = df[(df["workload"] == "zipf") & (df["policy"] == "tierkit") & (df["ratio"] == "1:32")]
    assert line.get_ydata()[0] == row["throughput"].iloc[0]
    hits = tp.throughput_vs_ratio(df, metric="fast_hit_ratio")
    assert hits.axes[1].get_ylabel() == "fast-tier hit ratio"
    with pytest.raises(ValueError, match="metric 'speed'"):
        tp.throughput_vs_ratio(df, metric="speed")


def test_timelines(tmp_path: Path):
    runs = {p: tierkit.simulate("hotset-shift", p, **SMALL) for p in ("tierkit", "none")}
    fig = tp.hit_ratio_over_time(runs)
    saved(fig, tmp_path / "hits.png")
    (ax,) = fig.axes
    assert ax.get_ylabel() == "fast-tier hit ratio" and ax.get_xlabel() == "simulated time (s)"
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == ["tierkit", "none"]
    assert list(lines[0].get_ydata()) == list(runs["tierkit"].timeline["fast_hit_ratio"])
    fig = tp.migration_over_time(list(runs.values()))
    saved(fig, tmp_path / "migration.png")
    (ax,) = fig.axes
    assert ax.get_ylabel() == "migration traffic (MB/s)"
    lines = ax.get_lines()
    assert len(lines) == 2 and lines[0].get_label().startswith("tierkit (hotset-shift")
    # `none` never migrates; tierkit does.
    assert max(lines[1].get_ydata()) == 0 and max(lines[0].get_ydata()) > 0


def test_page_heatmap(tmp_path: Path):
    fig = tp.page_heatmap("hotset-shift", pages=4096, accesses=200_000, page_bins=32, time_bins=20)
    saved(fig, tmp_path / "heat.png")
    ax = fig.axes[0]
    assert ax.get_ylabel() == "page range (1/32 of the footprint)"
    data = ax.get_images()[0].get_array()
    assert data.shape == (32, 20)
    assert int(data.sum()) == 200_000
    # 2/3 of the hot set turns cold mid-run: the page profile before and after the shift
    # differ far more than two neighbouring times do.
    import numpy as np

    def similar(a: int, b: int) -> float:
        return float(np.corrcoef(data[:, a], data[:, b])[0, 1])

    assert similar(0, -1) < similar(0, 1) - 0.2
    with pytest.raises(tierkit.BadOptionError, match="both must be at least 1"):
        tp.page_heatmap("zipf", page_bins=0)
