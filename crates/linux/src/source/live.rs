//! The live access sources behind one type: DAMON, perf sampling, and the kernel's own
//! tiering (NUMA balancing, or DAMOS migration schemes), each turned into
//! [`tierkit_core::Event`] batches for the policy (or, for `kernel` and `damos`, into the
//! kernel's own promotion and demotion counts).
//!
//! DAMON monitors the target with at least [`LIVE_MIN_REGIONS`] regions, starting from
//! its anonymous memory ([`crate::source::damon::initial_regions`]). Policies that ask for
//! [`Event::Sample`]s (tierkit, FreqTier, HybridTier, LRU, …) get them from DAMON's
//! regions through the adapter in [`super::damon_samples`]; policies that ask for
//! [`Event::Accessed`] (the `damon` policy) get the regions as they are.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tierkit_core::{Event, Memory, Nanos, Page, SourceRequest, TierId};

use super::damon_samples::{regions_to_samples, sample_budget, SampleRng};
use super::damos_live::{DamosLive, DamosSettings};
use crate::source::damon::{self, DamonError, DamonMonitor, DamonOptions, Poll, Region};
use crate::source::kernel::{KernelTiering, KnobGuard, TieringError, TieringOptions, TieringVmstat};
use crate::source::perf::{monotonic_ns, samples_to_events, PerfConfig, PerfError, PerfKind, PerfSource, RawSample};
use crate::status::KnobRestore;

/// The fewest regions DAMON keeps for tierkit (`nr_regions/min`; the kernel's default is
/// 10). DAMON never merges regions beyond its monitored span divided by this, and that
/// span includes unmapped stretches (a static binary's heap sits hundreds of MiB above
/// its data): with 10, a few large regions cover a whole heap, a check seldom lands on
/// its hot pages, and in the test guest such a monitor settled within 15 s on a dozen
/// regions that all read as idle; with 100 (or 200) it kept resolving the hot regions
/// for 30 s. Each region costs the kdamond one check per sampling interval (200 doubled
/// its CPU time over 100).
pub const LIVE_MIN_REGIONS: u64 = 100;

/// Most perf samples of not-yet-known pages kept for the next process refresh.
const MAX_DEFERRED: usize = 1 << 20;

/// Data pages of each perf ring buffer (128 KiB: about 2,300 samples per thread between
/// two polls).
const PERF_RING_PAGES: usize = 32;

/// The kinds of live source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceKind {
    /// DAMON virtual-address monitoring through sysfs.
    Damon,
    /// perf_event_open address sampling (PEBS, IBS, or software page faults).
    Perf,
    /// The kernel's own NUMA-balancing tiering; no tierkit policy runs.
    Kernel,
    /// The kernel's DAMOS `migrate_hot`/`migrate_cold` schemes, quotas set by tierkit;
    /// no tierkit policy runs.
    Damos,
}

impl SourceKind {
    /// `"damon"`, `"perf"`, `"kernel"` or `"damos"`.
    pub fn name(self) -> &'static str {
        match self {
            SourceKind::Damon => "damon",
            SourceKind::Perf => "perf",
            SourceKind::Kernel => "kernel",
            SourceKind::Damos => "damos",
        }
    }

    /// Whether the kernel moves the pages and no tierkit policy runs.
    pub fn kernel_moves_pages(self) -> bool {
        matches!(self, SourceKind::Kernel | SourceKind::Damos)
    }
}

/// What `--source` asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceChoice {
    /// DAMON when available, else perf.
    Auto,
    /// Exactly this source.
    Only(SourceKind),
}

impl std::str::FromStr for SourceChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(SourceChoice::Auto),
            "damon" => Ok(SourceChoice::Only(SourceKind::Damon)),
            "perf" => Ok(SourceChoice::Only(SourceKind::Perf)),
            "kernel" => Ok(SourceChoice::Only(SourceKind::Kernel)),
            "damos" => Ok(SourceChoice::Only(SourceKind::Damos)),
            other => Err(format!("unknown source {other:?}: expected damon, perf, kernel, damos or auto")),
        }
    }
}

/// Why a source could not be opened or stopped working.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// DAMON failed.
    #[error(transparent)]
    Damon(#[from] DamonError),
    /// perf sampling failed.
    #[error(transparent)]
    Perf(#[from] PerfError),
    /// The kernel's tiering could not be turned on.
    #[error("kernel tiering: {0}")]
    Kernel(#[from] TieringError),
    /// `/proc/vmstat` could not be read.
    #[error("kernel tiering: {0}")]
    Vmstat(#[from] crate::sysfs_io::SysfsError),
    /// The policy needs information this source cannot give.
    #[error("policy {policy} needs {needs}, which the {source_name} source does not provide; {hint}")]
    Unsuited {
        /// The policy.
        policy: String,
        /// What it asked for.
        needs: &'static str,
        /// The source.
        source_name: &'static str,
        /// What to do instead.
        hint: &'static str,
    },
    /// The source cannot be used here.
    #[error("the {source_name} source is not available here because {why}")]
    Unavailable {
        /// The source.
        source_name: &'static str,
        /// Why not.
        why: String,
    },
    /// `--source auto` found nothing that works.
    #[error("no access source works here: {}", .0.join("; "))]
    NoneAvailable(Vec<String>),
}

/// Where and for whom a source is opened.
#[derive(Clone, Debug)]
pub struct SourceSetup {
    /// Root of procfs and sysfs (`/` on a live system).
    pub root: PathBuf,
    /// Directory of tierkit's crash-recovery state files (`/run/tierkit`).
    pub state_dir: PathBuf,
    /// The target process.
    pub pid: u32,
    /// The policy's name (for messages) and what it asks for; `None` with the kernel
    /// and damos sources, which run no policy.
    pub policy: Option<(String, SourceRequest)>,
    /// The fast and the slow node the damos source migrates between (`None`: the machine
    /// has no second tier).
    pub nodes: Option<(u32, u32)>,
    /// The damos source's settings.
    pub damos: DamosSettings,
}

/// What one [`LiveSource::poll`] found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Polled {
    /// Samples received (perf: records; DAMON: events made; kernel: NUMA hint faults,
    /// machine-wide; damos: hot regions DAMON saw, machine-wide).
    pub samples: u64,
    /// Samples the kernel dropped.
    pub lost: u64,
    /// The source ended because the target exited.
    pub target_gone: bool,
}

/// The kernel's tiering at work since tierkit turned it on (machine-wide counters; for
/// damos, the bytes its migration schemes applied to, in pages).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelMoves {
    /// `pgpromote_success` growth.
    pub promoted: u64,
    /// Growth of every `pgdemote_*` counter.
    pub demoted: u64,
}

/// How a source ended.
#[derive(Debug, Default)]
pub struct Stopped {
    /// Every kernel knob changed, and whether it was put back (kernel source).
    pub knobs: Vec<KnobRestore>,
    /// A cleanup problem to report (a kdamond that could not be given back).
    pub warning: Option<String>,
}

/// A live access source; see the [module documentation](self).
pub enum LiveSource {
    /// DAMON regions.
    Damon(DamonLive),
    /// perf address samples.
    Perf(PerfLive),
    /// The kernel's tiering, watched through `/proc/vmstat`.
    Kernel(KernelLive),
    /// The kernel's DAMOS migration schemes.
    Damos(DamosLive),
}

/// The DAMON source's state.
pub struct DamonLive {
    monitor: Option<DamonMonitor>,
    regions: Vec<Region>,
    aggregation: Duration,
    last_poll: Option<Instant>,
    /// Polls that made samples: the units' turn ([`regions_to_samples`]).
    polls: u64,
    rng: SampleRng,
    /// Polled every `stretch`-th aggregation interval, a poll makes `1/stretch` of the
    /// samples the time since the previous one would give ([`crate::run::cadence`]).
    stretch: u32,
}

/// The perf source's state.
pub struct PerfLive {
    source: PerfSource,
    raw: Vec<RawSample>,
    deferred: Vec<RawSample>,
    origin: Nanos,
    samples_seen: u64,
    lost_seen: u64,
}

/// The kernel source's state.
pub struct KernelLive {
    root: PathBuf,
    guard: Option<KnobGuard>,
    start: TieringVmstat,
    moves: KernelMoves,
    hint_faults: u64,
}

/// Whether `kind` can serve `request`; the error says what is missing.
pub(crate) fn check_suited(kind: SourceKind, policy: &str, request: &SourceRequest) -> Result<(), SourceError> {
    let unsuited =
        |needs, hint| Err(SourceError::Unsuited { policy: policy.to_string(), needs, source_name: kind.name(), hint });
    if request.hint_faults.is_some() {
        return unsuited(
            "NUMA hint faults",
            "tierkit cannot take hint faults from user space: use --source kernel to run the kernel's own hint-fault \
             tiering, or a sampling policy such as tierkit",
        );
    }
    if request.device_topk.is_some() {
        return unsuited(
            "device top-K reports (CXL controller trackers)",
            "no CXL device exposes them to Linux yet: choose a sampling policy such as tierkit",
        );
    }
    match kind {
        SourceKind::Perf if request.samples.is_none() && request.accessed.is_some() => {
            unsuited("accessed-bit scans", "use --source damon")
        }
        SourceKind::Perf | SourceKind::Damon if request.samples.is_none() && request.accessed.is_none() => {
            unsuited("no access information tierkit can deliver", "choose a sampling policy such as tierkit")
        }
        _ => Ok(()),
    }
}

/// DAMON's intervals: the policy's own when it asks for accessed-bit scans, else the
/// kernel's defaults; at least [`LIVE_MIN_REGIONS`] regions; only accessed regions
/// reported when the policy wants samples alone; the claim is recorded under
/// `state_dir`.
fn damon_options(request: Option<&SourceRequest>, state_dir: &Path) -> DamonOptions {
    let mut opts = DamonOptions { state_file: Some(state_dir.join("damon.json")), ..DamonOptions::default() };
    if let Some(scan) = request.and_then(|r| r.accessed) {
        opts.sample_us = (scan.sample_interval / 1000).max(1);
        opts.aggr_us = (scan.aggregation_interval / 1000).max(opts.sample_us);
        if let Some((min, max)) = scan.regions {
            opts.min_regions = u64::from(min).max(3);
            opts.max_regions = u64::from(max).max(opts.min_regions);
        }
    }
    opts.min_regions = opts.min_regions.max(LIVE_MIN_REGIONS);
    opts.max_regions = opts.max_regions.max(opts.min_regions);
    // Samples come from accessed regions only: idle ones need not be listed (reading a
    // few hundred regions' files took 0.2-0.5 s a poll in the test guest).
    if request.is_some_and(|r| r.accessed.is_none()) {
        opts.min_nr_accesses = 1;
    }
    opts
}

impl LiveSource {
    /// Opens the source `choice` names for `setup.pid`. With [`SourceChoice::Auto`]:
    /// DAMON if it is available and starts, else perf; the error lists every reason.
    pub fn open(choice: SourceChoice, setup: &SourceSetup) -> Result<LiveSource, SourceError> {
        let policy = setup.policy.as_ref().map(|(name, request)| (name.as_str(), request));
        match choice {
            SourceChoice::Only(kind) => {
                if let Some((name, request)) = policy.filter(|_| !kind.kernel_moves_pages()) {
                    check_suited(kind, name, request)?;
                }
                Self::open_kind(kind, setup)
            }
            SourceChoice::Auto => {
                let mut reasons = Vec::new();
                for kind in [SourceKind::Damon, SourceKind::Perf] {
                    if let Some((name, request)) = policy {
                        if let Err(e) = check_suited(kind, name, request) {
                            reasons.push(e.to_string());
                            continue;
                        }
                    }
                    match Self::open_kind(kind, setup) {
                        Ok(source) => return Ok(source),
                        Err(e @ SourceError::Perf(PerfError::TargetGone { .. })) => return Err(e),
                        Err(e) => reasons.push(format!("{}: {e}", kind.name())),
                    }
                }
                Err(SourceError::NoneAvailable(reasons))
            }
        }
    }

    fn open_kind(kind: SourceKind, setup: &SourceSetup) -> Result<LiveSource, SourceError> {
        match kind {
            SourceKind::Damon => {
                let mut opts = damon_options(setup.policy.as_ref().map(|(_, r)| r), &setup.state_dir);
                // Without the maps (the target is gone, or a fixture has none) DAMON picks its own.
                if let Ok(maps) = crate::memory::procfs::read_maps(&setup.root, setup.pid) {
                    opts.init_regions = damon::initial_regions(&maps, opts.min_regions, opts.max_regions);
                }
                let monitor = DamonMonitor::start(&setup.root, setup.pid as i32, &opts)?;
                Ok(LiveSource::Damon(DamonLive {
                    monitor: Some(monitor),
                    regions: Vec::new(),
                    aggregation: Duration::from_micros(opts.aggr_us),
                    last_poll: None,
                    polls: 0,
                    rng: SampleRng::new(u64::from(setup.pid) ^ crate::source::perf::monotonic_ns()),
                    stretch: 1,
                }))
            }
            SourceKind::Perf => {
                let cfg = PerfConfig { ring_pages: PERF_RING_PAGES, root: setup.root.clone(), ..PerfConfig::default() };
                let source = PerfSource::open(setup.pid as i32, cfg)?;
                Ok(LiveSource::Perf(PerfLive {
                    source,
                    raw: Vec::new(),
                    deferred: Vec::new(),
                    origin: 0,
                    samples_seen: 0,
                    lost_seen: 0,
                }))
            }
            SourceKind::Kernel => {
                let opts =
                    TieringOptions { state_file: setup.state_dir.join("knobs.json"), ..TieringOptions::default() };
                let guard = KernelTiering::enable(&setup.root, &opts)?;
                let start = TieringVmstat::read(&setup.root);
                let start = match start {
                    Ok(start) => start,
                    Err(e) => {
                        let _ = guard.restore();
                        return Err(e.into());
                    }
                };
                Ok(LiveSource::Kernel(KernelLive {
                    root: setup.root.clone(),
                    guard: Some(guard),
                    start,
                    moves: KernelMoves::default(),
                    hint_faults: 0,
                }))
            }
            SourceKind::Damos => {
                let nodes = setup.nodes.ok_or_else(|| SourceError::Unavailable {
                    source_name: "damos",
                    why: "the machine has no slow memory tier to migrate to".to_string(),
                })?;
                let state_file = setup.state_dir.join("damos.json");
                Ok(LiveSource::Damos(DamosLive::open(&setup.root, setup.pid as i32, nodes, &state_file, &setup.damos)?))
            }
        }
    }

    /// Which source this is.
    pub fn kind(&self) -> SourceKind {
        match self {
            LiveSource::Damon(_) => SourceKind::Damon,
            LiveSource::Perf(_) => SourceKind::Perf,
            LiveSource::Kernel(_) => SourceKind::Kernel,
            LiveSource::Damos(_) => SourceKind::Damos,
        }
    }

    /// One line on what exactly runs: `"perf (software page-fault sampling, 3 threads)"`.
    pub fn describe(&self) -> String {
        match self {
            LiveSource::Damon(d) => format!(
                "damon (kdamond {}, aggregation {} ms)",
                d.monitor.as_ref().map_or(0, DamonMonitor::kdamond),
                d.aggregation.as_millis()
            ),
            LiveSource::Perf(p) => {
                let spec = p.source.spec();
                format!("perf ({}, period {}, {} event(s))", spec.kind, spec.period, p.source.streams())
            }
            LiveSource::Kernel(k) => {
                let knobs: Vec<String> =
                    k.guard.iter().flat_map(|g| g.saved()).map(|(knob, _)| knob.to_string()).collect();
                format!("kernel (numa_balancing=2, demotion_enabled=true; changed {})", knobs.join(", "))
            }
            LiveSource::Damos(d) => d.describe(),
        }
    }

    /// DAMON's aggregation interval (`None` for the other sources).
    pub fn aggregation(&self) -> Option<Duration> {
        match self {
            LiveSource::Damon(d) => Some(d.aggregation),
            _ => None,
        }
    }

    /// Sets the stretch of a DAMON source's polls ([`crate::run::cadence`]): the caller polls
    /// every `stretch`-th aggregation interval, and each poll makes `1/stretch` of the
    /// samples of the time since the previous one. Other sources ignore it.
    pub fn set_stretch(&mut self, stretch: u32) {
        if let LiveSource::Damon(d) = self {
            d.stretch = stretch.max(1);
        }
    }

    /// Whether [`LiveSource::poll`] blocks (DAMON waits for an aggregation interval).
    pub fn blocks(&self) -> bool {
        matches!(self, LiveSource::Damon(_))
    }

    /// Memory accesses one sample stands for, when known (PEBS and IBS sample one
    /// access in `period`).
    pub fn accesses_per_sample(&self) -> Option<u64> {
        match self {
            LiveSource::Perf(p) if matches!(p.source.spec().kind, PerfKind::Pebs | PerfKind::Ibs) => {
                Some(p.source.spec().period)
            }
            _ => None,
        }
    }

    /// The kdamond thread's pid, whose CPU time is tierkit's cost too.
    pub fn helper_pid(&self) -> Option<i32> {
        match self {
            LiveSource::Damon(d) => d.monitor.as_ref().and_then(|m| m.kdamond_pid().ok().flatten()),
            LiveSource::Damos(d) => d.helper_pid(),
            _ => None,
        }
    }

    /// Sets the platform clock's origin on `CLOCK_MONOTONIC` (perf sample times are
    /// converted to it): call with the process view's `now()` right after opening it.
    pub fn set_clock(&mut self, platform_now: Nanos) {
        if let LiveSource::Perf(p) = self {
            p.origin = monotonic_ns().saturating_sub(platform_now);
        }
    }

    /// What the kernel's tiering did since it was turned on (kernel and damos sources).
    pub fn kernel_moves(&self) -> Option<KernelMoves> {
        match self {
            LiveSource::Kernel(k) => Some(k.moves),
            LiveSource::Damos(d) => Some(d.moves()),
            _ => None,
        }
    }

    /// Whether the source wants the nodes' free memory read afresh before its next poll
    /// (damos, when it tunes its quotas).
    pub fn wants_fresh_free(&self) -> bool {
        matches!(self, LiveSource::Damos(d) if d.tune_due())
    }

    /// The realised hit ratio the source measures itself (damos: the share of the bytes
    /// DAMON found hot, at the promotion threshold, on the fast node); `None` for the others.
    pub fn hit_ratio(&self) -> Option<f64> {
        match self {
            LiveSource::Damos(d) => d.hit_ratio(),
            _ => None,
        }
    }

    /// What the source adds to a status line (damos: its quotas).
    pub fn status_note(&self) -> Option<String> {
        match self {
            LiveSource::Damos(d) => Some(d.note()),
            _ => None,
        }
    }

    /// Reads the kernel's counts now, for the summary (kernel and damos sources).
    pub fn final_poll(&mut self, mem: &dyn Memory) {
        match self {
            LiveSource::Kernel(k) => {
                let _ = k.poll();
            }
            LiveSource::Damos(d) => {
                let _ = d.poll(mem, true);
            }
            _ => {}
        }
    }

    /// Collects what the source has: appends events for the policy to `out`. `mem` is
    /// the real process view; `tier_of` labels pages with the tier the policy believes
    /// they are on. `request` is the policy's current source request. DAMON blocks for
    /// up to an aggregation interval; the others never block.
    pub fn poll(
        &mut self,
        mem: &dyn Memory,
        tier_of: &dyn Fn(Page) -> Option<TierId>,
        request: &SourceRequest,
        out: &mut Vec<Event>,
    ) -> Result<Polled, SourceError> {
        match self {
            LiveSource::Damon(d) => d.poll(mem, tier_of, request, out),
            LiveSource::Perf(p) => Ok(p.poll(tier_of, out)),
            LiveSource::Kernel(k) => k.poll(),
            LiveSource::Damos(d) => Ok(d.poll(mem, false)?),
        }
    }

    /// After the process view was rebuilt: perf samples of pages it did not know yet are
    /// delivered now (or dropped if still unknown), and new threads are sampled.
    /// Returns the events added; an error names threads that could not be sampled.
    pub fn after_refresh(
        &mut self,
        tier_of: &dyn Fn(Page) -> Option<TierId>,
        out: &mut Vec<Event>,
    ) -> Result<usize, SourceError> {
        let LiveSource::Perf(p) = self else { return Ok(0) };
        let before = out.len();
        samples_to_events(&p.deferred, p.origin, tier_of, out);
        p.deferred.clear();
        match p.source.refresh_threads() {
            Ok(_) | Err(PerfError::TargetGone { .. }) => Ok(out.len() - before),
            Err(e) => Err(e.into()),
        }
    }

    /// Stops the source: turns the kdamond off and gives it back (damon, damos), or puts
    /// every kernel knob back.
    pub fn stop(self) -> Stopped {
        match self {
            LiveSource::Damon(mut d) => Stopped {
                warning: d.monitor.take().and_then(|m| m.stop().err()).map(|e| format!("giving the kdamond back: {e}")),
                ..Stopped::default()
            },
            LiveSource::Perf(_) => Stopped::default(),
            LiveSource::Damos(mut d) => Stopped { warning: d.stop(), ..Stopped::default() },
            LiveSource::Kernel(mut k) => {
                let Some(guard) = k.guard.take() else { return Stopped::default() };
                let mut knobs: Vec<KnobRestore> = guard
                    .saved()
                    .map(|(knob, value)| KnobRestore {
                        knob: knob.to_string(),
                        value: value.trim_end().to_string(),
                        error: None,
                    })
                    .collect();
                let mut warning = None;
                if let Err(e) = guard.restore() {
                    for failure in &e.failures {
                        if let Some(k) = knobs.iter_mut().find(|k| k.knob == failure.knob.to_string()) {
                            k.error = Some(failure.error.to_string());
                        }
                    }
                    if let Some(remove) = &e.remove_error {
                        warning = Some(format!("state file {}: {remove}", e.state_file.display()));
                    }
                }
                Stopped { knobs, warning }
            }
        }
    }
}

impl DamonLive {
    fn poll(
        &mut self,
        mem: &dyn Memory,
        tier_of: &dyn Fn(Page) -> Option<TierId>,
        request: &SourceRequest,
        out: &mut Vec<Event>,
    ) -> Result<Polled, SourceError> {
        let Some(monitor) = self.monitor.as_mut() else { return Ok(Polled { target_gone: true, ..Polled::default() }) };
        let now = Instant::now();
        // The regions describe one aggregation interval: after a long pause (a backlog of
        // moves) they stand for at most a second of samples; polled every `stretch`-th
        // interval on purpose, for `1/stretch` of the time since the previous poll.
        let since = self.last_poll.map_or(self.aggregation, |t| now.duration_since(t));
        let elapsed = (since / self.stretch).min(Duration::from_secs(1));
        self.last_poll = Some(now);
        if let Poll::Stopped = monitor.poll(&mut self.regions)? {
            return Ok(Polled { target_gone: true, ..Polled::default() });
        }
        let before = out.len();
        if request.accessed.is_some() {
            damon::to_events(&self.regions, out);
        }
        let budget = sample_budget(request, elapsed.as_nanos() as Nanos);
        if budget > 0 {
            regions_to_samples(&self.regions, budget, mem, tier_of, self.polls, &mut self.rng, out);
            self.polls += 1;
        }
        Ok(Polled { samples: (out.len() - before) as u64, ..Polled::default() })
    }
}

impl PerfLive {
    fn poll(&mut self, tier_of: &dyn Fn(Page) -> Option<TierId>, out: &mut Vec<Event>) -> Polled {
        self.raw.clear();
        self.source.poll(&mut self.raw);
        let deferred = &mut self.deferred;
        self.raw.retain(|s| {
            let known = tier_of(s.page()).is_some();
            if !known && deferred.len() < MAX_DEFERRED {
                deferred.push(*s); // a page first touched since the last refresh
            }
            known
        });
        samples_to_events(&self.raw, self.origin, tier_of, out);
        let stats = self.source.stats();
        let polled = Polled {
            samples: stats.samples - self.samples_seen,
            lost: stats.lost - self.lost_seen,
            target_gone: false,
        };
        (self.samples_seen, self.lost_seen) = (stats.samples, stats.lost);
        polled
    }
}

impl KernelLive {
    fn poll(&mut self) -> Result<Polled, SourceError> {
        let now = TieringVmstat::read(&self.root)?;
        let delta = now.delta_since(&self.start);
        let faults = delta.numa_hint_faults.unwrap_or(0);
        self.moves =
            KernelMoves { promoted: delta.pgpromote_success.unwrap_or(0), demoted: delta.demoted().unwrap_or(0) };
        let samples = faults.saturating_sub(self.hint_faults);
        self.hint_faults = faults;
        Ok(Polled { samples, ..Polled::default() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tierkit_core::{AccessedScan, HintFaults, Sampling, MILLISECOND};

    #[test]
    fn policies_are_matched_to_what_a_source_provides() {
        let samples = SourceRequest { samples: Some(Sampling::new(1000.0)), ..Default::default() };
        let scan = AccessedScan {
            sample_interval: 5 * MILLISECOND,
            aggregation_interval: 100 * MILLISECOND,
            regions: Some((10, 1000)),
        };
        let accessed = SourceRequest { accessed: Some(scan), ..Default::default() };
        let hints = SourceRequest {
            hint_faults: Some(HintFaults { window_pages: 1, period: 1, slow_tiers_only: true }),
            ..Default::default()
        };
        assert!(check_suited(SourceKind::Perf, "p", &samples).is_ok());
        assert!(check_suited(SourceKind::Damon, "p", &samples).is_ok());
        assert!(check_suited(SourceKind::Damon, "p", &accessed).is_ok());
        let e = check_suited(SourceKind::Perf, "damon", &accessed).unwrap_err().to_string();
        assert!(e.contains("accessed-bit scans") && e.contains("--source damon"), "{e}");
        let e = check_suited(SourceKind::Damon, "tpp", &hints).unwrap_err().to_string();
        assert!(e.contains("policy tpp needs NUMA hint faults") && e.contains("--source kernel"), "{e}");
        let opts = damon_options(Some(&accessed), Path::new("/tmp/x"));
        assert_eq!((opts.sample_us, opts.aggr_us), (5000, 100_000));
        assert_eq!((opts.min_regions, opts.max_regions), (LIVE_MIN_REGIONS, 1000), "at least 100 regions live");
        let sampling = damon_options(Some(&samples), Path::new("/tmp/x"));
        assert_eq!((sampling.sample_us, sampling.aggr_us, sampling.min_regions), (5000, 100_000, LIVE_MIN_REGIONS));
        assert_eq!((sampling.min_nr_accesses, opts.min_nr_accesses), (1, 0), "idle regions only for scans");
        let few = AccessedScan { regions: Some((3, 100)), ..scan };
        let few = damon_options(Some(&SourceRequest { accessed: Some(few), ..Default::default() }), Path::new("/x"));
        assert_eq!((few.min_regions, few.max_regions), (LIVE_MIN_REGIONS, LIVE_MIN_REGIONS));
        assert_eq!(opts.state_file.as_deref(), Some(Path::new("/tmp/x/damon.json")));
        assert_eq!("kernel".parse::<SourceChoice>(), Ok(SourceChoice::Only(SourceKind::Kernel)));
        assert_eq!("damos".parse::<SourceChoice>(), Ok(SourceChoice::Only(SourceKind::Damos)));
        assert!("pebs".parse::<SourceChoice>().unwrap_err().contains("damon, perf, kernel, damos or auto"));
    }
}
