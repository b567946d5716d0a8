//! DAMON snapshots of a process, one per aggregation interval, handed to a sink: the
//! observing half of `tierkit record --via damon` (the CLI turns the regions into page
//! samples and writes the trace).
//!
//! The kdamond is claimed under tierkit's state lock (so a concurrent `tierkit run` does
//! not take the same one, and a killed recorder's kdamond is recovered by the next
//! tierkit), monitors the target's virtual address space with DAMON's own region
//! adaptation (the kernel's 5 ms sampling, 10–1000 regions) and the aggregation interval
//! asked for, and lists only regions found accessed at least once. It is given back on
//! every exit path.
//!
//! DAMON's regions need not follow the program's mappings (a region may span a small
//! unmapped gap between two of them), so each region is clipped to the accessible
//! mappings of `/proc/PID/maps` (re-read every [`MAPS_REFRESH`]) before the sink sees it:
//! pages that are not mapped were not accessed.

use std::ops::Range;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::memory::procfs::{read_maps, ProcError};
use crate::run::report::Ended;
use crate::run::state::{self, StateError};
use crate::signals::Signals;
use crate::source::damon::{DamonError, DamonMonitor, DamonOptions, Poll, Region};
use crate::target::Target;

/// How to record.
#[derive(Clone, Debug)]
pub struct DamonRecordConfig {
    /// DAMON's aggregation interval: one snapshot each.
    pub aggregation: Duration,
    /// Stop after this long (`None`: when the target exits or a signal arrives).
    pub duration: Option<Duration>,
    /// Root of sysfs (`/`).
    pub root: PathBuf,
    /// Directory of tierkit's lock and state files.
    pub state_dir: PathBuf,
}

/// How a recording ended.
#[derive(Debug)]
pub struct DamonRecordOutcome {
    /// Why it ended.
    pub ended: Ended,
    /// Snapshots handed to the sink.
    pub snapshots: u64,
    /// Accessed regions in them.
    pub regions: u64,
}

/// Why recording could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum DamonRecordError {
    /// The aggregation interval is outside what DAMON takes here.
    #[error("aggregation interval {0} ms: expected 10 to 10000 ms")]
    Interval(u128),
    /// DAMON failed (including "not available here because …").
    #[error(transparent)]
    Damon(#[from] DamonError),
    /// The state directory could not be used.
    #[error(transparent)]
    State(#[from] StateError),
    /// The target's mappings could not be read.
    #[error(transparent)]
    Proc(#[from] ProcError),
    /// The sink refused a snapshot (e.g. the trace file could not be written).
    #[error("{0}")]
    Sink(String),
}

/// How often the target's mappings are re-read to clip regions to.
pub const MAPS_REFRESH: Duration = Duration::from_secs(1);

/// The byte ranges of the target's accessible mappings, sorted, adjacent ones merged.
fn mapped_ranges(cfg: &DamonRecordConfig, pid: u32) -> Result<Vec<Range<u64>>, ProcError> {
    let mut out: Vec<Range<u64>> = Vec::new();
    for m in read_maps(&cfg.root, pid)?.into_iter().filter(|m| m.perms.read || m.perms.write || m.perms.exec) {
        match out.last_mut() {
            Some(last) if last.end >= m.start => last.end = last.end.max(m.end),
            _ => out.push(m.start..m.end),
        }
    }
    Ok(out)
}

/// Appends to `out` the parts of `regions` inside `mapped` (both sorted by address).
fn clip(regions: &[Region], mapped: &[Range<u64>], out: &mut Vec<Region>) {
    let mut i = 0;
    for r in regions {
        while i < mapped.len() && mapped[i].end <= r.start {
            i += 1;
        }
        for m in mapped[i..].iter().take_while(|m| m.start < r.end) {
            let (start, end) = (r.start.max(m.start), r.end.min(m.end));
            if start < end {
                out.push(Region { start, end, nr_accesses: r.nr_accesses });
            }
        }
    }
}

/// What receives each snapshot: its index and the accessed regions; an error ends the
/// recording.
pub type Sink<'a> = dyn FnMut(u64, &[Region]) -> Result<(), String> + 'a;

/// Refuses what [`record`] cannot do, before anything is claimed (and so before the
/// program to record is started): an aggregation interval outside 10 ms – 10 s, no
/// usable DAMON sysfs interface under `cfg.root`, or no kdamond free for tierkit.
pub fn check(cfg: &DamonRecordConfig) -> Result<(), DamonRecordError> {
    if !(10_000..=10_000_000).contains(&cfg.aggregation.as_micros()) {
        return Err(DamonRecordError::Interval(cfg.aggregation.as_millis()));
    }
    Ok(DamonMonitor::check_free(&cfg.root)?)
}

/// Records `target` with DAMON until it exits, a signal arrives or `cfg.duration`
/// elapses, calling `sink` with the accessed regions of each aggregation interval (in
/// address order) and its index (0, 1, …).
pub fn record(
    cfg: &DamonRecordConfig,
    target: &mut Target,
    signals: &Signals,
    sink: &mut Sink<'_>,
) -> Result<DamonRecordOutcome, DamonRecordError> {
    check(cfg)?;
    let acquired = state::acquire(&cfg.root, &cfg.state_dir)?;
    let opts = DamonOptions {
        state_file: Some(cfg.state_dir.join(state::DAMON_FILE)),
        min_nr_accesses: 1,
        ..DamonOptions::with_aggregation(cfg.aggregation.as_micros() as u64)
    };
    let mut monitor = match DamonMonitor::start(&cfg.root, target.pid() as i32, &opts) {
        Ok(m) => m,
        Err(_) if !target.is_alive() => {
            return Ok(DamonRecordOutcome { ended: Ended::target_gone(target), snapshots: 0, regions: 0 });
        }
        Err(e) => return Err(e.into()),
    };
    let started = Instant::now();
    let (mut snapshots, mut count) = (0u64, 0u64);
    let (mut regions, mut clipped, mut mapped) = (Vec::new(), Vec::new(), Vec::new());
    let mut maps_read: Option<Instant> = None;
    let pid = target.pid();
    let result = (|| -> Result<Ended, DamonRecordError> {
        loop {
            if let Some(sig) = signals.received() {
                return Ok(Ended::Signal(sig));
            }
            if let Poll::Stopped = monitor.poll(&mut regions)? {
                return Ok(Ended::target_gone(target));
            }
            if maps_read.is_none_or(|t| t.elapsed() >= MAPS_REFRESH) {
                match mapped_ranges(cfg, pid) {
                    Ok(m) => mapped = m,
                    Err(_) if !target.is_alive() => return Ok(Ended::target_gone(target)),
                    Err(e) => return Err(e.into()),
                }
                maps_read = Some(Instant::now());
            }
            clipped.clear();
            clip(&regions, &mapped, &mut clipped);
            sink(snapshots, &clipped).map_err(DamonRecordError::Sink)?;
            snapshots += 1;
            count += clipped.len() as u64;
            if let Some(d) = cfg.duration.filter(|&d| started.elapsed() >= d) {
                return Ok(Ended::Duration(d));
            }
            if !target.is_alive() {
                return Ok(Ended::target_gone(target));
            }
        }
    })();
    let stopped = monitor.stop();
    drop(acquired);
    let ended = result?;
    stopped?;
    Ok(DamonRecordOutcome { ended, snapshots, regions: count })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(root: PathBuf, aggregation_ms: u64) -> DamonRecordConfig {
        let state_dir = root.join("state");
        DamonRecordConfig { aggregation: Duration::from_millis(aggregation_ms), duration: None, root, state_dir }
    }

    #[test]
    fn regions_are_clipped_to_the_mappings() {
        let r = |start, end, nr_accesses| Region { start, end, nr_accesses };
        let mapped = [0x1000..0x5000, 0x8000..0x9000, 0x20000..0x30000];
        let regions = [r(0x0, 0x3000, 4), r(0x4000, 0xa000, 7), r(0xa000, 0x20000, 9), r(0x2f000, 0x40000, 2)];
        let mut out = Vec::new();
        clip(&regions, &mapped, &mut out);
        assert_eq!(
            out,
            [r(0x1000, 0x3000, 4), r(0x4000, 0x5000, 7), r(0x8000, 0x9000, 7), r(0x2f000, 0x30000, 2)],
            "a region over a gap keeps only its mapped parts; one wholly in a gap vanishes"
        );
    }

    #[test]
    fn a_missing_damon_interface_is_refused_naming_what_is_missing() {
        let root = std::env::temp_dir().join(format!("tierkit-damon-record-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        let err = check(&config(root.clone(), 100)).unwrap_err();
        assert!(err.to_string().contains("CONFIG_DAMON_SYSFS"), "{err}");
        assert!(!root.join("state").exists(), "nothing taken for a refusal");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn intervals_outside_damons_range_are_refused() {
        for ms in [5, 20_000] {
            let err = check(&config(PathBuf::from("/nonexistent"), ms)).unwrap_err();
            assert!(matches!(err, DamonRecordError::Interval(m) if m == u128::from(ms)), "{err}");
        }
    }
}
