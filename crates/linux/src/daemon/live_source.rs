//! The live access sources behind one type: DAMON, perf sampling, and the kernel's own
//! tiering, each turned into [`tierkit_core::Event`] batches for the policy (or, for
//! `kernel`, into the kernel's own promotion and demotion counts).
//!
//! # DAMON regions as samples
//!
//! Policies that ask for [`Event::Sample`]s (tierkit, FreqTier, HybridTier, LRU, …) get
//! them from DAMON too. After each aggregation interval every region DAMON found
//! accessed `a > 0` times (out of `aggr/sample` checks) stands for `a` samples on each
//! of its resident pages (a transparent huge page counts as one page), on the tier the
//! page is on, timed now. The total per poll is capped by a budget: the policy's
//! requested sampling rate times the time since the previous poll (tierkit asks for up
//! to 100 kHz: 10,000 samples per 100 ms), and never more than [`MAX_DAMON_SAMPLES`].
//! Over the budget every page's share is scaled down by the same factor, and the
//! fractions are carried from page to page (error diffusion) so the total matches the
//! budget and hotter regions keep proportionally more samples. The policy's CPU budget
//! control (it lowers its rate when tierkit's CPU share grows) therefore also throttles
//! this adapter. Policies that ask for [`Event::Accessed`] (the `damon` policy) get the
//! regions as they are.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tierkit_core::{Event, Memory, Nanos, Page, Resident, SampleRate, ScanCursor, SourceRequest, TierId, SECOND};

use crate::damon::{self, DamonError, DamonMonitor, DamonOptions, Poll, Region};
use crate::kernel_tiering::{KernelTiering, KnobGuard, TieringError, TieringOptions, TieringVmstat};
use crate::perf::{monotonic_ns, samples_to_events, PerfConfig, PerfError, PerfKind, PerfSource, RawSample};
use crate::status::KnobRestore;

/// Most samples the DAMON adapter produces per poll.
pub const MAX_DAMON_SAMPLES: usize = 2_000_000;

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
}

impl SourceKind {
    /// `"damon"`, `"perf"` or `"kernel"`.
    pub fn name(self) -> &'static str {
        match self {
            SourceKind::Damon => "damon",
            SourceKind::Perf => "perf",
            SourceKind::Kernel => "kernel",
        }
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
            other => Err(format!("unknown source {other:?}: expected damon, perf, kernel or auto")),
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
    /// source, which runs no policy.
    pub policy: Option<(String, SourceRequest)>,
}

/// What one [`LiveSource::poll`] found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Polled {
    /// Samples received (perf: records; DAMON: events made; kernel: NUMA hint faults,
    /// machine-wide).
    pub samples: u64,
    /// Samples the kernel dropped.
    pub lost: u64,
    /// The source ended because the target exited.
    pub target_gone: bool,
}

/// The kernel's tiering at work since tierkit turned it on (machine-wide counters).
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
}

/// The DAMON source's state.
pub struct DamonLive {
    monitor: Option<DamonMonitor>,
    regions: Vec<Region>,
    aggregation: Duration,
    last_poll: Option<Instant>,
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
pub(super) fn check_suited(kind: SourceKind, policy: &str, request: &SourceRequest) -> Result<(), SourceError> {
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
/// kernel's defaults; the claim is recorded under `state_dir`.
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
    opts
}

impl LiveSource {
    /// Opens the source `choice` names for `setup.pid`. With [`SourceChoice::Auto`]:
    /// DAMON if it is available and starts, else perf; the error lists every reason.
    pub fn open(choice: SourceChoice, setup: &SourceSetup) -> Result<LiveSource, SourceError> {
        let policy = setup.policy.as_ref().map(|(name, request)| (name.as_str(), request));
        match choice {
            SourceChoice::Only(kind) => {
                if let Some((name, request)) = policy.filter(|_| kind != SourceKind::Kernel) {
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
                let opts = damon_options(setup.policy.as_ref().map(|(_, r)| r), &setup.state_dir);
                let monitor = DamonMonitor::start(&setup.root, setup.pid as i32, &opts)?;
                Ok(LiveSource::Damon(DamonLive {
                    monitor: Some(monitor),
                    regions: Vec::new(),
                    aggregation: Duration::from_micros(opts.aggr_us),
                    last_poll: None,
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
        }
    }

    /// Which source this is.
    pub fn kind(&self) -> SourceKind {
        match self {
            LiveSource::Damon(_) => SourceKind::Damon,
            LiveSource::Perf(_) => SourceKind::Perf,
            LiveSource::Kernel(_) => SourceKind::Kernel,
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
        }
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

    /// What the kernel's tiering did since it was turned on (kernel source only).
    pub fn kernel_moves(&self) -> Option<KernelMoves> {
        match self {
            LiveSource::Kernel(k) => Some(k.moves),
            _ => None,
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

    /// Stops the source: turns the kdamond off and gives it back, or puts every kernel
    /// knob back.
    pub fn stop(self) -> Stopped {
        match self {
            LiveSource::Damon(mut d) => Stopped {
                warning: d.monitor.take().and_then(|m| m.stop().err()).map(|e| format!("giving the kdamond back: {e}")),
                ..Stopped::default()
            },
            LiveSource::Perf(_) => Stopped::default(),
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
        let elapsed = self.last_poll.map_or(self.aggregation, |t| now.duration_since(t));
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
            regions_to_samples(&self.regions, budget, mem, tier_of, out);
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

/// Samples the DAMON adapter may produce for a poll `elapsed` ns after the previous
/// one: the requested rate times `elapsed` (a period-based rate has no time budget:
/// the cap), at most [`MAX_DAMON_SAMPLES`]; 0 when the policy asks for no samples.
pub fn sample_budget(request: &SourceRequest, elapsed: Nanos) -> usize {
    match request.samples.map(|s| s.rate) {
        None | Some(SampleRate::Period(0)) => 0,
        Some(SampleRate::Period(_)) => MAX_DAMON_SAMPLES,
        Some(SampleRate::Hz(hz)) if hz > 0.0 => {
            (hz * elapsed as f64 / SECOND as f64).ceil().min(MAX_DAMON_SAMPLES as f64) as usize
        }
        Some(SampleRate::Hz(_)) => 0,
    }
}

/// Resident units (pages, huge-page heads) of `mem` in pages `first..end`, in order.
fn for_each_resident(mem: &dyn Memory, first: Page, end: Page, scratch: &mut Vec<Resident>, mut f: impl FnMut(Page)) {
    let mut cursor = ScanCursor { next: first, passes: 0 };
    loop {
        scratch.clear();
        if mem.scan(&mut cursor, 1024, scratch) == 0 {
            return;
        }
        for r in scratch.iter() {
            if r.page < first || r.page >= end {
                return; // past the region, or wrapped around to the lowest page
            }
            f(r.page);
        }
        if cursor.passes > 0 {
            return;
        }
    }
}

/// Turns DAMON `regions` into at most `budget` [`Event::Sample`]s on their resident
/// pages (see the [module documentation](self)), timed `mem.now()` and labelled by
/// `tier_of`. Returns the number appended.
pub fn regions_to_samples(
    regions: &[Region],
    budget: usize,
    mem: &dyn Memory,
    tier_of: &dyn Fn(Page) -> Option<TierId>,
    out: &mut Vec<Event>,
) -> usize {
    let page_range = |r: &Region| (r.start / tierkit_core::PAGE_SIZE, r.end / tierkit_core::PAGE_SIZE);
    let mut scratch = Vec::new();
    let mut wanted = 0u64;
    for r in regions.iter().filter(|r| r.nr_accesses > 0) {
        let (first, end) = page_range(r);
        let mut units = 0u64;
        for_each_resident(mem, first, end, &mut scratch, |_| units += 1);
        wanted += units * u64::from(r.nr_accesses);
    }
    if wanted == 0 || budget == 0 {
        return 0;
    }
    let scale = (budget as f64 / wanted as f64).min(1.0);
    let (time, before) = (mem.now(), out.len());
    let mut carry = 0.0f64;
    for r in regions.iter().filter(|r| r.nr_accesses > 0) {
        let (first, end) = page_range(r);
        let share = f64::from(r.nr_accesses) * scale;
        for_each_resident(mem, first, end, &mut scratch, |page| {
            carry += share;
            let n = carry.floor();
            carry -= n;
            if let Some(tier) = tier_of(page) {
                let sample = Event::Sample { page, tier, word: None, write: false, time };
                out.extend(std::iter::repeat_n(sample, n as usize));
            }
        });
    }
    out.len() - before
}

#[cfg(test)]
mod tests {
    use super::*;
    use tierkit_core::{AccessedScan, HintFaults, InMemory, Sampling, MILLISECOND, PAGE_SIZE};

    fn region(first: Page, pages: u64, nr_accesses: u32) -> Region {
        Region { start: first * PAGE_SIZE, end: (first + pages) * PAGE_SIZE, nr_accesses, age: 0 }
    }

    fn counts(events: &[Event]) -> std::collections::BTreeMap<Page, usize> {
        let mut m = std::collections::BTreeMap::new();
        for e in events {
            if let Event::Sample { page, .. } = *e {
                *m.entry(page).or_default() += 1;
            }
        }
        m
    }

    #[test]
    fn accessed_regions_become_samples_on_resident_pages() {
        let mut mem = InMemory::new(&[4, 100]).unwrap();
        for page in [10, 11, 13, 20, 21, 30] {
            mem.touch(page);
        }
        // 10..14 accessed 3 times (12 not resident), 20..22 once, 30 never.
        let regions = [region(10, 4, 3), region(20, 2, 1), region(30, 4, 0)];
        let tier_of = |p: Page| mem.tier_of(p);
        let mut out = Vec::new();
        assert_eq!(regions_to_samples(&regions, 1000, &mem, &tier_of, &mut out), 11);
        let c = counts(&out);
        assert_eq!(c.into_iter().collect::<Vec<_>>(), [(10, 3), (11, 3), (13, 3), (20, 1), (21, 1)]);
        // Labels come from `tier_of`: 10, 11, 13, 20 filled the fast tier first.
        assert!(out.iter().any(|e| matches!(e, Event::Sample { page: 21, tier: TierId(1), .. })));
    }

    #[test]
    fn over_budget_every_page_is_scaled_and_the_total_is_kept() {
        let mut mem = InMemory::new(&[1000, 1000]).unwrap();
        for page in 0..200 {
            mem.touch(page);
        }
        // 100 hot pages (20 checks) and 100 lukewarm ones (2 checks): 2,200 wanted.
        let regions = [region(0, 100, 20), region(100, 100, 2)];
        let tier_of = |p: Page| mem.tier_of(p);
        let mut out = Vec::new();
        let n = regions_to_samples(&regions, 220, &mem, &tier_of, &mut out);
        assert!((219..=220).contains(&n), "{n}");
        let c = counts(&out);
        let hot: usize = (0..100).map(|p| c.get(&p).copied().unwrap_or(0)).sum();
        let warm: usize = (100..200).map(|p| c.get(&p).copied().unwrap_or(0)).sum();
        assert_eq!(hot, 200, "the hot region keeps its share: 20 x 100 x 0.1");
        assert!((19..=20).contains(&warm), "{warm}");
        assert_eq!(regions_to_samples(&regions, 0, &mem, &tier_of, &mut out), 0);
    }

    #[test]
    fn the_budget_follows_the_requested_rate() {
        let at = |rate| SourceRequest {
            samples: Some(Sampling { rate, slow_tiers_only: false, words: false }),
            ..Default::default()
        };
        assert_eq!(sample_budget(&at(SampleRate::Hz(100_000.0)), 100 * MILLISECOND), 10_000);
        assert_eq!(sample_budget(&at(SampleRate::Hz(1e12)), SECOND), MAX_DAMON_SAMPLES);
        assert_eq!(sample_budget(&at(SampleRate::Hz(0.0)), SECOND), 0);
        assert_eq!(sample_budget(&at(SampleRate::Period(7)), 1), MAX_DAMON_SAMPLES);
        assert_eq!(sample_budget(&SourceRequest::default(), SECOND), 0);
    }

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
        assert_eq!((opts.sample_us, opts.aggr_us, opts.min_regions, opts.max_regions), (5000, 100_000, 10, 1000));
        assert_eq!(opts.state_file.as_deref(), Some(Path::new("/tmp/x/damon.json")));
        assert_eq!("kernel".parse::<SourceChoice>(), Ok(SourceChoice::Only(SourceKind::Kernel)));
        assert!("pebs".parse::<SourceChoice>().unwrap_err().contains("damon, perf, kernel or auto"));
    }
}
