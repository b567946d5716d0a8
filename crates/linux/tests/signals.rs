//! Signal handling in this test process. The handlers are process-wide, so the tests
//! take turns through one lock.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tierkit_linux::signals::{signal_name, SignalError, Signals};

static TURN: Mutex<()> = Mutex::new(());

fn turn() -> MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

fn current_handler(sig: i32) -> libc::sighandler_t {
    // SAFETY: a zeroed sigaction is valid output space; a null new action only queries.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) }, 0);
    old.sa_sigaction
}

#[test]
fn a_raised_sigterm_is_recorded_and_the_process_continues() {
    let _turn = turn();
    let signals = Signals::install().unwrap();
    assert_eq!(signals.received(), None);
    // SAFETY: raise delivers SIGTERM to this thread, whose handler is installed.
    assert_eq!(unsafe { libc::raise(libc::SIGTERM) }, 0);
    assert_eq!(signals.received(), Some(libc::SIGTERM));
    // A later signal does not overwrite the first.
    assert_eq!(unsafe { libc::raise(libc::SIGHUP) }, 0);
    assert_eq!(signals.received(), Some(15));
    // Already received: the sleep returns at once with it.
    assert_eq!(signals.sleep_until_signal(Duration::from_secs(600)), Some(15));
}

#[test]
fn a_signal_on_another_thread_ends_the_sleep() {
    let _turn = turn();
    let signals = Signals::install().unwrap();
    let raiser = std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(50));
        // SAFETY: as above, on the raising thread.
        unsafe { libc::raise(libc::SIGINT) };
    });
    // If the wake-up were lost this would sleep ten minutes and the test would hang.
    assert_eq!(signals.sleep_until_signal(Duration::from_secs(600)), Some(libc::SIGINT));
    raiser.join().unwrap();
}

#[test]
fn sleep_times_out_without_a_signal() {
    let _turn = turn();
    let signals = Signals::install().unwrap();
    assert_eq!(signals.sleep_until_signal(Duration::from_millis(20)), None);
    assert_eq!(signals.received(), None);
}

#[test]
fn drop_restores_the_previous_handlers_and_allows_reinstalling() {
    let _turn = turn();
    let before: Vec<_> = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP].map(current_handler).to_vec();
    {
        let first = Signals::install().unwrap();
        assert_ne!(current_handler(libc::SIGTERM), before[1]);
        assert!(matches!(Signals::install(), Err(SignalError::AlreadyInstalled)));
        drop(first);
    }
    let after: Vec<_> = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP].map(current_handler).to_vec();
    assert_eq!(before, after);
    // A fresh install starts with nothing received.
    let again = Signals::install().unwrap();
    assert_eq!(again.received(), None);
}

#[test]
fn signals_have_names() {
    assert_eq!(signal_name(libc::SIGINT), "SIGINT");
    assert_eq!(signal_name(libc::SIGKILL), "SIGKILL");
    assert_eq!(signal_name(200), "signal 200");
}
