//! Signal handling in this test process, and in a child for what happens after the
//! handlers are dropped. The handlers are process-wide, so the tests take turns through
//! one lock.

use std::os::unix::process::ExitStatusExt;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tierkit_linux::signals::{signal_name, SignalError, Signals};

static TURN: Mutex<()> = Mutex::new(());

fn turn() -> MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|e| e.into_inner())
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
fn drop_allows_reinstalling() {
    let _turn = turn();
    let first = Signals::install().unwrap();
    assert!(matches!(Signals::install(), Err(SignalError::AlreadyInstalled)));
    // SAFETY: as above.
    assert_eq!(unsafe { libc::raise(libc::SIGHUP) }, 0);
    assert_eq!(first.received(), Some(libc::SIGHUP));
    drop(first);
    // A fresh install starts with nothing received.
    let again = Signals::install().unwrap();
    assert_eq!(again.received(), None);
}

/// Set in the child process that [`drop_gives_the_signals_back`] starts.
const CHILD: &str = "TIERKIT_SIGNALS_TEST_CHILD";

/// In a child process only: with SIGHUP ignored beforehand, installs, records a SIGHUP,
/// drops, raises SIGHUP (ignored again) and then SIGTERM (default again: it ends the
/// process).
#[test]
fn child_of_drop_gives_the_signals_back() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    // SAFETY: setting a standard disposition for a real signal, in a fresh process.
    assert_ne!(unsafe { libc::signal(libc::SIGHUP, libc::SIG_IGN) }, libc::SIG_ERR);
    let signals = Signals::install().unwrap();
    // SAFETY: as above; every raise below reaches a handler or a disposition set here.
    assert_eq!(unsafe { libc::raise(libc::SIGHUP) }, 0);
    println!("recorded {:?}", signals.received().map(signal_name));
    drop(signals);
    assert_eq!(unsafe { libc::raise(libc::SIGHUP) }, 0);
    println!("alive after SIGHUP");
    assert_eq!(unsafe { libc::raise(libc::SIGTERM) }, 0);
    println!("alive after SIGTERM");
}

#[test]
fn drop_gives_the_signals_back() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_of_drop_gives_the_signals_back", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.signal(), Some(libc::SIGTERM), "{:?}\n{stdout}", out.status);
    assert!(stdout.contains("recorded Some(\"SIGHUP\")\nalive after SIGHUP\n"), "{stdout}");
    assert!(!stdout.contains("alive after SIGTERM"), "{stdout}");
}

#[test]
fn signals_have_names() {
    assert_eq!(signal_name(libc::SIGINT), "SIGINT");
    assert_eq!(signal_name(libc::SIGKILL), "SIGKILL");
    assert_eq!(signal_name(200), "signal 200");
}
