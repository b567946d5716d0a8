//! The answer `tierkit advise` (and Python's `tierkit.advise`) gives for one program's
//! trace: the smallest DRAM share that keeps it within a target slowdown of all-DRAM
//! under the best policy, the best policy at each size with its margins, and how far to
//! trust that (the runs' span against each policy's settling time, and the corpus
//! program the trace is shaped like, [`crate::corpus_class`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::compare::{real_suite_policies, Row};
use crate::corpus_class::Class;
use crate::SimError;

/// The fast:slow ratios tried when none are given: 1/33 to 1/3 of the footprint in DRAM.
pub const RATIOS: [(u64, u64); 5] = [(1, 32), (1, 16), (1, 8), (1, 4), (1, 2)];

/// References that bound the answer rather than compete in it.
const REFERENCES: [&str; 3] = ["all-local", "oracle", "static-oracle"];

/// One DRAM size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Size {
    /// Its fast:slow ratio, as `"1:16"`.
    pub ratio: String,
    /// Share of the footprint in DRAM, and its bytes.
    pub dram_share: f64,
    pub dram_bytes: u64,
    /// The best policy there (`none` included) and its throughput, % of all-DRAM.
    pub best: String,
    pub best_pct_of_all_local: f64,
    /// The second best and how many points the best leads it by.
    pub runner_up: Option<String>,
    pub margin_over_runner_up: Option<f64>,
    /// Points the best leads `none` by.
    pub margin_over_none: Option<f64>,
}

/// One policy at one size, as the answer's figure and a deployment's check use it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub policy: String,
    /// Its fast:slow ratio, as `"1:16"`.
    pub ratio: String,
    /// Throughput, % of all-DRAM.
    pub pct_of_all_local: f64,
    /// Share of accesses the fast tier served.
    pub fast_hit_ratio: f64,
    /// Pages promoted and demoted per second of the program's simulated time.
    pub promotions_per_s: f64,
    pub demotions_per_s: f64,
}

/// The answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Advice {
    /// The trace it is for, and the time base its replays used.
    pub trace: String,
    pub time_base: String,
    /// The largest slowdown against all-DRAM accepted, in percent.
    pub target_slowdown_pct: f64,
    /// The smallest size within the target, if any.
    pub recommended: Option<Size>,
    /// Every size, smallest DRAM share first.
    pub sizes: Vec<Size>,
    /// Simulated seconds the runs span, and the policies whose settling time is longer.
    pub run_seconds: f64,
    pub too_short_for: Vec<String>,
    /// The corpus program the trace is shaped like, when a corpus was read.
    pub class: Option<Class>,
    /// Every policy (references aside) at every size, in the order of `sizes`.
    pub runs: Vec<Run>,
    /// The runs whole (`compare --json` has them all).
    #[serde(skip)]
    pub rows: Vec<Row>,
}

/// The subjects an advice runs: `given` (every policy the real suite compares when
/// empty), without the oracles the answer does not need, with `all-local` and `none`.
pub fn subjects(given: &[String]) -> Vec<String> {
    let mut policies = if given.is_empty() { real_suite_policies() } else { given.to_vec() };
    policies.retain(|p| p != "oracle" && p != "static-oracle");
    for needed in ["all-local", "none"] {
        if !policies.iter().any(|p| p == needed) {
            policies.push(needed.to_string());
        }
    }
    policies
}

/// Checks a target slowdown, in percent: above 0 and below 100.
pub fn check_target(target_pct: f64) -> Result<f64, SimError> {
    if target_pct > 0.0 && target_pct < 100.0 {
        Ok(target_pct)
    } else {
        Err(SimError::bad_option("advise", "target", target_pct, "a slowdown above 0% and below 100%"))
    }
}

/// The answer for `trace` from the runs of [`subjects`] over its ratios (`rows`, as
/// [`crate::compare::compare`] returns them), at `target_pct` percent of slowdown, with
/// the trace's `class` when known.
pub fn advise(trace: &str, target_pct: f64, rows: Vec<Row>, class: Option<Class>) -> Result<Advice, SimError> {
    let target_pct = check_target(target_pct)?;
    let time_base = rows.first().map(|r| r.result.time_base.clone()).unwrap_or_default();
    let mut by_ratio: BTreeMap<(u64, u64), Vec<&Row>> = BTreeMap::new();
    for r in rows.iter().filter(|r| !REFERENCES.contains(&r.result.policy.as_str())) {
        by_ratio.entry(r.result.ratio).or_default().push(r);
    }
    // Smallest DRAM share first.
    let mut ratios: Vec<(u64, u64)> = by_ratio.keys().copied().collect();
    ratios.sort_by(|x, y| (x.0 * y.1).cmp(&(y.0 * x.1)));
    let mut sizes: Vec<Size> = Vec::new();
    let mut per_policy: Vec<Run> = Vec::new();
    for ratio in ratios {
        let mut runs = by_ratio[&ratio].clone();
        per_policy.extend(runs.iter().map(|r| {
            let seconds = r.result.wall_ns * 1e-9;
            let per_s = |n: u64| if seconds > 0.0 { n as f64 / seconds } else { 0.0 };
            Run {
                policy: r.result.policy.clone(),
                ratio: crate::result::ratio::text(ratio),
                pct_of_all_local: r.pct_of_all_local,
                fast_hit_ratio: r.result.fast_hit_ratio,
                promotions_per_s: per_s(r.result.promotions),
                demotions_per_s: per_s(r.result.demotions),
            }
        }));
        runs.sort_by(|x, y| y.pct_of_all_local.total_cmp(&x.pct_of_all_local));
        let best = runs[0];
        let none = runs.iter().find(|r| r.result.policy == "none").map(|r| r.pct_of_all_local);
        sizes.push(Size {
            ratio: crate::result::ratio::text(ratio),
            dram_share: ratio.0 as f64 / (ratio.0 + ratio.1) as f64,
            dram_bytes: best.result.fast_pages * tierkit_core::PAGE_SIZE,
            best: best.result.policy.clone(),
            best_pct_of_all_local: best.pct_of_all_local,
            runner_up: runs.get(1).map(|r| r.result.policy.clone()),
            margin_over_runner_up: runs.get(1).map(|r| best.pct_of_all_local - r.pct_of_all_local),
            margin_over_none: none.map(|n| best.pct_of_all_local - n),
        });
    }
    if sizes.is_empty() {
        return Err(SimError::bad_option(
            "advise",
            "policies",
            "references only",
            "at least one policy besides the references",
        ));
    }
    let recommended = sizes.iter().find(|s| 100.0 - s.best_pct_of_all_local <= target_pct).cloned();
    let wall = rows.iter().map(|r| r.result.wall_ns).fold(f64::INFINITY, f64::min);
    let mut too_short: Vec<String> = rows
        .iter()
        .filter(|r| r.result.horizon_ns as f64 > r.result.wall_ns)
        .map(|r| r.result.policy.clone())
        .collect();
    too_short.sort();
    too_short.dedup();
    Ok(Advice {
        trace: trace.to_string(),
        time_base,
        target_slowdown_pct: target_pct,
        recommended,
        sizes,
        run_seconds: wall * 1e-9,
        too_short_for: too_short,
        class,
        runs: per_policy,
        rows,
    })
}
