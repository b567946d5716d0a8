//! The engine: streams a workload through the machine, the sources and a policy.
//!
//! Per chunk of accesses (4096): each access is placed (first touch), counted per tier
//! and shown to the sources; then the chunk's wall time is solved by the time model
//! ([`crate::model::timing`]) from its per-tier counts plus the migration traffic, CPU
//! and stalls of the tiering work since the previous chunk. The policy then receives the
//! chunk's events, its ticks (every `tick_interval` of simulated time, with per-tier
//! telemetry), and its plan is executed within the migration rate limit — all through
//! [`tierkit_core::Driver`], the loop the live daemon drives its policies with too. A
//! timeline records [`TIMELINE_POINTS`] equal slices of the run.
//!
//! A run's steps are named as they happen: `prepare` and `initialize` (`setup.rs`), then
//! per chunk `fill`, `accesses`, `time`, `drive` and `record` (`steps.rs`), and `finish`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tierkit_core::Policy;

use crate::model::MachineConfig;
use crate::reference::Reference;
use crate::result::RunResult;
use crate::workload::{Recorded, WorkloadSpec};
use crate::SimError;

mod setup;
mod steps;
mod window;

/// Accesses per chunk.
const CHUNK: usize = 4096;
/// Real misses per generated access unless told otherwise (see [`RunSpec::scale`]).
pub const DEFAULT_SCALE: u64 = 1000;
/// Points on a run's timeline.
pub const TIMELINE_POINTS: u64 = 100;
/// Bytes a run keeps per page of its footprint, about: the simulator's per-page arrays
/// (placement 1, hint-fault stamps 8, accessed bits 6, access-count ratio 4, hot set 4, an oracle's
/// counts 5 and its epochs' lists, shadows and write stamps 9 under non-exclusive
/// tiering) and a policy's tables (a page index of 21–43 bytes with a list node or
/// record each, about 100 in all for LRU, LFU or HeMem). A run whose workload's pages
/// need more than the memory available is refused before it allocates them.
pub const RUN_BYTES_PER_PAGE: u64 = 128;

/// What one run simulates.
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// The machine.
    pub machine: MachineConfig,
    /// Fast:slow capacity ratio.
    pub ratio: (u64, u64),
    /// The workload.
    pub workload: WorkloadSpec,
    /// Seed of the sources' randomness (sampling jitter, region sampling).
    pub seed: u64,
    /// Real misses each generated access stands for. A workload stream is a uniform
    /// 1-in-`scale` sample of the application's last-level-cache misses, so a run of
    /// tens of millions of generated accesses spans the seconds to minutes over which
    /// the papers' policies act (1 s aging, 100 ms ticks, minute-long monitoring).
    /// Hit ratios are unaffected; time, bandwidth and throughput count real misses.
    /// A trace with its own clock replaces it when `follow_clock` is set.
    pub scale: u64,
    /// Replay a trace that carries its own clock on that clock: each record stands for
    /// the trace's sample rate of misses, the program's compute between records is its
    /// instructions × `app.ns_per_instruction` on one thread, and `scale` and
    /// `app.compute_ns`/`app.threads` are not used. Off, or for a stream without a clock,
    /// time follows `scale`.
    pub follow_clock: bool,
    /// Touch every page once, in address order, before the measured stream: the
    /// initialization (load phase, memset, graph loading) the papers' applications run
    /// before their measured phase, so first-touch placement follows allocation order
    /// rather than hotness. Not counted as accesses.
    pub prefault: bool,
    /// Run as a plain cache: no prefault, no allocation watermark, and the policy sees
    /// and acts on every event before the next access (pair with a policy that samples
    /// every access, such as `lru-cache`). `miss_ratio` is then the cache's miss ratio,
    /// comparable with a cache simulator's.
    pub cache_mode: bool,
    /// Count every slow-tier access per page to report M5 §4.1's access-count ratio
    /// (costs a random write per slow access, so it is off unless asked for).
    pub measure_acr: bool,
    /// Count every access per page to report where the run leaves the hot set
    /// ([`RunResult::hot_fast_residency`]; costs a random write per access).
    pub measure_hot: bool,
}

impl RunSpec {
    /// `workload` at fast:slow `ratio` on the `cxl` preset with the model's defaults:
    /// seed 1, scale 1000 (a trace's own clock where it has one), prefault on, no cache
    /// mode, no access-count ratio, no hot set.
    pub fn new(workload: WorkloadSpec, ratio: (u64, u64)) -> Self {
        Self {
            machine: MachineConfig::preset("cxl").expect("a built-in preset"),
            ratio,
            workload,
            seed: 1,
            scale: DEFAULT_SCALE,
            follow_clock: true,
            prefault: true,
            cache_mode: false,
            measure_acr: false,
            measure_hot: false,
        }
    }
}

/// Who decides placement.
pub enum Subject {
    /// A policy or reference by name, set up for the workload's footprint once it is
    /// built (see [`crate::catalog`]).
    Named(String),
    /// A tiering policy.
    Policy(Box<dyn Policy>),
    /// A reference placement.
    Reference(Reference),
}

impl Subject {
    /// The name in reports.
    pub fn name(&self) -> String {
        match self {
            Subject::Named(n) => n.clone(),
            Subject::Policy(p) => p.name().to_string(),
            Subject::Reference(r) => r.name().to_string(),
        }
    }
}

/// Runs `subject` on `spec`, calling `progress(accesses_done)` after every chunk.
pub fn run(spec: &RunSpec, subject: Subject, progress: &mut dyn FnMut(u64)) -> Result<RunResult, SimError> {
    let never = AtomicBool::new(false);
    Ok(run_until(spec, subject, progress, &never)?.expect("never stopped"))
}

/// [`run`], giving up before the next chunk (of the run, or of the oracles' learning
/// pass) once `stop` is set from another thread, e.g. on Ctrl-C: then `Ok(None)`, with
/// nothing of the run kept.
pub fn run_until(
    spec: &RunSpec,
    subject: Subject,
    progress: &mut dyn FnMut(u64),
    stop: &AtomicBool,
) -> Result<Option<RunResult>, SimError> {
    run_recorded(spec, None, subject, progress, stop)
}

/// [`run_until`] on `recorded`, the record of `spec`'s workload, when given: the stream
/// is replayed from it rather than built (a comparison records each workload once for
/// all its runs). The result is the same.
pub fn run_recorded(
    spec: &RunSpec,
    recorded: Option<&Arc<Recorded>>,
    subject: Subject,
    progress: &mut dyn FnMut(u64),
    stop: &AtomicBool,
) -> Result<Option<RunResult>, SimError> {
    let Some(mut run) = steps::Run::prepare(spec, recorded, subject, stop)? else {
        return Ok(None);
    };
    run.initialize();
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let Some(mut chunk) = run.fill()? else {
            break;
        };
        run.accesses(&mut chunk);
        let wall = run.time(&chunk);
        run.drive(&chunk, wall)?;
        run.record();
        progress(run.done);
    }
    Ok(Some(run.finish()))
}
