//! The page-hotness heat map of a workload: how often each part of the footprint is
//! accessed over time, counted from the workload's stream rebuilt from what the rows say
//! (`seed`, `options`, sizes), so it is the same for every policy.

use std::path::Path;

use tierkit_sim::workload::{page_heat, WorkloadSpec};

use super::chart::{Chart, HeatMap, HeatRow};
use super::{slug, Figure};

/// Rows of the map: equal ranges of page ids over the footprint.
const PAGE_BINS: usize = 64;
/// Columns of the map: equal shares of the stream's accesses.
const TIME_BINS: usize = 50;
/// A row label every this many rows (the rows are a few pixels high).
const LABEL_EVERY: usize = 16;

/// The page-hotness figure of `workload` built as `spec`, or, when the stream cannot be
/// rebuilt (a trace file that is gone, a bad option), the note that says why.
pub fn figure(workload: &str, spec: &WorkloadSpec) -> Result<Figure, String> {
    let none = format!("No page-hotness map for {workload}");
    if spec.name == "trace" {
        if let Some(path) = spec.options.get("path").filter(|p| !Path::new(p).is_file()) {
            return Err(format!("{none}: its trace file {path} is gone (or not reachable from here)."));
        }
    }
    let counts = page_heat(spec, PAGE_BINS, TIME_BINS)
        .map_err(|e| format!("{none}: its stream cannot be rebuilt from the rows: {e}."))?;
    let max = counts.iter().flatten().copied().max().unwrap_or(0);
    let scale = (max as f64).ln_1p();
    let share = |i: usize, of: usize| format!("{:.1}%", i as f64 * 100.0 / of as f64);
    let rows = (0..PAGE_BINS)
        .map(|p| HeatRow {
            label: if p % LABEL_EVERY == 0 { format!("{}%", p * 100 / PAGE_BINS) } else { String::new() },
            what: format!("pages {}-{}", share(p, PAGE_BINS), share(p + 1, PAGE_BINS)),
            cells: (0..TIME_BINS)
                .map(|t| {
                    let c = counts[t][p];
                    ((if scale > 0.0 { (c as f64).ln_1p() / scale } else { 0.0 }), c.to_string())
                })
                .collect(),
        })
        .collect();
    let map = HeatMap {
        title: format!("{workload}: page hotness over time"),
        x_label: "% of the run's accesses".into(),
        y_label: "page ids, % of the footprint".into(),
        value_label: "accesses per cell (log scale)".into(),
        scale: [max.to_string(), "0".into()],
        rows,
        columns: (0..TIME_BINS).map(|t| (share(t, TIME_BINS), share(t + 1, TIME_BINS))).collect(),
        column_noun: "run".into(),
        unit: "accesses".into(),
    };
    Ok(Figure {
        name: format!("{}_page-hotness", slug(workload)),
        chart: Chart::Heat(map),
        caption: format!(
            "Page hotness: accesses of the workload's generated stream (rebuilt from the rows' seed and options, \
             the same for every policy) per range of page ids ({PAGE_BINS} equal ranges of the footprint, down) \
             and over time ({TIME_BINS} equal shares of its accesses, across), coloured by log(1 + count) \
             relative to the busiest cell ({max} accesses), so Zipf tails stay visible."
        ),
    })
}
