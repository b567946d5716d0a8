//! Clean shutdown on SIGINT, SIGTERM and SIGHUP, through `signal-hook`.
//!
//! [`Signals::install`] registers two actions for each of those signals: one records the
//! first signal number, the other (signal-hook's self-pipe) writes a byte to a socket
//! that [`Signals::sleep_until_signal`] reads with a timeout, so the daemon's sleep ends
//! as soon as a signal arrives whichever thread the kernel delivered it to. The daemon
//! then stops at a point of its choosing: no half-written state, knobs restored, summary
//! printed. Dropping [`Signals`] unregisters the actions; a signal whose disposition was
//! the default before the first install then takes its default action again
//! (terminate), one that was ignored is ignored again, and a handler installed before is
//! called again (signal-hook chains to it, also while installed).
//!
//! signal-hook installs its handler with `SA_RESTART`; nothing here relies on a blocking
//! call failing with `EINTR`: the wake-up is the byte on the socket.
//!
//! tierkit never forwards signals to its target. A child started by `tierkit run` stays
//! in tierkit's process group, so Ctrl-C at a terminal reaches both and the child
//! handles it its own way; a SIGTERM sent to tierkit alone stops tierkit and leaves the
//! child running.

use std::borrow::Cow;
use std::io::{self, Read};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use signal_hook::SigId;

/// The signals [`Signals`] handles.
pub const HANDLED: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// First signal received since [`Signals::install`], 0 for none.
static RECEIVED: AtomicI32 = AtomicI32::new(0);
/// Whether a [`Signals`] is alive (the handlers are process-wide).
static INSTALLED: AtomicBool = AtomicBool::new(false);
/// Set while no [`Signals`] is alive: the signals that had their default disposition
/// before the first install then take their default action.
static DEFAULT_ACTION: AtomicBool = AtomicBool::new(true);
/// Registering the conditional default actions, once per process (the errno if it failed).
static DEFAULTS: OnceLock<Result<(), i32>> = OnceLock::new();

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

/// The installed handlers; dropping it unregisters them (see the module docs).
#[derive(Debug)]
pub struct Signals {
    wake: UnixStream,
    ids: Vec<SigId>,
}

fn sys_error(call: String, source: io::Error) -> SignalError {
    SignalError::Sys { call, source }
}

/// Registers, once, the actions that emulate the default one for each of [`HANDLED`]
/// whose disposition is the default, while [`DEFAULT_ACTION`] is set.
fn register_defaults() -> Result<(), SignalError> {
    let done = DEFAULTS.get_or_init(|| {
        for sig in HANDLED {
            // SAFETY: a zeroed sigaction is a valid value to write into.
            let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: `old` is valid output space; a null new action only queries.
            if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0 {
                return Err(io::Error::last_os_error().raw_os_error().unwrap_or(0));
            }
            if old.sa_sigaction == libc::SIG_DFL {
                signal_hook::flag::register_conditional_default(sig, &DEFAULT_ACTION)
                    .map_err(|e| e.raw_os_error().unwrap_or(0))?;
            }
        }
        Ok(())
    });
    done.map_err(|errno| sys_error("sigaction(SIGINT, SIGTERM, SIGHUP)".into(), io::Error::from_raw_os_error(errno)))
}

impl Signals {
    /// Installs the handler for [`HANDLED`] and clears any previously recorded signal.
    /// Only one `Signals` may be alive at a time.
    pub fn install() -> Result<Signals, SignalError> {
        if INSTALLED.compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst).is_err() {
            return Err(SignalError::AlreadyInstalled);
        }
        let (wake, write) = match UnixStream::pair() {
            Ok(pair) => pair,
            Err(e) => {
                INSTALLED.store(false, Ordering::SeqCst);
                return Err(sys_error("socketpair(AF_UNIX)".into(), e));
            }
        };
        // From here on, dropping `signals` undoes whatever was done.
        let mut signals = Signals { wake, ids: Vec::new() };
        register_defaults()?;
        RECEIVED.store(0, Ordering::SeqCst);
        DEFAULT_ACTION.store(false, Ordering::SeqCst);
        for sig in HANDLED {
            let call = || format!("registering a {} handler", signal_name(sig));
            // SAFETY: the action only does an atomic compare-exchange, which is
            // async-signal-safe. It runs before the wake-up registered next.
            let id = unsafe {
                signal_hook::low_level::register(sig, move || {
                    let _ = RECEIVED.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
                })
            };
            signals.ids.push(id.map_err(|e| sys_error(call(), e))?);
            let write = write.try_clone().map_err(|e| sys_error(call(), e))?;
            let id = signal_hook::low_level::pipe::register(sig, write);
            signals.ids.push(id.map_err(|e| sys_error(call(), e))?);
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
        let mut buf = [0u8; 64];
        while self.received().is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || self.wake.set_read_timeout(Some(left)).is_err() {
                break;
            }
            // A wake-up byte, the timeout or an interruption: the loop looks again.
            let _ = (&self.wake).read(&mut buf);
        }
        self.received()
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        // Default action first, so that no signal falls between the two.
        DEFAULT_ACTION.store(true, Ordering::SeqCst);
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
        INSTALLED.store(false, Ordering::SeqCst);
    }
}

/// The name of signal `sig` (`"SIGTERM"`), or `"signal N"` for one signal-hook does not
/// know.
pub fn signal_name(sig: i32) -> Cow<'static, str> {
    signal_hook::low_level::signal_name(sig).map_or_else(|| Cow::Owned(format!("signal {sig}")), Cow::Borrowed)
}
