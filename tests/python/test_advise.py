"""``tierkit.advise`` gives the answer ``tierkit advise --trace --json`` gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tierkit

RATIOS = ["1:2", "1:16", "1:4"]


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory, cli) -> str:
    path = tmp_path_factory.mktemp("advise") / "zipf.tkt"
    done = cli("trace", "write", "--workload", "zipf", "--pages", "8000", "--accesses", "400000", "-o", str(path))
    assert done.returncode == 0, done.stderr
    return str(path)


def test_the_answer_matches_the_cli(cli, trace):
    a = tierkit.advise(trace, target=0.30, policies=["tierkit", "lru"], ratios=RATIOS)
    done = cli("advise", "--trace", trace, "--policies", "tierkit,lru", "--ratios", ",".join(RATIOS), "--target", "30%", "--json")
    assert done.returncode == 0, done.stderr
    want = json.loads(done.stdout)
    assert a.recommended == want["recommended"] and a.recommended is not None
    assert a.sizes.to_dict("records") == want["sizes"]
    assert list(a.sizes["ratio"]) == ["1:16", "1:4", "1:2"], "smallest DRAM share first"
    assert a.too_short_for == want["too_short_for"] and a.time_base == want["time_base"]
    # Every run is there, once: (tierkit, lru, none, all-local) x 3 ratios.
    cells = sorted(zip(a.runs["policy"], a.runs["ratio"]))
    assert cells == sorted((p, r) for p in ["all-local", "lru", "none", "tierkit"] for r in RATIOS)
    competing = a.runs[(a.runs["ratio"] == a.recommended["ratio"]) & (a.runs["policy"] != "all-local")]
    best = competing["pct_of_all_local"].max()
    assert best == pytest.approx(a.recommended["best_pct_of_all_local"])


def test_a_corpus_places_the_trace_as_the_cli_does(cli, trace, tmp_path: Path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, workload in [("kv", "zipf"), ("sweep", "scan")]:
        out = corpus / f"{name}.tktrace"
        args = ["trace", "write", "--workload", workload, "--pages", "8000", "--accesses", "400000"]
        done = cli(*args, "--seed", "2", "-o", str(out))
        assert done.returncode == 0, done.stderr
    (corpus / "standins.toml").write_text(
        '[[standin]]\nprogram = "kv"\nworkload = "zipf"\npages = 8000\naccesses = 400000\noptions = {}\n'
    )
    a = tierkit.advise(trace, target=0.30, policies="lru", ratios="1:16", corpus=corpus)
    done = cli("advise", "--trace", trace, "--corpus", str(corpus), "--policies", "lru", "--ratios", "1:16", "--json")
    assert done.returncode == 0, done.stderr
    assert a.program_class == json.loads(done.stdout)["class"]
    # A Zipf stream is shaped like the Zipf program, whose stand-in is validated.
    assert a.program_class["nearest"] == "kv" and a.program_class["validated"] is True
    assert tierkit.advise(trace, target=0.30, policies="lru", ratios="1:16").program_class is None


def test_a_corpus_without_traces_is_refused(trace, tmp_path: Path):
    with pytest.raises(tierkit.TierkitError, match="no recorded program"):
        tierkit.advise(trace, policies="lru", ratios="1:16", corpus=tmp_path)


def test_no_size_meets_a_target_too_tight(trace):
    a = tierkit.advise(trace, target=1e-5, policies="lru", ratios="1:16")
    assert a.recommended is None and len(a.sizes) == 1


@pytest.mark.parametrize("target", [5, 0, -0.1, True, "5%"])
def test_bad_targets_are_refused(trace, target):
    with pytest.raises(tierkit.BadOptionError, match="target"):
        tierkit.advise(trace, target=target, policies="lru", ratios="1:16")


def test_a_missing_trace_is_named(tmp_path: Path):
    missing = str(tmp_path / "none.tkt")
    with pytest.raises(tierkit.TierkitError, match="none.tkt"):
        tierkit.advise(missing, policies="lru", ratios="1:16")


def test_a_span_fits_a_trace_without_a_clock_as_the_cli_does(cli, trace):
    a = tierkit.advise(trace, target=0.30, policies="tierkit", ratios="1:8", span=12.5)
    done = cli("advise", "--trace", trace, "--policies", "tierkit", "--ratios", "1:8", "--target", "30%", "--span", "12.5", "--json")
    assert done.returncode == 0, done.stderr
    want = json.loads(done.stdout)
    assert a.time_base == want["time_base"] and "spans the program's 12.5 s" in a.time_base
    assert a.run_seconds == pytest.approx(12.5, rel=0.01)
    assert a.sizes.to_dict("records") == want["sizes"]


@pytest.mark.parametrize("span", [0, -1.0])
def test_bad_spans_are_refused(trace, span):
    with pytest.raises(tierkit.BadOptionError, match="span"):
        tierkit.advise(trace, policies="lru", ratios="1:16", span=span)


def test_a_span_and_a_scale_are_refused_together(trace):
    with pytest.raises(tierkit.BadOptionError, match="span and scale"):
        tierkit.advise(trace, policies="lru", ratios="1:16", span=10.0, scale=100)
