//! `tierkit advise --deploy -- CMD`: after the answer, runs the recommended policy live
//! on the program, as `tierkit run --policy P -- CMD` does, and sets what the simulator
//! predicted beside what was measured:
//!
//! - the fast-tier residency of the hot set: the trace's most accessed pages, as many as
//!   the recommended DRAM size holds, each weighted by its accesses in the trace.
//!   Predicted: the share of the hot set's accesses whose pages the simulated policy had
//!   on the fast tier at the end of its run (the simulator's
//!   [`tierkit_sim::result::RunResult::hot_fast_residency`]), the mean over
//!   [`PREDICTION_SEEDS`] seeds of the simulator's randomness. Measured: the share of the
//!   hot set's accesses whose pages `move_pages(2)` finds on a fast node (among the pages
//!   the program has mapped), queried every [`SAMPLE_EVERY`] while the program runs; the
//!   last query counts (where the policy had brought the placement by the program's
//!   end). The unweighted share of the hot pages on a fast node is reported beside it.
//! - promotions and demotions per second: of the program's simulated time (the mean over
//!   the same seeds), and of the live run's wall time;
//! - the fast-tier hit ratio, where the live source estimates one.
//!
//! The pages are matched by address: with `--deploy`, the program runs (recorded and
//! deployed) without address-space randomization, so a deterministic program maps the
//! same addresses both times.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::Serialize;
use tierkit_core::{TierId, PAGE_SIZE};
use tierkit_linux::run::{self, DaemonConfig, SourceChoice};
use tierkit_linux::signals::Signals;
use tierkit_linux::target::Target;
use tierkit_linux::topology::{Topology, TopologyOverrides};
use tierkit_sim::advise::{Advice, Size};
use tierkit_sim::compare::Grid;
use tierkit_sim::engine::{self, RunSpec, Subject};
use tierkit_sim::result::{ratio, IntervalRecord, RunResult};
use tierkit_sim::trace::{self, info::stats_with_top};

use crate::live_cmd::state_dir;

/// How often the hot set's placement is queried during the live run.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// The closing share of the simulated run whose hit ratio is reported beside the whole
/// run's: its last tenth (the timeline's last intervals, at least one), the hit ratio the
/// policy had settled at by the program's end.
pub const SETTLED_SHARE: f64 = 0.1;

/// Seeds of the simulator's randomness (its sources' sampling jitter) the predicted
/// placement is the mean over: the answer's own run and runs at the next seeds. One
/// seed's figure moves by several points between seeds on the same trace, as much as
/// between recordings (docs/BENCHMARKS.md, "advise --deploy").
pub const PREDICTION_SEEDS: u64 = 5;

/// The live run's settings.
fn config(policy: &str, source: SourceChoice, cpu_budget: f64) -> DaemonConfig {
    DaemonConfig {
        policy: policy.to_string(),
        source,
        cpu_budget,
        status_every: None,
        state_dir: state_dir(None),
        ..DaemonConfig::default()
    }
}

/// Refuses, before anything is recorded, a machine the policy could not tier: one
/// without a slow tier, or without the live source asked for. Returns its topology.
pub fn check_machine(source: SourceChoice) -> Result<Topology> {
    let cfg = config("tierkit", source, DaemonConfig::default().cpu_budget);
    let topology = Topology::discover_with(&cfg.root, &TopologyOverrides::default())
        .context("--deploy: cannot read this machine's NUMA topology")?;
    if let Some(why) = topology.nothing_to_tier() {
        bail!(
            "--deploy: this machine has no slow tier to deploy on ({why}); advise without --deploy here, \
             or on a machine with CXL (or other slower) memory"
        );
    }
    run::preflight(&cfg).context("--deploy: the policy could not run live on this machine")?;
    Ok(topology)
}

/// Runs the program and every later one without address-space randomization (the
/// setting is inherited through fork and exec), so that the deployed run maps the
/// addresses the recorded one did.
pub fn fix_addresses() -> Result<()> {
    // SAFETY: personality(2) with the current persona plus one flag; it changes only how
    // later execs lay out their address space.
    let current = unsafe { libc::personality(0xffff_ffff) };
    if current < 0 || unsafe { libc::personality((current | libc::ADDR_NO_RANDOMIZE) as libc::c_ulong) } < 0 {
        bail!("--deploy: cannot turn address-space randomization off: {}", io::Error::last_os_error());
    }
    Ok(())
}

/// What the simulator predicted for the deployed policy.
#[derive(Debug, Serialize)]
pub struct Prediction {
    pub policy: String,
    pub ratio: String,
    /// The hot set: its pages and their share of the trace's accesses.
    pub hot_pages: usize,
    pub hot_share: f64,
    /// The hot set's fast-tier residency, the mean over the seeds.
    pub hot_fast_residency: f64,
    /// The hot set's fast-tier residency at each seed, the answer's own first.
    pub hot_fast_by_seed: Vec<f64>,
    /// The fast-tier hit ratio over the whole run and over its last [`SETTLED_SHARE`].
    pub fast_hit_ratio: f64,
    pub settled_hit_ratio: f64,
    /// Pages moved per second of simulated time, the means over the seeds.
    pub promotions_per_s: f64,
    pub demotions_per_s: f64,
    /// The hot set's addresses and their accesses in the trace.
    #[serde(skip)]
    pub hot: Vec<usize>,
    #[serde(skip)]
    pub weights: Vec<u64>,
}

/// The size deployed: the recommended one, else the largest tried.
fn deployed_size(adv: &Advice) -> Option<&Size> {
    adv.recommended.as_ref().or(adv.sizes.last())
}

/// The prediction for the policy the answer recommends, from its run and the trace's
/// hottest pages. Refused when that policy is `none` (nothing to deploy).
pub fn predict(adv: &Advice, trace_path: &str, grid: &Grid) -> Result<Prediction> {
    let size = deployed_size(adv).context("--deploy: the answer has no size")?;
    if size.best == "none" {
        bail!("--deploy: not migrating is best at {}: there is no policy to deploy", size.ratio);
    }
    let run = adv
        .runs
        .iter()
        .find(|r| r.policy == size.best && r.ratio == size.ratio)
        .with_context(|| format!("--deploy: no run of {} at {} in the answer", size.best, size.ratio))?;
    let row = adv
        .rows
        .iter()
        .find(|r| r.result.policy == size.best && ratio::text(r.result.ratio) == size.ratio)
        .with_context(|| format!("--deploy: no row of {} at {} in the answer", size.best, size.ratio))?;
    let settled = settled_hit_ratio(&row.result.timeline).unwrap_or(run.fast_hit_ratio);
    let mut seeds = vec![row.result.clone()];
    seeds.extend(other_seeds(grid, &size.best, row.result.ratio)?);
    let hot_fast_by_seed =
        seeds.iter().map(|r| r.hot_fast_residency).collect::<Option<Vec<f64>>>().with_context(|| {
            format!("--deploy: a run of {} at {} did not measure the hot set", size.best, size.ratio)
        })?;
    let mean = |f: &dyn Fn(&RunResult) -> f64| seeds.iter().map(f).sum::<f64>() / seeds.len() as f64;
    let per_s = |n: u64, r: &RunResult| n as f64 / (r.wall_ns * 1e-9);
    let k = (size.dram_bytes / PAGE_SIZE) as usize;
    let stats = stats_with_top(trace::open(trace_path, None)?.as_mut(), trace_path, k)?;
    let hot_accesses: u64 = stats.hottest.iter().map(|h| h.1).sum();
    let hot_share = hot_accesses as f64 / stats.accesses.max(1) as f64;
    Ok(Prediction {
        policy: size.best.clone(),
        ratio: size.ratio.clone(),
        hot_pages: stats.hottest.len(),
        hot_share,
        hot_fast_residency: hot_fast_by_seed.iter().sum::<f64>() / hot_fast_by_seed.len() as f64,
        hot_fast_by_seed,
        fast_hit_ratio: run.fast_hit_ratio,
        settled_hit_ratio: settled,
        promotions_per_s: mean(&|r| per_s(r.promotions, r)),
        demotions_per_s: mean(&|r| per_s(r.demotions, r)),
        hot: stats.hottest.iter().map(|h| (h.0 * PAGE_SIZE) as usize).collect(),
        weights: stats.hottest.iter().map(|h| h.1).collect(),
    })
}

/// The runs of `policy` at `ratio` of `grid`'s trace, measuring the hot set, at the seeds
/// after the grid's, up to [`PREDICTION_SEEDS`] in all, one thread each.
fn other_seeds(grid: &Grid, policy: &str, ratio: (u64, u64)) -> Result<Vec<RunResult>> {
    let spec = RunSpec { measure_hot: true, ..grid.run_spec(&grid.workloads[0], ratio) };
    std::thread::scope(|scope| {
        let runs: Vec<_> = (1..PREDICTION_SEEDS)
            .map(|s| {
                let spec = RunSpec { seed: grid.seed + s, ..spec.clone() };
                scope.spawn(move || engine::run(&spec, Subject::Named(policy.to_string()), &mut |_| {}))
            })
            .collect();
        runs.into_iter().map(|h| Ok(h.join().expect("a simulation does not panic")?)).collect()
    })
}

/// The fast-tier hit ratio of the last [`SETTLED_SHARE`] of `timeline`'s intervals,
/// weighted by their accesses; `None` without intervals or accesses.
fn settled_hit_ratio(timeline: &[IntervalRecord]) -> Option<f64> {
    let last = ((timeline.len() as f64 * SETTLED_SHARE).ceil() as usize).max(1);
    let tail = &timeline[timeline.len().saturating_sub(last)..];
    let accesses: u64 = tail.iter().map(|i| i.accesses).sum();
    let hits: f64 = tail.iter().map(|i| i.fast_hit_ratio * i.accesses as f64).sum();
    (accesses > 0).then(|| hits / accesses as f64)
}

/// The smallest and largest of `v` (infinite for none).
fn min_max(v: &[f64]) -> (f64, f64) {
    (v.iter().copied().fold(f64::INFINITY, f64::min), v.iter().copied().fold(f64::NEG_INFINITY, f64::max))
}

/// What the live run measured.
#[derive(Debug, Serialize)]
pub struct Measured {
    pub source: Option<String>,
    pub seconds: f64,
    /// The hot set's fast-tier residency at the last query, weighted by the trace's
    /// accesses and unweighted, and how many queries found the program's pages.
    pub hot_fast_residency: Option<f64>,
    pub hot_pages_fast: Option<f64>,
    pub samples: usize,
    pub promotions_per_s: f64,
    pub demotions_per_s: f64,
    pub fast_hit_ratio: Option<f64>,
    pub exit_code: Option<i32>,
}

/// Of the hot pages process `pid` has mapped, the share of their weight and of their
/// number on `fast` nodes; `None` when none is mapped (or the process is gone).
fn residency(pid: u32, pred: &Prediction, fast: &[u32]) -> Option<(f64, f64)> {
    let mut status = vec![0i32; pred.hot.len()];
    tierkit_linux::sys::move_pages(pid as libc::pid_t, &pred.hot, None, &mut status, 0).ok()?;
    let (mut weight, mut weight_fast, mut pages, mut pages_fast) = (0u64, 0u64, 0usize, 0usize);
    for (&node, &w) in status.iter().zip(&pred.weights).filter(|(&node, _)| node >= 0) {
        let on_fast = fast.contains(&(node as u32));
        weight += w;
        pages += 1;
        if on_fast {
            weight_fast += w;
            pages_fast += 1;
        }
    }
    (pages > 0).then(|| (weight_fast as f64 / weight.max(1) as f64, pages_fast as f64 / pages as f64))
}

/// Runs `cmd` under the predicted policy with `source` and `cpu_budget` (a fraction of
/// a core, as [`DaemonConfig::cpu_budget`]), querying the hot set's
/// placement while it runs.
pub fn deploy(
    cmd: &[String],
    pred: &Prediction,
    (source, cpu_budget): (SourceChoice, f64),
    topology: &Topology,
) -> Result<Measured> {
    let cfg = config(&pred.policy, source, cpu_budget);
    let fast = topology.tier_nodes(TierId::FAST).to_vec();
    let signals = Signals::install()?;
    let mut target = Target::spawn(cmd).with_context(|| format!("--deploy: cannot start {}", cmd[0]))?;
    let pid = target.pid();
    let done = AtomicBool::new(false);
    let (report, samples) = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            let mut samples = Vec::new();
            let mut next = Instant::now() + SAMPLE_EVERY;
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
                if Instant::now() >= next {
                    next += SAMPLE_EVERY;
                    samples.extend(residency(pid, pred, &fast));
                }
            }
            samples
        });
        let report = run::run(&cfg, &mut target, &signals, &mut io::stderr());
        done.store(true, Ordering::Relaxed);
        (report, sampler.join().unwrap_or_default())
    });
    let report = report.with_context(|| format!("--deploy: cannot tier pid {pid} ({})", cmd[0]))?;
    let s = &report.summary;
    let seconds = s.elapsed.as_secs_f64();
    let per_s = |n: u64| if seconds > 0.0 { n as f64 / seconds } else { 0.0 };
    Ok(Measured {
        source: report.source.map(str::to_string),
        seconds,
        hot_fast_residency: samples.last().map(|s| s.0),
        hot_pages_fast: samples.last().map(|s| s.1),
        samples: samples.len(),
        promotions_per_s: per_s(s.promoted_pages),
        demotions_per_s: per_s(s.demoted_pages),
        fast_hit_ratio: s.hit_ratio,
        exit_code: report.target_exit_code(),
    })
}

/// Predicted against measured, as text: a table, then one `key=value` line for scripts.
pub fn text(pred: &Prediction, m: &Measured) -> String {
    let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("n/a".to_string(), f);
    let pct = |v: f64| format!("{:.1}%", v * 100.0);
    let mut out = format!(
        "deployed: {} (the best at {}) on the program, live through the {} source for {:.1} s\n",
        pred.policy,
        pred.ratio,
        m.source.as_deref().unwrap_or("no"),
        m.seconds
    );
    out += &format!("  {:<44} {:>12} {:>12}\n", "", "predicted", "measured");
    out += &format!(
        "  {:<44} {:>12} {:>12}\n",
        format!("hot set in the fast tier ({} pages, {:.0}% of accesses)", pred.hot_pages, pred.hot_share * 100.0),
        pct(pred.hot_fast_residency),
        opt(m.hot_fast_residency, &pct)
    );
    let (lo, hi) = min_max(&pred.hot_fast_by_seed);
    out += &format!(
        "  {:<44} {:>12}\n",
        format!("  over {} seeds of the simulator, from-to", pred.hot_fast_by_seed.len()),
        format!("{:.1}-{:.1}%", lo * 100.0, hi * 100.0)
    );
    out += &format!("  {:<44} {:>12} {:>12}\n", "  its pages, unweighted", "", opt(m.hot_pages_fast, &pct));
    out += &format!("  {:<44} {:>12.1} {:>12.1}\n", "promotions per second", pred.promotions_per_s, m.promotions_per_s);
    out += &format!("  {:<44} {:>12.1} {:>12.1}\n", "demotions per second", pred.demotions_per_s, m.demotions_per_s);
    out += &format!(
        "  {:<44} {:>12} {:>12}\n",
        "fast-tier hit ratio",
        format!("{:.3}", pred.fast_hit_ratio),
        opt(m.fast_hit_ratio, &|v| format!("{v:.3}"))
    );
    out += &format!("  {:<44} {:>12.3}\n", "  over the run's last tenth", pred.settled_hit_ratio);
    out += "  (predicted rates are per second of the program's simulated time, measured ones per second of the \
            live run; the measured hit ratio is n/a where the source cannot estimate it)\n";
    out += &format!(
        "deploy: policy={} ratio={} hot_pages={} predicted_hot_fast={:.4} predicted_hot_fast_min={:.4} \
         predicted_hot_fast_max={:.4} measured_hot_fast={} measured_hot_pages_fast={} samples={} \
         predicted_promotions_per_s={:.1} measured_promotions_per_s={:.1} predicted_demotions_per_s={:.1} \
         measured_demotions_per_s={:.1} predicted_hit_ratio={:.4} predicted_settled_hit_ratio={:.4} measured_hit_ratio={} \
         exit_code={}\n",
        pred.policy,
        pred.ratio,
        pred.hot_pages,
        pred.hot_fast_residency,
        lo,
        hi,
        opt(m.hot_fast_residency, &|v| format!("{v:.4}")),
        opt(m.hot_pages_fast, &|v| format!("{v:.4}")),
        m.samples,
        pred.promotions_per_s,
        m.promotions_per_s,
        pred.demotions_per_s,
        m.demotions_per_s,
        pred.fast_hit_ratio,
        pred.settled_hit_ratio,
        opt(m.fast_hit_ratio, &|v| format!("{v:.4}")),
        m.exit_code.map_or("none".into(), |c| c.to_string()),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(accesses: u64, fast_hit_ratio: f64) -> IntervalRecord {
        IntervalRecord { accesses, fast_hit_ratio, ..IntervalRecord::default() }
    }

    #[test]
    fn the_settled_hit_ratio_is_the_last_tenths_access_weighted() {
        // 20 intervals: a ramp at 0.1, then the last two at 0.5 (1,000 accesses) and 0.8 (3,000).
        let mut t: Vec<IntervalRecord> = (0..18).map(|_| interval(1_000, 0.1)).collect();
        t.extend([interval(1_000, 0.5), interval(3_000, 0.8)]);
        let settled = settled_hit_ratio(&t).unwrap();
        assert!((settled - (500.0 + 2_400.0) / 4_000.0).abs() < 1e-12, "{settled}");
        assert_eq!(settled_hit_ratio(&t[..3]), Some(0.1), "at least one interval");
        assert_eq!(settled_hit_ratio(&[]), None);
        assert_eq!(settled_hit_ratio(&[interval(0, 0.0)]), None, "no accesses");
    }
}
