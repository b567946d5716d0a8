//! A process's memory as procfs shows it: its mappings (`/proc/PID/maps`) and the state
//! of each page (`/proc/PID/pagemap`, `/proc/kpageflags`).
//!
//! Every reader takes a root directory (`/` on a live system) so parsing can be tested on
//! fixture trees.

pub mod maps;
pub mod pagemap;

use std::io;
use std::path::{Path, PathBuf};

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
        what: &'static str,
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
