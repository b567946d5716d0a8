//! The verdict that ends `tierkit compare`'s table: per policy over all cells, the
//! geometric mean of its share of the oracle's throughput, the cells it won and its worst
//! cell; then what the columns mean.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::Result;
use tierkit_sim::compare::Row;

/// References that bound the cells rather than compete in them.
const BOUNDS: [&str; 3] = ["all-local", "oracle", "static-oracle"];

/// Rows within this many points of a cell's best share the win.
const TIE_POINTS: f64 = 0.1;

/// One policy's record over the cells.
#[derive(Default)]
struct Record {
    log_sum: f64,
    cells: usize,
    won: usize,
    worst: Option<(f64, String)>,
}

/// What the columns of the table and the summary mean.
const LEGEND: [(&str, &str); 8] = [
    ("%local", "throughput as a share of all-local's (every page in the fast tier)"),
    ("%oracle", "throughput as a share of the oracle's (each epoch's most-hit placement, knowing the future)"),
    (
        "*",
        "beats the oracle, which maximizes fast-tier hits net of migration cost and does not model contention or MLP classes",
    ),
    ("hit", "share of accesses served by the fast tier"),
    ("promoted, demoted, migr GiB", "pages moved up and down, and the bytes copied"),
    ("tracking, cpu%", "the policy's metadata, and the tiering mechanism's CPU as a share of the application's"),
    ("geomean %or", "geometric mean of %oracle over the cells"),
    (
        "cells won",
        "cells where the policy is best or within 0.1 points of the best (references excluded, none included)",
    ),
];

/// Writes the summary of `rows` (a cell is the runs of one workload stream at one
/// ratio; none for a single policy), with `label` naming a cell for people, then the
/// legend.
pub fn write(out: &mut impl Write, rows: &[Row], label: impl Fn(&Row) -> String) -> Result<()> {
    let mut cells: BTreeMap<String, Vec<&Row>> = BTreeMap::new();
    for r in rows.iter().filter(|r| !BOUNDS.contains(&r.result.policy.as_str())) {
        let x = &r.result;
        let cell = format!("{} {:?} {}:{}", x.workload, x.options, x.ratio.0, x.ratio.1);
        cells.entry(cell).or_default().push(r);
    }
    let mut order: Vec<&str> = Vec::new();
    let mut records: BTreeMap<&str, Record> = BTreeMap::new();
    for runs in cells.values() {
        let cell = label(runs[0]);
        let best = runs.iter().map(|r| r.pct_of_oracle).fold(f64::NEG_INFINITY, f64::max);
        for r in runs {
            let name = r.result.policy.as_str();
            if !order.contains(&name) {
                order.push(name);
            }
            let rec = records.entry(name).or_default();
            rec.log_sum += (r.pct_of_oracle.max(1e-9) / 100.0).ln();
            rec.cells += 1;
            rec.won += usize::from(r.pct_of_oracle >= best - TIE_POINTS);
            if rec.worst.as_ref().is_none_or(|(w, _)| r.pct_of_oracle < *w) {
                rec.worst = Some((r.pct_of_oracle, cell.clone()));
            }
        }
    }
    if order.len() >= 2 {
        summarize(out, &order, &records, cells.len())?;
    }
    writeln!(out)?;
    for (column, meaning) in LEGEND {
        writeln!(out, "  {column:<28} {meaning}")?;
    }
    Ok(())
}

/// The summary lines, one per policy in `order`.
fn summarize(out: &mut impl Write, order: &[&str], records: &BTreeMap<&str, Record>, cells: usize) -> Result<()> {
    writeln!(out)?;
    writeln!(out, "Summary over {cells} cells (workload x ratio):")?;
    writeln!(out, "  {:<14} {:>12} {:>10}   worst cell", "policy", "geomean %or", "cells won")?;
    for &name in order {
        let rec = &records[name];
        let (worst, at) = rec.worst.clone().unwrap_or_default();
        writeln!(
            out,
            "  {:<14} {:>12.1} {:>10}   {:.1} ({at})",
            name,
            100.0 * (rec.log_sum / rec.cells as f64).exp(),
            format!("{}/{}", rec.won, rec.cells),
            worst
        )?;
    }
    Ok(())
}
