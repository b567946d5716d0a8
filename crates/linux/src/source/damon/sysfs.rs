//! The driver of DAMON's sysfs admin tree (`/sys/kernel/mm/damon/admin`, Linux 5.18+;
//! written against `Documentation/admin-guide/mm/damon/usage.rst` of Linux 6.12).
//!
//! [`DamonMonitor::start`] claims one kdamond, gives it one `vaddr` context with one
//! target (the monitored pid, optionally with initial regions) and one `stat` scheme
//! whose access pattern matches every region (or every region accessed at least
//! [`DamonOptions::min_nr_accesses`] times), and turns it on. [`DamonMonitor::poll`] asks
//! the kernel to fill the scheme's `tried_regions` directory
//! (`update_schemes_tried_regions`) and reads it back: those regions of the target with
//! their access counts. Stopping turns the kdamond off and gives it back as it was found.
//!
//! How the kdamond is claimed without disturbing another DAMON user, and given back after
//! a crash, is [`super::kdamond`]'s.
//!
//! A vaddr kdamond stops by itself when its target exits: `state` then reads `off` and
//! [`DamonMonitor::poll`] returns [`Poll::Stopped`].
//!
//! Fixture trees: every path is taken relative to a root directory. The kernel creates
//! the numbered directories when an `nr_*` file is written; a fixture cannot, so tests
//! pre-create them. The driver writes the count and then uses the directory, which works
//! either way. A fixture's `state` file keeps whatever command word was written last;
//! the driver takes every state but `off` as running.

use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};

use super::kdamond::{write_nr, KdamondClaim};
use super::regions::Region;
use crate::sysfs_io::{self, SysfsError};

/// DAMON's admin directory, relative to the root directory.
pub const ADMIN_DIR: &str = "sys/kernel/mm/damon/admin";

/// Where the daemon records its kdamond claim by default.
pub const DEFAULT_STATE_FILE: &str = "/run/tierkit/damon.json";

/// How DAMON monitors the target: its intervals and region bounds (`monitoring_attrs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DamonOptions {
    /// Sampling interval in µs: how often one page per region is checked.
    pub sample_us: u64,
    /// Aggregation interval in µs: the window `nr_accesses` counts over.
    pub aggr_us: u64,
    /// How often, in µs, the regions are refitted to the target's mappings.
    pub update_us: u64,
    /// Fewest regions DAMON keeps (the kernel requires at least 3).
    pub min_regions: u64,
    /// Most regions DAMON splits the address space into.
    pub max_regions: u64,
    /// Where to record the claimed kdamond for recovery after a crash (`None`: nowhere).
    pub state_file: Option<PathBuf>,
    /// The target's initial regions (sorted, disjoint byte ranges; see
    /// [`super::initial_regions`]); empty: DAMON starts from its own three regions.
    pub init_regions: Vec<Range<u64>>,
    /// The fewest accesses a region needs to be reported by [`DamonMonitor::poll`]
    /// (the stat scheme's `access_pattern/nr_accesses/min`): 0 reports every region, 1
    /// leaves out the idle ones, which spares the kernel and the reader their files.
    pub min_nr_accesses: u32,
}

impl Default for DamonOptions {
    /// The kernel's defaults: 5 ms sampling, 100 ms aggregation, 1 s updates, 10–1000
    /// regions.
    fn default() -> Self {
        DamonOptions {
            sample_us: 5_000,
            aggr_us: 100_000,
            update_us: 1_000_000,
            min_regions: 10,
            max_regions: 1_000,
            state_file: None,
            init_regions: Vec::new(),
            min_nr_accesses: 0,
        }
    }
}

impl DamonOptions {
    /// The kernel's defaults with aggregation interval `aggr_us` (at least 1 ms) and
    /// twenty checks in it: the kernel's 5 ms sampling, or a twentieth of a shorter
    /// interval (at least 100 µs).
    pub fn with_aggregation(aggr_us: u64) -> Self {
        let aggr_us = aggr_us.max(1_000);
        DamonOptions { sample_us: (aggr_us / 20).clamp(100, 5_000), aggr_us, ..DamonOptions::default() }
    }

    /// Checks what the kernel would refuse only when the kdamond is turned on.
    fn validate(&self) -> Result<(), DamonError> {
        let problem = if self.sample_us == 0 {
            "sample_us is 0".to_owned()
        } else if self.sample_us > self.aggr_us {
            format!("sample_us ({}) is larger than aggr_us ({})", self.sample_us, self.aggr_us)
        } else if self.min_regions < 3 {
            format!("min_regions ({}) is below 3, the kernel's minimum", self.min_regions)
        } else if self.min_regions > self.max_regions {
            format!("min_regions ({}) is larger than max_regions ({})", self.min_regions, self.max_regions)
        } else if let Some(r) = self.init_regions.iter().find(|r| r.start >= r.end) {
            format!("initial region {:#x}..{:#x} is empty", r.start, r.end)
        } else if let Some(w) = self.init_regions.windows(2).find(|w| w[0].end > w[1].start) {
            format!(
                "initial regions {:#x}..{:#x} and {:#x}..{:#x} overlap or are out of order",
                w[0].start, w[0].end, w[1].start, w[1].end
            )
        } else {
            return Ok(());
        };
        Err(DamonError::InvalidOptions(problem))
    }
}

/// Why DAMON cannot be used on this machine.
#[derive(Debug, thiserror::Error)]
pub enum Unavailable {
    /// No admin directory.
    #[error("{} does not exist: the kernel lacks CONFIG_DAMON_SYSFS (Linux 5.18+)", path.display())]
    NoSysfs {
        /// The missing directory.
        path: PathBuf,
    },
    /// The caller may not use it.
    #[error("DAMON's sysfs files need root (CAP_SYS_ADMIN): {source}")]
    NotRoot {
        /// The refused access.
        #[source]
        source: SysfsError,
    },
    /// DAMON cannot monitor virtual address spaces.
    #[error(
        "its DAMON cannot monitor virtual address spaces (no CONFIG_DAMON_VADDR): {} lists {listed:?}",
        path.display()
    )]
    NoVaddr {
        /// `avail_operations`.
        path: PathBuf,
        /// What it lists.
        listed: String,
    },
    /// DAMON cannot monitor physical memory (DAMOS tiering needs it).
    #[error(
        "its DAMON cannot monitor physical memory (no CONFIG_DAMON_PADDR), which the kernel's migrate_hot and \
         migrate_cold actions need: {} lists {listed:?}",
        path.display()
    )]
    NoPaddr {
        /// `avail_operations`.
        path: PathBuf,
        /// What it lists.
        listed: String,
    },
    /// DAMOS has no migration actions (Linux before 6.11).
    #[error("DAMOS cannot migrate between nodes (needs Linux 6.11+): {detail} ({})", path.display())]
    NoMigrateActions {
        /// The file refused or missing.
        path: PathBuf,
        /// What happened.
        detail: String,
    },
    /// DAMOS cannot keep a scheme to a memory cgroup (Linux before 6.3).
    #[error("DAMOS cannot filter by memory cgroup (needs Linux 6.3+): {detail} ({})", path.display())]
    NoMemcgFilter {
        /// The file or directory refused or missing.
        path: PathBuf,
        /// What happened.
        detail: String,
    },
    /// The nodes' physical address ranges are unknown.
    #[error("the physical memory of node {node} is unknown: {detail} ({})", path.display())]
    NoNodeRanges {
        /// The node.
        node: u32,
        /// Where tierkit looked.
        path: PathBuf,
        /// What was wrong.
        detail: String,
    },
}

/// A failure of the DAMON source.
#[derive(Debug, thiserror::Error)]
pub enum DamonError {
    /// DAMON cannot be used here.
    #[error("DAMON not available here because {0}")]
    NotAvailable(#[from] Unavailable),
    /// The options contradict the kernel's rules.
    #[error("invalid DAMON options: {0}")]
    InvalidOptions(String),
    /// The target does not exist.
    #[error("no process {pid} to monitor ({} does not exist)", path.display())]
    NoSuchProcess {
        /// The pid asked for.
        pid: i32,
        /// Its procfs directory.
        path: PathBuf,
    },
    /// Every kdamond belongs to another DAMON user.
    #[error(
        "no kdamond is free for tierkit: {nr_kdamonds} exist ({running} running), all configured by another DAMON \
         user; the kernel refuses to add one while any runs (EBUSY) and adding one would reset every other \
         kdamond's configuration. Stop the other user, or write 0 to {} if those kdamonds are stale",
        nr_path.display()
    )]
    NoFreeKdamond {
        /// `nr_kdamonds`.
        nr_kdamonds: usize,
        /// How many of them are on.
        running: usize,
        /// The `nr_kdamonds` file.
        nr_path: PathBuf,
    },
    /// The kernel did not create a directory it should have.
    #[error("{} is missing after writing {}", path.display(), after.display())]
    Missing {
        /// The directory.
        path: PathBuf,
        /// The `nr_*` file written.
        after: PathBuf,
    },
    /// The kdamond refused to start.
    #[error("kdamond {kdamond} refused to start {what}: {source}")]
    StartRefused {
        /// The kdamond.
        kdamond: usize,
        /// What it was set up for (`monitoring pid 12 (has it exited?)`).
        what: String,
        /// The refused write.
        #[source]
        source: SysfsError,
    },
    /// A region read back with its end before its start.
    #[error("{} reports a region ending (0x{end:x}) before it starts (0x{start:x})", path.display())]
    BadRegion {
        /// The region's directory.
        path: PathBuf,
        /// Its start.
        start: u64,
        /// Its end.
        end: u64,
    },
    /// Reading or writing a DAMON file failed.
    #[error(transparent)]
    Sysfs(#[from] SysfsError),
    /// Setting up failed, and so did giving the kdamond back.
    #[error("{cause}; then giving the kdamond back failed: {cleanup}")]
    SetupFailed {
        /// Why setting up failed.
        cause: Box<DamonError>,
        /// Why the cleanup failed.
        cleanup: Box<DamonError>,
    },
    /// A claim of an earlier run was never released.
    #[error(
        "{} records a kdamond claimed by an earlier tierkit run that did not give it back; run the recovery (the \
         daemon does it at start) first",
        path.display()
    )]
    LeftoverState {
        /// The state file.
        path: PathBuf,
    },
    /// The state file could not be written, read or removed.
    #[error("state file {}: {source}", path.display())]
    StateFile {
        /// The state file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: io::Error,
    },
    /// The state file is not one tierkit wrote.
    #[error("state file {} is unreadable ({detail}); check {ADMIN_DIR} by hand and delete it", path.display())]
    BadStateFile {
        /// The state file.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
}

/// What one [`DamonMonitor::poll`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Poll {
    /// The regions were read; `total_bytes` is the kernel's sum of their sizes (Linux
    /// 6.6+, `None` before).
    Regions {
        /// `tried_regions/total_bytes`.
        total_bytes: Option<u64>,
    },
    /// The kdamond is off: the target exited (or someone turned it off).
    Stopped,
}

/// A running DAMON monitor of one process. Dropping it turns the kdamond off and gives
/// it back (a failure is reported on stderr; [`DamonMonitor::stop`] returns it).
#[derive(Debug)]
pub struct DamonMonitor {
    claim: KdamondClaim,
}

impl DamonMonitor {
    /// Checks, without changing anything, that DAMON's sysfs interface exists under
    /// `root` and that the caller may use it. (Whether it monitors virtual addresses
    /// shows only once a context exists, in [`DamonMonitor::start`].)
    pub fn check_available(root: &Path) -> Result<(), DamonError> {
        KdamondClaim::check_available(root)
    }

    /// [`check_available`](Self::check_available), and that a kdamond is free for
    /// tierkit now (none running for another user blocks it), reading only: for callers
    /// that must know before they start the process to monitor.
    pub fn check_free(root: &Path) -> Result<(), DamonError> {
        KdamondClaim::check_free(root)
    }

    /// Claims a kdamond, sets it up to monitor process `pid`'s virtual address space and
    /// turns it on. On failure the kdamond is given back before the error returns.
    pub fn start(root: &Path, pid: i32, opts: &DamonOptions) -> Result<DamonMonitor, DamonError> {
        opts.validate()?;
        KdamondClaim::check_available(root)?;
        let proc_dir = root.join(format!("proc/{pid}"));
        if pid <= 0 || !proc_dir.is_dir() {
            return Err(DamonError::NoSuchProcess { pid, path: proc_dir });
        }
        let claim = KdamondClaim::claim(root, pid, opts.state_file.as_deref())?;
        let monitor = DamonMonitor { claim };
        match monitor.configure(opts) {
            Ok(()) => Ok(monitor),
            Err(cause) => Err(monitor.claim.give_back_after(cause)),
        }
    }

    /// The index of the claimed kdamond (`kdamonds/<N>`).
    pub fn kdamond(&self) -> usize {
        self.claim.index()
    }

    /// The monitored process.
    pub fn target_pid(&self) -> i32 {
        self.claim.pid()
    }

    /// The kdamond kernel thread's pid while it runs (to account its CPU time).
    pub fn kdamond_pid(&self) -> Result<Option<i32>, DamonError> {
        self.claim.kdamond_pid()
    }

    /// Asks the kernel for the regions of the last aggregation interval and puts them in
    /// `out` (cleared first), in address order. Blocks until the kernel has them: about
    /// one aggregation interval, the kernel checking every 100 ms.
    pub fn poll(&mut self, out: &mut Vec<Region>) -> Result<Poll, DamonError> {
        out.clear();
        if !self.claim.is_on()? {
            return Ok(Poll::Stopped);
        }
        if !self.claim.command("update_schemes_tried_regions")? {
            return Ok(Poll::Stopped);
        }
        let dir = self.scheme_dir().join("tried_regions");
        let total_bytes = match sysfs_io::read_parsed(&dir.join("total_bytes"), "a byte count") {
            Ok(bytes) => Some(bytes),
            Err(err) if err.is_not_found() => None,
            Err(err) => return Err(err.into()),
        };
        super::tried_regions::read_tried_regions(&dir, out)?;
        Ok(Poll::Regions { total_bytes })
    }

    /// Turns the kdamond off (unless the target's exit already did) and gives it back as
    /// it was found; deletes the state file.
    pub fn stop(self) -> Result<(), DamonError> {
        self.claim.release()
    }

    /// Gives back the kdamond a crashed or killed earlier run recorded in `state_file`
    /// ([`KdamondClaim::recover`]).
    pub fn recover(root: &Path, state_file: &Path) -> Result<bool, DamonError> {
        KdamondClaim::recover(root, state_file)
    }

    fn scheme_dir(&self) -> PathBuf {
        self.claim.context_dir().join("schemes/0")
    }

    fn configure(&self, opts: &DamonOptions) -> Result<(), DamonError> {
        let contexts = self.claim.dir().join("contexts");
        let ctx = self.claim.context_dir();
        write_nr(&contexts.join("nr_contexts"), 1, &ctx)?;
        let avail = ctx.join("avail_operations");
        match sysfs_io::read_trimmed(&avail) {
            Ok(listed) if !listed.split_whitespace().any(|op| op == "vaddr") => {
                return Err(Unavailable::NoVaddr { path: avail, listed }.into());
            }
            Ok(_) => {}
            Err(err) if err.is_not_found() => {} // Linux before 5.19 has no avail_operations.
            Err(err) => return Err(err.into()),
        }
        let ops = ctx.join("operations");
        if let Err(err) = sysfs_io::write_value(&ops, "vaddr") {
            return Err(match err.errno() {
                Some(libc::EINVAL) => Unavailable::NoVaddr { path: ops, listed: "no vaddr".to_owned() }.into(),
                _ => err.into(),
            });
        }
        let attrs = ctx.join("monitoring_attrs");
        let values = [
            ("intervals/sample_us", opts.sample_us),
            ("intervals/aggr_us", opts.aggr_us),
            ("intervals/update_us", opts.update_us),
            ("nr_regions/min", opts.min_regions),
            ("nr_regions/max", opts.max_regions),
        ];
        for (file, value) in values {
            sysfs_io::write_value(&attrs.join(file), &value.to_string())?;
        }
        let targets = ctx.join("targets");
        write_nr(&targets.join("nr_targets"), 1, &targets.join("0"))?;
        sysfs_io::write_value(&targets.join("0/pid_target"), &self.claim.pid().to_string())?;
        if !opts.init_regions.is_empty() {
            let regions = targets.join("0/regions");
            write_nr(&regions.join("nr_regions"), opts.init_regions.len(), &regions.join("0"))?;
            for (i, r) in opts.init_regions.iter().enumerate() {
                let dir = regions.join(i.to_string());
                sysfs_io::write_value(&dir.join("start"), &r.start.to_string())?;
                sysfs_io::write_value(&dir.join("end"), &r.end.to_string())?;
            }
        }
        let schemes = ctx.join("schemes");
        let scheme = self.scheme_dir();
        write_nr(&schemes.join("nr_schemes"), 1, &scheme)?;
        sysfs_io::write_value(&scheme.join("action"), "stat")?;
        // Match every region (of at least `min_nr_accesses` accesses): any size, any age.
        let pattern = scheme.join("access_pattern");
        let bounds = [
            ("sz", 0, u64::MAX),
            ("nr_accesses", u64::from(opts.min_nr_accesses), u64::from(u32::MAX)),
            ("age", 0, u64::from(u32::MAX)),
        ];
        for (dir, min, max) in bounds {
            sysfs_io::write_value(&pattern.join(dir).join("min"), &min.to_string())?;
            sysfs_io::write_value(&pattern.join(dir).join("max"), &max.to_string())?;
        }
        self.claim.turn_on(format!("monitoring pid {} (has it exited?)", self.claim.pid()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_follows_the_aggregation_interval() {
        let at = |aggr_us| {
            let o = DamonOptions::with_aggregation(aggr_us);
            (o.sample_us, o.aggr_us)
        };
        assert_eq!(at(100_000), (5_000, 100_000), "the kernel's 5 ms at 100 ms aggregation");
        assert_eq!(at(20_000), (1_000, 20_000), "twenty checks per shorter interval");
        assert_eq!(at(10), (100, 1_000), "at least 1 ms aggregation and 100 us sampling");
    }

    #[test]
    fn options_the_kernel_would_refuse_are_caught_early() {
        let ok = DamonOptions::default();
        assert!(ok.validate().is_ok());
        for bad in [
            DamonOptions { sample_us: 0, ..ok.clone() },
            DamonOptions { sample_us: 200_000, ..ok.clone() },
            DamonOptions { min_regions: 2, ..ok.clone() },
            DamonOptions { min_regions: 2000, ..ok.clone() },
            DamonOptions { init_regions: vec![0x1000..0x2000, 0x3000..0x3000], ..ok.clone() },
            DamonOptions { init_regions: vec![0x1000..0x3000, 0x2000..0x4000], ..ok.clone() },
        ] {
            assert!(matches!(bad.validate(), Err(DamonError::InvalidOptions(_))), "{bad:?}");
        }
    }
}
