//! `tierkit profile`: a Chameleon-like heat report — how much of each mapping of a
//! process is hot, warm or cold, interval after interval. It moves nothing, so it works
//! on one-node machines too.
//!
//! # Methods
//!
//! - **damon**: DAMON monitors the target with an aggregation interval of one report
//!   interval; a mapping's referenced bytes are the bytes of its regions DAMON found
//!   accessed at least once, capped at its resident bytes (DAMON regions are virtual:
//!   this over-counts mappings with unpopulated holes). Needs root and DAMON sysfs.
//! - **refs**: every interval tierkit writes `1` to `/proc/PID/clear_refs` (clearing
//!   the accessed bits of the target's pages) and reads `Referenced:` per mapping from
//!   `/proc/PID/smaps` at the end of the interval: the bytes touched in it. Works on any
//!   kernel, for any process tierkit may ptrace. Clearing the bits also resets what the
//!   kernel's reclaim knows about the target's recent use, which matters only under
//!   memory pressure.
//!
//! `auto` takes DAMON when it is available, else refs.
//!
//! # Hot, warm, cold
//!
//! Both methods give, per interval and mapping, the referenced bytes `r` out of the
//! resident bytes `R`. Over a window of the last [`WINDOW`] intervals:
//!
//! - **hot** = `min(r) / R`: referenced in every interval of the window;
//! - **cold** = `1 - max(r) / R`: referenced in none;
//! - **warm** = the rest.
//!
//! These are exact when the pages referenced in a quieter interval are among those
//! referenced in a busier one (true of skewed access patterns, where the hot set is
//! touched every time), and estimates otherwise: per-mapping counts cannot tell which
//! pages were touched. Mappings are grouped by name (a library's several mappings are
//! one line; unnamed anonymous memory is `[anon]`); only mappings tierkit could tier
//! (ordinary memory, not `[vdso]` or device memory) are counted.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::memory::procfs::ProcError;
use crate::run::report::Ended;
use crate::run::state::{self, StateError, StateLock};
use crate::signals::Signals;
use crate::source::damon::{DamonError, DamonMonitor, DamonOptions, Poll, Region};
use crate::source::smaps::{clear_refs, mapping_name, read_smaps, SmapsEntry};
use crate::status::{format_bytes, format_duration, format_percent};
use crate::target::{Target, TargetExit};

/// Intervals a mapping's heat is judged over.
pub const WINDOW: usize = 4;

/// How the heat is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProfileMethod {
    /// DAMON regions.
    Damon,
    /// `clear_refs` + smaps `Referenced`.
    Refs,
}

impl ProfileMethod {
    /// `"damon"` or `"refs"`.
    pub fn name(self) -> &'static str {
        match self {
            ProfileMethod::Damon => "damon",
            ProfileMethod::Refs => "refs",
        }
    }

    /// What it measures, for the report's first line.
    pub fn describe(self) -> &'static str {
        match self {
            ProfileMethod::Damon => "DAMON regions",
            ProfileMethod::Refs => "clear_refs + smaps Referenced",
        }
    }
}

/// What `--source` asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProfileChoice {
    /// DAMON when available, else refs.
    Auto,
    /// Exactly this method.
    Only(ProfileMethod),
}

impl std::str::FromStr for ProfileChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(ProfileChoice::Auto),
            "damon" => Ok(ProfileChoice::Only(ProfileMethod::Damon)),
            "refs" => Ok(ProfileChoice::Only(ProfileMethod::Refs)),
            other => Err(format!("unknown profile source {other:?}: expected damon, refs or auto")),
        }
    }
}

/// How to profile.
#[derive(Clone, Debug)]
pub struct ProfileConfig {
    /// Length of one interval.
    pub interval: Duration,
    /// Stop after this long (`None`: when the target exits or a signal arrives).
    pub duration: Option<Duration>,
    /// Which method.
    pub choice: ProfileChoice,
    /// Root of procfs and sysfs (`/`).
    pub root: PathBuf,
    /// Directory of tierkit's lock and state files (DAMON only).
    pub state_dir: PathBuf,
}

/// Why profiling could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The interval is too short.
    #[error("--interval {0} ms is too short: at least 10 ms")]
    Interval(u128),
    /// The target's procfs files could not be read or written.
    #[error(transparent)]
    Proc(#[from] ProcError),
    /// DAMON failed.
    #[error(transparent)]
    Damon(#[from] DamonError),
    /// The state directory could not be used (DAMON only).
    #[error(transparent)]
    State(#[from] StateError),
}

/// One mapping's (or the whole process's) heat at the end of an interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MappingHeat {
    /// The mapping's name (`all` for the total).
    pub mapping: String,
    /// Resident bytes.
    pub resident_bytes: u64,
    /// Bytes referenced in the interval.
    pub referenced_bytes: u64,
    /// Fraction referenced in every interval of the window.
    pub hot: f64,
    /// Fraction referenced in some intervals of the window.
    pub warm: f64,
    /// Fraction referenced in none.
    pub cold: f64,
}

/// The report of one interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Snapshot {
    /// Seconds since profiling started, at the end of the interval.
    pub t: f64,
    /// The whole process.
    pub total: MappingHeat,
    /// Each mapping with resident memory, most resident first.
    pub mappings: Vec<MappingHeat>,
}

/// How a profile ended.
#[derive(Clone, Debug)]
pub struct ProfileOutcome {
    /// The method used.
    pub method: ProfileMethod,
    /// Why it stopped.
    pub ended: Ended,
    /// Intervals reported.
    pub intervals: usize,
}

/// Resident and referenced bytes of one named mapping in one interval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observation {
    /// The mapping's name.
    pub name: String,
    /// Resident bytes.
    pub resident: u64,
    /// Referenced bytes (at most `resident`).
    pub referenced: u64,
}

/// Keeps the window of referenced bytes per mapping and turns observations into
/// [`Snapshot`]s (see the [module documentation](self) for the classification).
#[derive(Clone, Debug, Default)]
pub struct HeatTracker {
    history: BTreeMap<String, VecDeque<u64>>,
}

impl HeatTracker {
    /// Records one interval ending `t` seconds in and reports it.
    pub fn observe(&mut self, t: f64, observations: &[Observation]) -> Snapshot {
        let mut mappings = Vec::with_capacity(observations.len());
        let (mut total, mut hot_bytes, mut cold_bytes) = (MappingHeat::named("all"), 0.0, 0.0);
        let mut seen = Vec::with_capacity(observations.len());
        for o in observations {
            seen.push(o.name.as_str());
            let window = self.history.entry(o.name.clone()).or_default();
            window.push_back(o.referenced.min(o.resident));
            while window.len() > WINDOW {
                window.pop_front();
            }
            let heat = classify(o, window);
            total.resident_bytes += o.resident;
            total.referenced_bytes += heat.referenced_bytes;
            hot_bytes += heat.hot * o.resident as f64;
            cold_bytes += heat.cold * o.resident as f64;
            if o.resident > 0 {
                mappings.push(heat);
            }
        }
        self.history.retain(|name, _| seen.contains(&name.as_str()));
        if total.resident_bytes > 0 {
            let r = total.resident_bytes as f64;
            (total.hot, total.cold) = (hot_bytes / r, cold_bytes / r);
            total.warm = (1.0 - total.hot - total.cold).max(0.0);
        }
        mappings.sort_by(|a, b| b.resident_bytes.cmp(&a.resident_bytes).then_with(|| a.mapping.cmp(&b.mapping)));
        Snapshot { t, total, mappings }
    }
}

impl MappingHeat {
    fn named(name: &str) -> Self {
        Self { mapping: name.to_string(), resident_bytes: 0, referenced_bytes: 0, hot: 0.0, warm: 0.0, cold: 0.0 }
    }
}

/// The heat of `o` given its `window` of referenced bytes (newest last).
fn classify(o: &Observation, window: &VecDeque<u64>) -> MappingHeat {
    let mut heat = MappingHeat::named(&o.name);
    heat.resident_bytes = o.resident;
    heat.referenced_bytes = o.referenced.min(o.resident);
    if o.resident == 0 {
        return heat;
    }
    let r = o.resident as f64;
    let low = window.iter().copied().min().unwrap_or(0).min(o.resident) as f64;
    let high = window.iter().copied().max().unwrap_or(0).min(o.resident) as f64;
    heat.hot = low / r;
    heat.cold = 1.0 - high / r;
    heat.warm = (1.0 - heat.hot - heat.cold).max(0.0);
    heat
}

/// Sums `entries` per mapping name (tierable mappings only), with the referenced bytes
/// `referenced(entry)` gives.
fn observations(entries: &[SmapsEntry], mut referenced: impl FnMut(&SmapsEntry) -> u64) -> Vec<Observation> {
    let mut by_name: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for e in entries.iter().filter(|e| e.mapping.tierable()) {
        let slot = by_name.entry(mapping_name(&e.mapping)).or_default();
        slot.0 += e.rss;
        slot.1 += referenced(e).min(e.rss);
    }
    by_name.into_iter().map(|(name, (resident, referenced))| Observation { name, resident, referenced }).collect()
}

/// Bytes of `m` covered by regions DAMON found accessed (`regions` in address order).
fn accessed_bytes(e: &SmapsEntry, regions: &[Region]) -> u64 {
    let (start, end) = (e.mapping.start, e.mapping.end);
    let first = regions.partition_point(|r| r.end <= start);
    regions[first..]
        .iter()
        .take_while(|r| r.start < end)
        .filter(|r| r.nr_accesses > 0)
        .map(|r| r.end.min(end).saturating_sub(r.start.max(start)))
        .sum()
}

/// What measures the intervals.
enum Sampler {
    Refs,
    Damon { monitor: DamonMonitor, regions: Vec<Region>, _lock: StateLock },
}

impl Sampler {
    fn open(cfg: &ProfileConfig, pid: u32) -> Result<(Sampler, ProfileMethod), ProfileError> {
        let damon = || -> Result<Sampler, ProfileError> {
            let acquired = state::acquire(&cfg.root, &cfg.state_dir)?;
            let opts = DamonOptions {
                state_file: Some(cfg.state_dir.join(state::DAMON_FILE)),
                ..DamonOptions::with_aggregation(cfg.interval.as_micros() as u64)
            };
            let monitor = DamonMonitor::start(&cfg.root, pid as i32, &opts)?;
            Ok(Sampler::Damon { monitor, regions: Vec::new(), _lock: acquired.lock })
        };
        match cfg.choice {
            ProfileChoice::Only(ProfileMethod::Refs) => Ok((Sampler::Refs, ProfileMethod::Refs)),
            ProfileChoice::Only(ProfileMethod::Damon) => Ok((damon()?, ProfileMethod::Damon)),
            ProfileChoice::Auto => {
                match DamonMonitor::check_available(&cfg.root).map_err(ProfileError::from).and_then(|()| damon()) {
                    Ok(sampler) => Ok((sampler, ProfileMethod::Damon)),
                    Err(_) => Ok((Sampler::Refs, ProfileMethod::Refs)),
                }
            }
        }
    }

    /// Starts an interval.
    fn begin(&mut self, root: &Path, pid: u32) -> Result<(), ProfileError> {
        match self {
            Sampler::Refs => Ok(clear_refs(root, pid)?),
            Sampler::Damon { .. } => Ok(()),
        }
    }

    /// Ends an interval; `None` when the target is gone.
    fn observe(&mut self, root: &Path, pid: u32) -> Result<Option<Vec<Observation>>, ProfileError> {
        if let Sampler::Damon { monitor, regions, .. } = self {
            if let Poll::Stopped = monitor.poll(regions)? {
                return Ok(None);
            }
        }
        let entries = match read_smaps(root, pid) {
            Ok(entries) => entries,
            Err(ProcError::Gone { .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        Ok(Some(match self {
            Sampler::Refs => observations(&entries, |e| e.referenced),
            Sampler::Damon { regions, .. } => observations(&entries, |e| accessed_bytes(e, regions)),
        }))
    }

    fn stop(self) -> Option<String> {
        match self {
            Sampler::Refs => None,
            Sampler::Damon { monitor, .. } => monitor.stop().err().map(|e| format!("giving the kdamond back: {e}")),
        }
    }
}

/// Profiles `target` until it exits, a signal arrives or `cfg.duration` elapses,
/// calling `report` with each interval's snapshot. `warn` receives cleanup problems.
pub fn profile(
    cfg: &ProfileConfig,
    target: &mut Target,
    signals: &Signals,
    report: &mut dyn FnMut(ProfileMethod, &Snapshot),
    warn: &mut dyn FnMut(&str),
) -> Result<ProfileOutcome, ProfileError> {
    if cfg.interval < Duration::from_millis(10) {
        return Err(ProfileError::Interval(cfg.interval.as_millis()));
    }
    let pid = target.pid();
    let started = Instant::now();
    let (mut sampler, method) = match Sampler::open(cfg, pid) {
        Ok(opened) => opened,
        Err(_) if !target.is_alive() => {
            let ended = Ended::TargetExited(target.exit_status().unwrap_or(TargetExit::Unknown));
            return Ok(ProfileOutcome { method: ProfileMethod::Refs, ended, intervals: 0 });
        }
        Err(e) => return Err(e),
    };
    let mut tracker = HeatTracker::default();
    let mut intervals = 0;
    let result = (|| -> Result<Ended, ProfileError> {
        loop {
            let began = Instant::now();
            if let Err(e) = sampler.begin(&cfg.root, pid) {
                return gone_or(target, e);
            }
            let mut end = began + cfg.interval;
            if let Some(d) = cfg.duration {
                end = end.min(started + d);
            }
            if let Some(sig) = signals.sleep_until_signal(end.saturating_duration_since(Instant::now())) {
                return Ok(Ended::Signal(sig));
            }
            let observed = match sampler.observe(&cfg.root, pid) {
                Ok(observed) => observed,
                Err(e) => return gone_or(target, e),
            };
            let Some(observed) = observed else { return Ok(Ended::target_gone(target)) };
            let snapshot = tracker.observe(started.elapsed().as_secs_f64(), &observed);
            intervals += 1;
            report(method, &snapshot);
            if let Some(d) = cfg.duration.filter(|&d| started.elapsed() >= d) {
                return Ok(Ended::Duration(d));
            }
            if !target.is_alive() {
                return Ok(Ended::target_gone(target));
            }
        }
    })();
    if let Some(problem) = sampler.stop() {
        warn(&problem);
    }
    Ok(ProfileOutcome { method, ended: result?, intervals })
}

/// A failure that only means the target exited, or the failure itself.
fn gone_or(target: &mut Target, e: ProfileError) -> Result<Ended, ProfileError> {
    if matches!(e, ProfileError::Proc(ProcError::Gone { .. })) || !target.is_alive() {
        Ok(Ended::target_gone(target))
    } else {
        Err(e)
    }
}

/// One interval as text: the total line, then the `top` most resident mappings.
pub fn format_snapshot(s: &Snapshot, top: usize) -> String {
    let line = |h: &MappingHeat| {
        format!(
            "{:>10}  hot {:>6}  warm {:>6}  cold {:>6}",
            format_bytes(h.resident_bytes),
            format_percent(h.hot),
            format_percent(h.warm),
            format_percent(h.cold)
        )
    };
    let mut out =
        format!("[{}] {:<40} {}\n", format_duration(Duration::from_secs_f64(s.t)), "all mappings", line(&s.total));
    for m in s.mappings.iter().take(top) {
        let mut name = m.mapping.clone();
        if name.chars().count() > 40 {
            let tail: String = name.chars().rev().take(39).collect::<Vec<_>>().into_iter().rev().collect();
            name = format!("…{tail}");
        }
        let _ = writeln!(
            out,
            "{:>w$} {name:<40} {}",
            "",
            line(m),
            w = format_duration(Duration::from_secs_f64(s.t)).len() + 2
        );
    }
    if s.mappings.len() > top {
        let _ = writeln!(out, "{:>w$} ({} smaller mappings not shown)", "", s.mappings.len() - top, w = 2);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(name: &str, resident: u64, referenced: u64) -> Observation {
        Observation { name: name.to_string(), resident, referenced }
    }

    #[test]
    fn the_window_separates_hot_warm_and_cold() {
        let mut t = HeatTracker::default();
        let first = t.observe(0.5, &[obs("[heap]", 1000, 600), obs("/lib/x.so", 100, 0)]);
        let heap = &first.mappings[0];
        assert_eq!(heap.mapping, "[heap]");
        assert_eq!((heap.hot, heap.warm, heap.cold), (0.6, 0.0, 0.4), "one interval: touched is hot");
        // The touched share varies: 300 every time, up to 600 in some intervals.
        t.observe(1.0, &[obs("[heap]", 1000, 300), obs("/lib/x.so", 100, 0)]);
        let s = t.observe(1.5, &[obs("[heap]", 1000, 450), obs("/lib/x.so", 100, 0)]);
        let heap = &s.mappings[0];
        assert!((heap.hot - 0.3).abs() < 1e-9 && (heap.warm - 0.3).abs() < 1e-9 && (heap.cold - 0.4).abs() < 1e-9);
        assert_eq!(s.mappings[1].cold, 1.0);
        // The total weighs mappings by resident bytes.
        assert_eq!(s.total.resident_bytes, 1100);
        assert!((s.total.hot - 300.0 / 1100.0).abs() < 1e-9);
        assert!((s.total.cold - 500.0 / 1100.0).abs() < 1e-9);
        assert!((s.total.hot + s.total.warm + s.total.cold - 1.0).abs() < 1e-9);
        // After WINDOW quiet intervals the heap's old heat is forgotten.
        for i in 0..WINDOW {
            t.observe(2.0 + i as f64, &[obs("[heap]", 1000, 0)]);
        }
        let quiet = t.observe(9.0, &[obs("[heap]", 1000, 0)]);
        assert_eq!(quiet.mappings[0].cold, 1.0);
        assert_eq!(quiet.mappings.len(), 1, "x.so left");
    }

    #[test]
    fn damon_regions_are_clipped_to_mappings_and_resident_bytes() {
        let smaps = "1000-5000 rw-p 00000000 00:00 0   [heap]\nRss: 8 kB\nReferenced: 0 kB\n\
                     9000-a000 r--p 00000000 00:00 0   [vvar]\nRss: 4 kB\n";
        let entries = crate::source::smaps::parse_smaps(smaps).unwrap();
        let regions = [
            Region { start: 0x0, end: 0x2000, nr_accesses: 3 },
            Region { start: 0x2000, end: 0x3000, nr_accesses: 0 },
            Region { start: 0x3000, end: 0x9000, nr_accesses: 1 },
        ];
        assert_eq!(accessed_bytes(&entries[0], &regions), 0x1000 + 0x2000);
        let o = observations(&entries, |e| accessed_bytes(e, &regions));
        assert_eq!(o, [obs("[heap]", 8192, 8192)], "capped at Rss; [vvar] is not tierable");
    }

    #[test]
    fn snapshots_print_the_biggest_mappings() {
        let mut t = HeatTracker::default();
        let s = t.observe(1.0, &[obs("[heap]", 4 << 20, 1 << 20), obs("[stack]", 8192, 8192), obs("[anon]", 4096, 0)]);
        let text = format_snapshot(&s, 2);
        assert!(text.starts_with("[1.0s] all mappings"), "{text}");
        assert!(text.contains("[heap]") && text.contains("hot  25.0%"), "{text}");
        assert!(text.contains("[stack]") && !text.contains("[anon]"), "{text}");
        assert!(text.contains("1 smaller mappings not shown"), "{text}");
        assert_eq!("refs".parse::<ProfileChoice>(), Ok(ProfileChoice::Only(ProfileMethod::Refs)));
    }
}
