//! Runs a command under Valgrind with a pipe on descriptor 3 that tierkit reads:
//! lackey logs its access lines there (`--log-fd=3`), tierkit's tool writes its
//! records there (`--out-fd=3`). The command's own standard output and error are left
//! alone.
//!
//! With `--max-records`, Valgrind runs in a process group of its own, so that tierkit
//! can end it: it closes its end of the pipe, sends SIGTERM to the group, and SIGKILL
//! if the group is still there [`STOP_GRACE`] later.

use std::fs::File;
use std::io::ErrorKind;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// The descriptor the recorder writes to in the child.
pub const OUT_FD: i32 = 3;

/// How long a stopped Valgrind has between SIGTERM and SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// A running Valgrind.
pub struct Running {
    child: Child,
    own_group: bool,
}

/// Starts `valgrind OPTIONS CMD...` with the pipe's write end as descriptor 3 and,
/// when `lib_dir` is given, `VALGRIND_LIB` set to it; in a process group of its own
/// when `own_group`. Returns the child and the pipe's read end.
pub fn spawn(options: &[String], cmd: &[String], lib_dir: Option<&Path>, own_group: bool) -> Result<(Running, File)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error()).context("cannot create a pipe for valgrind");
    }
    // SAFETY: pipe2 returned two fresh descriptors that nothing else owns.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let w = write.as_raw_fd();
    let mut command = Command::new("valgrind");
    command.args(options).args(cmd);
    if let Some(dir) = lib_dir {
        command.env("VALGRIND_LIB", dir);
    }
    // SAFETY: only async-signal-safe calls (dup2, fcntl, setpgid) between fork and exec.
    unsafe {
        command.pre_exec(move || {
            let r = if w == OUT_FD { libc::fcntl(w, libc::F_SETFD, 0) } else { libc::dup2(w, OUT_FD) };
            if r < 0 || (own_group && libc::setpgid(0, 0) != 0) {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = match command.spawn() {
        Ok(c) => c,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            bail!("valgrind not found: install it (on Debian or Ubuntu: apt-get install valgrind)")
        }
        Err(e) => return Err(e).context("cannot start valgrind"),
    };
    drop(write);
    Ok((Running { child, own_group }, File::from(read)))
}

/// The exit status as a number: the code, or 128 + the signal that ended it.
fn code_of(status: std::process::ExitStatus) -> i32 {
    status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

impl Running {
    /// Waits for Valgrind to exit; returns its exit status.
    pub fn wait(mut self) -> Result<i32> {
        let status = self.child.wait().context("cannot wait for valgrind")?;
        Ok(code_of(status))
    }

    /// Ends Valgrind and the program (the caller has dropped the pipe's read end):
    /// SIGTERM to its process group, SIGKILL after [`STOP_GRACE`]; returns its exit
    /// status.
    pub fn stop(mut self) -> Result<i32> {
        let pid = self.child.id() as i32;
        let target = if self.own_group { -pid } else { pid };
        // SAFETY: kill(2) with a process (group) id this process started.
        unsafe { libc::kill(target, libc::SIGTERM) };
        let deadline = Instant::now() + STOP_GRACE;
        loop {
            if let Some(status) = self.child.try_wait().context("cannot wait for valgrind")? {
                if self.own_group {
                    // SAFETY: as above; the group may hold the program's children.
                    unsafe { libc::kill(target, libc::SIGKILL) };
                }
                return Ok(code_of(status));
            }
            if Instant::now() >= deadline {
                // SAFETY: as above.
                unsafe { libc::kill(target, libc::SIGKILL) };
                return self.wait();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills Valgrind after an error of tierkit's own.
    pub fn abandon(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
