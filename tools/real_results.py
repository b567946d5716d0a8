#!/usr/bin/env python3
"""Append the real suite to docs/RESULTS.md: recorded programs, every policy.

Usage: real_results.py [--first-access JSON] REAL_JSON CORPUS_DIR OUT_DIR COMMAND...

REAL_JSON holds the rows of `tierkit compare --suite real --json`; the optional
--first-access JSON holds the same suite replayed with `--no-prefault` (each page placed at
its first access instead of all before the stream), reported as how far each policy's
verdicts move with the placement. CORPUS_DIR/split.json
names the halves of the corpus ("tuning" and "held-out"): tierkit's rules were chosen on
the tuning half, so the held-out half is reported on its own. Appends to OUT_DIR/RESULTS.md and writes OUT_DIR/figures/real-*.png and
OUT_DIR/real-results.csv (every run).
"""
import csv
import json
import math
import shlex
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from results import load_rows  # noqa: E402  (tools/results.py, beside this file)

REFERENCES = {"all-local", "oracle", "static-oracle", "none"}


def trace_name(row):
    return Path(row["options"]["path"]).stem


def ratio_text(r):
    return f"{r[0]}:{r[1]}"


def policy_summary(cells, traces):
    """Every policy over the cells of `traces`: its points against `none` (mean, worst),
    the cells where it does no harm (>= none - 0.5) and where it is best (within 0.1)."""
    by_policy = defaultdict(list)  # policy -> [(delta vs none, is best)]
    for (trace, _), by in cells.items():
        if trace not in traces or "none" not in by:
            continue
        pct = {p: r["pct_of_all_local"] for p, r in by.items() if p not in REFERENCES or p == "none"}
        top = max(pct.values())
        for p, v in pct.items():
            if p != "none":
                by_policy[p].append((v - pct["none"], v >= top - 0.1))
    lines = [
        "",
        "Every policy over these cells, in points of all-local against `none`:",
        "",
        "| policy | mean | worst | cells ≥ none − 0.5 | cells best (±0.1) |",
        "|---|---|---|---|---|",
    ]
    for p, ds in sorted(by_policy.items(), key=lambda kv: -sum(d for d, _ in kv[1]) / len(kv[1])):
        deltas = [d for d, _ in ds]
        lines.append(
            f"| {p} | {sum(deltas) / len(deltas):+.2f} | {min(deltas):+.2f} | "
            f"{sum(d >= -0.5 for d in deltas)}/{len(ds)} | {sum(b for _, b in ds)}/{len(ds)} |"
        )
    return lines + [""]


def write_csv(rows, path):
    """Every run of the real suite, one row each."""
    fields = ["trace", "ratio", "policy", "pct_of_all_local", "fast_hit_ratio", "promotions", "demotions",
              "migrated_bytes", "mechanism_cpu_pct", "time_base"]
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in sorted(rows, key=lambda r: (trace_name(r), r["ratio"][1] / r["ratio"][0], r["policy"])):
            w.writerow({**{k: r.get(k) for k in fields}, "trace": trace_name(r), "ratio": ratio_text(r["ratio"])})


def placement_section(cells, first_access_rows):
    """How each policy's points against `none` move when every page is placed at its first
    access instead of before the stream: mean and largest change over the cells, and its
    worst cell under either placement."""
    moved = defaultdict(list)  # policy -> [(change, delta before, delta at first access)]
    other = defaultdict(dict)
    for r in first_access_rows:
        other[(trace_name(r), tuple(r["ratio"]))][r["policy"]] = r
    for key, by in cells.items():
        again = other.get(key, {})
        if "none" not in by or "none" not in again:
            continue
        for p, r in by.items():
            if p in REFERENCES or p not in again:
                continue
            before = r["pct_of_all_local"] - by["none"]["pct_of_all_local"]
            after = again[p]["pct_of_all_local"] - again["none"]["pct_of_all_local"]
            moved[p].append((after - before, before, after))
    lines = [
        "## Placement before the first access",
        "",
        "A trace records accesses, not allocations (docs/TRACES.md, \"Placement before the first",
        "access\"). The tables above place every page before the stream; replayed with",
        "`--no-prefault`, each page is placed at its first access instead. Points against `none`",
        "under each placement, and how far they move, over every cell:",
        "",
        "| policy | mean change | largest change | worst cell, before the stream | worst cell, at first access |",
        "|---|---|---|---|---|",
    ]
    for p, ms in sorted(moved.items(), key=lambda kv: -max(abs(c) for c, _, _ in kv[1])):
        changes = [c for c, _, _ in ms]
        largest = max(changes, key=abs)
        lines.append(
            f"| {p} | {sum(changes) / len(changes):+.2f} | {largest:+.2f} | "
            f"{min(b for _, b, _ in ms):+.2f} | {min(a for _, _, a in ms):+.2f} |"
        )
    return lines + [""]


def main() -> int:
    args = sys.argv[1:]
    first_access = None
    if args[:1] == ["--first-access"]:
        first_access, args = load_rows(args[1]), args[2:]
    rows = load_rows(args[0])
    corpus, out = Path(args[1]), Path(args[2])
    command = shlex.join(args[3:])
    figures = out / "figures"
    figures.mkdir(parents=True, exist_ok=True)

    cells = defaultdict(dict)  # (trace, ratio) -> policy -> row
    for r in rows:
        cells[(trace_name(r), tuple(r["ratio"]))][r["policy"]] = r
    split = json.loads((corpus / "split.json").read_text())
    halves = defaultdict(list)
    for trace in sorted({t for t, _ in cells}):
        half = next((h for h in ("tuning", "held-out") if trace in split.get(h, [])), "unsplit")
        halves[half].append(trace)

    lines = [
        "",
        "# Real programs",
        "",
        "The corpus of recorded programs (docs/CORPUS.md), replayed on each trace's own clock.",
        "Reproduce with:",
        "",
        "```sh",
        command,
        "```",
        "",
        "Per cell: % of all-local for the oracle, `none` (never migrate), tierkit and the best",
        "other policy; tierkit − none (do no harm: ≥ −0.5), tierkit − best other, and the share",
        "of the oracle's gain over `none` tierkit captures. tierkit's rules were chosen on the",
        "tuning half; the held-out half is reported separately.",
        "",
    ]
    for half in sorted(halves, key=lambda h: {"tuning": 0, "held-out": 1}.get(h, 2)):
        lines += [f"## {half} half: {', '.join(halves[half])}", ""]
        lines.append("| trace | ratio | oracle | none | tierkit | best other | tk − none | tk − best | capture |")
        lines.append("|---|---|---|---|---|---|---|---|---|")
        captures = []
        for trace in halves[half]:
            for (t, ratio), by in sorted(cells.items(), key=lambda kv: (kv[0][0], kv[0][1][1] / kv[0][1][0]), reverse=False):
                if t != trace or "tierkit" not in by or "none" not in by:
                    continue
                pct = {p: r["pct_of_all_local"] for p, r in by.items()}
                others = {p: v for p, v in pct.items() if p not in REFERENCES and p != "tierkit"}
                best = max(others, key=others.get) if others else None
                tk, none, oracle = pct["tierkit"], pct["none"], pct.get("oracle", float("nan"))
                gain = oracle - none
                capture = (tk - none) / gain if gain > 0.5 else None
                if capture is not None:
                    captures.append(max(capture, 1e-3))
                lines.append(
                    f"| {trace} | {ratio_text(ratio)} | {oracle:.1f} | {none:.1f} | {tk:.1f} | "
                    + (f"{others[best]:.1f} ({best})" if best else "")
                    + f" | {tk - none:+.1f} | "
                    + (f"{tk - others[best]:+.1f}" if best else "")
                    + " | "
                    + ("" if capture is None else f"{capture:.2f}")
                    + " |"
                )
        if captures:
            geo = math.exp(sum(math.log(c) for c in captures) / len(captures))
            lines += ["", f"Geometric mean of the capture over the cells where the oracle gains > 0.5 points: {geo:.2f}."]
        lines.append("")
        lines += policy_summary(cells, halves[half])
    if first_access is not None:
        lines += placement_section(cells, first_access)

    # One figure per trace: every policy's % of all-local per ratio.
    for trace in sorted({t for t, _ in cells}):
        ratios = sorted({r for t, r in cells if t == trace}, key=lambda r: r[1] / r[0], reverse=True)
        policies = list(dict.fromkeys(p for (t, _), by in cells.items() if t == trace for p in by))
        fig, ax = plt.subplots(figsize=(7, 4))
        xs = [ratio_text(r) for r in ratios]
        for i, p in enumerate(policies):
            ys = [cells[(trace, r)][p]["pct_of_all_local"] if p in cells[(trace, r)] else None for r in ratios]
            style = "-" if p in ("tierkit", "none", "oracle") else ":"
            ax.plot(xs, ys, style, marker="os^vD<>"[i % 7], color=plt.cm.tab20(i % 20), label=p)
        ax.set_title(f"{trace} (recorded): throughput vs fast:slow ratio")
        ax.set_xlabel("fast:slow capacity")
        ax.set_ylabel("% of all-local throughput")
        ax.legend(fontsize=6, ncol=3)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(figures / f"real-{trace}.png", dpi=100)
        plt.close(fig)
        lines += [f"![{trace}](figures/real-{trace}.png)", ""]

    write_csv(rows, out / "real-results.csv")
    lines += ["Every run's figures: [real-results.csv](real-results.csv).", ""]
    page = out / "RESULTS.md"
    with page.open("a") as f:
        f.write("\n".join(lines))
    print(f"appended the real suite ({len(cells)} cells) to {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
