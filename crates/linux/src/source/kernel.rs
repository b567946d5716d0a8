//! The `kernel` source: turn on the kernel's own memory tiering (NUMA balancing in its
//! memory-tiering mode, the upstreamed TPP promotion path, plus demotion at reclaim),
//! watch it through `/proc/vmstat`, and put every knob back afterwards.
//!
//! Knobs tierkit writes (paths relative to the root directory, `/` on a live system):
//!
//! | knob | file | tierkit writes |
//! | --- | --- | --- |
//! | [`Knob::NumaBalancing`] | `proc/sys/kernel/numa_balancing` | `2` (`NUMA_BALANCING_MEMORY_TIERING`) or `3` |
//! | [`Knob::DemotionEnabled`] | `sys/kernel/mm/numa/demotion_enabled` | `true` (or `false`) |
//! | [`Knob::PromoteRateLimitMbps`] | `proc/sys/kernel/numa_balancing_promote_rate_limit_MBps` | only when asked |
//! | [`Knob::ScanDelayMs`] and the other scanner knobs | `sys/kernel/debug/sched/numa_balancing/*` | only when asked |
//!
//! The scanner knobs live in debugfs; they matter on slow machines (QEMU TCG), where the
//! default one-second scan delay and period leave promotion idle for most of a short run.
//! `vm.zone_reclaim_mode` is left alone: tiering mode promotes through hint faults and
//! demotes from kswapd whatever its value, and changing it would change how the whole
//! machine reclaims.
//!
//! Every knob's previous contents are saved, byte for byte, to a small state file before
//! anything is written, so that the knobs can be put back after a crash
//! ([`KernelTiering::recover`]); the file is deleted once they are.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::sysfs_io::{self, SysfsError};

/// Where the daemon keeps the saved knob values by default.
pub const DEFAULT_STATE_FILE: &str = "/run/tierkit/knobs.json";

/// A kernel setting tierkit may change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Knob {
    /// `kernel.numa_balancing`: 0 off, 1 NUMA balancing, 2 memory tiering (Linux 5.18+).
    NumaBalancing,
    /// Whether reclaim demotes pages to a slower memory tier instead of discarding them.
    DemotionEnabled,
    /// `kernel.numa_balancing_promote_rate_limit_MBps` (Linux 6.0+).
    PromoteRateLimitMbps,
    /// NUMA balancing: delay before a task's first scan, in ms (debugfs).
    ScanDelayMs,
    /// NUMA balancing: shortest scan period, in ms (debugfs).
    ScanPeriodMinMs,
    /// NUMA balancing: longest scan period, in ms (debugfs).
    ScanPeriodMaxMs,
    /// NUMA balancing: MiB of address space scanned per period (debugfs).
    ScanSizeMb,
    /// Memory tiering: a slow-tier page faulting within this many ms of its scan is hot
    /// (debugfs, Linux 6.0+).
    HotThresholdMs,
}

impl Knob {
    /// Every knob, in the order tierkit writes them.
    pub const ALL: [Knob; 8] = [
        Knob::DemotionEnabled,
        Knob::PromoteRateLimitMbps,
        Knob::ScanDelayMs,
        Knob::ScanPeriodMinMs,
        Knob::ScanPeriodMaxMs,
        Knob::ScanSizeMb,
        Knob::HotThresholdMs,
        Knob::NumaBalancing,
    ];

    /// The knob's file, relative to the root directory.
    pub fn path(self) -> &'static str {
        match self {
            Knob::NumaBalancing => "proc/sys/kernel/numa_balancing",
            Knob::DemotionEnabled => "sys/kernel/mm/numa/demotion_enabled",
            Knob::PromoteRateLimitMbps => "proc/sys/kernel/numa_balancing_promote_rate_limit_MBps",
            Knob::ScanDelayMs => "sys/kernel/debug/sched/numa_balancing/scan_delay_ms",
            Knob::ScanPeriodMinMs => "sys/kernel/debug/sched/numa_balancing/scan_period_min_ms",
            Knob::ScanPeriodMaxMs => "sys/kernel/debug/sched/numa_balancing/scan_period_max_ms",
            Knob::ScanSizeMb => "sys/kernel/debug/sched/numa_balancing/scan_size_mb",
            Knob::HotThresholdMs => "sys/kernel/debug/sched/numa_balancing/hot_threshold_ms",
        }
    }

    /// The knob's short name (its file name).
    pub fn name(self) -> &'static str {
        self.path().rsplit('/').next().unwrap_or(self.path())
    }

    /// Whether the kernel's tiering mode needs this knob (the others are tuning).
    pub fn is_required(self) -> bool {
        matches!(self, Knob::NumaBalancing | Knob::DemotionEnabled)
    }

    /// Why the knob's file can be missing.
    fn missing_reason(self) -> &'static str {
        match self {
            Knob::NumaBalancing => "the kernel was built without CONFIG_NUMA_BALANCING",
            Knob::DemotionEnabled => {
                "the kernel cannot demote to slower memory tiers (needs Linux 5.15+ with CONFIG_NUMA and \
                 CONFIG_MIGRATION), or sysfs is not mounted"
            }
            Knob::PromoteRateLimitMbps => "Linux before 6.0 has no promotion rate limit",
            Knob::HotThresholdMs => {
                "debugfs is not mounted (mount -t debugfs none /sys/kernel/debug), or Linux before 6.0 has no \
                 hot threshold"
            }
            Knob::ScanDelayMs | Knob::ScanPeriodMinMs | Knob::ScanPeriodMaxMs | Knob::ScanSizeMb => {
                "debugfs is not mounted (mount -t debugfs none /sys/kernel/debug), or the kernel lacks \
                 CONFIG_DEBUG_FS"
            }
        }
    }
}

impl std::fmt::Display for Knob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The `numa_balancing` mode tierkit asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BalancingMode {
    /// `2`: promote hot pages from slow tiers only (what TPP upstreamed).
    #[default]
    MemoryTiering,
    /// `3`: memory tiering plus classic balancing between CPU nodes.
    NormalAndMemoryTiering,
}

impl BalancingMode {
    /// The value written to `numa_balancing`.
    pub fn value(self) -> u32 {
        match self {
            BalancingMode::MemoryTiering => 2,
            BalancingMode::NormalAndMemoryTiering => 3,
        }
    }
}

/// What [`KernelTiering::enable`] sets. Knobs left `None` are not touched.
#[derive(Clone, Debug, PartialEq)]
pub struct TieringOptions {
    /// The `numa_balancing` mode.
    pub mode: BalancingMode,
    /// Value of `demotion_enabled` (`true` lets reclaim demote instead of discard).
    pub demotion: bool,
    /// Promotion rate limit in MB/s (kernel default 65536).
    pub promote_rate_limit_mbps: Option<u64>,
    /// Scan delay in ms (kernel default 1000).
    pub scan_delay_ms: Option<u32>,
    /// Shortest scan period in ms (kernel default 1000).
    pub scan_period_min_ms: Option<u32>,
    /// Longest scan period in ms (kernel default 60000).
    pub scan_period_max_ms: Option<u32>,
    /// MiB scanned per period (kernel default 256).
    pub scan_size_mb: Option<u32>,
    /// Hot threshold in ms (kernel default 1000).
    pub hot_threshold_ms: Option<u32>,
    /// Where the previous knob values are saved until they are restored.
    pub state_file: PathBuf,
}

impl Default for TieringOptions {
    fn default() -> Self {
        TieringOptions {
            mode: BalancingMode::default(),
            demotion: true,
            promote_rate_limit_mbps: None,
            scan_delay_ms: None,
            scan_period_min_ms: None,
            scan_period_max_ms: None,
            scan_size_mb: None,
            hot_threshold_ms: None,
            state_file: PathBuf::from(DEFAULT_STATE_FILE),
        }
    }
}

impl TieringOptions {
    /// The values to write, in [`Knob::ALL`] order (`numa_balancing` last, once demotion
    /// and the scanner are set up).
    fn writes(&self) -> Result<Vec<(Knob, String)>, TieringError> {
        if let (Some(min), Some(max)) = (self.scan_period_min_ms, self.scan_period_max_ms) {
            if min > max {
                return Err(TieringError::InvalidOption(format!(
                    "scan_period_min_ms ({min}) is larger than scan_period_max_ms ({max})"
                )));
            }
        }
        let value = |knob: Knob| -> Option<String> {
            match knob {
                Knob::NumaBalancing => Some(self.mode.value().to_string()),
                Knob::DemotionEnabled => Some(self.demotion.to_string()),
                Knob::PromoteRateLimitMbps => self.promote_rate_limit_mbps.map(|v| v.to_string()),
                Knob::ScanDelayMs => self.scan_delay_ms.map(|v| v.to_string()),
                Knob::ScanPeriodMinMs => self.scan_period_min_ms.map(|v| v.to_string()),
                Knob::ScanPeriodMaxMs => self.scan_period_max_ms.map(|v| v.to_string()),
                Knob::ScanSizeMb => self.scan_size_mb.map(|v| v.to_string()),
                Knob::HotThresholdMs => self.hot_threshold_ms.map(|v| v.to_string()),
            }
        };
        Ok(Knob::ALL.iter().filter_map(|&knob| value(knob).map(|v| (knob, v))).collect())
    }
}

/// Why the kernel's tiering could not be turned on, or its knobs put back.
#[derive(Debug, thiserror::Error)]
pub enum TieringError {
    /// A knob tiering mode needs does not exist.
    #[error("kernel has no memory tiering mode because {} does not exist: {reason}", path.display())]
    NoTieringMode {
        /// The missing knob.
        knob: Knob,
        /// Its file.
        path: PathBuf,
        /// Why it can be missing.
        reason: &'static str,
    },
    /// The kernel refused `numa_balancing = 2`.
    #[error(
        "kernel has no memory tiering mode because it refused numa_balancing={value} ({source}): Linux before \
         5.18 accepts only 0 and 1"
    )]
    ModeRefused {
        /// The value refused.
        value: String,
        /// The write error.
        #[source]
        source: SysfsError,
    },
    /// An optional tuning knob does not exist.
    #[error("cannot set {knob}: {} does not exist ({reason})", path.display())]
    NoSuchTunable {
        /// The missing knob.
        knob: Knob,
        /// Its file.
        path: PathBuf,
        /// Why it can be missing.
        reason: &'static str,
    },
    /// The caller may not change kernel settings.
    #[error("changing {knob} needs root (CAP_SYS_ADMIN): {source}")]
    PermissionDenied {
        /// The knob.
        knob: Knob,
        /// The failed access.
        #[source]
        source: SysfsError,
    },
    /// Reading or writing a knob failed otherwise.
    #[error("{knob}: {source}")]
    Knob {
        /// The knob.
        knob: Knob,
        /// The failed access.
        #[source]
        source: SysfsError,
    },
    /// The options contradict themselves.
    #[error("invalid kernel tiering options: {0}")]
    InvalidOption(String),
    /// A state file of an earlier run is still there: its knobs were never restored.
    #[error(
        "{} holds knob values saved by an earlier tierkit run that did not restore them; run the recovery \
         (the daemon does it at start) before turning kernel tiering on again",
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
    #[error(
        "state file {} is unreadable ({detail}); check the knobs by hand ({}) and delete it",
        path.display(),
        Knob::ALL.map(Knob::name).join(", ")
    )]
    BadStateFile {
        /// The state file.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// Some knobs could not be put back.
    #[error(transparent)]
    Restore(#[from] RestoreError),
    /// Turning tiering on failed, and so did putting back the knobs already changed.
    #[error("{cause}; then {restore}")]
    EnableFailed {
        /// Why turning it on failed.
        cause: Box<TieringError>,
        /// What could not be put back.
        #[source]
        restore: RestoreError,
    },
}

/// Knobs that could not be put back, or a state file that could not be deleted after
/// they were; the saved values stay in the state file so that [`KernelTiering::recover`]
/// can try again.
#[derive(Debug)]
pub struct RestoreError {
    /// The state file that still holds the saved values.
    pub state_file: PathBuf,
    /// Each knob that failed, with the value it should have got back.
    pub failures: Vec<KnobFailure>,
    /// Why the state file could not be deleted, when every knob was restored.
    pub remove_error: Option<io::Error>,
}

impl std::fmt::Display for RestoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(err) = &self.remove_error {
            return write!(
                f,
                "kernel knobs restored, but state file {} could not be deleted: {err}",
                self.state_file.display()
            );
        }
        write!(
            f,
            "could not restore {} kernel knob(s) (saved values kept in {}): ",
            self.failures.len(),
            self.state_file.display()
        )?;
        for (i, failure) in self.failures.iter().enumerate() {
            let sep = if i == 0 { "" } else { "; " };
            write!(f, "{sep}{} back to {:?}: {}", failure.knob, failure.original.trim_end(), failure.error)?;
        }
        Ok(())
    }
}

impl std::error::Error for RestoreError {}

/// One knob that could not be restored.
#[derive(Debug)]
pub struct KnobFailure {
    /// The knob.
    pub knob: Knob,
    /// The value it held before tierkit changed it.
    pub original: String,
    /// Why writing it back failed.
    pub error: SysfsError,
}

/// A knob's value before tierkit changed it, exactly as read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Saved {
    knob: Knob,
    original: String,
}

/// The state file's contents.
#[derive(Debug, Serialize, Deserialize)]
struct StateFile {
    /// Format version.
    version: u32,
    /// Saved knobs, in the order they were written.
    knobs: Vec<Saved>,
}

const STATE_VERSION: u32 = 1;

/// Entry points of the `kernel` source.
pub struct KernelTiering;

impl KernelTiering {
    /// Saves every knob `opts` touches (to `opts.state_file` first, then in memory) and
    /// writes the new values. The returned guard puts them all back when dropped or on
    /// [`KnobGuard::restore`]. If a write fails, the knobs already written are restored
    /// before the error is returned.
    pub fn enable(root: &Path, opts: &TieringOptions) -> Result<KnobGuard, TieringError> {
        let writes = opts.writes()?;
        let mut saved = Vec::with_capacity(writes.len());
        for (knob, _) in &writes {
            let path = root.join(knob.path());
            let original = sysfs_io::read_raw(&path).map_err(|e| knob_error(*knob, e))?;
            sysfs_io::check_writable(&path).map_err(|e| knob_error(*knob, e))?;
            saved.push(Saved { knob: *knob, original });
        }
        let state = StateFile { version: STATE_VERSION, knobs: saved };
        let json = serde_json::to_vec_pretty(&state)
            .map_err(|e| TieringError::StateFile { path: opts.state_file.clone(), source: io::Error::other(e) })?;
        sysfs_io::create_exclusive(&opts.state_file, &json).map_err(|source| {
            if source.kind() == io::ErrorKind::AlreadyExists {
                TieringError::LeftoverState { path: opts.state_file.clone() }
            } else {
                TieringError::StateFile { path: opts.state_file.clone(), source }
            }
        })?;
        let mut guard =
            KnobGuard { root: root.to_path_buf(), state_file: opts.state_file.clone(), saved: Vec::new(), done: false };
        for ((knob, value), saved) in writes.iter().zip(state.knobs) {
            if let Err(err) = sysfs_io::write_value(&root.join(knob.path()), value) {
                let err = if *knob == Knob::NumaBalancing && err.errno() == Some(libc::EINVAL) {
                    TieringError::ModeRefused { value: value.clone(), source: err }
                } else {
                    knob_error(*knob, err)
                };
                return Err(match guard.restore_all() {
                    Ok(()) => err,
                    Err(restore) => TieringError::EnableFailed { cause: Box::new(err), restore },
                });
            }
            guard.saved.push(saved);
        }
        Ok(guard)
    }

    /// Restores the knobs saved in a state file an earlier run left behind (it crashed or
    /// was killed), then deletes the file. Returns the knobs restored: none when there is
    /// no state file.
    pub fn recover(root: &Path, state_file: &Path) -> Result<Vec<Knob>, TieringError> {
        let bytes = match fs::read(state_file) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(TieringError::StateFile { path: state_file.to_path_buf(), source }),
        };
        let bad = |detail: String| TieringError::BadStateFile { path: state_file.to_path_buf(), detail };
        let state: StateFile = serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
        if state.version != STATE_VERSION {
            return Err(bad(format!("format version {} (this tierkit writes {STATE_VERSION})", state.version)));
        }
        let knobs = state.knobs.iter().map(|s| s.knob).collect();
        let mut guard = KnobGuard {
            root: root.to_path_buf(),
            state_file: state_file.to_path_buf(),
            saved: state.knobs,
            done: false,
        };
        guard.restore_all()?;
        Ok(knobs)
    }
}

/// Maps a failed knob access to the error that says what to do about it.
fn knob_error(knob: Knob, err: SysfsError) -> TieringError {
    if err.is_not_found() {
        let path = err.path().to_path_buf();
        let reason = knob.missing_reason();
        if knob.is_required() {
            TieringError::NoTieringMode { knob, path, reason }
        } else {
            TieringError::NoSuchTunable { knob, path, reason }
        }
    } else if err.is_permission_denied() {
        TieringError::PermissionDenied { knob, source: err }
    } else {
        TieringError::Knob { knob, source: err }
    }
}

/// Kernel tiering turned on: restores every changed knob on [`KnobGuard::restore`] or
/// when dropped (a failed restore in `drop` is reported on stderr, and the state file is
/// kept for [`KernelTiering::recover`]).
#[derive(Debug)]
pub struct KnobGuard {
    root: PathBuf,
    state_file: PathBuf,
    saved: Vec<Saved>,
    done: bool,
}

impl KnobGuard {
    /// The knobs changed, with the values they held before.
    pub fn saved(&self) -> impl Iterator<Item = (Knob, &str)> {
        self.saved.iter().map(|s| (s.knob, s.original.as_str()))
    }

    /// The state file holding the saved values until they are restored.
    pub fn state_file(&self) -> &Path {
        &self.state_file
    }

    /// Puts every knob back (in reverse order) and deletes the state file; reports each
    /// knob that failed.
    pub fn restore(mut self) -> Result<(), RestoreError> {
        self.restore_all()
    }

    fn restore_all(&mut self) -> Result<(), RestoreError> {
        self.done = true;
        let mut failures = Vec::new();
        for saved in self.saved.iter().rev() {
            if let Err(error) = sysfs_io::write_value(&self.root.join(saved.knob.path()), &saved.original) {
                failures.push(KnobFailure { knob: saved.knob, original: saved.original.clone(), error });
            }
        }
        let mut remove_error = None;
        if failures.is_empty() {
            match fs::remove_file(&self.state_file) {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) => remove_error = Some(e),
            }
        }
        Err(RestoreError { state_file: self.state_file.clone(), failures, remove_error })
    }
}

impl Drop for KnobGuard {
    fn drop(&mut self) {
        if !self.done {
            if let Err(err) = self.restore_all() {
                eprintln!("tierkit: {err}");
            }
        }
    }
}

/// Declares [`TieringVmstat`]'s counters once: the struct fields, their `/proc/vmstat`
/// names and the per-field operations.
macro_rules! tiering_counters {
    ($($(#[doc = $doc:literal])* $field:ident,)*) => {
        /// The `/proc/vmstat` counters that show the kernel's tiering at work. A counter
        /// the running kernel does not have is `None`.
        #[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
        pub struct TieringVmstat {
            $($(#[doc = $doc])* pub $field: Option<u64>,)*
        }

        impl TieringVmstat {
            /// Every counter's `/proc/vmstat` name with its value.
            pub fn counters(&self) -> Vec<(&'static str, Option<u64>)> {
                vec![$((stringify!($field), self.$field),)*]
            }

            /// Each counter's growth since `earlier` (`None` where either read lacks it;
            /// a counter that went backwards counts as 0).
            pub fn delta_since(&self, earlier: &TieringVmstat) -> TieringVmstat {
                TieringVmstat {
                    $($field: self.$field.zip(earlier.$field).map(|(now, then)| now.saturating_sub(then)),)*
                }
            }

            fn slot(&mut self, name: &str) -> Option<&mut Option<u64>> {
                match name {
                    $(stringify!($field) => Some(&mut self.$field),)*
                    _ => None,
                }
            }
        }
    };
}

tiering_counters! {
    /// Pages promoted to a faster tier.
    pgpromote_success,
    /// Slow-tier pages found hot enough to promote.
    pgpromote_candidate,
    /// Pages demoted by kswapd.
    pgdemote_kswapd,
    /// Pages demoted by direct reclaim.
    pgdemote_direct,
    /// Pages demoted by khugepaged.
    pgdemote_khugepaged,
    /// Pages demoted by proactive reclaim (`memory.reclaim`).
    pgdemote_proactive,
    /// PTEs the NUMA balancing scanner protected.
    numa_pte_updates,
    /// NUMA hint faults taken.
    numa_hint_faults,
    /// NUMA hint faults on the faulting CPU's own node.
    numa_hint_faults_local,
    /// Pages NUMA balancing migrated.
    numa_pages_migrated,
    /// Pages migrated successfully (every cause).
    pgmigrate_success,
    /// Pages that failed to migrate (every cause).
    pgmigrate_fail,
}

impl TieringVmstat {
    /// Reads `proc/vmstat` under `root`.
    pub fn read(root: &Path) -> Result<Self, SysfsError> {
        let path = root.join("proc/vmstat");
        let text = sysfs_io::read_raw(&path)?;
        Ok(Self::parse(&text))
    }

    /// Picks the tiering counters out of `/proc/vmstat` text (`name value` lines); other
    /// and malformed lines are skipped.
    pub fn parse(text: &str) -> Self {
        let mut stat = TieringVmstat::default();
        for line in text.lines() {
            let mut words = line.split_ascii_whitespace();
            let (Some(name), Some(value), None) = (words.next(), words.next(), words.next()) else { continue };
            if let (Some(slot), Ok(value)) = (stat.slot(name), value.parse()) {
                *slot = Some(value);
            }
        }
        stat
    }

    /// Pages demoted by every reclaim path the kernel counts (`None` when it counts none).
    pub fn demoted(&self) -> Option<u64> {
        [self.pgdemote_kswapd, self.pgdemote_direct, self.pgdemote_khugepaged, self.pgdemote_proactive]
            .into_iter()
            .flatten()
            .reduce(|a, b| a.saturating_add(b))
    }
}
