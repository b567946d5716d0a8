//! One kdamond of DAMON's sysfs admin tree, claimed for tierkit and given back: what the
//! DAMON monitor ([`super::DamonMonitor`]) and the DAMOS tiering source
//! ([`super::DamosTiering`]) share.
//!
//! Claiming a kdamond never disturbs another DAMON user: writing `nr_kdamonds` makes the
//! kernel delete and recreate *every* kdamond directory (losing their configuration) and
//! is refused with `EBUSY` while any kdamond runs. So tierkit adds a kdamond only when
//! there is none (`nr_kdamonds` 0 → 1, back to 0 at the end), otherwise borrows one that
//! is off and unconfigured (`contexts/nr_contexts` 0, reset to 0 at the end), and
//! otherwise refuses with [`DamonError::NoFreeKdamond`].
//!
//! With a state file, the claim is recorded before anything is written, so a later run
//! can give the kdamond back after a crash ([`KdamondClaim::recover`]). The claim names
//! the process tierkit works for; the kdamond's `targets/0/pid_target` holds that pid
//! (the `paddr` operations ignore it), which is how a recovery tells tierkit's kdamond
//! from one another user configured since.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::sysfs::{DamonError, Unavailable, ADMIN_DIR};
use crate::sysfs_io::{self, SysfsError};

/// How often a command refused with `EBUSY` (another writer's command in flight), or a
/// read of `state` or `pid` refused so (the kdamond's own handling of a command holds
/// DAMON's sysfs lock; seen in the test guest), is retried, and how long to wait between
/// tries.
const BUSY_RETRIES: u32 = 20;
const BUSY_WAIT: Duration = Duration::from_millis(50);

const STATE_VERSION: u32 = 1;

/// Maps a failed first access of the admin tree: permission problems mean "not root".
pub(super) fn access_error(err: SysfsError) -> DamonError {
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

/// A kdamond claimed for tierkit. Dropping it turns the kdamond off and gives it back (a
/// failure is reported on stderr; [`KdamondClaim::release`] returns it).
#[derive(Debug)]
pub struct KdamondClaim {
    admin: PathBuf,
    kdamond: usize,
    pid: i32,
    release: Release,
    state_file: Option<PathBuf>,
    released: bool,
}

impl KdamondClaim {
    /// Checks, without changing anything, that DAMON's sysfs interface exists under
    /// `root` and that the caller may use it.
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
    /// tierkit now, reading only.
    pub fn check_free(root: &Path) -> Result<(), DamonError> {
        Self::check_available(root)?;
        choose_kdamond(&root.join(ADMIN_DIR)).map(|_| ())
    }

    /// Claims a kdamond for work on behalf of process `pid`: records the claim in
    /// `state_file` (refusing when one is left there), then makes the kdamond exist.
    /// Nothing is configured yet; on failure the kdamond is given back.
    pub fn claim(root: &Path, pid: i32, state_file: Option<&Path>) -> Result<KdamondClaim, DamonError> {
        Self::check_available(root)?;
        if let Some(path) = state_file.filter(|path| path.exists()) {
            return Err(DamonError::LeftoverState { path: path.to_path_buf() });
        }
        let admin = root.join(ADMIN_DIR);
        let (kdamond, release) = choose_kdamond(&admin)?;
        if let Some(path) = state_file {
            let claim = Claim { version: STATE_VERSION, kdamond, pid, release };
            let json = serde_json::to_vec_pretty(&claim)
                .map_err(|e| DamonError::StateFile { path: path.to_path_buf(), source: io::Error::other(e) })?;
            sysfs_io::create_exclusive(path, &json).map_err(|source| {
                if source.kind() == io::ErrorKind::AlreadyExists {
                    DamonError::LeftoverState { path: path.to_path_buf() }
                } else {
                    DamonError::StateFile { path: path.to_path_buf(), source }
                }
            })?;
        }
        let claimed = KdamondClaim {
            admin,
            kdamond,
            pid,
            release,
            state_file: state_file.map(Path::to_path_buf),
            released: false,
        };
        if let Release::ShrinkKdamonds { previous } = release {
            let nr_path = claimed.admin.join("kdamonds/nr_kdamonds");
            if let Err(cause) = write_nr(&nr_path, previous + 1, &claimed.dir()) {
                return Err(claimed.give_back_after(cause));
            }
        }
        Ok(claimed)
    }

    /// Gives the kdamond back after setup failed with `cause`; returns the error to report.
    pub fn give_back_after(mut self, cause: DamonError) -> DamonError {
        match self.release_all() {
            Ok(()) => cause,
            Err(cleanup) => DamonError::SetupFailed { cause: Box::new(cause), cleanup: Box::new(cleanup) },
        }
    }

    /// The index of the claimed kdamond (`kdamonds/<N>`).
    pub fn index(&self) -> usize {
        self.kdamond
    }

    /// The process tierkit works for.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The kdamond's directory.
    pub fn dir(&self) -> PathBuf {
        self.admin.join(format!("kdamonds/{}", self.kdamond))
    }

    /// Its one context's directory.
    pub fn context_dir(&self) -> PathBuf {
        self.dir().join("contexts/0")
    }

    /// Whether the kdamond runs.
    pub fn is_on(&self) -> Result<bool, DamonError> {
        Ok(read_locked(&self.dir().join("state"))? != "off")
    }

    /// The kdamond kernel thread's pid while it runs (to account its CPU time).
    pub fn kdamond_pid(&self) -> Result<Option<i32>, DamonError> {
        let path = self.dir().join("pid");
        let text = read_locked(&path)?;
        let pid: i32 = text.parse().map_err(|_| SysfsError::Parse { path, text: text.clone(), expected: "a pid" })?;
        Ok((pid > 0).then_some(pid))
    }

    /// Turns the kdamond on; `what` says what it was set up for, for the error.
    pub fn turn_on(&self, what: String) -> Result<(), DamonError> {
        sysfs_io::write_value(&self.dir().join("state"), "on").map_err(|source| DamonError::StartRefused {
            kdamond: self.kdamond,
            what,
            source,
        })
    }

    /// Writes a command word to `state`, retrying while another command is in flight.
    /// `Ok(false)` when the kdamond turned out to be off.
    pub fn command(&self, word: &str) -> Result<bool, DamonError> {
        let state = self.dir().join("state");
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

    /// Turns the kdamond off and gives it back as it was found; deletes the state file.
    pub fn release(mut self) -> Result<(), DamonError> {
        self.release_all()
    }

    /// Gives back the kdamond a crashed or killed earlier run recorded in `state_file`:
    /// turns it off and restores the count it changed, if it still works for the
    /// recorded pid (or was never configured). Deletes the state file. Returns whether a
    /// kdamond was given back (`false`: no state file, or the kdamond is no longer
    /// tierkit's).
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
        let mut claimed = KdamondClaim {
            admin: root.join(ADMIN_DIR),
            kdamond: claim.kdamond,
            pid: claim.pid,
            release: claim.release,
            state_file: Some(state_file.to_path_buf()),
            released: true,
        };
        if !claimed.still_ours()? {
            claimed.remove_state_file()?;
            return Ok(false);
        }
        claimed.release_all()?;
        Ok(true)
    }

    /// Whether the kdamond of a recovered claim is still tierkit's: it works for the
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
        let contexts: usize = sysfs_io::read_parsed(&self.dir().join("contexts/nr_contexts"), "a count")?;
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
        if self.dir().is_dir() && self.is_on()? {
            // `Ok(false)`: off already (a vaddr target exited between the read and the write).
            self.command("off")?;
        }
        match self.release {
            Release::ShrinkKdamonds { previous } => {
                sysfs_io::write_value(&self.admin.join("kdamonds/nr_kdamonds"), &previous.to_string())?;
            }
            Release::ClearContexts => {
                let nr_contexts = self.dir().join("contexts/nr_contexts");
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

impl Drop for KdamondClaim {
    fn drop(&mut self) {
        if !self.released {
            if let Err(err) = self.release_all() {
                eprintln!("tierkit: giving back DAMON kdamond {}: {err}", self.kdamond);
            }
        }
    }
}

/// Reads a kdamond file whose reading takes DAMON's sysfs lock (`state`, `pid`),
/// retrying while the lock is busy.
fn read_locked(path: &Path) -> Result<String, SysfsError> {
    let mut tries = 0;
    loop {
        match sysfs_io::read_trimmed(path) {
            Err(err) if err.errno() == Some(libc::EBUSY) && tries < BUSY_RETRIES => {
                tries += 1;
                thread::sleep(BUSY_WAIT);
            }
            other => return other,
        }
    }
}

/// Writes the count `n` to an `nr_*` file and checks that the directory the kernel
/// creates for it (`expect`) exists.
pub(super) fn write_nr(nr_path: &Path, n: usize, expect: &Path) -> Result<(), DamonError> {
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
        let on = read_locked(&dir.join("state"))? != "off";
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
}
