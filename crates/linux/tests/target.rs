//! The target's lifetime with real child processes.

use std::process::Command;
use std::time::Duration;

use tierkit_linux::target::{Target, TargetError, TargetExit};

fn cmd(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// Long enough that no test outlives it by accident.
const LONG: Duration = Duration::from_secs(30);

#[test]
fn spawned_child_is_alive_then_exits_with_code_zero() {
    let mut t = Target::spawn(&cmd(&["sleep", "0.3"])).unwrap();
    assert!(t.is_child());
    assert!(t.pid() > 0);
    assert!(t.is_alive());
    assert_eq!(t.exit_status(), None);
    assert_eq!(t.wait_timeout(LONG), Some(TargetExit::Code(0)));
    assert!(!t.is_alive());
    assert_eq!(t.exit_status(), Some(TargetExit::Code(0)));
}

#[test]
fn exit_code_and_killing_signal_are_reported() {
    let mut t = Target::spawn(&cmd(&["sh", "-c", "exit 3"])).unwrap();
    assert_eq!(t.wait_timeout(LONG), Some(TargetExit::Code(3)));
    // The child kills itself; tierkit sends nothing.
    let mut t = Target::spawn(&cmd(&["sh", "-c", "kill -KILL $$"])).unwrap();
    assert_eq!(t.wait_timeout(LONG), Some(TargetExit::Signal { signal: libc::SIGKILL, core_dumped: false }));
}

#[test]
fn wait_timeout_returns_none_while_the_child_runs() {
    let mut t = Target::spawn(&cmd(&["sleep", "30"])).unwrap();
    assert_eq!(t.wait_timeout(Duration::from_millis(20)), None);
    assert!(t.is_alive());
    // Clean up the test's own child (tierkit itself never does this).
    Command::new("kill").arg(t.pid().to_string()).status().unwrap();
    assert!(matches!(t.wait_timeout(LONG), Some(TargetExit::Signal { signal: libc::SIGTERM, .. })));
}

#[test]
fn bad_commands_are_named() {
    let err = Target::spawn(&cmd(&["tierkit-no-such-command-xyz", "arg"])).unwrap_err();
    assert!(matches!(err, TargetError::NotFound { .. }));
    assert!(err.to_string().contains("command not found: tierkit-no-such-command-xyz"), "{err}");
    let err = Target::spawn(&[]).unwrap_err();
    assert!(err.to_string().contains("after `--`"), "{err}");
    // A file that exists but is not executable.
    let path = env!("CARGO_MANIFEST_DIR").to_string() + "/Cargo.toml";
    let err = Target::spawn(&cmd(&[&path])).unwrap_err();
    assert!(matches!(err, TargetError::NotExecutable { .. }), "{err}");
    assert!(err.to_string().contains("Cargo.toml"), "{err}");
}

#[test]
fn attach_follows_a_running_process_until_it_is_gone() {
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    let mut t = Target::attach(child.id()).unwrap();
    assert!(!t.is_child());
    assert!(t.is_alive());
    assert_eq!(t.exit_status(), None);
    child.kill().unwrap();
    // Until its parent (this test) reaps it, the process is a zombie: already gone.
    assert_eq!(t.wait_timeout(LONG), Some(TargetExit::Unknown));
    child.wait().unwrap();
    assert!(!t.is_alive());
}

#[test]
fn attach_refuses_dead_zombie_and_invalid_pids() {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    // Wait, without reaping, until the child is a zombie.
    let stat = format!("/proc/{pid}/stat");
    while !std::fs::read_to_string(&stat).unwrap().contains(") Z ") {
        std::thread::sleep(Duration::from_millis(5));
    }
    let err = Target::attach(pid).unwrap_err();
    assert!(matches!(err, TargetError::Exited(p) if p == pid), "{err}");
    child.wait().unwrap();
    let err = Target::attach(pid).unwrap_err();
    assert!(matches!(err, TargetError::NoSuchProcess(p) if p == pid), "{err}");
    assert!(err.to_string().contains(&format!("no process with pid {pid}")));
    // kill(0, 0) would address tierkit's own process group: never a valid target.
    assert!(matches!(Target::attach(0), Err(TargetError::InvalidPid(0))));
    assert!(matches!(Target::attach(u32::MAX), Err(TargetError::InvalidPid(_))));
}

#[test]
fn attaching_to_oneself_works_and_stays_alive() {
    let mut t = Target::attach(std::process::id()).unwrap();
    assert!(t.is_alive());
    assert_eq!(t.wait_timeout(Duration::from_millis(10)), None);
}
