//! The live daemon on this machine: the perf page-fault source against child processes
//! in dry runs (this host has one NUMA node, and DAMON and the tiering knobs are never
//! touched outside the QEMU guest), preflight refusals, the DAMON and kernel sources and
//! crash recovery on copies of fixture trees, and the heat profiler's clear_refs method.

mod common;
use common::copy_dir;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tierkit_core::policies::PolicySetup;
use tierkit_core::{Event, InMemory, Memory};
use tierkit_linux::profile::{self, ProfileChoice, ProfileConfig, ProfileMethod};
use tierkit_linux::run::telemetry::process_cpu_ns;
use tierkit_linux::run::{self, DaemonConfig, DaemonError, Ended, LiveSource, SourceChoice, SourceKind};
use tierkit_linux::signals::Signals;
use tierkit_linux::source::live::SourceSetup;
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
    // CPU used before the run, which the run's own cost must not include.
    let start = process_cpu_ns(None).unwrap();
    let mut x = 0u64;
    while process_cpu_ns(None).unwrap() < start + 30_000_000 {
        x = std::hint::black_box(x.wrapping_add(1));
    }
    let cpu_before = process_cpu_ns(None).unwrap();
    let report = run::run(&cfg, &mut target, &signals, &mut log).unwrap();
    let cpu_during = Duration::from_nanos(process_cpu_ns(None).unwrap() - cpu_before);
    let log = String::from_utf8(log).unwrap();
    assert_eq!(report.ended, Ended::TargetExited(TargetExit::Code(7)), "{log}");
    // The own cost covers the run alone, to the nanosecond (not the CPU this test process
    // used before it, nor 10 ms clock ticks: a run of a few ms once read as 526% of a core).
    assert!(report.summary.cpu <= cpu_during, "{:?} > {cpu_during:?}", report.summary.cpu);
    assert_eq!(run::run_exit_code(&report), 7);
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
    let report = run::run(&cfg, &mut target, &signals, &mut log).unwrap();
    sender.join().unwrap();
    let log = String::from_utf8(log).unwrap();
    assert_eq!(report.ended, Ended::Signal(libc::SIGTERM), "{log}");
    assert_eq!(run::run_exit_code(&report), 128 + libc::SIGTERM);
    assert_eq!(run::attach_exit_code(&report), 0);
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
    let report = run::run(&cfg, &mut target, &signals, &mut log).unwrap();
    let log = String::from_utf8(log).unwrap();
    assert_eq!(report.ended, Ended::Duration(Duration::from_millis(500)), "{log}");
    assert_eq!(run::attach_exit_code(&report), 0);
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
    assert!(run::preflight(&on(SourceChoice::Only(SourceKind::Perf), "tierkit")).is_ok());
    let unknown = run::preflight(&on(SourceChoice::Auto, "nope")).unwrap_err().to_string();
    assert!(unknown.contains("unknown policy \"nope\"") && unknown.contains("tierkit, "), "{unknown}");
    let no_damon = run::preflight(&on(SourceChoice::Only(SourceKind::Damon), "tierkit")).unwrap_err();
    assert!(matches!(no_damon, DaemonError::Source { .. }));
    let text = no_damon.to_string();
    assert!(text.contains("DAMON not available here because") && text.contains("damon/admin"), "{text}");
    let hints = run::preflight(&on(SourceChoice::Only(SourceKind::Perf), "tpp")).unwrap_err().to_string();
    assert!(hints.contains("policy tpp needs NUMA hint faults") && hints.contains("--source kernel"), "{hints}");
    let regions = run::preflight(&on(SourceChoice::Only(SourceKind::Perf), "damon")).unwrap_err().to_string();
    assert!(regions.contains("--source damon"), "{regions}");
    let kernel_dry = DaemonConfig { dry_run: true, ..on(SourceChoice::Only(SourceKind::Kernel), "tierkit") };
    assert!(run::preflight(&kernel_dry).unwrap_err().to_string().contains("--dry-run cannot be combined"));
    let wrapped = run::preflight(&on(SourceChoice::Auto, "tierkit+colloid"));
    assert!(wrapped.is_ok(), "{wrapped:?}");
    let overrides = DaemonConfig {
        overrides: tierkit_linux::topology::TopologyOverrides { fast: None, slow: Some(vec![9]) },
        ..on(SourceChoice::Auto, "tierkit")
    };
    assert!(run::preflight(&overrides).unwrap_err().to_string().contains("node 9"));
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
    // Referenced in the window (hot needs every interval, which a loaded host's scheduler
    // may deny the shell for 200 ms).
    assert!(last.mappings.iter().any(|m| m.hot + m.warm > 0.0), "the running shell touches some pages: {last:?}");
    // The busy loop outlives the profile unless the machine is very slow.
    if target.is_alive() {
        assert!(matches!(outcome.ended, Ended::Duration(_)), "{outcome:?}");
        // SAFETY: pid is this test's child.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        target.wait_timeout(Duration::from_secs(5));
    }
}

/// A private copy of a fixture tree under `crates/linux/tests/fixtures`, deleted on drop.
struct Tree(PathBuf);

impl Tree {
    fn copy(fixture: &str, name: &str) -> Tree {
        let root = state_dir(&format!("tree-{name}"));
        copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(fixture), &root);
        Tree(root)
    }

    fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.0.join(path)).unwrap().trim().to_string()
    }

    fn setup(&self, pid: u32, policy: Option<&str>) -> SourceSetup {
        let policy = policy.map(|name| {
            let p = tierkit_core::policies::build(name, &PolicySetup { fast_pages: 64, pages: 256 }).unwrap().unwrap();
            (name.to_string(), p.sources())
        });
        SourceSetup {
            root: self.0.clone(),
            state_dir: self.0.join("run/tierkit"),
            pid,
            policy,
            nodes: Some((0, 1)),
            damos: Default::default(),
        }
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn damon_regions_reach_a_sampling_policy_and_the_kdamond_is_given_back() {
    let tree = Tree::copy("damon/fresh", "damon");
    let setup = tree.setup(4242, Some("tierkit"));
    let mut source = LiveSource::open(SourceChoice::Only(SourceKind::Damon), &setup).unwrap();
    assert_eq!(source.kind(), SourceKind::Damon);
    assert!(tree.0.join("run/tierkit/damon.json").exists(), "the claim is recorded before use");
    // The fixture's regions: 2 MiB each from 0x7f00_0000_0000, region i accessed i*7%21 times.
    let base = 0x7f00_0000_0000u64 >> 12;
    let mut mem = InMemory::new(&[1 << 20, 1 << 20]).unwrap();
    let resident = [base + 1, base + 512, base + 513, base + 1024, base + 1536];
    for page in resident {
        mem.touch(page);
    }
    let request = setup.policy.as_ref().unwrap().1;
    let mut events = Vec::new();
    let tier_of = |p| mem.tier_of(p);
    let polled = source.poll(&mem, &tier_of, &request, &mut events).unwrap();
    let mut per_page = std::collections::BTreeMap::new();
    for e in &events {
        let Event::Sample { page, tier, .. } = *e else { panic!("only samples for tierkit: {e:?}") };
        assert_eq!(Some(tier), mem.tier_of(page));
        *per_page.entry(page).or_insert(0) += 1;
    }
    // Region 0 is idle, region 1 accessed 7 times, region 2 14 times, region 3 idle.
    let expect = [(base + 512, 7), (base + 513, 7), (base + 1024, 14)];
    assert_eq!(per_page.into_iter().collect::<Vec<_>>(), expect);
    assert_eq!(polled.samples, 28);
    let stopped = source.stop();
    assert!(stopped.warning.is_none() && stopped.knobs.is_empty(), "{stopped:?}");
    assert_eq!(tree.read("sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds"), "0", "the added kdamond is removed");
    assert!(!tree.0.join("run/tierkit/damon.json").exists());
}

#[test]
fn damon_starts_on_the_targets_anonymous_memory_with_at_least_100_regions() {
    let tree = Tree::copy("damon/fresh", "damon-maps");
    // A heap of 1,000 pages far above the binary, a guard page and the stack.
    let maps = "00400000-00401000 r--p 00000000 00:02 40 /bin/w\n\
                10000000-103e8000 rw-p 00000000 00:00 0 [heap]\n\
                7ffc00000000-7ffc00001000 ---p 00000000 00:00 0\n\
                7ffc00001000-7ffc00009000 rw-p 00000000 00:00 0 [stack]\n";
    std::fs::write(tree.0.join("proc/4242/maps"), maps).unwrap();
    let target = "sys/kernel/mm/damon/admin/kdamonds/0/contexts/0/targets/0/regions";
    for i in 0..210 {
        // What the kernel creates when nr_regions is written.
        std::fs::create_dir_all(tree.0.join(format!("{target}/{i}"))).unwrap();
        std::fs::write(tree.0.join(format!("{target}/{i}/start")), "0\n").unwrap();
        std::fs::write(tree.0.join(format!("{target}/{i}/end")), "0\n").unwrap();
    }
    let source = LiveSource::open(SourceChoice::Only(SourceKind::Damon), &tree.setup(4242, Some("tierkit"))).unwrap();
    let attrs = "sys/kernel/mm/damon/admin/kdamonds/0/contexts/0/monitoring_attrs/nr_regions";
    assert_eq!(tree.read(&format!("{attrs}/min")), "100");
    let n: usize = tree.read(&format!("{target}/nr_regions")).parse().unwrap();
    // 1,008 pages in pieces of 10: 100 for the heap, 1 for the stack.
    assert_eq!(n, 101);
    let region = |i: usize| -> (u64, u64) {
        (
            tree.read(&format!("{target}/{i}/start")).parse().unwrap(),
            tree.read(&format!("{target}/{i}/end")).parse().unwrap(),
        )
    };
    assert_eq!(region(0), (0x1000_0000, 0x1000_a000));
    assert_eq!(region(99).1, 0x103e_8000);
    assert_eq!(region(100), (0x7ffc_0000_1000, 0x7ffc_0000_9000));
    assert!(source.stop().warning.is_none());
}

#[test]
fn the_kernel_source_reports_vmstat_moves_and_restores_every_knob() {
    let tree = Tree::copy("kernel", "kernel");
    let mut source = LiveSource::open(SourceChoice::Only(SourceKind::Kernel), &tree.setup(1, None)).unwrap();
    assert_eq!(
        (
            tree.read("proc/sys/kernel/numa_balancing").as_str(),
            tree.read("sys/kernel/mm/numa/demotion_enabled").as_str()
        ),
        ("2", "true")
    );
    assert!(source.describe().contains("numa_balancing"), "{}", source.describe());
    std::fs::copy(tree.0.join("later/proc/vmstat"), tree.0.join("proc/vmstat")).unwrap();
    let mem = InMemory::new(&[8, 8]).unwrap();
    let polled = source.poll(&mem, &|_| None, &Default::default(), &mut Vec::new()).unwrap();
    assert_eq!(polled.samples, 30_000, "NUMA hint faults since tiering was turned on");
    let moves = source.kernel_moves().unwrap();
    assert_eq!((moves.promoted, moves.demoted), (2048, 4096));
    let stopped = source.stop();
    let knobs: Vec<(String, String, bool)> =
        stopped.knobs.iter().map(|k| (k.knob.clone(), k.value.clone(), k.error.is_none())).collect();
    assert!(knobs.contains(&("numa_balancing".into(), "0".into(), true)), "{knobs:?}");
    assert!(knobs.contains(&("demotion_enabled".into(), "false".into(), true)), "{knobs:?}");
    assert_eq!(tree.read("proc/sys/kernel/numa_balancing"), "0");
    assert_eq!(tree.read("sys/kernel/mm/numa/demotion_enabled"), "false");
    assert!(!tree.0.join("run/tierkit/knobs.json").exists());
}

#[test]
fn knobs_left_by_a_killed_run_are_restored_by_the_next_one() {
    let tree = Tree::copy("kernel", "killed");
    let source = LiveSource::open(SourceChoice::Only(SourceKind::Kernel), &tree.setup(1, None)).unwrap();
    std::mem::forget(source); // as if tierkit were SIGKILLed: nothing is put back
    assert_eq!(tree.read("proc/sys/kernel/numa_balancing"), "2");
    let acquired = tierkit_linux::run::state::acquire(&tree.0, &tree.0.join("run/tierkit")).unwrap();
    assert_eq!(acquired.problems, Vec::<String>::new());
    assert!(
        acquired.recovered[0].contains("restored kernel knobs") && acquired.recovered[0].contains("numa_balancing")
    );
    assert_eq!(tree.read("proc/sys/kernel/numa_balancing"), "0");
    assert_eq!(tree.read("sys/kernel/mm/numa/demotion_enabled"), "false");
    // While the lock is held, another run may not touch kernel state.
    let busy = tierkit_linux::run::state::acquire(&tree.0, &tree.0.join("run/tierkit")).unwrap_err();
    assert!(busy.to_string().contains("another tierkit"), "{busy}");
}
