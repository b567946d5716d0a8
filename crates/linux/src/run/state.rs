//! tierkit's machine-wide state: one lock so that only one tierkit at a time changes
//! kernel state (a kdamond, the tiering knobs), and recovery of what a killed run left.
//!
//! The lock is `flock(2)` on `<state dir>/daemon.lock` (the state dir is `/run/tierkit`
//! by default), holding the owner's pid for messages. The kernel drops it when its
//! holder dies, however it dies, so a lock that can be taken means no tierkit is
//! running, and then any state file left in the directory (`knobs.json`, `damon.json`,
//! `damos.json`) belongs to a run that was killed: its knobs are put back and its
//! kdamond given back before anything else happens.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use crate::source::damon::KdamondClaim;
use crate::source::kernel::KernelTiering;

/// The lock file's name in the state directory.
pub const LOCK_FILE: &str = "daemon.lock";
/// The kernel source's saved knobs.
pub const KNOBS_FILE: &str = "knobs.json";
/// The DAMON source's kdamond claim.
pub const DAMON_FILE: &str = "damon.json";
/// The DAMOS source's kdamond claim.
pub const DAMOS_FILE: &str = "damos.json";

/// Why the state directory could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// Another tierkit holds the lock.
    #[error(
        "another tierkit ({holder}) is using DAMON or the kernel's tiering knobs on this machine ({} is locked); \
         one tierkit at a time may change kernel state: use --source perf, or stop the other one",
        path.display()
    )]
    Busy {
        /// The lock file.
        path: PathBuf,
        /// `pid N`, or `unknown pid`.
        holder: String,
    },
    /// The directory or lock file could not be created or locked.
    #[error("cannot use the state directory {}: {source} (it needs root; override with TIERKIT_STATE_DIR)", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
}

/// The held lock; dropping it releases it.
#[derive(Debug)]
pub struct StateLock {
    _file: File,
}

/// What taking the lock found and did.
#[derive(Debug)]
pub struct Acquired {
    /// The lock, held until dropped.
    pub lock: StateLock,
    /// One line per thing recovered from a killed run.
    pub recovered: Vec<String>,
    /// Recovery failures (the state file is kept; the source that needs it will refuse
    /// to start, saying so).
    pub problems: Vec<String>,
}

/// Takes the lock in `state_dir` and recovers what a killed run left there, reading and
/// writing kernel files under `root`.
pub fn acquire(root: &Path, state_dir: &Path) -> Result<Acquired, StateError> {
    let io_err = |path: &Path, source| StateError::Io { path: path.to_path_buf(), source };
    fs::create_dir_all(state_dir).map_err(|e| io_err(state_dir, e))?;
    let path = state_dir.join(LOCK_FILE);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| io_err(&path, e))?;
    // SAFETY: flock on a descriptor this function owns; LOCK_NB never blocks.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            let holder = text.trim().parse::<u32>().map_or_else(|_| "unknown pid".to_string(), |p| format!("pid {p}"));
            return Err(StateError::Busy { path, holder });
        }
        return Err(io_err(&path, err));
    }
    let write_pid = |file: &mut File| -> io::Result<()> {
        file.set_len(0)?;
        file.rewind()?;
        writeln!(file, "{}", std::process::id())
    };
    write_pid(&mut file).map_err(|e| io_err(&path, e))?;
    let (mut recovered, mut problems) = (Vec::new(), Vec::new());
    match KernelTiering::recover(root, &state_dir.join(KNOBS_FILE)) {
        Ok(knobs) if knobs.is_empty() => {}
        Ok(knobs) => recovered.push(format!(
            "restored kernel knobs a killed tierkit run had changed: {}",
            knobs.iter().map(|k| k.to_string()).collect::<Vec<_>>().join(", ")
        )),
        Err(e) => problems.push(format!("recovering a killed run's kernel knobs: {e}")),
    }
    for (file, source) in [(DAMON_FILE, "damon"), (DAMOS_FILE, "damos")] {
        match KdamondClaim::recover(root, &state_dir.join(file)) {
            Ok(true) => {
                recovered.push(format!("gave back the kdamond a killed tierkit run had claimed ({source} source)"))
            }
            Ok(false) => {}
            Err(e) => problems.push(format!("recovering a killed run's kdamond ({source} source): {e}")),
        }
    }
    Ok(Acquired { lock: StateLock { _file: file }, recovered, problems })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_is_exclusive_names_its_holder_and_is_released_on_drop() {
        let dir = std::env::temp_dir().join(format!("tierkit-state-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let root = dir.join("root"); // no kernel files, no state files: nothing to recover
        let first = acquire(&root, &dir.join("state")).unwrap();
        assert!(first.recovered.is_empty() && first.problems.is_empty());
        let pid = fs::read_to_string(dir.join("state").join(LOCK_FILE)).unwrap();
        assert_eq!(pid.trim(), std::process::id().to_string());
        let busy = acquire(&root, &dir.join("state")).unwrap_err().to_string();
        assert!(busy.contains(&format!("pid {}", std::process::id())), "{busy}");
        assert!(busy.contains("--source perf"), "{busy}");
        drop(first);
        // The lock is the open file's: a child that another test forks while the lock is
        // held keeps a copy of the (close-on-exec) descriptor until it execs, so the lock
        // may outlive the drop by that long. Bounded by a minute: the exec takes
        // milliseconds even on a loaded machine.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let again = loop {
            match acquire(&root, &dir.join("state")) {
                Err(StateError::Busy { .. }) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                other => break other,
            }
        };
        again.expect("free again once dropped");
        fs::remove_dir_all(&dir).unwrap();
    }
}
