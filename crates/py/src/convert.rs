//! Results as Python values: a row as a dict with the keys of `tierkit compare --json`
//! (the ratio as `"1:16"`), a timeline as a dict of columns named as in the CLI's
//! `--timeline` CSV files.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tierkit_sim::compare::Row;
use tierkit_sim::result::IntervalRecord;

/// The summary of `row` (everything but the timeline).
pub fn summary<'py>(py: Python<'py>, row: &Row) -> PyResult<Bound<'py, PyDict>> {
    let r = &row.result;
    let d = PyDict::new(py);
    d.set_item("workload", &r.workload)?;
    d.set_item("policy", &r.policy)?;
    d.set_item("machine", &r.machine)?;
    d.set_item("ratio", format!("{}:{}", r.ratio.0, r.ratio.1))?;
    d.set_item("pages", r.pages)?;
    d.set_item("workload_pages", r.workload_pages)?;
    d.set_item("fast_pages", r.fast_pages)?;
    d.set_item("accesses", r.accesses)?;
    d.set_item("scale", r.scale)?;
    d.set_item("time_base", &r.time_base)?;
    d.set_item("horizon_ns", r.horizon_ns)?;
    d.set_item("seed", r.seed)?;
    d.set_item("options", &r.options)?;
    d.set_item("wall_ns", r.wall_ns)?;
    d.set_item("throughput", r.throughput)?;
    d.set_item("fast_hit_ratio", r.fast_hit_ratio)?;
    d.set_item("miss_ratio", r.miss_ratio)?;
    d.set_item("promotions", r.promotions)?;
    d.set_item("demotions", r.demotions)?;
    d.set_item("migrated_bytes", r.migrated_bytes)?;
    d.set_item("access_count_ratio", r.access_count_ratio)?;
    d.set_item("tracking_bytes", r.tracking_bytes)?;
    d.set_item("mechanism_cpu_ns", r.mechanism_cpu_ns)?;
    d.set_item("mechanism_cpu_pct", r.mechanism_cpu_pct)?;
    d.set_item("pct_of_all_local", row.pct_of_all_local)?;
    d.set_item("pct_of_oracle", row.pct_of_oracle)?;
    Ok(d)
}

/// The timeline as columns, in the CLI's CSV order: `end_ns, accesses, throughput,
/// fast_hit_ratio, latency_ns_tier0.., promotions, demotions, migrated_bytes`.
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
    Ok(d)
}
