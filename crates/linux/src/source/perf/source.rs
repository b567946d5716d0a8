//! [`PerfSource`]: address samples of a live process from `perf_event_open(2)`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use tierkit_core::{Event, Nanos, Page, TierId};

use super::attr;
use super::detect::{detect, online_cpus, sample_format, EventFds, EventSpec, PerfKind, Scope};
use super::error::{mmap_hint, open_hint, PerfError, Unavailable};
use super::record::{PerfStats, RawSample, RecordParser};
use super::ring::Ring;

/// The largest ring accepted: 256 MiB of data pages per event.
const MAX_RING_PAGES: usize = 1 << 16;

/// How to sample.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PerfConfig {
    /// Which event; `Auto` takes the first of PEBS, IBS, page faults that works.
    pub kind: PerfKind,
    /// One sample every `period` events; `None` takes the kind's default (PEBS 10007
    /// loads, IBS 65536 ops, page faults 1).
    pub period: Option<u64>,
    /// Data pages of each event's ring buffer (a power of two; one metadata page is
    /// added). 8 pages (32 KiB) hold about 580 samples.
    pub ring_pages: usize,
    /// Per thread or per CPU.
    pub scope: Scope,
    /// PEBS load-latency threshold in core cycles (`ldlat`); `None` keeps the sysfs
    /// event's default.
    pub load_latency: Option<u64>,
    /// Root of the procfs and sysfs trees (`/` on a live system).
    pub root: PathBuf,
}

impl Default for PerfConfig {
    fn default() -> Self {
        Self {
            kind: PerfKind::Auto,
            period: None,
            ring_pages: 8,
            scope: Scope::Auto,
            load_latency: None,
            root: PathBuf::from("/"),
        }
    }
}

/// What one event covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Thread(i32),
    Cpu(i32),
}

impl Target {
    fn describe(self) -> String {
        match self {
            Target::Thread(tid) => format!("tid {tid}"),
            Target::Cpu(cpu) => format!("cpu {cpu}"),
        }
    }
}

/// One open event: its ring and descriptors. Dropping it disables the event, unmaps
/// the ring and closes the descriptors, in that order.
#[derive(Debug)]
struct Stream {
    target: Target,
    ring: Ring,
    fds: EventFds,
}

impl Drop for Stream {
    fn drop(&mut self) {
        // Best effort: a descriptor whose thread has exited may refuse; closing it
        // below releases the event either way.
        let _ = attr::disable(self.fds.control());
    }
}

/// Address samples of one process from perf events, one ring buffer per thread (or
/// per CPU). Poll it regularly: a full ring drops samples, counted as `lost`.
#[derive(Debug)]
pub struct PerfSource {
    pid: i32,
    cfg: PerfConfig,
    spec: EventSpec,
    skipped: Vec<Unavailable>,
    parser: RecordParser,
    streams: Vec<Stream>,
    pending: Vec<RawSample>,
    stats: PerfStats,
}

impl PerfSource {
    /// Detects a working event for process `pid` (see [`super::detect()`]) and opens it
    /// on every thread of `pid` listed in `<root>/proc/<pid>/task` (or on every online
    /// CPU), enabled.
    pub fn open(pid: i32, cfg: PerfConfig) -> Result<PerfSource, PerfError> {
        if cfg.ring_pages == 0 || !cfg.ring_pages.is_power_of_two() || cfg.ring_pages > MAX_RING_PAGES {
            return Err(PerfError::Config(format!(
                "ring_pages must be a power of two from 1 to {MAX_RING_PAGES}, got {}",
                cfg.ring_pages
            )));
        }
        if cfg.period == Some(0) {
            return Err(PerfError::Config("the sampling period must be at least 1".to_string()));
        }
        if pid <= 0 {
            return Err(PerfError::Config(format!("pid must be positive, got {pid}")));
        }
        task_dir_tids(&cfg.root, pid)?;
        let detection = detect(pid, &cfg)?;
        let spec = detection.spec;
        let pid_filter = (spec.scope == Scope::Cpus).then_some(pid as u32);
        let mut source = PerfSource {
            pid,
            parser: RecordParser::new(sample_format(), pid_filter),
            cfg,
            spec,
            skipped: detection.skipped,
            streams: Vec::new(),
            pending: Vec::new(),
            stats: PerfStats::default(),
        };
        if source.spec.scope == Scope::Cpus {
            for cpu in online_cpus(&source.cfg.root)? {
                if let Some(stream) = source.open_stream(Target::Cpu(cpu))? {
                    source.streams.push(stream);
                }
            }
        } else {
            source.refresh_threads()?;
        }
        if source.streams.is_empty() {
            return Err(PerfError::TargetGone { pid, path: source.cfg.root.join(format!("proc/{pid}/task")) });
        }
        Ok(source)
    }

    /// The event in use.
    pub fn spec(&self) -> &EventSpec {
        &self.spec
    }

    /// Kinds detection passed over before settling on [`Self::spec`], with reasons.
    pub fn skipped(&self) -> &[Unavailable] {
        &self.skipped
    }

    /// The target process.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Open events: threads being sampled, or CPUs for per-CPU sampling.
    pub fn streams(&self) -> usize {
        self.streams.len()
    }

    /// Counts since opening.
    pub fn stats(&self) -> PerfStats {
        self.stats
    }

    /// Appends every sample published since the last poll to `out` and returns how
    /// many were appended. Samples come grouped by thread (or CPU), each group in time
    /// order. Never blocks.
    pub fn poll(&mut self, out: &mut Vec<RawSample>) -> usize {
        let before = out.len();
        out.append(&mut self.pending);
        for stream in &mut self.streams {
            stream.ring.drain(&mut self.parser, out, &mut self.stats);
        }
        out.len() - before
    }

    /// Opens events for threads of the target that appeared since the last call, and
    /// closes those of threads that exited (their last samples are kept for the next
    /// [`Self::poll`]). Returns how many threads were added. Per-CPU sampling covers new
    /// threads already, and returns 0. Fails with `TargetGone` once the process has
    /// exited (its events stay open, so a last [`Self::poll`] still returns their
    /// samples); when one thread cannot be opened the others still are, and the first
    /// error is returned.
    pub fn refresh_threads(&mut self) -> Result<usize, PerfError> {
        if self.spec.scope == Scope::Cpus {
            return Ok(0);
        }
        let tids: HashSet<i32> = task_dir_tids(&self.cfg.root, self.pid)?.into_iter().collect();
        let mut i = 0;
        while i < self.streams.len() {
            match self.streams[i].target {
                Target::Thread(tid) if !tids.contains(&tid) => {
                    let mut gone = self.streams.swap_remove(i);
                    gone.ring.drain(&mut self.parser, &mut self.pending, &mut self.stats);
                }
                _ => i += 1,
            }
        }
        let open: HashSet<i32> = self
            .streams
            .iter()
            .filter_map(|s| match s.target {
                Target::Thread(tid) => Some(tid),
                Target::Cpu(_) => None,
            })
            .collect();
        let mut new: Vec<i32> = tids.difference(&open).copied().collect();
        new.sort_unstable();
        let mut added = 0;
        let mut first_error = None;
        for tid in new {
            match self.open_stream(Target::Thread(tid)) {
                Ok(Some(stream)) => {
                    self.streams.push(stream);
                    added += 1;
                }
                Ok(None) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(added),
        }
    }

    /// Opens, maps and enables the event for `target`; `None` if the thread exited.
    fn open_stream(&self, target: Target) -> Result<Option<Stream>, PerfError> {
        let (pid, cpu) = match target {
            Target::Thread(tid) => (tid, -1),
            Target::Cpu(cpu) => (-1, cpu),
        };
        let fds = match self.spec.open(pid, cpu) {
            Ok(fds) => fds,
            Err(errno) if errno.0 == libc::ESRCH && matches!(target, Target::Thread(_)) => return Ok(None),
            Err(errno) => {
                let paranoid = super::detect::Privilege::read(&self.cfg.root).paranoid;
                return Err(PerfError::Open { target: target.describe(), errno, hint: open_hint(errno, paranoid) });
            }
        };
        let ring = Ring::map(&fds.event, self.cfg.ring_pages).map_err(|errno| PerfError::Mmap {
            target: target.describe(),
            pages: self.cfg.ring_pages,
            errno,
            hint: mmap_hint(errno),
        })?;
        let stream = Stream { target, ring, fds };
        attr::enable(stream.fds.control()).map_err(|errno| PerfError::Enable { target: target.describe(), errno })?;
        Ok(Some(stream))
    }
}

/// Thread ids in `<root>/proc/<pid>/task`; `TargetGone` if the directory is missing.
fn task_dir_tids(root: &Path, pid: i32) -> Result<Vec<i32>, PerfError> {
    let path = root.join(format!("proc/{pid}/task"));
    let entries = match std::fs::read_dir(&path) {
        Ok(entries) => entries,
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ESRCH)) => {
            return Err(PerfError::TargetGone { pid, path });
        }
        Err(source) => return Err(PerfError::Io { path, source }),
    };
    let mut tids = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| PerfError::Io { path: path.clone(), source })?;
        if let Some(tid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) {
            tids.push(tid);
        }
    }
    Ok(tids)
}

/// The `CLOCK_MONOTONIC` time in ns: the clock of [`RawSample::time`].
pub fn monotonic_ns() -> Nanos {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Turns samples into [`Event::Sample`]s for a policy and returns how many were added.
/// `origin_ns` is the platform's time zero on `CLOCK_MONOTONIC` ([`monotonic_ns`]);
/// `tier_of(page)` says where a page lives, and samples of pages it does not know (not
/// resident, not the target's) are dropped, as are samples without a user address.
/// A sample whose access type is unknown (page faults) counts as a load.
pub fn samples_to_events(
    samples: &[RawSample],
    origin_ns: Nanos,
    mut tier_of: impl FnMut(Page) -> Option<TierId>,
    out: &mut Vec<Event>,
) -> usize {
    let before = out.len();
    for s in samples {
        if s.addr == 0 || s.addr >> 63 != 0 {
            continue;
        }
        let page = s.page();
        let Some(tier) = tier_of(page) else { continue };
        out.push(Event::Sample {
            page,
            tier,
            word: Some(s.word()),
            write: s.write().unwrap_or(false),
            time: s.time.saturating_sub(origin_ns),
            stall_ns: None,
        });
    }
    out.len() - before
}
