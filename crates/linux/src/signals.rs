//! Clean shutdown on SIGINT, SIGTERM and SIGHUP.
//!
//! [`Signals::install`] replaces the handlers of those three signals with one that
//! records the first signal number and writes a byte to a self-pipe. The handler is
//! installed without `SA_RESTART`, and [`Signals::sleep_until_signal`] waits on the pipe
//! with `poll(2)`, so the daemon's sleep ends as soon as a signal arrives whichever
//! thread the kernel delivered it to. The daemon then stops at a point of its choosing:
//! no half-written state, knobs restored, summary printed. Dropping [`Signals`] restores
//! the previous handlers.
//!
//! tierkit never forwards signals to its target. A child started by `tierkit run` stays
//! in tierkit's process group, so Ctrl-C at a terminal reaches both and the child
//! handles it its own way; a SIGTERM sent to tierkit alone stops tierkit and leaves the
//! child running.

use std::borrow::Cow;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The signals [`Signals`] handles.
pub const HANDLED: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// First signal received since [`Signals::install`], 0 for none.
static RECEIVED: AtomicI32 = AtomicI32::new(0);
/// Write end of the self-pipe, -1 before the first install.
static WAKE_FD: AtomicI32 = AtomicI32::new(-1);
/// Whether a [`Signals`] is alive (the handlers are process-wide).
static INSTALLED: AtomicBool = AtomicBool::new(false);
/// The self-pipe `(read, write)`, created once and kept open for the process lifetime
/// so a handler running on another thread never writes to a closed descriptor.
static PIPE: OnceLock<Result<(i32, i32), i32>> = OnceLock::new();

/// Installing the handlers failed.
#[derive(Debug, thiserror::Error)]
pub enum SignalError {
    /// Another [`Signals`] is alive in this process.
    #[error("signal handlers are already installed; drop the other Signals first")]
    AlreadyInstalled,
    /// A system call failed.
    #[error("{call} failed: {source}")]
    Sys {
        /// The call, with its argument.
        call: String,
        /// The error.
        source: io::Error,
    },
}

/// The installed handlers; dropping it restores the previous ones.
#[derive(Debug)]
pub struct Signals {
    read_fd: i32,
    previous: Vec<(i32, libc::sigaction)>,
}

extern "C" fn on_signal(sig: libc::c_int) {
    // Only async-signal-safe work: atomics and write(2), preserving errno.
    // SAFETY: __errno_location returns the calling thread's errno slot.
    let errno = unsafe { *libc::__errno_location() };
    let _ = RECEIVED.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
    let fd = WAKE_FD.load(Ordering::SeqCst);
    if fd >= 0 {
        let byte = 1u8;
        // SAFETY: fd is the self-pipe's non-blocking write end, never closed; a full
        // pipe already holds a wake-up, so a failed write loses nothing.
        unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) };
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

fn sys_error(call: String) -> SignalError {
    SignalError::Sys { call, source: io::Error::last_os_error() }
}

fn self_pipe() -> Result<(i32, i32), SignalError> {
    let pipe = PIPE.get_or_init(|| {
        let mut fds = [0i32; 2];
        // SAFETY: fds has room for the two descriptors pipe2 writes.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } == 0 {
            Ok((fds[0], fds[1]))
        } else {
            Err(io::Error::last_os_error().raw_os_error().unwrap_or(0))
        }
    });
    pipe.map_err(|errno| SignalError::Sys {
        call: "pipe2(O_NONBLOCK|O_CLOEXEC)".to_string(),
        source: io::Error::from_raw_os_error(errno),
    })
}

impl Signals {
    /// Installs the handler for [`HANDLED`] and clears any previously recorded signal.
    /// Only one `Signals` may be alive at a time.
    pub fn install() -> Result<Signals, SignalError> {
        if INSTALLED.compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst).is_err() {
            return Err(SignalError::AlreadyInstalled);
        }
        let mut signals = Signals { read_fd: -1, previous: Vec::new() };
        // From here on, dropping `signals` undoes whatever was done.
        let (read_fd, write_fd) = self_pipe()?;
        signals.read_fd = read_fd;
        signals.drain();
        RECEIVED.store(0, Ordering::SeqCst);
        WAKE_FD.store(write_fd, Ordering::SeqCst);
        for sig in HANDLED {
            // SAFETY: an all-zero sigaction is a valid value; the fields are set below.
            let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = 0; // no SA_RESTART: blocking calls return EINTR
                                 // SAFETY: sa_mask is a valid sigset_t to initialise.
            unsafe { libc::sigemptyset(&mut action.sa_mask) };
            // SAFETY: as above.
            let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: both pointers are valid sigaction structs; sig is a real signal.
            if unsafe { libc::sigaction(sig, &action, &mut old) } != 0 {
                return Err(sys_error(format!("sigaction({})", signal_name(sig))));
            }
            signals.previous.push((sig, old));
        }
        Ok(signals)
    }

    /// The first signal received since [`install`](Self::install), if any.
    pub fn received(&self) -> Option<i32> {
        Some(RECEIVED.load(Ordering::SeqCst)).filter(|&s| s != 0)
    }

    /// Sleeps for `dur` or until a handled signal arrives (also if one arrived before
    /// the call); returns [`received`](Self::received).
    pub fn sleep_until_signal(&self, dur: Duration) -> Option<i32> {
        let deadline = Instant::now() + dur;
        while self.received().is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            // Round up so a sub-millisecond remainder does not spin.
            let ms = left.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32;
            let mut pfd = libc::pollfd { fd: self.read_fd, events: libc::POLLIN, revents: 0 };
            // SAFETY: pfd is one valid pollfd; an EINTR return just loops.
            if unsafe { libc::poll(&mut pfd, 1, ms) } > 0 {
                self.drain();
            }
        }
        self.received()
    }

    /// Empties the self-pipe (it only carries wake-ups).
    fn drain(&self) {
        let mut buf = [0u8; 64];
        // SAFETY: buf is writable for its length; the fd is non-blocking, so this stops
        // at EAGAIN once the pipe is empty.
        while unsafe { libc::read(self.read_fd, buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        for (sig, old) in self.previous.drain(..).rev() {
            // SAFETY: `old` is what sigaction returned for this signal.
            unsafe { libc::sigaction(sig, &old, std::ptr::null_mut()) };
        }
        WAKE_FD.store(-1, Ordering::SeqCst);
        INSTALLED.store(false, Ordering::SeqCst);
    }
}

/// The name of signal `sig` (`"SIGTERM"`), or `"signal N"` outside the table.
pub fn signal_name(sig: i32) -> Cow<'static, str> {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGSYS => "SIGSYS",
        _ => return Cow::Owned(format!("signal {sig}")),
    };
    Cow::Borrowed(name)
}
