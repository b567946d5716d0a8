//! Errors of the perf sampling source, and the "not available here because …" reasons.

use std::fmt;
use std::path::PathBuf;

use super::detect::PerfKind;

pub use crate::sys::Errno;

/// Why one kind of perf source cannot be used on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unavailable {
    /// The source kind that was tried.
    pub kind: PerfKind,
    /// Why not, in words an operator can act on.
    pub reason: String,
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} not available here because {}", self.kind, self.reason)
    }
}

/// What can go wrong opening or running the perf sampling source.
#[derive(Debug, thiserror::Error)]
pub enum PerfError {
    /// No requested kind of sampling works here; one reason per kind tried.
    #[error("perf sampling: {}", join(.0))]
    Unavailable(Vec<Unavailable>),
    /// `perf_event_open(2)` failed after detection succeeded (a new thread, a CPU).
    #[error("perf_event_open for {target} failed: {errno}: {hint}")]
    Open {
        /// `"tid 123"` or `"cpu 3"`.
        target: String,
        /// The error.
        errno: Errno,
        /// What it means and what to do.
        hint: String,
    },
    /// Mapping an event's ring buffer failed.
    #[error("mmap of the perf ring buffer ({pages} data pages) for {target} failed: {errno}: {hint}")]
    Mmap {
        /// `"tid 123"` or `"cpu 3"`.
        target: String,
        /// Data pages asked for.
        pages: usize,
        /// The error.
        errno: Errno,
        /// What to do.
        hint: String,
    },
    /// Enabling an event failed.
    #[error("PERF_EVENT_IOC_ENABLE for {target} failed: {errno}")]
    Enable {
        /// `"tid 123"` or `"cpu 3"`.
        target: String,
        /// The error.
        errno: Errno,
    },
    /// A procfs or sysfs file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A sysfs or procfs file has content tierkit does not understand.
    #[error("{path}: {reason}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The target process is gone.
    #[error("process {pid} has exited ({path} is gone)")]
    TargetGone {
        /// The target.
        pid: i32,
        /// The procfs directory that vanished.
        path: PathBuf,
    },
    /// The configuration asks for something impossible.
    #[error("invalid perf configuration: {0}")]
    Config(String),
}

fn join(reasons: &[Unavailable]) -> String {
    if reasons.is_empty() {
        return "no source kind was tried".to_string();
    }
    reasons.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

/// What an errno from `perf_event_open(2)` means for tierkit, and what to do about it.
/// `paranoid` is `/proc/sys/kernel/perf_event_paranoid` when it could be read.
pub fn open_hint(errno: Errno, paranoid: Option<i32>) -> String {
    let paranoid = paranoid.map_or_else(|| "unknown".to_string(), |p| p.to_string());
    match errno.0 {
        libc::EACCES | libc::EPERM => format!(
            "permission denied (perf_event_paranoid is {paranoid}): sampling another user's process, kernel \
             addresses or whole CPUs needs CAP_PERFMON or CAP_SYS_ADMIN, and the caller must be allowed to \
             ptrace the target"
        ),
        libc::ENOENT => "the kernel does not know this PMU type or event".to_string(),
        libc::ENODEV => "the PMU is not present on this CPU".to_string(),
        libc::EOPNOTSUPP => {
            "the PMU cannot sample in this mode (no overflow interrupt, or an exclusion filter it lacks)".to_string()
        }
        libc::EINVAL => "the kernel rejected the event attributes (precise_ip, period, sample type or \
                         per-thread mode unsupported by this PMU)"
            .to_string(),
        libc::ENODATA => "this CPU needs the mem-loads-aux event as group leader".to_string(),
        libc::ESRCH => "the thread has exited".to_string(),
        libc::EMFILE => "too many open files: raise RLIMIT_NOFILE (one perf event per thread)".to_string(),
        libc::E2BIG => "the kernel rejected the perf_event_attr size".to_string(),
        libc::ENOSYS => "the kernel was built without perf events (CONFIG_PERF_EVENTS)".to_string(),
        _ => "unexpected error from perf_event_open".to_string(),
    }
}

/// What an errno from mapping a perf ring buffer means.
pub fn mmap_hint(errno: Errno) -> String {
    match errno.0 {
        libc::EPERM | libc::ENOMEM => "the ring buffers exceed the locked-memory allowance: use fewer ring \
                                       pages, raise /proc/sys/kernel/perf_event_mlock_kb, or grant CAP_IPC_LOCK"
            .to_string(),
        libc::EINVAL => "the data page count must be a power of two".to_string(),
        _ => "unexpected error from mmap".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errnos_are_named() {
        assert_eq!(Errno(libc::EOPNOTSUPP).name(), "EOPNOTSUPP");
        assert_eq!(Errno(libc::EACCES).name(), "EACCES");
        assert!(Errno(libc::ENOENT).to_string().starts_with("ENOENT ("));
        assert_eq!(Errno(4095).name(), "errno");
    }

    #[test]
    fn hints_name_the_capabilities_and_paranoid_level() {
        let h = open_hint(Errno(libc::EACCES), Some(2));
        assert!(h.contains("perf_event_paranoid is 2"), "{h}");
        assert!(h.contains("CAP_PERFMON") && h.contains("CAP_SYS_ADMIN"), "{h}");
        assert!(open_hint(Errno(libc::EPERM), None).contains("unknown"));
    }

    #[test]
    fn unavailable_lists_every_reason() {
        let e = PerfError::Unavailable(vec![
            Unavailable { kind: PerfKind::Pebs, reason: "no cpu PMU".into() },
            Unavailable { kind: PerfKind::Ibs, reason: "no ibs_op PMU".into() },
        ]);
        let s = e.to_string();
        assert!(s.contains("Intel PEBS load latency not available here because no cpu PMU"), "{s}");
        assert!(s.contains("; AMD IBS op not available here because no ibs_op PMU"), "{s}");
    }
}
