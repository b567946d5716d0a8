//! A grid of runs — workloads × fast:slow ratios × policies — executed in parallel, with
//! every result also expressed as a fraction of the all-local and oracle references.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tierkit_core::policies::PolicySetup;

use crate::catalog;
use crate::engine::{run_recorded, RunSpec, Subject};
use crate::model::MachineConfig;
use crate::result::RunResult;
use crate::workload::{Recorded, WorkloadSpec};
use crate::SimError;

/// The ratios `tierkit compare` uses by default (FreqTier Tables II–V and HybridTier §5
/// evaluate 1:32, 1:16 and 1:8).
pub const DEFAULT_RATIOS: [(u64, u64); 3] = [(1, 32), (1, 16), (1, 8)];

/// A comparison to run.
#[derive(Clone, Debug)]
pub struct Grid {
    /// The machine.
    pub machine: MachineConfig,
    /// Workloads.
    pub workloads: Vec<WorkloadSpec>,
    /// Fast:slow ratios.
    pub ratios: Vec<(u64, u64)>,
    /// Policies and references to compare (all-local and oracle are always run too).
    pub policies: Vec<String>,
    /// Seed of the sources.
    pub seed: u64,
    /// Real misses per generated access (see [`RunSpec::scale`]).
    pub scale: u64,
    /// Replay traces on their own clock (see [`RunSpec::follow_clock`]).
    pub follow_clock: bool,
    /// Initialize memory in address order before the stream (see [`RunSpec::prefault`]).
    pub prefault: bool,
    /// Plain-cache semantics (see [`RunSpec::cache_mode`]).
    pub cache_mode: bool,
    /// Report M5's access-count ratio (see [`RunSpec::measure_acr`]).
    pub measure_acr: bool,
    /// Report where each run leaves the hot set (see [`RunSpec::measure_hot`]).
    pub measure_hot: bool,
}

impl Grid {
    /// The run of `workload` at `ratio` on this grid's machine, seed, time base and modes.
    pub fn run_spec(&self, workload: &WorkloadSpec, ratio: (u64, u64)) -> RunSpec {
        RunSpec {
            machine: self.machine.clone(),
            ratio,
            workload: workload.clone(),
            seed: self.seed,
            scale: self.scale,
            follow_clock: self.follow_clock,
            prefault: self.prefault,
            cache_mode: self.cache_mode,
            measure_acr: self.measure_acr,
            measure_hot: self.measure_hot,
        }
    }

    /// `workloads` × `ratios` × `policies` on the `cxl` preset with [`RunSpec::new`]'s
    /// defaults: seed 1, scale 1000 (a trace's own clock where it has one), prefault on,
    /// no cache mode, no access-count ratio, no hot set.
    pub fn new(workloads: Vec<WorkloadSpec>, ratios: Vec<(u64, u64)>, policies: Vec<String>) -> Self {
        let spec = RunSpec::new(WorkloadSpec::new("zipf", 1, 1, 1), (1, 16));
        Self {
            machine: spec.machine,
            workloads,
            ratios,
            policies,
            seed: spec.seed,
            scale: spec.scale,
            follow_clock: spec.follow_clock,
            prefault: spec.prefault,
            cache_mode: spec.cache_mode,
            measure_acr: spec.measure_acr,
            measure_hot: spec.measure_hot,
        }
    }
}

/// One row: a run and how it compares. Its JSON is [`RunResult`]'s fields and these
/// two, side by side (Python's row dicts are the same).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The run.
    #[serde(flatten)]
    pub result: RunResult,
    /// Throughput as a percentage of all-local on the same workload.
    pub pct_of_all_local: f64,
    /// Throughput as a percentage of the oracle at the same workload and ratio.
    pub pct_of_oracle: f64,
}

/// The version of [`Results`]' schema that this tierkit writes. Version 1 was the bare
/// JSON array of rows with the ratio as `[1, 16]`, before the document said its version.
/// Bump it when a field of [`Row`] or [`RunResult`] is renamed, removed, changes
/// representation or is added without `#[serde(default)]`, and have `tierkit report`
/// (`crates/cli/src/report_cmd/input.rs`) read the version it replaces.
pub const SCHEMA_VERSION: u32 = 2;

/// The document `tierkit compare --json` and `tierkit sim --json` write:
/// `{"schema_version": 2, "rows": [...]}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// [`SCHEMA_VERSION`] when written by this tierkit.
    pub schema_version: u32,
    /// The rows, in grid order (without their timelines, which are the `--timeline`
    /// CSVs).
    pub rows: Vec<Row>,
}

impl Results {
    /// The document of `rows`, at this tierkit's [`SCHEMA_VERSION`].
    pub fn new(rows: Vec<Row>) -> Results {
        Results { schema_version: SCHEMA_VERSION, rows }
    }
}

struct Job {
    workload: usize,
    ratio: (u64, u64),
    policy: String,
}

/// Runs every cell of `grid` on `threads` threads and returns the rows in grid order
/// (workload, ratio, policy), whatever order they finished in. `progress(done, total,
/// label)` is called after each run.
pub fn compare(
    grid: &Grid,
    threads: usize,
    progress: &(dyn Fn(usize, usize, &str) + Sync),
) -> Result<Vec<Row>, SimError> {
    let never = AtomicBool::new(false);
    Ok(compare_until(grid, threads, progress, &never)?.expect("never stopped"))
}

/// [`compare`], giving up once `stop` is set (from another thread, e.g. on Ctrl-C):
/// runs under way stop before their next chunk, no further run starts, and the result
/// is `Ok(None)`.
pub fn compare_until(
    grid: &Grid,
    threads: usize,
    progress: &(dyn Fn(usize, usize, &str) + Sync),
    stop: &AtomicBool,
) -> Result<Option<Vec<Row>>, SimError> {
    // Check every name before running anything.
    let setup = PolicySetup { fast_pages: 1, pages: 1 };
    for p in &grid.policies {
        catalog::subject(p, &setup)?;
    }
    // The references every row is measured against run whether listed or not.
    let mut names: Vec<String> = vec!["all-local".into(), "oracle".into()];
    for p in &grid.policies {
        if !names.contains(p) {
            names.push(p.clone());
        }
    }
    let mut jobs = Vec::new();
    for w in 0..grid.workloads.len() {
        // All-local does not depend on the ratio: run it once per workload.
        jobs.push(Job { workload: w, ratio: grid.ratios[0], policy: "all-local".into() });
        for &ratio in &grid.ratios {
            for p in names.iter().skip(1) {
                jobs.push(Job { workload: w, ratio, policy: p.clone() });
            }
        }
    }
    let records: Vec<Shared> =
        (0..grid.workloads.len()).map(|w| Shared::new(jobs.iter().filter(|j| j.workload == w).count())).collect();
    let results: Vec<Mutex<Option<Result<RunResult, SimError>>>> = jobs.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let finished = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1).min(jobs.len().max(1)) {
            scope.spawn(|| loop {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                let w = &grid.workloads[job.workload];
                let spec = grid.run_spec(w, job.ratio);
                let shared = &records[job.workload];
                let out = shared.get(w, stop).and_then(|recorded| {
                    run_recorded(&spec, recorded.as_ref(), Subject::Named(job.policy.clone()), &mut |_| {}, stop)
                });
                shared.release();
                let out = match out {
                    Ok(Some(result)) => Ok(result),
                    Ok(None) => break,
                    Err(e) => Err(e),
                };
                *results[i].lock().expect("no panics while holding the lock") = Some(out);
                let done = finished.fetch_add(1, Ordering::Relaxed) + 1;
                progress(done, jobs.len(), &format!("{} {}:{} {}", w.name, job.ratio.0, job.ratio.1, job.policy));
            });
        }
    });
    if stop.load(Ordering::Relaxed) {
        return Ok(None);
    }
    let mut runs = Vec::with_capacity(jobs.len());
    for r in results {
        runs.push(r.into_inner().expect("lock").expect("every job ran")?);
    }
    let find = |w: usize, ratio: Option<(u64, u64)>, name: &str| {
        runs.iter()
            .zip(&jobs)
            .find(|(_, j)| j.workload == w && ratio.is_none_or(|r| j.ratio == r) && j.policy == name)
            .map(|(r, _)| r)
            .expect("every listed run ran")
    };
    let mut rows = Vec::new();
    for w in 0..grid.workloads.len() {
        let local = find(w, None, "all-local");
        for &ratio in &grid.ratios {
            let oracle = find(w, Some(ratio), "oracle").throughput;
            for name in &grid.policies {
                let result = if name == "all-local" {
                    RunResult { ratio, ..local.clone() }
                } else {
                    find(w, Some(ratio), name).clone()
                };
                rows.push(Row {
                    pct_of_all_local: 100.0 * result.throughput / local.throughput,
                    pct_of_oracle: 100.0 * result.throughput / oracle,
                    result,
                });
            }
        }
    }
    Ok(Some(rows))
}

/// One workload's stream, recorded by its first run to start and replayed by the others
/// (see [`Recorded`]), dropped once its last run is done.
struct Shared {
    record: Mutex<Record>,
    /// Runs still to finish.
    left: AtomicUsize,
}

enum Record {
    NotYet,
    /// The record, or `None` where the stream is not recorded and each run builds it.
    Made(Option<Arc<Recorded>>),
}

impl Shared {
    fn new(runs: usize) -> Self {
        Self { record: Mutex::new(Record::NotYet), left: AtomicUsize::new(runs) }
    }

    /// The record of `spec`'s stream, made by the first caller while the others wait.
    /// A stream that fails to record is built by each run (which reports its error).
    fn get(&self, spec: &WorkloadSpec, stop: &AtomicBool) -> Result<Option<Arc<Recorded>>, SimError> {
        let mut record = self.record.lock().expect("no panics while holding the lock");
        if let Record::Made(r) = &*record {
            return Ok(r.clone());
        }
        let made = Recorded::record(spec, stop);
        let shared = match made {
            Ok(r) => r.map(Arc::new),
            Err(e) => {
                *record = Record::Made(None);
                return Err(e);
            }
        };
        *record = Record::Made(shared.clone());
        Ok(shared)
    }

    /// One run is done; the last drops the record.
    fn release(&self) {
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            *self.record.lock().expect("no panics while holding the lock") = Record::Made(None);
        }
    }
}

/// The built-in default suite: one workload per access pattern the papers evaluate,
/// sized so that `tierkit compare` finishes in under a minute on two cores.
pub fn default_suite(seed: u64) -> Vec<WorkloadSpec> {
    let w = |name: &str, pages: u64, accesses: u64| WorkloadSpec::new(name, pages, accesses, seed);
    vec![
        w("zipf", 65_536, 3_000_000),
        w("gups", 65_536, 3_000_000),
        w("hotset-shift", 65_536, 3_000_000),
        w("ycsb-b", 65_536, 3_000_000),
        w("cachelib-cdn", 65_536, 3_000_000),
        w("cachelib-social", 65_536, 3_000_000),
        w("gap-pr", 16_384, 3_000_000),
        w("xgboost", 65_536, 3_000_000),
    ]
}

/// The papers' evaluation grid (FreqTier Tables II–V, HybridTier §5, M5 §7, Colloid
/// §5): CacheLib CDN and social graph, GAP BFS/PR/CC/BC, XGBoost and GUPS, to be run at
/// [`PAPER_RATIOS`]. `quick` shrinks every workload 4x for a CI-sized budget.
pub fn paper_suite(seed: u64, quick: bool) -> Vec<WorkloadSpec> {
    let div = if quick { 4 } else { 1 };
    let w = |name: &str, pages: u64, accesses: u64| WorkloadSpec::new(name, pages / div, accesses / div, seed);
    vec![
        w("cachelib-cdn", 262_144, 12_000_000),
        w("cachelib-social", 262_144, 12_000_000),
        w("gap-bfs", 65_536, 12_000_000),
        w("gap-pr", 65_536, 12_000_000),
        w("gap-cc", 65_536, 12_000_000),
        w("gap-bc", 65_536, 12_000_000),
        w("xgboost", 262_144, 12_000_000),
        w("gups", 262_144, 12_000_000),
    ]
}

/// The real suite: every trace in `paths` (recorded programs, `corpus/*.tktrace`),
/// each replayed whole, named by its file.
pub fn real_suite(paths: &[std::path::PathBuf], seed: u64) -> Vec<WorkloadSpec> {
    paths.iter().map(|p| WorkloadSpec::new("trace", 0, 0, seed).with("path", p.display())).collect()
}

/// The policies the real suite compares: every registered tiering policy (the plain
/// caches excepted), Colloid over the policies its paper pairs it with, and the
/// references.
pub fn real_suite_policies() -> Vec<String> {
    let mut names: Vec<String> = ["all-local", "oracle", "static-oracle", "none"].map(String::from).to_vec();
    for r in tierkit_core::policies::REGISTRY {
        if !r.name.ends_with("-cache") {
            names.push(r.name.to_string());
        }
    }
    for base in ["tierkit", "hemem", "memtis", "tpp"] {
        names.push(format!("{base}{}", tierkit_core::policies::COLLOID_SUFFIX));
    }
    names
}

/// The ratios of the papers' grid.
pub const PAPER_RATIOS: [(u64, u64); 4] = [(1, 32), (1, 16), (1, 8), (1, 4)];

/// The policies `tierkit compare` shows by default.
pub const DEFAULT_POLICIES: &[&str] = &[
    "oracle",
    "static-oracle",
    "none",
    "tierkit",
    "lru",
    "clock",
    "freqtier",
    "hybridtier",
    "tpp",
    "autonuma",
    "hemem",
    "memtis",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload;

    #[test]
    fn rows_say_how_to_rebuild_their_workload_stream() {
        let spec = WorkloadSpec::new("gap-pr", 3000, 20_000, 5).with("degree", 8);
        let grid = Grid::new(
            vec![WorkloadSpec::new("zipf", 2000, 20_000, 4).with("alpha", 0.7), spec.clone()],
            vec![(1, 8)],
            vec!["all-local".into(), "lru".into()],
        );
        let rows = compare(&grid, 2, &|_, _, _| {}).unwrap();
        assert_eq!(rows.len(), 4);
        for (row, w) in rows.iter().zip([&grid.workloads[0], &grid.workloads[0], &spec, &spec]) {
            let r = &row.result;
            assert_eq!((r.workload.as_str(), r.seed, &r.options), (w.name.as_str(), w.seed, &w.options));
            assert_eq!((r.workload_pages, r.accesses), (w.pages, w.accesses));
        }
        // The graph's footprint only approaches the pages asked for: rebuilding needs both.
        let gap = &rows[3].result;
        assert_eq!(gap.pages, workload::build(&spec).unwrap().pages());
        assert_ne!(gap.pages, gap.workload_pages);
    }
}
