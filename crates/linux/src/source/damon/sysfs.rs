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
//! Claiming a kdamond never disturbs another DAMON user: writing `nr_kdamonds` makes the
//! kernel delete and recreate *every* kdamond directory (losing their configuration) and
//! is refused with `EBUSY` while any kdamond runs. So tierkit adds a kdamond only when
//! there is none (`nr_kdamonds` 0 → 1, back to 0 at the end), otherwise borrows one that
//! is off and unconfigured (`contexts/nr_contexts` 0, reset to 0 at the end), and
//! otherwise refuses with [`DamonError::NoFreeKdamond`].
//!
//! A vaddr kdamond stops by itself when its target exits: `state` then reads `off` and
//! [`DamonMonitor::poll`] returns [`Poll::Stopped`].
//!
//! With a state file ([`DamonOptions::state_file`]), the claim is recorded before
//! anything is written, so a later run can give the kdamond back after a crash
//! ([`DamonMonitor::recover`]).
//!
//! Fixture trees: every path is taken relative to a root directory. The kernel creates
//! the numbered directories when an `nr_*` file is written; a fixture cannot, so tests
//! pre-create them. The driver writes the count and then uses the directory, which works
//! either way. A fixture's `state` file keeps whatever command word was written last;
//! the driver takes every state but `off` as running.

use std::fs;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::regions::Region;
use crate::sysfs_io::{self, SysfsError};

/// DAMON's admin directory, relative to the root directory.
pub const ADMIN_DIR: &str = "sys/kernel/mm/damon/admin";

/// Where the daemon records its kdamond claim by default.
pub const DEFAULT_STATE_FILE: &str = "/run/tierkit/damon.json";

/// How often a command refused with `EBUSY` (another writer's command in flight) is
/// retried, and how long to wait between tries.
const BUSY_RETRIES: u32 = 20;
const BUSY_WAIT: Duration = Duration::from_millis(50);

const STATE_VERSION: u32 = 1;

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
    #[error("kdamond {kdamond} refused to start monitoring pid {pid} (has it exited?): {source}")]
    StartRefused {
        /// The kdamond.
        kdamond: usize,
        /// The target.
        pid: i32,
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

/// Maps a failed first access of the admin tree: permission problems mean "not root".
fn access_error(err: SysfsError) -> DamonError {
    if err.is_permission_denied() {
        Unavailable::NotRoot { source: err }.into()
    } else {
        err.into()
    }
}

/// How tierkit gives its kdamond back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Release {
    /// tierkit added the kdamond: write `nr_kdamonds` back to this.
    ShrinkKdamonds {
        /// `nr_kdamonds` before.
        previous: usize,
    },
    /// tierkit borrowed an idle, unconfigured kdamond: write its `nr_contexts` back to 0.
    ClearContexts,
}

/// What the state file records.
#[derive(Debug, Serialize, Deserialize)]
struct Claim {
    version: u32,
    kdamond: usize,
    pid: i32,
    release: Release,
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
    admin: PathBuf,
    kdamond: usize,
    pid: i32,
    release: Release,
    state_file: Option<PathBuf>,
    released: bool,
}

impl DamonMonitor {
    /// Checks, without changing anything, that DAMON's sysfs interface exists under
    /// `root` and that the caller may use it. (Whether it monitors virtual addresses
    /// shows only once a context exists, in [`DamonMonitor::start`].)
    pub fn check_available(root: &Path) -> Result<(), DamonError> {
        let admin = root.join(ADMIN_DIR);
        if !admin.is_dir() {
            return Err(Unavailable::NoSysfs { path: admin }.into());
        }
        let nr_path = admin.join("kdamonds/nr_kdamonds");
        sysfs_io::read_raw(&nr_path).map_err(access_error)?;
        sysfs_io::check_writable(&nr_path).map_err(access_error)
    }

    /// [`check_available`](Self::check_available), and that a kdamond is free for
    /// tierkit now (none running for another user blocks it), reading only: for callers
    /// that must know before they start the process to monitor.
    pub fn check_free(root: &Path) -> Result<(), DamonError> {
        Self::check_available(root)?;
        choose_kdamond(&root.join(ADMIN_DIR)).map(|_| ())
    }

    /// Claims a kdamond, sets it up to monitor process `pid`'s virtual address space and
    /// turns it on. On failure the kdamond is given back before the error returns.
    pub fn start(root: &Path, pid: i32, opts: &DamonOptions) -> Result<DamonMonitor, DamonError> {
        opts.validate()?;
        Self::check_available(root)?;
        let proc_dir = root.join(format!("proc/{pid}"));
        if pid <= 0 || !proc_dir.is_dir() {
            return Err(DamonError::NoSuchProcess { pid, path: proc_dir });
        }
        if let Some(path) = opts.state_file.as_ref().filter(|path| path.exists()) {
            return Err(DamonError::LeftoverState { path: path.clone() });
        }
        let admin = root.join(ADMIN_DIR);
        let (kdamond, release) = choose_kdamond(&admin)?;
        if let Some(path) = &opts.state_file {
            let claim = Claim { version: STATE_VERSION, kdamond, pid, release };
            let json = serde_json::to_vec_pretty(&claim)
                .map_err(|e| DamonError::StateFile { path: path.clone(), source: io::Error::other(e) })?;
            sysfs_io::create_exclusive(path, &json).map_err(|source| {
                if source.kind() == io::ErrorKind::AlreadyExists {
                    DamonError::LeftoverState { path: path.clone() }
                } else {
                    DamonError::StateFile { path: path.clone(), source }
                }
            })?;
        }
        let mut monitor =
            DamonMonitor { admin, kdamond, pid, release, state_file: opts.state_file.clone(), released: false };
        match monitor.claim().and_then(|()| monitor.configure(opts)) {
            Ok(()) => Ok(monitor),
            Err(cause) => match monitor.release_all() {
                Ok(()) => Err(cause),
                Err(cleanup) => Err(DamonError::SetupFailed { cause: Box::new(cause), cleanup: Box::new(cleanup) }),
            },
        }
    }

    /// The index of the claimed kdamond (`kdamonds/<N>`).
    pub fn kdamond(&self) -> usize {
        self.kdamond
    }

    /// The monitored process.
    pub fn target_pid(&self) -> i32 {
        self.pid
    }

    /// The kdamond kernel thread's pid while it runs (to account its CPU time).
    pub fn kdamond_pid(&self) -> Result<Option<i32>, DamonError> {
        let pid: i32 = sysfs_io::read_parsed(&self.kdamond_dir().join("pid"), "a pid")?;
        Ok((pid > 0).then_some(pid))
    }

    /// Asks the kernel for the regions of the last aggregation interval and puts them in
    /// `out` (cleared first), in address order. Blocks until the kernel has them: about
    /// one aggregation interval, the kernel checking every 100 ms.
    pub fn poll(&mut self, out: &mut Vec<Region>) -> Result<Poll, DamonError> {
        out.clear();
        if !self.is_on()? {
            return Ok(Poll::Stopped);
        }
        if !self.command("update_schemes_tried_regions")? {
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
    pub fn stop(mut self) -> Result<(), DamonError> {
        self.release_all()
    }

    /// Gives back the kdamond a crashed or killed earlier run recorded in `state_file`:
    /// turns it off and restores the count it changed, if it still monitors the recorded
    /// pid (or was never configured). Deletes the state file. Returns whether a kdamond
    /// was given back (`false`: no state file, or the kdamond is no longer tierkit's).
    pub fn recover(root: &Path, state_file: &Path) -> Result<bool, DamonError> {
        let bytes = match fs::read(state_file) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(source) => return Err(DamonError::StateFile { path: state_file.to_path_buf(), source }),
        };
        let bad = |detail: String| DamonError::BadStateFile { path: state_file.to_path_buf(), detail };
        let claim: Claim = serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
        if claim.version != STATE_VERSION {
            return Err(bad(format!("format version {} (this tierkit writes {STATE_VERSION})", claim.version)));
        }
        let mut monitor = DamonMonitor {
            admin: root.join(ADMIN_DIR),
            kdamond: claim.kdamond,
            pid: claim.pid,
            release: claim.release,
            state_file: Some(state_file.to_path_buf()),
            released: true,
        };
        if !monitor.still_ours()? {
            monitor.remove_state_file()?;
            return Ok(false);
        }
        monitor.release_all()?;
        Ok(true)
    }

    fn kdamond_dir(&self) -> PathBuf {
        self.admin.join(format!("kdamonds/{}", self.kdamond))
    }

    fn context_dir(&self) -> PathBuf {
        self.kdamond_dir().join("contexts/0")
    }

    fn scheme_dir(&self) -> PathBuf {
        self.context_dir().join("schemes/0")
    }

    fn is_on(&self) -> Result<bool, DamonError> {
        Ok(sysfs_io::read_trimmed(&self.kdamond_dir().join("state"))? != "off")
    }

    /// Writes a command word to `state`, retrying while another command is in flight.
    /// `Ok(false)` when the kdamond turned out to be off.
    fn command(&self, word: &str) -> Result<bool, DamonError> {
        let state = self.kdamond_dir().join("state");
        let mut tries = 0;
        loop {
            match sysfs_io::write_value(&state, word) {
                Ok(()) => return Ok(true),
                Err(err) if err.errno() == Some(libc::EBUSY) && tries < BUSY_RETRIES => {
                    tries += 1;
                    thread::sleep(BUSY_WAIT);
                }
                Err(err) => return if self.is_on()? { Err(err.into()) } else { Ok(false) },
            }
        }
    }

    /// Makes the kdamond exist: grows `nr_kdamonds` when tierkit adds it.
    fn claim(&mut self) -> Result<(), DamonError> {
        if let Release::ShrinkKdamonds { previous } = self.release {
            let nr_path = self.admin.join("kdamonds/nr_kdamonds");
            write_nr(&nr_path, previous + 1, &self.kdamond_dir())?;
        }
        Ok(())
    }

    fn configure(&mut self, opts: &DamonOptions) -> Result<(), DamonError> {
        let contexts = self.kdamond_dir().join("contexts");
        let ctx = self.context_dir();
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
        sysfs_io::write_value(&targets.join("0/pid_target"), &self.pid.to_string())?;
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
        let state = self.kdamond_dir().join("state");
        sysfs_io::write_value(&state, "on").map_err(|source| DamonError::StartRefused {
            kdamond: self.kdamond,
            pid: self.pid,
            source,
        })
    }

    /// Whether the kdamond of a recovered claim is still tierkit's: it monitors the
    /// recorded pid, or it was never configured.
    fn still_ours(&self) -> Result<bool, DamonError> {
        if !self.admin.is_dir() {
            return Ok(false);
        }
        let nr: usize =
            sysfs_io::read_parsed(&self.admin.join("kdamonds/nr_kdamonds"), "a count").map_err(access_error)?;
        let expected_nr = match self.release {
            // Someone rewrote `nr_kdamonds` since: the kdamond is theirs now.
            Release::ShrinkKdamonds { previous } => previous + 1,
            Release::ClearContexts => nr,
        };
        if self.kdamond >= nr || nr != expected_nr {
            return Ok(false);
        }
        let contexts: usize = sysfs_io::read_parsed(&self.kdamond_dir().join("contexts/nr_contexts"), "a count")?;
        if contexts == 0 {
            return Ok(true);
        }
        match sysfs_io::read_parsed::<i32>(&self.context_dir().join("targets/0/pid_target"), "a pid") {
            Ok(pid) => Ok(pid == self.pid),
            Err(err) if err.is_not_found() => Ok(false),
            Err(err) => Err(err.into()),
        }
    }

    /// Turns the kdamond off if it runs, restores what tierkit changed, deletes the
    /// state file. Stops at the first failure (keeping the state file).
    fn release_all(&mut self) -> Result<(), DamonError> {
        self.released = true;
        if self.kdamond_dir().is_dir() && self.is_on()? {
            let state = self.kdamond_dir().join("state");
            if let Err(err) = sysfs_io::write_value(&state, "off") {
                // Off already: the target exited between the read and the write.
                if self.is_on()? {
                    return Err(err.into());
                }
            }
        }
        match self.release {
            Release::ShrinkKdamonds { previous } => {
                sysfs_io::write_value(&self.admin.join("kdamonds/nr_kdamonds"), &previous.to_string())?;
            }
            Release::ClearContexts => {
                let nr_contexts = self.kdamond_dir().join("contexts/nr_contexts");
                if nr_contexts.exists() {
                    sysfs_io::write_value(&nr_contexts, "0")?;
                }
            }
        }
        self.remove_state_file()
    }

    fn remove_state_file(&self) -> Result<(), DamonError> {
        match &self.state_file {
            Some(path) => match fs::remove_file(path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                Err(source) => Err(DamonError::StateFile { path: path.clone(), source }),
            },
            None => Ok(()),
        }
    }
}

impl Drop for DamonMonitor {
    fn drop(&mut self) {
        if !self.released {
            if let Err(err) = self.release_all() {
                eprintln!("tierkit: giving back DAMON kdamond {}: {err}", self.kdamond);
            }
        }
    }
}

/// Writes the count `n` to an `nr_*` file and checks that the directory the kernel
/// creates for it (`expect`) exists.
fn write_nr(nr_path: &Path, n: usize, expect: &Path) -> Result<(), DamonError> {
    sysfs_io::write_value(nr_path, &n.to_string())?;
    if expect.is_dir() {
        Ok(())
    } else {
        Err(DamonError::Missing { path: expect.to_path_buf(), after: nr_path.to_path_buf() })
    }
}

/// Picks the kdamond tierkit may use without disturbing anyone (see the module docs).
fn choose_kdamond(admin: &Path) -> Result<(usize, Release), DamonError> {
    let nr_path = admin.join("kdamonds/nr_kdamonds");
    let nr: usize = sysfs_io::read_parsed(&nr_path, "a count").map_err(access_error)?;
    if nr == 0 {
        return Ok((0, Release::ShrinkKdamonds { previous: 0 }));
    }
    let mut running = 0;
    for index in 0..nr {
        let dir = admin.join(format!("kdamonds/{index}"));
        let on = sysfs_io::read_trimmed(&dir.join("state"))? != "off";
        if on {
            running += 1;
            continue;
        }
        let contexts: usize = sysfs_io::read_parsed(&dir.join("contexts/nr_contexts"), "a count")?;
        if contexts == 0 {
            return Ok((index, Release::ClearContexts));
        }
    }
    Err(DamonError::NoFreeKdamond { nr_kdamonds: nr, running, nr_path })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permission_errors_say_root_is_needed() {
        let source = SysfsError::Read {
            path: PathBuf::from("/sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds"),
            source: io::Error::from_raw_os_error(libc::EACCES),
        };
        let text = access_error(source).to_string();
        assert!(text.starts_with("DAMON not available here because"), "{text}");
        assert!(text.contains("root (CAP_SYS_ADMIN)") && text.contains("nr_kdamonds"), "{text}");
    }

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
