//! The managed process's lifetime: a child tierkit started (`tierkit run -- CMD`) or a
//! process it attached to (`tierkit attach PID`).
//!
//! tierkit never signals, stops or kills its target: the only signal it sends is
//! signal 0, which checks that a process exists without delivering anything. A spawned
//! child inherits tierkit's stdin, stdout and stderr and stays in tierkit's process
//! group, so Ctrl-C at a terminal reaches the child directly and the child handles it
//! its own way; when tierkit itself stops (SIGINT, SIGTERM, an error) the child keeps
//! running untouched, only no longer tiered.

use std::io;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// How the target ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetExit {
    /// A spawned child exited with this code.
    Code(i32),
    /// A spawned child was killed by this signal.
    Signal {
        /// The signal number.
        signal: i32,
        /// Whether it dumped core.
        core_dumped: bool,
    },
    /// An attached process is gone; its exit status belongs to its parent.
    Unknown,
}

impl From<ExitStatus> for TargetExit {
    fn from(status: ExitStatus) -> Self {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(code), _) => TargetExit::Code(code),
            (None, Some(signal)) => TargetExit::Signal { signal, core_dumped: status.core_dumped() },
            (None, None) => TargetExit::Unknown,
        }
    }
}

/// Starting or attaching to the target failed.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// `tierkit run --` was given no command.
    #[error("no command to run: give one after `--`, for example `tierkit run -- ./server --port 80`")]
    EmptyCommand,
    /// The program does not exist.
    #[error("command not found: {command} (no such file, and not on PATH)")]
    NotFound {
        /// The program as given.
        command: String,
    },
    /// The program exists but may not be executed.
    #[error("cannot execute {command}: permission denied (is it executable?)")]
    NotExecutable {
        /// The program as given.
        command: String,
    },
    /// Starting the program failed otherwise.
    #[error("cannot start {command}: {source}")]
    Spawn {
        /// The program as given.
        command: String,
        /// The error.
        source: io::Error,
    },
    /// The pid is not a valid process id.
    #[error("invalid pid {0}: expected a positive process id")]
    InvalidPid(u32),
    /// No process has the pid.
    #[error("no process with pid {0} (it never existed or has exited)")]
    NoSuchProcess(u32),
    /// The process has exited and waits for its parent to collect it.
    #[error("process {0} has already exited (a zombie waiting for its parent); nothing to tier")]
    Exited(u32),
    /// `/proc/PID/stat` could not be read or parsed.
    #[error("cannot read {path}: {reason}")]
    Proc {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
}

#[derive(Debug)]
enum Kind {
    Spawned { child: Child, exit: Option<TargetExit> },
    Attached { start_time: u64, gone: bool },
}

/// The process tierkit manages.
#[derive(Debug)]
pub struct Target {
    pid: u32,
    kind: Kind,
}

impl Target {
    /// Starts `cmd[0]` (searched on `PATH` when it has no `/`) with arguments
    /// `cmd[1..]`, inheriting stdio and the process group.
    pub fn spawn(cmd: &[String]) -> Result<Target, TargetError> {
        let (program, args) = cmd.split_first().ok_or(TargetError::EmptyCommand)?;
        let command = program.clone();
        let child = Command::new(program).args(args).spawn().map_err(|source| match source.kind() {
            io::ErrorKind::NotFound => TargetError::NotFound { command },
            io::ErrorKind::PermissionDenied => TargetError::NotExecutable { command },
            _ => TargetError::Spawn { command, source },
        })?;
        Ok(Target { pid: child.id(), kind: Kind::Spawned { child, exit: None } })
    }

    /// Attaches to the running process `pid`, after checking that it exists and has
    /// not exited. Its start time is recorded so a later process reusing the pid is not
    /// mistaken for it. (Permission checks are [`crate::perms::check_attach`].)
    pub fn attach(pid: u32) -> Result<Target, TargetError> {
        if pid == 0 || i32::try_from(pid).is_err() {
            return Err(TargetError::InvalidPid(pid));
        }
        if !signal_zero_finds(pid) {
            return Err(TargetError::NoSuchProcess(pid));
        }
        let (state, start_time) = match read_stat(pid) {
            Ok(Some(stat)) => stat,
            Ok(None) => return Err(TargetError::NoSuchProcess(pid)),
            Err(e) => return Err(e),
        };
        if is_dead_state(state) {
            return Err(TargetError::Exited(pid));
        }
        Ok(Target { pid, kind: Kind::Attached { start_time, gone: false } })
    }

    /// The target's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether tierkit started the target (and so can learn its exit status).
    pub fn is_child(&self) -> bool {
        matches!(self.kind, Kind::Spawned { .. })
    }

    /// Whether the target is still running. A spawned child is reaped here once it
    /// exits; an attached process counts as gone when `kill(pid, 0)` finds nothing, its
    /// `/proc/PID/stat` is gone or says zombie, or its pid now belongs to a newer
    /// process. Once gone, always gone.
    pub fn is_alive(&mut self) -> bool {
        let pid = self.pid;
        match &mut self.kind {
            Kind::Spawned { child, exit } => {
                if exit.is_none() {
                    match child.try_wait() {
                        Ok(Some(status)) => *exit = Some(status.into()),
                        Ok(None) => {}
                        // Someone else reaped it (SIGCHLD ignored): it is gone all the same.
                        Err(_) => *exit = Some(TargetExit::Unknown),
                    }
                }
                exit.is_none()
            }
            Kind::Attached { start_time, gone } => {
                if !*gone {
                    let same_and_running = signal_zero_finds(pid)
                        && matches!(read_stat(pid), Ok(Some((state, t))) if !is_dead_state(state) && t == *start_time);
                    *gone = !same_and_running;
                }
                !*gone
            }
        }
    }

    /// How the target ended, once [`is_alive`](Self::is_alive) has seen it gone: the
    /// exit code or signal of a spawned child, [`TargetExit::Unknown`] for an attached
    /// process. `None` while it runs.
    pub fn exit_status(&self) -> Option<TargetExit> {
        match &self.kind {
            Kind::Spawned { exit, .. } => *exit,
            Kind::Attached { gone, .. } => gone.then_some(TargetExit::Unknown),
        }
    }

    /// Waits up to `timeout` for the target to end, checking every few milliseconds;
    /// returns its [`exit_status`](Self::exit_status), or `None` if it still runs.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<TargetExit> {
        let deadline = Instant::now() + timeout;
        let mut step = Duration::from_millis(1);
        while self.is_alive() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            std::thread::sleep(step.min(left));
            step = (step * 2).min(Duration::from_millis(50));
        }
        self.exit_status()
    }

    /// Ends a target tierkit started: SIGTERM, up to `grace` for it to exit, then
    /// SIGKILL and up to `grace` again. Returns how it ended (`None` if it still ran).
    /// An attached process is never signalled: `None` while it runs.
    pub fn end(&mut self, grace: Duration) -> Option<TargetExit> {
        if !self.is_child() {
            return self.exit_status();
        }
        for signal in [libc::SIGTERM, libc::SIGKILL] {
            if !self.is_alive() {
                break;
            }
            // SAFETY: the pid is this value's child, not reaped yet (is_alive reaps it
            // only here), so it names no other process.
            unsafe { libc::kill(self.pid as libc::pid_t, signal) };
            if let Some(exit) = self.wait_timeout(grace) {
                return Some(exit);
            }
        }
        self.exit_status()
    }
}

/// `kill(pid, 0)`: true when a process with that pid exists (EPERM means it exists but
/// belongs to someone else). Delivers no signal.
fn signal_zero_finds(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 performs the existence and permission checks only.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Dead (`X`) or zombie (`Z`): exited, whatever its parent does next.
fn is_dead_state(state: char) -> bool {
    matches!(state, 'Z' | 'X' | 'x')
}

/// State (field 3) and start time in clock ticks (field 22) from `/proc/PID/stat`;
/// `Ok(None)` when the process is gone.
fn read_stat(pid: u32) -> Result<Option<(char, u64)>, TargetError> {
    let path = PathBuf::from(format!("/proc/{pid}/stat"));
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ESRCH)) => return Ok(None),
        Err(e) => return Err(TargetError::Proc { path, reason: e.to_string() }),
    };
    parse_stat(&text).map(Some).ok_or(TargetError::Proc { path, reason: "no state or start time field".to_string() })
}

/// State and start time, parsed by procfs-core.
fn parse_stat(text: &str) -> Option<(char, u64)> {
    let stat = crate::memory::procfs::parse_stat(text).ok()?;
    Some((stat.state, stat.starttime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_gives_state_and_start_time() {
        let stat = "77 (we ird) name) S 1 77 77 0 -1 4194560 1 0 0 0 3 4 0 0 20 0 1 0 987654 1000 200 \
                    18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0";
        assert_eq!(parse_stat(stat), Some(('S', 987654)));
        assert_eq!(parse_stat("77 (x) S 1 2 3"), None);
        let own = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        assert_eq!(parse_stat(&own).map(|(state, _)| state), Some('R'), "{own}");
    }

    #[test]
    fn ending_a_started_target_terms_it_and_kills_one_that_ignores_it() {
        let sh = |script: &str| Target::spawn(&["sh".into(), "-c".into(), script.into()]).unwrap();
        let mut polite = sh("exec sleep 60");
        assert_eq!(
            polite.end(Duration::from_secs(20)),
            Some(TargetExit::Signal { signal: libc::SIGTERM, core_dumped: false })
        );
        let mut deaf = sh("trap '' TERM; exec sleep 60");
        // Signalled before the shell has set its trap, it would die of SIGTERM.
        let comm = format!("/proc/{}/comm", deaf.pid());
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::fs::read_to_string(&comm).unwrap().trim() != "sleep" && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(
            deaf.end(Duration::from_millis(300)),
            Some(TargetExit::Signal { signal: libc::SIGKILL, core_dumped: false })
        );
        assert!(!deaf.is_alive());
    }
}
