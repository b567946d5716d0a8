"""tierkit.compare against `tierkit compare` on a small grid."""

from __future__ import annotations

import json

import pandas as pd

import tierkit
from conftest import SMALL


def test_grid_rows_equal_cli_json(cli_json):
    expected = cli_json("compare", "--workload", "zipf,gups", "--ratios", "1:32,1:8", "--policies",
                        "tierkit,tpp,all-local", *SMALL, "--jobs", "2")
    df = tierkit.compare(["zipf", "gups"], ["tierkit", "tpp", "all-local"], ["1:32", (1, 8)], pages=4096,
                         accesses=200_000, jobs=2)
    assert isinstance(df, pd.DataFrame)
    assert len(df) == 2 * 2 * 3
    cells = list(zip(df["workload"], df["ratio"], df["policy"]))
    assert cells == [(w, r, p) for w in ("zipf", "gups") for r in ("1:32", "1:8") for p in ("tierkit", "tpp", "all-local")]
    assert sorted(df.columns) == sorted(expected[0])
    assert df.to_dict("records") == expected
    # Each row says how to rebuild its workload's stream (what `tierkit report` needs).
    assert set(df["seed"]) == {1} and set(df["workload_pages"]) == {4096}
    assert all(o == {} for o in df["options"])


def test_a_row_dict_has_the_keys_and_ratio_of_the_json_row(cli):
    done = cli("sim", "--workload", "zipf", "--policy", "lru", "--ratio", "1:16", *SMALL, "--json")
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["rows"]
    got = tierkit.compare("zipf", "lru", "1:16", pages=4096, accesses=200_000).to_dict("records")[0]
    assert list(got) == list(row), "the same keys, in the same order"
    assert got["ratio"] == row["ratio"] == "1:16"
    assert got == row
    summary = tierkit.simulate("zipf", "lru", (1, 16), pages=4096, accesses=200_000).summary
    assert list(summary) == list(row) and summary["ratio"] == "1:16"


def test_single_values_and_workload_options(cli_json):
    expected = cli_json("compare", "--workload", "ycsb-b", "--ratios", "1:16", "--policies", "lru", *SMALL,
                        "--opt", "alpha=0.8")
    df = tierkit.compare("ycsb-b", "lru", "1:16", pages=4096, accesses=200_000, alpha=0.8, seed=3)
    assert df.to_dict("records") != expected, "another seed, another stream"
    df = tierkit.compare("ycsb-b", "lru", "1:16", pages=4096, accesses=200_000, alpha=0.8)
    assert df.to_dict("records") == expected
    assert expected[0]["options"] == {"alpha": "0.8"} and df["options"].iloc[0] == {"alpha": "0.8"}
    assert df["pct_of_oracle"].iloc[0] == expected[0]["pct_of_oracle"]


def test_paper_suite_defaults_equal_cli(cli_json):
    # Without workloads and ratios the suite supplies both; the sizes still apply.
    expected = cli_json("compare", "--suite", "paper", "--quick", "--policies", "tierkit", "--pages", "4096",
                        "--accesses", "20000")
    df = tierkit.compare(suite="paper", quick=True, policies="tierkit", pages=4096, accesses=20_000)
    assert len(df) == 8 * 4
    assert sorted(set(df["ratio"])) == ["1:16", "1:32", "1:4", "1:8"]
    assert df.to_dict("records") == expected


def test_ratio_forms_are_equivalent():
    small = dict(pages=4096, accesses=50_000)
    as_text = tierkit.compare("zipf", "clock", ["1:16", "1:4"], **small)
    as_tuples = tierkit.compare("zipf", "clock", [(1, 16), (1, 4)], **small)
    assert as_text.equals(as_tuples)
    one = tierkit.compare("zipf", "clock", (1, 4), **small)
    assert one.to_dict("records") == as_text.iloc[[1]].to_dict("records")
