//! A process's memory as procfs shows it: its mappings (`/proc/PID/maps`) and the state
//! of each page (`/proc/PID/pagemap`, `/proc/kpageflags`).
//!
//! Every reader takes a root directory (`/` on a live system) so parsing can be tested on
//! fixture trees.
//!
//! The text is parsed by the procfs crate's parsers (`procfs-core`, the half of `procfs`
//! that parses without touching the system), here and for `/proc/PID/stat` and
//! `/proc/PID/status` ([`parse_stat`], [`parse_status`]). The files are read by tierkit:
//! its errors tell a vanished process (`ENOENT`, `ESRCH`) from a denied read by the
//! kernel's errno, and the `procfs` crate's own readers would add `rustix` for nothing
//! tierkit needs.

pub mod maps;
pub mod pagemap;

use std::io;
use std::path::{Path, PathBuf};

use procfs_core::process::{Stat, Status};
use procfs_core::FromRead;

pub use maps::{parse_maps, read_maps, Mapping, MappingKind, Perms};
pub use pagemap::{KPageFlags, Pagemap, PagemapEntry};

/// A failed read of a process's procfs files.
#[derive(Debug, thiserror::Error)]
pub enum ProcError {
    /// The process no longer exists (or is a zombie without memory).
    #[error("process {pid} is gone ({path} vanished)")]
    Gone {
        /// The process.
        pid: u32,
        /// The file that showed it.
        path: PathBuf,
    },
    /// The caller may not read the file.
    #[error(
        "cannot read {path}: {source}; reading another process's memory map needs ptrace access \
         (same user and kernel.yama.ptrace_scope <= 1, or CAP_SYS_PTRACE)"
    )]
    Denied {
        /// The file.
        path: PathBuf,
        /// What the kernel said.
        source: io::Error,
    },
    /// Any other I/O failure.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the kernel said.
        source: io::Error,
    },
    /// A line of `maps` did not parse.
    #[error("{path} line {line}: cannot parse {text:?}: {what}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The line.
        text: String,
        /// What was wrong.
        what: String,
    },
}

impl ProcError {
    /// Classifies an I/O error on `path` of process `pid`.
    pub(crate) fn from_io(pid: u32, path: &Path, source: io::Error) -> Self {
        let path = path.to_owned();
        match (source.kind(), source.raw_os_error()) {
            (io::ErrorKind::NotFound, _) | (_, Some(libc::ESRCH)) => Self::Gone { pid, path },
            (io::ErrorKind::UnexpectedEof, _) => Self::Gone { pid, path },
            (io::ErrorKind::PermissionDenied, _) => Self::Denied { path, source },
            _ => Self::Io { path, source },
        }
    }
}

/// `root/proc/PID`.
pub fn pid_dir(root: &Path, pid: u32) -> PathBuf {
    root.join("proc").join(pid.to_string())
}

/// A procfs-core error as a short message: without the "please report this procfs bug"
/// wrapping its parsers put around any malformed field, and naming a missing field as
/// missing rather than as `NoneError`.
pub(crate) fn crate_message(e: &procfs_core::ProcError) -> String {
    match e {
        procfs_core::ProcError::InternalError(inner) => {
            // Nested failures repeat the wrapping on one line each; the last says what failed.
            let last = inner.msg.lines().last().unwrap_or_default();
            let msg = last.strip_prefix("Internal Unwrap Error: ").unwrap_or(last);
            if msg == "NoneError" {
                "a field is missing".to_string()
            } else {
                msg.to_string()
            }
        }
        other => other.to_string(),
    }
}

/// Parses the text of `/proc/PID/stat` with procfs-core. Its parser slices around the
/// command name unchecked, so text without `PID (NAME) ` is refused here first rather than
/// panicking there.
pub fn parse_stat(text: &str) -> Result<Stat, String> {
    let t = text.trim().as_bytes();
    let (Some(open), Some(close)) = (t.iter().position(|&b| b == b'('), t.iter().rposition(|&b| b == b')')) else {
        return Err("no command name in parentheses".to_string());
    };
    if open == 0 || t[open - 1] != b' ' || close < open || t.get(close + 1) != Some(&b' ') {
        return Err("not `PID (NAME) STATE ...`".to_string());
    }
    Stat::from_read(text.trim().as_bytes()).map_err(|e| crate_message(&e))
}

/// Parses the text of `/proc/PID/status` with procfs-core, which needs every line the
/// kernel has written since 2.6 (`Name` to `CapEff`, the signal masks included).
pub fn parse_status(text: &str) -> Result<Status, String> {
    Status::from_read(text.as_bytes())
        .map_err(|e| format!("{} (procfs-core needs a whole status file)", crate_message(&e)))
}
