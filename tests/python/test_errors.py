"""Bad inputs raise tierkit's exceptions with the message the CLI prints."""

from __future__ import annotations

import pytest

import tierkit

SMALL = dict(pages=1024, accesses=10_000)


def test_exception_hierarchy():
    for cls in (tierkit.UnknownNameError, tierkit.BadOptionError, tierkit.InputFileError):
        assert issubclass(cls, tierkit.TierkitError)
    assert issubclass(tierkit.TierkitError, ValueError)


def test_unknown_policy(cli):
    with pytest.raises(tierkit.UnknownNameError) as e:
        tierkit.simulate("zipf", "no-such-policy", **SMALL)
    message = str(e.value)
    assert message.startswith('unknown policy "no-such-policy"; valid: ') and "tierkit" in message
    done = cli("sim", "--workload", "zipf", "--policy", "no-such-policy", "--pages", "1024", "--accesses", "10000")
    assert done.returncode != 0 and message in done.stderr


def test_unknown_workload_and_machine():
    with pytest.raises(tierkit.UnknownNameError, match='unknown workload "nope"'):
        tierkit.simulate("nope", "tierkit", **SMALL)
    with pytest.raises(tierkit.UnknownNameError, match='unknown machine preset "cxl3"; valid: cxl, cxl-slow, numa'):
        tierkit.compare("zipf", "tierkit", "1:16", machine="cxl3", **SMALL)
    with pytest.raises(tierkit.UnknownNameError, match='unknown suite "big"'):
        tierkit.compare(suite="big")


@pytest.mark.parametrize("ratio", ["1:0", "0:4", "16", "a:b"])
def test_bad_ratio(cli, ratio):
    with pytest.raises(tierkit.BadOptionError) as e:
        tierkit.simulate("zipf", "tierkit", ratio, **SMALL)
    assert str(e.value).startswith(f'ratio "{ratio}": ')
    done = cli("sim", "--workload", "zipf", "--policy", "tierkit", "--ratio", ratio)
    assert done.returncode != 0 and str(e.value) in done.stderr


def test_bad_ratio_in_a_grid():
    with pytest.raises(tierkit.BadOptionError, match='ratio "1:0": the slow part must be at least 1'):
        tierkit.compare("zipf", "tierkit", ["1:16", "1:0"], **SMALL)


def test_unknown_and_bad_workload_params(cli):
    with pytest.raises(tierkit.BadOptionError) as e:
        tierkit.simulate("zipf", "tierkit", bogus=3, **SMALL)
    assert str(e.value) == 'workload zipf: option bogus = "3": expected one of the options alpha'
    done = cli("sim", "--workload", "zipf", "--policy", "tierkit", "--pages", "1024", "--accesses", "10000",
               "--opt", "bogus=3")
    assert done.returncode != 0 and str(e.value) in done.stderr
    with pytest.raises(tierkit.BadOptionError, match='option alpha = "7"'):
        tierkit.simulate("zipf", "tierkit", alpha=7, **SMALL)


def test_bad_machine_settings(tmp_path):
    with pytest.raises(tierkit.BadOptionError, match="tiers.7.latency_ns"):
        tierkit.simulate("zipf", "tierkit", overrides={"tiers.7.latency_ns": 100}, **SMALL)
    with pytest.raises(tierkit.BadOptionError, match=r"option antagonist = \"1.5\": expected a fraction"):
        tierkit.simulate("zipf", "tierkit", antagonist=1.5, **SMALL)
    bad = tmp_path / "machine.toml"
    bad.write_text("app = [\n")
    with pytest.raises(tierkit.InputFileError, match=str(bad)):
        tierkit.simulate("zipf", "tierkit", machine_file=str(bad), **SMALL)
    with pytest.raises(tierkit.InputFileError, match="missing.toml"):
        tierkit.simulate("zipf", "tierkit", machine_file=str(tmp_path / "missing.toml"), **SMALL)


def test_sizes_conflict():
    with pytest.raises(tierkit.BadOptionError, match="either pages or a footprint, not both"):
        tierkit.simulate("zipf", "tierkit", pages=1024, footprint=1 << 22, accesses=1000)
    with pytest.raises(tierkit.BadOptionError, match="at least 1 access"):
        tierkit.simulate("zipf", "tierkit", pages=1024, accesses=0)


def test_wrong_types_raise_type_error():
    with pytest.raises(TypeError):
        tierkit.simulate("zipf", "tierkit", 16, **SMALL)
    with pytest.raises(TypeError):
        tierkit.simulate("zipf", "tierkit", pages="many", accesses=1000)


def test_bad_trace_file(cli, tmp_path):
    bad = tmp_path / "bad.trace"
    bad.write_bytes(b"garbage\x00\x01")
    with pytest.raises(tierkit.InputFileError) as e:
        tierkit.simulate("trace", "lru", path=str(bad))
    assert str(e.value).startswith(f"{bad}: ")
    done = cli("sim", "--workload", "trace", "--policy", "lru", "--opt", f"path={bad}")
    assert done.returncode != 0 and str(e.value) in done.stderr
    with pytest.raises(tierkit.InputFileError, match="missing.trace"):
        tierkit.simulate("trace", "lru", path=str(tmp_path / "missing.trace"))


def test_policy_settings(cli):
    """A policy named with settings (``NAME:KEY=VALUE``) runs with them, as on the CLI."""
    tuned = tierkit.simulate("zipf", "tierkit:sample_rate_hz=1000", pages=4000, accesses=400_000)
    default = tierkit.simulate("zipf", "tierkit", pages=4000, accesses=400_000)
    assert tuned.summary["policy"] == "tierkit:sample_rate_hz=1000"
    assert tuned.summary["promotions"] < default.summary["promotions"]
    with pytest.raises(tierkit.BadOptionError) as e:
        tierkit.simulate("zipf", "tierkit:sample_rate=1000", **SMALL)
    message = str(e.value)
    assert message.startswith("invalid sample_rate = 1000: expected a parameter: one of ") and "sample_rate_hz" in message
    done = cli("sim", "--workload", "zipf", "--policy", "tierkit:sample_rate=1000", "--pages", "1024", "--accesses", "10000")
    assert done.returncode != 0 and message in done.stderr
