//! The DAMON sysfs driver against fixture trees (`tests/fixtures/damon/fresh`, copied to
//! a temp dir per test). The fixture holds the directories the kernel would create when
//! the `nr_*` files are written (a plain directory tree cannot create them) and a filled
//! `tried_regions` directory, as the kernel leaves it after `update_schemes_tried_regions`.

mod common;
use common::copy_dir;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use tierkit_core::Event;
use tierkit_linux::source::damon::{to_events, DamonError, DamonMonitor, DamonOptions, Poll, Region, Unavailable};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/damon/fresh");
const PID: i32 = 4242;
const ADMIN: &str = "sys/kernel/mm/damon/admin";
const K0: &str = "sys/kernel/mm/damon/admin/kdamonds/0";

/// A private copy of the fixture tree, deleted on drop.
struct Tree {
    root: PathBuf,
}

impl Tree {
    fn new(name: &str) -> Tree {
        let root = std::env::temp_dir().join(format!("tierkit-damon-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        copy_dir(Path::new(FIXTURE), &root);
        Tree { root }
    }

    fn read(&self, path: &str) -> String {
        fs::read_to_string(self.root.join(path)).unwrap().trim().to_owned()
    }

    fn write(&self, path: &str, value: &str) {
        fs::write(self.root.join(path), value).unwrap();
    }

    fn state_file(&self) -> PathBuf {
        self.root.join("run/tierkit/damon.json")
    }

    /// Every file under the root with its contents.
    fn snapshot(&self) -> BTreeMap<PathBuf, String> {
        fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
            for entry in fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, out);
                } else {
                    out.insert(path.clone(), fs::read_to_string(&path).unwrap());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.root, &mut out);
        out
    }

    /// Makes kdamond 0 look like another user's running kdamond (as on the host these
    /// tests were written on: a `paddr` pageout scheme).
    fn occupy_kdamond_0(&self) {
        self.write(&format!("{ADMIN}/kdamonds/nr_kdamonds"), "1\n");
        self.write(&format!("{K0}/state"), "on\n");
        self.write(&format!("{K0}/pid"), "77\n");
        self.write(&format!("{K0}/contexts/nr_contexts"), "1\n");
        self.write(&format!("{K0}/contexts/0/operations"), "paddr\n");
        self.write(&format!("{K0}/contexts/0/schemes/0/action"), "pageout\n");
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

fn options() -> DamonOptions {
    DamonOptions {
        sample_us: 2_000,
        aggr_us: 40_000,
        update_us: 400_000,
        min_regions: 20,
        max_regions: 500,
        state_file: None,
        init_regions: Vec::new(),
        min_nr_accesses: 0,
    }
}

#[test]
fn start_adds_a_kdamond_with_a_vaddr_stat_scheme_over_everything_and_turns_it_on() {
    let tree = Tree::new("start");
    let monitor = DamonMonitor::start(&tree.root, PID, &options()).unwrap();
    assert_eq!(monitor.kdamond(), 0);
    assert_eq!(monitor.target_pid(), PID);
    assert_eq!(monitor.kdamond_pid().unwrap(), None, "the fixture's pid file reads -1");
    let ctx = format!("{K0}/contexts/0");
    let expect = [
        (format!("{ADMIN}/kdamonds/nr_kdamonds"), "1"),
        (format!("{K0}/contexts/nr_contexts"), "1"),
        (format!("{ctx}/operations"), "vaddr"),
        (format!("{ctx}/monitoring_attrs/intervals/sample_us"), "2000"),
        (format!("{ctx}/monitoring_attrs/intervals/aggr_us"), "40000"),
        (format!("{ctx}/monitoring_attrs/intervals/update_us"), "400000"),
        (format!("{ctx}/monitoring_attrs/nr_regions/min"), "20"),
        (format!("{ctx}/monitoring_attrs/nr_regions/max"), "500"),
        (format!("{ctx}/targets/nr_targets"), "1"),
        (format!("{ctx}/targets/0/pid_target"), "4242"),
        (format!("{ctx}/schemes/nr_schemes"), "1"),
        (format!("{ctx}/schemes/0/action"), "stat"),
        (format!("{ctx}/schemes/0/access_pattern/sz/min"), "0"),
        (format!("{ctx}/schemes/0/access_pattern/sz/max"), "18446744073709551615"),
        (format!("{ctx}/schemes/0/access_pattern/nr_accesses/min"), "0"),
        (format!("{ctx}/schemes/0/access_pattern/nr_accesses/max"), "4294967295"),
        (format!("{ctx}/schemes/0/access_pattern/age/min"), "0"),
        (format!("{ctx}/schemes/0/access_pattern/age/max"), "4294967295"),
        (format!("{K0}/state"), "on"),
    ];
    for (path, value) in expect {
        assert_eq!(tree.read(&path), value, "{path}");
    }
    monitor.stop().unwrap();
}

#[test]
fn initial_regions_are_written_to_the_target_before_it_is_turned_on() {
    let tree = Tree::new("init-regions");
    let regions = format!("{K0}/contexts/0/targets/0/regions");
    // The kernel creates regions/0..N-1 (with start and end) when nr_regions is written;
    // the fixture cannot.
    for i in 0..3 {
        fs::create_dir_all(tree.root.join(format!("{regions}/{i}"))).unwrap();
        tree.write(&format!("{regions}/{i}/start"), "0\n");
        tree.write(&format!("{regions}/{i}/end"), "0\n");
    }
    let init = vec![0x1000..0x5000, 0x7f00_0000_0000..0x7f00_0020_0000, 0x7f00_0020_0000..0x7f00_0040_0000];
    let opts = DamonOptions { init_regions: init.clone(), ..options() };
    let monitor = DamonMonitor::start(&tree.root, PID, &opts).unwrap();
    assert_eq!(tree.read(&format!("{regions}/nr_regions")), "3");
    for (i, r) in init.iter().enumerate() {
        assert_eq!(tree.read(&format!("{regions}/{i}/start")), r.start.to_string(), "region {i}");
        assert_eq!(tree.read(&format!("{regions}/{i}/end")), r.end.to_string(), "region {i}");
    }
    assert_eq!(tree.read(&format!("{K0}/state")), "on");
    monitor.stop().unwrap();

    // Only accessed regions are reported when asked.
    let tree = Tree::new("accessed-only");
    let opts = DamonOptions { min_nr_accesses: 1, ..options() };
    DamonMonitor::start(&tree.root, PID, &opts).unwrap().stop().unwrap();
    let pattern = format!("{K0}/contexts/0/schemes/0/access_pattern/nr_accesses");
    assert_eq!(
        (tree.read(&format!("{pattern}/min")), tree.read(&format!("{pattern}/max"))),
        ("1".into(), "4294967295".into())
    );

    // Without initial regions nothing is written there: DAMON picks its own.
    let tree = Tree::new("no-init-regions");
    let before = tree.read(&format!("{regions}/nr_regions"));
    DamonMonitor::start(&tree.root, PID, &options()).unwrap().stop().unwrap();
    assert_eq!(tree.read(&format!("{regions}/nr_regions")), before);
}

#[test]
fn poll_asks_for_tried_regions_and_reads_them_in_address_order() {
    let tree = Tree::new("poll");
    let mut monitor = DamonMonitor::start(&tree.root, PID, &options()).unwrap();
    let mut regions = vec![Region { start: 1, end: 2, nr_accesses: 3 }];
    let poll = monitor.poll(&mut regions).unwrap();
    assert_eq!(tree.read(&format!("{K0}/state")), "update_schemes_tried_regions", "the command was written");
    assert_eq!(poll, Poll::Regions { total_bytes: Some(10 * (2 << 20) + 4096) });
    assert_eq!(regions.len(), 11, "stale contents were cleared; directories 0..=10 read");
    let base = 0x7f00_0000_0000u64;
    for (i, region) in regions.iter().enumerate() {
        let i = i as u64;
        assert_eq!(region.start, base + i * 0x20_0000, "region {i} (numeric, not lexical, order)");
        assert_eq!(region.nr_accesses as u64, i * 7 % 21);
    }
    assert_eq!(regions[10].bytes(), 4096);
    assert_eq!(regions.iter().map(Region::bytes).sum::<u64>(), 10 * (2 << 20) + 4096);

    let mut events = Vec::new();
    to_events(&regions, &mut events);
    assert_eq!(events.len(), 11);
    assert_eq!(events[1], Event::Accessed { first: (base >> 12) + 512, pages: 512, count: 7 });
    assert_eq!(events[10], Event::Accessed { first: (base >> 12) + 5120, pages: 1, count: 7 });

    // A second poll works on the state file the first one left.
    assert!(matches!(monitor.poll(&mut regions).unwrap(), Poll::Regions { .. }));
    assert_eq!(regions.len(), 11);
    monitor.stop().unwrap();
}

#[test]
fn stop_turns_the_kdamond_off_and_puts_nr_kdamonds_back() {
    let tree = Tree::new("stop");
    let monitor = DamonMonitor::start(&tree.root, PID, &options()).unwrap();
    monitor.stop().unwrap();
    assert_eq!(tree.read(&format!("{K0}/state")), "off");
    assert_eq!(tree.read(&format!("{ADMIN}/kdamonds/nr_kdamonds")), "0");
}

#[test]
fn dropping_the_monitor_gives_the_kdamond_back() {
    let tree = Tree::new("drop");
    let mut monitor = DamonMonitor::start(&tree.root, PID, &options()).unwrap();
    monitor.poll(&mut Vec::new()).unwrap();
    drop(monitor);
    assert_eq!(tree.read(&format!("{K0}/state")), "off");
    assert_eq!(tree.read(&format!("{ADMIN}/kdamonds/nr_kdamonds")), "0");
}

#[test]
fn a_kdamond_that_stopped_with_its_target_polls_as_stopped() {
    let tree = Tree::new("exited");
    let mut monitor = DamonMonitor::start(&tree.root, PID, &options()).unwrap();
    // The kernel turns a vaddr kdamond off when its target exits.
    tree.write(&format!("{K0}/state"), "off\n");
    let mut regions = vec![Region { start: 0, end: 4096, nr_accesses: 1 }];
    assert_eq!(monitor.poll(&mut regions).unwrap(), Poll::Stopped);
    assert!(regions.is_empty());
    assert_eq!(tree.read(&format!("{K0}/state")), "off", "no command written to a stopped kdamond");
    monitor.stop().unwrap();
    assert_eq!(tree.read(&format!("{ADMIN}/kdamonds/nr_kdamonds")), "0");
}

#[test]
fn another_users_running_kdamond_is_never_disturbed() {
    let tree = Tree::new("busy");
    tree.occupy_kdamond_0();
    let before = tree.snapshot();
    let err = DamonMonitor::start(&tree.root, PID, &options()).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, DamonError::NoFreeKdamond { nr_kdamonds: 1, running: 1, .. }), "{text}");
    assert!(text.contains("EBUSY") && text.contains("nr_kdamonds"), "{text}");
    assert_eq!(tree.snapshot(), before, "nothing was written");
    let err = DamonMonitor::check_free(&tree.root).unwrap_err();
    assert!(matches!(err, DamonError::NoFreeKdamond { nr_kdamonds: 1, running: 1, .. }), "{err}");
    assert_eq!(tree.snapshot(), before, "checking writes nothing either");
}

#[test]
fn a_free_kdamond_passes_the_check_without_a_write() {
    let tree = Tree::new("check-free");
    let before = tree.snapshot();
    DamonMonitor::check_free(&tree.root).unwrap();
    assert_eq!(tree.snapshot(), before);
}

#[test]
fn an_idle_unconfigured_kdamond_is_borrowed_and_handed_back_clean() {
    let tree = Tree::new("borrow");
    copy_dir(&tree.root.join(K0), &tree.root.join(format!("{ADMIN}/kdamonds/1")));
    tree.occupy_kdamond_0();
    tree.write(&format!("{ADMIN}/kdamonds/nr_kdamonds"), "2\n");
    let k1 = format!("{ADMIN}/kdamonds/1");
    let monitor = DamonMonitor::start(&tree.root, PID, &options()).unwrap();
    assert_eq!(monitor.kdamond(), 1);
    assert_eq!(tree.read(&format!("{k1}/state")), "on");
    assert_eq!(tree.read(&format!("{k1}/contexts/0/targets/0/pid_target")), "4242");
    assert_eq!(tree.read(&format!("{ADMIN}/kdamonds/nr_kdamonds")), "2", "no kdamond added");
    monitor.stop().unwrap();
    assert_eq!(tree.read(&format!("{k1}/state")), "off");
    assert_eq!(tree.read(&format!("{k1}/contexts/nr_contexts")), "0", "configuration removed");
    assert_eq!(tree.read(&format!("{ADMIN}/kdamonds/nr_kdamonds")), "2");
    assert_eq!(tree.read(&format!("{K0}/state")), "on", "the other user's kdamond untouched");
    assert_eq!(tree.read(&format!("{K0}/contexts/0/operations")), "paddr");
}

#[test]
fn without_damon_sysfs_the_error_names_the_kernel_option() {
    let tree = Tree::new("nosysfs");
    fs::remove_dir_all(tree.root.join("sys/kernel/mm/damon")).unwrap();
    let err = DamonMonitor::start(&tree.root, PID, &options()).unwrap_err();
    assert!(matches!(err, DamonError::NotAvailable(Unavailable::NoSysfs { .. })), "{err}");
    let text = err.to_string();
    assert!(text.starts_with("DAMON not available here because"), "{text}");
    assert!(text.contains("CONFIG_DAMON_SYSFS") && text.contains("damon/admin"), "{text}");
    assert!(DamonMonitor::check_available(&tree.root).is_err());
}

#[test]
fn a_kernel_without_vaddr_monitoring_is_refused_and_the_kdamond_given_back() {
    let tree = Tree::new("novaddr");
    tree.write(&format!("{K0}/contexts/0/avail_operations"), "paddr\n");
    DamonMonitor::check_available(&tree.root).unwrap();
    let err = DamonMonitor::start(&tree.root, PID, &options()).unwrap_err();
    assert!(matches!(err, DamonError::NotAvailable(Unavailable::NoVaddr { .. })), "{err}");
    assert!(err.to_string().contains("virtual address spaces"), "{err}");
    assert_eq!(tree.read(&format!("{ADMIN}/kdamonds/nr_kdamonds")), "0");
    assert_eq!(tree.read(&format!("{K0}/state")), "off");
}

#[test]
fn a_missing_target_or_bad_options_change_nothing() {
    let tree = Tree::new("refused");
    let before = tree.snapshot();
    let err = DamonMonitor::start(&tree.root, 999_999, &options()).unwrap_err();
    assert!(matches!(err, DamonError::NoSuchProcess { pid: 999_999, .. }), "{err}");
    let bad = DamonOptions { min_regions: 600, ..options() };
    let err = DamonMonitor::start(&tree.root, PID, &bad).unwrap_err();
    assert!(matches!(err, DamonError::InvalidOptions(_)), "{err}");
    assert!(err.to_string().contains("min_regions (600)"), "{err}");
    assert_eq!(tree.snapshot(), before);
}

#[test]
fn a_directory_the_kernel_failed_to_create_is_named() {
    let tree = Tree::new("missingdir");
    fs::remove_dir_all(tree.root.join(format!("{K0}/contexts/0/targets/0"))).unwrap();
    let err = DamonMonitor::start(&tree.root, PID, &options()).unwrap_err();
    assert!(matches!(err, DamonError::Missing { .. }), "{err}");
    assert!(err.to_string().contains("targets/0 is missing after writing"), "{err}");
    assert_eq!(tree.read(&format!("{ADMIN}/kdamonds/nr_kdamonds")), "0", "given back");
}

#[test]
fn after_a_crash_recover_gives_the_kdamond_back() {
    let tree = Tree::new("crash");
    let opts = DamonOptions { state_file: Some(tree.state_file()), ..options() };
    std::mem::forget(DamonMonitor::start(&tree.root, PID, &opts).unwrap());
    assert_eq!(tree.read(&format!("{K0}/state")), "on", "still running: the process 'crashed'");
    let claim = fs::read_to_string(tree.state_file()).unwrap();
    assert!(claim.contains("4242") && claim.contains("shrink_kdamonds"), "{claim}");

    let err = DamonMonitor::start(&tree.root, PID, &opts).unwrap_err();
    assert!(matches!(err, DamonError::LeftoverState { .. }), "{err}");

    assert!(DamonMonitor::recover(&tree.root, &tree.state_file()).unwrap());
    assert_eq!(tree.read(&format!("{K0}/state")), "off");
    assert_eq!(tree.read(&format!("{ADMIN}/kdamonds/nr_kdamonds")), "0");
    assert!(!tree.state_file().exists());
    assert!(!DamonMonitor::recover(&tree.root, &tree.state_file()).unwrap(), "nothing left");

    let monitor = DamonMonitor::start(&tree.root, PID, &opts).unwrap();
    monitor.stop().unwrap();
    assert!(!tree.state_file().exists(), "a clean stop deletes the claim");
}

#[test]
fn recover_leaves_a_kdamond_someone_else_took_over_alone() {
    let tree = Tree::new("takenover");
    let opts = DamonOptions { state_file: Some(tree.state_file()), ..options() };
    std::mem::forget(DamonMonitor::start(&tree.root, PID, &opts).unwrap());
    tree.write(&format!("{K0}/contexts/0/targets/0/pid_target"), "5151\n");
    let before = tree.snapshot();
    assert!(!DamonMonitor::recover(&tree.root, &tree.state_file()).unwrap());
    assert!(!tree.state_file().exists());
    let mut after = tree.snapshot();
    let mut before = before;
    before.retain(|path, _| !path.starts_with(tree.root.join("run")));
    after.retain(|path, _| !path.starts_with(tree.root.join("run")));
    assert_eq!(after, before, "the other user's kdamond untouched");
}

#[test]
fn recover_does_not_shrink_kdamonds_another_user_has_added_since() {
    let tree = Tree::new("regrown");
    let opts = DamonOptions { state_file: Some(tree.state_file()), ..options() };
    std::mem::forget(DamonMonitor::start(&tree.root, PID, &opts).unwrap());
    // Another tool rewrote nr_kdamonds (the kernel recreated every kdamond, unconfigured).
    tree.write(&format!("{ADMIN}/kdamonds/nr_kdamonds"), "2\n");
    tree.write(&format!("{K0}/state"), "off\n");
    tree.write(&format!("{K0}/contexts/nr_contexts"), "0\n");
    assert!(!DamonMonitor::recover(&tree.root, &tree.state_file()).unwrap());
    assert_eq!(tree.read(&format!("{ADMIN}/kdamonds/nr_kdamonds")), "2");
    assert!(!tree.state_file().exists());
}
