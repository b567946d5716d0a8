"""Shared fixtures: the `tierkit` command the Python package must agree with.

`TIERKIT_BIN` names the binary (`make py-test` builds it first); without it the
fixture builds target/release/tierkit with cargo.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Small runs: the whole suite takes seconds.
SMALL = ["--pages", "4096", "--accesses", "200000"]


@pytest.fixture(scope="session")
def tierkit_bin() -> Path:
    """The CLI binary, built from this checkout when TIERKIT_BIN is not set."""
    given = os.environ.get("TIERKIT_BIN")
    if given:
        return Path(given).resolve()
    subprocess.run(["cargo", "build", "--release", "--locked", "-p", "tierkit"], cwd=ROOT, check=True)
    return ROOT / "target" / "release" / "tierkit"


@pytest.fixture(scope="session")
def cli(tierkit_bin: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Runs `tierkit ARGS...` and returns the finished process (not checked)."""

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "RUST_BACKTRACE": "0"}
        return subprocess.run([str(tierkit_bin), *args], capture_output=True, text=True, env=env)

    return run


@pytest.fixture(scope="session")
def cli_json(cli: Callable[..., subprocess.CompletedProcess[str]]) -> Callable[..., list[dict[str, Any]]]:
    """Runs `tierkit ARGS... --json` and returns the rows of its document, as written."""

    def run(*args: str) -> list[dict[str, Any]]:
        done = cli(*args, "--json")
        assert done.returncode == 0, done.stderr
        document = json.loads(done.stdout)
        assert document["schema_version"] == 2, document
        return document["rows"]

    return run
