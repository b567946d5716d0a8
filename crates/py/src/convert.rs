//! Results as Python values: a row as a dict with the keys and values of a row of
//! `tierkit compare --json` (serialised by the same serde derive, through `pythonize`:
//! the ratio as `"1:16"`), a timeline as a dict of columns named as in the CLI's
//! `--timeline` CSV files.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tierkit_sim::compare::Row;
use tierkit_sim::result::IntervalRecord;

/// The summary of `row` (everything but the timeline, which its serde form leaves out).
pub fn summary<'py>(py: Python<'py>, row: &Row) -> PyResult<Bound<'py, PyDict>> {
    Ok(pythonize::pythonize(py, row)?.cast_into::<PyDict>()?)
}

/// The timeline as columns, in the CLI's CSV order: `end_ns, accesses, throughput,
/// fast_hit_ratio, latency_ns_tier0.., promotions, demotions, migrated_bytes,
/// access_count_ratio`.
///
/// Built by hand: serde sees a timeline as a sequence of records (rows), and these are
/// its transposition, one list per column with `latency_ns` spread over a column per
/// tier; no serde attribute expresses that. The names are the CSV header's.
pub fn timeline<'py>(py: Python<'py>, points: &[IntervalRecord]) -> PyResult<Bound<'py, PyDict>> {
    let col = |f: fn(&IntervalRecord) -> f64| points.iter().map(f).collect::<Vec<f64>>();
    let count = |f: fn(&IntervalRecord) -> u64| points.iter().map(f).collect::<Vec<u64>>();
    let d = PyDict::new(py);
    d.set_item("end_ns", col(|t| t.end_ns))?;
    d.set_item("accesses", count(|t| t.accesses))?;
    d.set_item("throughput", col(|t| t.throughput))?;
    d.set_item("fast_hit_ratio", col(|t| t.fast_hit_ratio))?;
    let tiers = points.first().map_or(0, |t| t.latency_ns.len());
    for tier in 0..tiers {
        let lat: Vec<f64> = points.iter().map(|t| t.latency_ns[tier]).collect();
        d.set_item(format!("latency_ns_tier{tier}"), lat)?;
    }
    d.set_item("promotions", count(|t| t.promotions))?;
    d.set_item("demotions", count(|t| t.demotions))?;
    d.set_item("migrated_bytes", count(|t| t.migrated_bytes))?;
    d.set_item("access_count_ratio", points.iter().map(|t| t.access_count_ratio).collect::<Vec<_>>())?;
    Ok(d)
}
