"""tierkit.simulate against `tierkit sim` on the same inputs."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest

import tierkit
from conftest import SMALL


def test_summary_equals_cli_json(cli_json):
    (expected,) = cli_json("sim", "--workload", "zipf", "--policy", "tierkit", "--ratio", "1:16", *SMALL,
                           "--opt", "alpha=0.9", "--seed", "7")
    got = tierkit.simulate(workload="zipf", policy="tierkit", ratio="1:16", seed=7, pages=4096,
                           accesses=200_000, alpha=0.9)
    assert got.summary == expected
    assert got.summary["throughput"] == expected["throughput"]
    assert got.summary["fast_hit_ratio"] == expected["fast_hit_ratio"]


def test_machine_settings_reach_the_run(cli_json):
    args = ["sim", "--workload", "gups", "--policy", "hemem", "--ratio", "1:8", *SMALL, "--machine", "numa",
            "--set", "tiers.1.latency_ns=200", "--scale", "500", "--no-prefault", "--access-count-ratio"]
    (expected,) = cli_json(*args)
    got = tierkit.simulate("gups", "hemem", (1, 8), machine="numa", pages=4096, accesses=200_000,
                           overrides={"tiers.1.latency_ns": 200}, scale=500, prefault=False,
                           access_count_ratio=True)
    assert got.summary == expected
    assert got.summary["machine"] == "numa" and got.summary["scale"] == 500
    assert got.summary["access_count_ratio"] is not None
    # The override changed the outcome: the same run on the unmodified preset differs.
    plain = tierkit.simulate("gups", "hemem", (1, 8), machine="numa", pages=4096, accesses=200_000, scale=500,
                             prefault=False, access_count_ratio=True)
    assert plain.summary["throughput"] != got.summary["throughput"]


def test_options_mapping_carries_colliding_names(cli_json):
    # GAP's `scale` (graph size) collides with simulate's own `scale`: it goes in options.
    (expected,) = cli_json("sim", "--workload", "gap-pr", "--policy", "tpp", "--pages", "2048", "--accesses",
                           "100000", "--opt", "scale=10")
    got = tierkit.simulate("gap-pr", "tpp", pages=2048, accesses=100_000, options={"scale": 10})
    assert got.summary == expected


def test_timeline_matches_cli_csv(cli, tmp_path: Path):
    done = cli("sim", "--workload", "hotset-shift", "--policy", "memtis", *SMALL, "--timeline", str(tmp_path))
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "hotset-shift_1-16_memtis.csv", newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    got = tierkit.simulate("hotset-shift", "memtis", pages=4096, accesses=200_000).timeline
    assert isinstance(got, pd.DataFrame)
    assert list(got.columns) == header
    assert len(got) == len(body) == 100
    for i, name in enumerate(header):
        cells = [r[i] for r in body]
        if name in ("accesses", "promotions", "demotions", "migrated_bytes"):
            assert got[name].tolist() == [int(v) for v in cells], name
        elif name == "access_count_ratio":
            # Not measured here: an empty cell, None in the column.
            assert cells == [""] * 100 and got[name].isna().all(), name
        else:
            # The CSV writes each number whole (the shortest text that reads back the same).
            assert got[name].tolist() == [float(v) for v in cells], name
    # The timeline adds up to the run.
    summary = tierkit.simulate("hotset-shift", "memtis", pages=4096, accesses=200_000).summary
    assert got["promotions"].sum() == summary["promotions"]
    assert got["accesses"].sum() == summary["accesses"] * summary["scale"]


def test_machine_file_equals_cli(cli_json, tmp_path: Path):
    machine = tmp_path / "machine.toml"
    machine.write_text("[app]\nthreads = 4\n\n[migration]\nbatch_pages = 64\n")
    (expected,) = cli_json("sim", "--workload", "zipf", "--policy", "tpp", *SMALL, "--machine-file", str(machine),
                           "--antagonist", "0.5")
    got = tierkit.simulate("zipf", "tpp", pages=4096, accesses=200_000, machine_file=machine, antagonist=0.5)
    assert got.summary == expected
    default = tierkit.simulate("zipf", "tpp", pages=4096, accesses=200_000)
    assert default.summary["throughput"] != got.summary["throughput"]
