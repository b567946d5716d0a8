"""The listing functions against `tierkit list`."""

from __future__ import annotations

import tierkit


def listed(cli) -> dict[str, list[str]]:
    """`tierkit list` as section -> names."""
    done = cli("list")
    assert done.returncode == 0, done.stderr
    sections: dict[str, list[str]] = {}
    current = None
    for line in done.stdout.splitlines():
        if line.startswith("machine presets:"):
            sections["machines"] = [n.strip() for n in line.split(":", 1)[1].split(",")]
        elif not line.startswith(" "):
            current = line.rstrip(":")
            sections[current] = []
        elif not line.strip().startswith("<policy>"):
            sections[current].append(line.split()[0])
    return sections


def test_listing_has_known_names():
    assert "zipf" in tierkit.workloads() and "hotset-shift" in tierkit.workloads()
    assert "tierkit" in tierkit.policies() and "oracle" in tierkit.policies()
    assert "cxl" in tierkit.machines()


def test_listing_equals_cli(cli):
    names = listed(cli)
    assert tierkit.workloads() == names["workloads"]
    assert tierkit.policies() == names["references"] + names["policies"]
    assert tierkit.machines() == names["machines"]
