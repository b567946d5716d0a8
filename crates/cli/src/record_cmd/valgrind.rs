//! Runs a command under `valgrind --tool=lackey --trace-mem=yes` and filters its access
//! lines as they arrive.
//!
//! Lackey writes to `--log-fd=3`, the write end of a pipe tierkit reads; the command's
//! own standard output and error are left alone.

use std::fs::File;
use std::io::{BufRead, BufReader, ErrorKind};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};
use tierkit_sim::trace::LlcFilter;

use super::filter::{Filter, Summary};

/// The descriptor lackey logs to in the child.
const LOG_FD: i32 = 3;

/// Records `cmd` into a native trace at `out`; returns the summary and the command's
/// exit status (128 + signal number when a signal ended it).
pub fn record(cmd: &[String], llc: &mut LlcFilter, out: &Path) -> Result<(Summary, i32)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error()).context("cannot create a pipe for valgrind's log");
    }
    // SAFETY: pipe2 returned two fresh descriptors that nothing else owns.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let w = write.as_raw_fd();
    let mut command = Command::new("valgrind");
    command.args(["--tool=lackey", "--trace-mem=yes", &format!("--log-fd={LOG_FD}")]).args(cmd);
    // SAFETY: only async-signal-safe calls (dup2, fcntl) between fork and exec.
    unsafe {
        command.pre_exec(move || {
            let r = if w == LOG_FD { libc::fcntl(w, libc::F_SETFD, 0) } else { libc::dup2(w, LOG_FD) };
            if r < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            bail!("valgrind not found: install it (on Debian or Ubuntu: apt-get install valgrind)")
        }
        Err(e) => return Err(e).context("cannot start valgrind"),
    };
    drop(write);
    let mut filter = Filter::new(llc, out, "valgrind's log".to_string())?;
    let mut r = BufReader::with_capacity(1 << 20, File::from(read));
    let mut buf = Vec::new();
    let streamed = (|| -> Result<()> {
        loop {
            buf.clear();
            if r.read_until(b'\n', &mut buf).context("cannot read valgrind's log")? == 0 {
                return Ok(());
            }
            filter.line(&buf)?;
        }
    })();
    if let Err(e) = streamed {
        let _ = child.kill();
        let _ = child.wait();
        return Err(e);
    }
    let status = child.wait().context("cannot wait for valgrind")?;
    let code = status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    Ok((filter.finish()?, code))
}
