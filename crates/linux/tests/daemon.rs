//! The live daemon on this machine: the perf page-fault source against child processes
//! in dry runs (this host has one NUMA node, and DAMON and the tiering knobs are never
//! touched outside the QEMU guest), preflight refusals on fixture trees, and the heat
//! profiler's clear_refs method.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tierkit_linux::daemon::profile::{self, ProfileChoice, ProfileConfig, ProfileMethod};
use tierkit_linux::daemon::{self, DaemonConfig, DaemonError, Ended, SourceChoice, SourceKind};
use tierkit_linux::signals::Signals;
use tierkit_linux::target::{Target, TargetExit};

/// Signal handlers are process-wide: one test at a time installs them.
static SIGNALS: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SIGNALS.lock().unwrap_or_else(|e| e.into_inner())
}

fn state_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tierkit-daemon-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A dry run with the perf source (page faults here), no status lines.
fn perf_config(name: &str) -> DaemonConfig {
    DaemonConfig {
        source: SourceChoice::Only(SourceKind::Perf),
        dry_run: true,
        status_every: None,
        state_dir: state_dir(name),
        ..DaemonConfig::default()
    }
}

/// A shell that waits for tierkit to attach, grows a 4 MiB string (page faults), then
/// exits with `code`.
fn faulting_child(code: i32) -> Vec<String> {
    let script =
        format!("sleep 0.4; i=0; s=x; while [ $i -lt 22 ]; do s=\"$s$s\"; i=$((i+1)); done; sleep 0.3; exit {code}");
    vec!["sh".into(), "-c".into(), script]
}

fn fields(log: &str) -> &str {
    let mut lines = log.lines().skip_while(|l| *l != "tierkit: summary");
    assert_eq!(lines.next(), Some("tierkit: summary"), "no summary block in:\n{log}");
    lines.next().and_then(|l| l.strip_prefix("tierkit: ")).unwrap_or("")
}

#[test]
fn a_dry_run_samples_the_target_and_ends_when_it_exits() {
    let _guard = serial();
    let cfg = perf_config("exit");
    let signals = Signals::install().unwrap();
    let mut target = Target::spawn(&faulting_child(7)).unwrap();
    let mut log = Vec::new();
    let report = daemon::run(&cfg, &mut target, &signals, &mut log).unwrap();
    let log = String::from_utf8(log).unwrap();
    assert_eq!(report.ended, Ended::TargetExited(TargetExit::Code(7)), "{log}");
    assert_eq!(daemon::run_exit_code(&report), 7);
    assert!(report.summary.samples > 0, "page faults of the growing string are sampled:\n{log}");
    assert!(report.summary.dry_run);
    assert_eq!(report.summary.promoted_pages + report.summary.demoted_pages, 0, "one node: nothing can move");
    assert!(report.summary.move_errors.is_empty());
    assert_eq!(report.source, Some("perf"));
    assert!(log.contains("tierkit: managing pid") && log.contains("dry run (no page is moved)"), "{log}");
    let f = fields(&log);
    for want in ["ended=target-exited", "promoted_pages=0", "demoted_pages=0", "move_errors=0", "exit_code=7"] {
        assert!(f.split(' ').any(|x| x == want), "{want} in {f}");
    }
    assert!(!f.contains("knobs="), "perf changes no knob: {f}");
    assert!(!cfg.state_dir.join("knobs.json").exists() && !cfg.state_dir.join("damon.json").exists());
}

#[test]
fn sigterm_stops_tierkit_cleanly_and_leaves_the_target_running() {
    let _guard = serial();
    let cfg = DaemonConfig { status_every: Some(Duration::from_millis(100)), ..perf_config("sigterm") };
    let signals = Signals::install().unwrap();
    let mut target = Target::spawn(&["sleep".to_string(), "30".to_string()]).unwrap();
    let pid = target.pid();
    let sender = std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(600));
        // SAFETY: signalling this test process, whose SIGTERM handler is installed.
        unsafe { libc::kill(libc::getpid(), libc::SIGTERM) };
    });
    let mut log = Vec::new();
    let report = daemon::run(&cfg, &mut target, &signals, &mut log).unwrap();
    sender.join().unwrap();
    let log = String::from_utf8(log).unwrap();
    assert_eq!(report.ended, Ended::Signal(libc::SIGTERM), "{log}");
    assert_eq!(daemon::run_exit_code(&report), 128 + libc::SIGTERM);
    assert_eq!(daemon::attach_exit_code(&report), 0);
    assert!(log.contains("tierkit: status ["), "status lines every 100 ms:\n{log}");
    assert!(fields(&log).contains("ended=signal"), "{log}");
    assert!(log.contains("stopped by SIGTERM"), "{log}");
    assert!(target.is_alive(), "tierkit never stops its target");
    // The test cleans up its own child.
    // SAFETY: pid is this test's child, not yet reaped.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    assert!(matches!(target.wait_timeout(Duration::from_secs(5)), Some(TargetExit::Signal { signal: 9, .. })));
}

#[test]
fn attached_runs_stop_after_their_duration() {
    let _guard = serial();
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    let cfg = DaemonConfig { duration: Some(Duration::from_millis(500)), ..perf_config("duration") };
    let signals = Signals::install().unwrap();
    let mut target = Target::attach(child.id()).unwrap();
    let mut log = Vec::new();
    let report = daemon::run(&cfg, &mut target, &signals, &mut log).unwrap();
    let log = String::from_utf8(log).unwrap();
    assert_eq!(report.ended, Ended::Duration(Duration::from_millis(500)), "{log}");
    assert_eq!(daemon::attach_exit_code(&report), 0);
    assert!(fields(&log).starts_with("ended=duration "), "{log}");
    assert!(log.contains("the --duration of 0.5s elapsed"), "{log}");
    assert!(child.try_wait().unwrap().is_none(), "still running");
    child.kill().unwrap();
    child.wait().unwrap();
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/topology").join(name)
}

#[test]
fn preflight_refuses_what_cannot_work_before_a_target_exists() {
    let on = |source, policy: &str| DaemonConfig {
        source,
        policy: policy.to_string(),
        root: fixture("one-node"),
        state_dir: state_dir("preflight"),
        ..DaemonConfig::default()
    };
    assert!(daemon::preflight(&on(SourceChoice::Only(SourceKind::Perf), "tierkit")).is_ok());
    let unknown = daemon::preflight(&on(SourceChoice::Auto, "nope")).unwrap_err().to_string();
    assert!(unknown.contains("unknown policy \"nope\"") && unknown.contains("tierkit, "), "{unknown}");
    let no_damon = daemon::preflight(&on(SourceChoice::Only(SourceKind::Damon), "tierkit")).unwrap_err();
    assert!(matches!(no_damon, DaemonError::Source { .. }));
    let text = no_damon.to_string();
    assert!(text.contains("DAMON not available here because") && text.contains("damon/admin"), "{text}");
    let hints = daemon::preflight(&on(SourceChoice::Only(SourceKind::Perf), "tpp")).unwrap_err().to_string();
    assert!(hints.contains("policy tpp needs NUMA hint faults") && hints.contains("--source kernel"), "{hints}");
    let regions = daemon::preflight(&on(SourceChoice::Only(SourceKind::Perf), "damon")).unwrap_err().to_string();
    assert!(regions.contains("--source damon"), "{regions}");
    let kernel_dry = DaemonConfig { dry_run: true, ..on(SourceChoice::Only(SourceKind::Kernel), "tierkit") };
    assert!(daemon::preflight(&kernel_dry).unwrap_err().to_string().contains("--dry-run cannot be combined"));
    let wrapped = daemon::preflight(&on(SourceChoice::Auto, "tierkit+colloid"));
    assert!(wrapped.is_ok(), "{wrapped:?}");
    let overrides = DaemonConfig {
        overrides: tierkit_linux::topology::TopologyOverrides { fast: None, slow: Some(vec![9]) },
        ..on(SourceChoice::Auto, "tierkit")
    };
    assert!(daemon::preflight(&overrides).unwrap_err().to_string().contains("node 9"));
}

#[test]
fn the_profiler_reports_heat_per_mapping_with_clear_refs() {
    let _guard = serial();
    let script = "i=0; s=x; while [ $i -lt 20 ]; do s=\"$s$s\"; i=$((i+1)); done; \
                  i=0; while [ $i -lt 3000000 ]; do i=$((i+1)); done";
    let mut target = Target::spawn(&["sh".into(), "-c".into(), script.into()]).unwrap();
    let pid = target.pid();
    let signals = Signals::install().unwrap();
    let cfg = ProfileConfig {
        interval: Duration::from_millis(200),
        duration: Some(Duration::from_millis(900)),
        choice: ProfileChoice::Only(ProfileMethod::Refs),
        root: PathBuf::from("/"),
        state_dir: state_dir("profile"),
    };
    let mut snapshots = Vec::new();
    let outcome = profile::profile(&cfg, &mut target, &signals, &mut |_, s| snapshots.push(s.clone()), &mut |w| {
        panic!("no cleanup problem expected: {w}")
    })
    .unwrap();
    assert_eq!(outcome.method, ProfileMethod::Refs);
    assert!(outcome.intervals >= 2 && snapshots.len() == outcome.intervals, "{outcome:?}");
    for s in &snapshots {
        assert!(s.total.resident_bytes > 0);
        for m in std::iter::once(&s.total).chain(&s.mappings) {
            let sum = m.hot + m.warm + m.cold;
            assert!((sum - 1.0).abs() < 1e-9, "{m:?}");
        }
    }
    let last = snapshots.last().unwrap();
    let heap = last.mappings.iter().find(|m| m.mapping == "[heap]").expect("the shell's heap");
    assert!(heap.resident_bytes >= 1 << 20, "{heap:?}");
    assert!(last.mappings.iter().any(|m| m.hot > 0.0), "the running shell touches some pages every interval");
    // The busy loop outlives the profile unless the machine is very slow.
    if target.is_alive() {
        assert!(matches!(outcome.ended, Ended::Duration(_)), "{outcome:?}");
        // SAFETY: pid is this test's child.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        target.wait_timeout(Duration::from_secs(5));
    }
}
