//! The `kernel` source against fixture trees (`tests/fixtures/kernel`, copied to a temp
//! dir per test): knobs written, restored byte for byte, recovered after a simulated
//! crash, missing knobs reported; `/proc/vmstat` deltas.

mod common;
use common::copy_dir;
use std::fs;
use std::path::{Path, PathBuf};

use tierkit_linux::source::kernel::{BalancingMode, KernelTiering, Knob, TieringError, TieringOptions, TieringVmstat};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/kernel");

/// A private copy of the fixture tree, deleted on drop.
struct Tree {
    root: PathBuf,
}

impl Tree {
    fn new(name: &str) -> Tree {
        let root = std::env::temp_dir().join(format!("tierkit-kernel-tiering-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        copy_dir(Path::new(FIXTURE), &root);
        Tree { root }
    }

    fn read(&self, knob: Knob) -> String {
        fs::read_to_string(self.root.join(knob.path())).unwrap()
    }

    fn original(knob: Knob) -> String {
        fs::read_to_string(Path::new(FIXTURE).join(knob.path())).unwrap()
    }

    fn state_file(&self) -> PathBuf {
        self.root.join("run/tierkit/knobs.json")
    }

    fn options(&self) -> TieringOptions {
        TieringOptions { state_file: self.state_file(), ..TieringOptions::default() }
    }

    fn assert_all_original(&self) {
        for knob in Knob::ALL {
            assert_eq!(self.read(knob), Tree::original(knob), "{knob} restored byte for byte");
        }
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

#[test]
fn enable_writes_tiering_mode_and_demotion_and_saves_the_originals() {
    let tree = Tree::new("enable");
    let guard = KernelTiering::enable(&tree.root, &tree.options()).unwrap();
    assert_eq!(tree.read(Knob::NumaBalancing), "2");
    assert_eq!(tree.read(Knob::DemotionEnabled), "true");
    // Tunables not asked for are not touched.
    assert_eq!(tree.read(Knob::ScanDelayMs), Tree::original(Knob::ScanDelayMs));
    let saved: Vec<_> = guard.saved().map(|(k, v)| (k, v.to_owned())).collect();
    assert_eq!(saved, [(Knob::DemotionEnabled, "false\n".to_owned()), (Knob::NumaBalancing, "0\n".to_owned())]);
    let state = fs::read_to_string(tree.state_file()).unwrap();
    assert!(state.contains("numa_balancing") && state.contains("\"0\\n\""), "{state}");
    guard.restore().unwrap();
    tree.assert_all_original();
    assert!(!tree.state_file().exists(), "state file deleted after the restore");
}

#[test]
fn tunables_are_written_when_asked_and_restored_on_drop() {
    let tree = Tree::new("tunables");
    let opts = TieringOptions {
        mode: BalancingMode::NormalAndMemoryTiering,
        demotion: false,
        promote_rate_limit_mbps: Some(1024),
        scan_delay_ms: Some(100),
        scan_period_min_ms: Some(100),
        scan_period_max_ms: Some(500),
        scan_size_mb: Some(64),
        hot_threshold_ms: Some(2000),
        ..tree.options()
    };
    let guard = KernelTiering::enable(&tree.root, &opts).unwrap();
    let expect = [
        (Knob::NumaBalancing, "3"),
        (Knob::DemotionEnabled, "false"),
        (Knob::PromoteRateLimitMbps, "1024"),
        (Knob::ScanDelayMs, "100"),
        (Knob::ScanPeriodMinMs, "100"),
        (Knob::ScanPeriodMaxMs, "500"),
        (Knob::ScanSizeMb, "64"),
        (Knob::HotThresholdMs, "2000"),
    ];
    for (knob, value) in expect {
        assert_eq!(tree.read(knob), value, "{knob}");
    }
    drop(guard);
    tree.assert_all_original();
    assert!(!tree.state_file().exists());
}

#[test]
fn a_crash_leaves_the_state_file_and_recover_restores_from_it() {
    let tree = Tree::new("crash");
    let opts = TieringOptions { scan_delay_ms: Some(10), ..tree.options() };
    std::mem::forget(KernelTiering::enable(&tree.root, &opts).unwrap());
    assert_eq!(tree.read(Knob::NumaBalancing), "2", "nothing restored: the process 'crashed'");
    assert!(tree.state_file().exists());

    // A second run refuses to overwrite the saved originals with tierkit's own values.
    let err = KernelTiering::enable(&tree.root, &opts).unwrap_err();
    assert!(matches!(err, TieringError::LeftoverState { .. }), "{err}");
    assert!(err.to_string().contains("knobs.json"), "{err}");
    assert_eq!(tree.read(Knob::ScanDelayMs), "10");

    let mut restored = KernelTiering::recover(&tree.root, &tree.state_file()).unwrap();
    restored.sort_by_key(|k| k.path());
    let mut expected = vec![Knob::NumaBalancing, Knob::DemotionEnabled, Knob::ScanDelayMs];
    expected.sort_by_key(|k| k.path());
    assert_eq!(restored, expected);
    tree.assert_all_original();
    assert!(!tree.state_file().exists());
    assert!(KernelTiering::recover(&tree.root, &tree.state_file()).unwrap().is_empty(), "nothing left to recover");

    // And tiering can be turned on again.
    KernelTiering::enable(&tree.root, &opts).unwrap().restore().unwrap();
    tree.assert_all_original();
}

#[test]
fn a_missing_tiering_knob_is_a_clear_error_and_changes_nothing() {
    let tree = Tree::new("missing");
    fs::remove_file(tree.root.join(Knob::NumaBalancing.path())).unwrap();
    let err = KernelTiering::enable(&tree.root, &tree.options()).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, TieringError::NoTieringMode { knob: Knob::NumaBalancing, .. }), "{text}");
    assert!(text.starts_with("kernel has no memory tiering mode because"), "{text}");
    assert!(text.contains("proc/sys/kernel/numa_balancing") && text.contains("CONFIG_NUMA_BALANCING"), "{text}");
    assert_eq!(tree.read(Knob::DemotionEnabled), "false\n");
    assert!(!tree.state_file().exists());
}

#[test]
fn a_missing_debugfs_tunable_names_debugfs() {
    let tree = Tree::new("debugfs");
    fs::remove_dir_all(tree.root.join("sys/kernel/debug/sched")).unwrap();
    let opts = TieringOptions { scan_period_min_ms: Some(100), ..tree.options() };
    let err = KernelTiering::enable(&tree.root, &opts).unwrap_err();
    assert!(matches!(err, TieringError::NoSuchTunable { knob: Knob::ScanPeriodMinMs, .. }), "{err}");
    assert!(err.to_string().contains("debugfs is not mounted"), "{err}");
    assert_eq!(tree.read(Knob::NumaBalancing), "0\n");
    assert_eq!(tree.read(Knob::DemotionEnabled), "false\n");
    assert!(!tree.state_file().exists());
}

#[test]
fn contradictory_scan_periods_are_refused_before_anything_is_written() {
    let tree = Tree::new("invalid");
    let opts = TieringOptions { scan_period_min_ms: Some(900), scan_period_max_ms: Some(100), ..tree.options() };
    let err = KernelTiering::enable(&tree.root, &opts).unwrap_err();
    assert!(matches!(err, TieringError::InvalidOption(_)), "{err}");
    tree.assert_all_original();
    assert!(!tree.state_file().exists());
}

#[test]
fn a_failed_write_puts_back_the_knobs_already_changed() {
    let tree = Tree::new("rollback");
    // numa_balancing is written last; make it a file the kernel refuses writes to
    // (readable, openable for writing, `write(2)` fails with EIO).
    let knob = tree.root.join(Knob::NumaBalancing.path());
    fs::remove_file(&knob).unwrap();
    std::os::unix::fs::symlink("/proc/version", &knob).unwrap();
    let opts = TieringOptions { scan_size_mb: Some(32), ..tree.options() };
    let err = KernelTiering::enable(&tree.root, &opts).unwrap_err();
    assert!(matches!(err, TieringError::Knob { knob: Knob::NumaBalancing, .. }), "{err}");
    assert!(err.to_string().contains("numa_balancing"), "{err}");
    assert_eq!(tree.read(Knob::DemotionEnabled), Tree::original(Knob::DemotionEnabled));
    assert_eq!(tree.read(Knob::ScanSizeMb), Tree::original(Knob::ScanSizeMb));
    assert!(!tree.state_file().exists(), "the rollback succeeded, so nothing is left to recover");
}

#[test]
fn a_corrupt_state_file_is_reported_not_guessed_at() {
    let tree = Tree::new("corrupt");
    fs::create_dir_all(tree.state_file().parent().unwrap()).unwrap();
    fs::write(tree.state_file(), "{\"version\":1,\"knobs\":[{\"knob\":\"/etc/passwd\"").unwrap();
    let err = KernelTiering::recover(&tree.root, &tree.state_file()).unwrap_err();
    assert!(matches!(err, TieringError::BadStateFile { .. }), "{err}");
    assert!(err.to_string().contains("check the knobs by hand"), "{err}");
    tree.assert_all_original();
    assert!(tree.state_file().exists(), "kept for the operator");
}

#[test]
fn vmstat_deltas_cover_the_tiering_counters() {
    let before = TieringVmstat::read(Path::new(FIXTURE)).unwrap();
    let after = TieringVmstat::read(&Path::new(FIXTURE).join("later")).unwrap();
    assert_eq!(before.pgpromote_success, Some(120));
    assert_eq!(before.pgmigrate_fail, Some(7));
    let delta = after.delta_since(&before);
    assert_eq!(delta.pgpromote_success, Some(2048));
    assert_eq!(delta.pgpromote_candidate, Some(2560));
    assert_eq!(delta.pgdemote_kswapd, Some(4096));
    assert_eq!(delta.pgdemote_direct, Some(0));
    assert_eq!(delta.numa_hint_faults, Some(30000));
    assert_eq!(delta.numa_pages_migrated, Some(2048));
    assert_eq!(delta.pgmigrate_success, Some(6144));
    assert_eq!(delta.pgmigrate_fail, Some(2));
    assert_eq!(delta.demoted(), Some(4096));
    let names: Vec<_> = delta.counters().into_iter().map(|(name, _)| name).collect();
    assert!(names.contains(&"pgdemote_khugepaged") && names.contains(&"numa_pte_updates"), "{names:?}");
}

#[test]
fn vmstat_counters_a_kernel_lacks_stay_unknown() {
    let old = TieringVmstat::parse("numa_hint_faults 10\npgmigrate_success 4\nbogus line here\npgmigrate_fail x\n");
    let new = TieringVmstat::parse("numa_hint_faults 25\npgmigrate_success 3\npgpromote_success 9\n");
    assert_eq!(old.pgpromote_success, None);
    assert_eq!(old.pgmigrate_fail, None, "malformed values are skipped");
    let delta = new.delta_since(&old);
    assert_eq!(delta.numa_hint_faults, Some(15));
    assert_eq!(delta.pgmigrate_success, Some(0), "a counter that went backwards counts as 0");
    assert_eq!(delta.pgpromote_success, None, "absent from the earlier read");
    assert_eq!(delta.demoted(), None);
}

#[test]
fn the_real_vmstat_parses() {
    // Reading /proc/vmstat on the host is harmless; every NUMA kernel counts hint faults
    // or migrations, but a kernel may lack them, so only the read itself is asserted.
    TieringVmstat::read(Path::new("/")).unwrap();
}

#[test]
fn restore_reports_each_knob_it_could_not_put_back_and_keeps_the_state_file() {
    let tree = Tree::new("restorefail");
    let guard =
        KernelTiering::enable(&tree.root, &TieringOptions { scan_size_mb: Some(32), ..tree.options() }).unwrap();
    // The demotion knob turns into a file that refuses writes.
    let demotion = tree.root.join(Knob::DemotionEnabled.path());
    fs::remove_file(&demotion).unwrap();
    std::os::unix::fs::symlink("/proc/version", &demotion).unwrap();
    let err = guard.restore().unwrap_err();
    assert_eq!(err.failures.len(), 1);
    assert_eq!(err.failures[0].knob, Knob::DemotionEnabled);
    assert_eq!(err.failures[0].original, "false\n");
    let text = err.to_string();
    assert!(text.contains("demotion_enabled back to \"false\"") && text.contains("knobs.json"), "{text}");
    assert_eq!(tree.read(Knob::NumaBalancing), "0\n", "the other knobs were still restored");
    assert_eq!(tree.read(Knob::ScanSizeMb), Tree::original(Knob::ScanSizeMb));
    assert!(tree.state_file().exists(), "kept for recover");

    // Once the knob is writable again, recover finishes the job.
    fs::remove_file(&demotion).unwrap();
    fs::write(&demotion, "true").unwrap();
    KernelTiering::recover(&tree.root, &tree.state_file()).unwrap();
    tree.assert_all_original();
    assert!(!tree.state_file().exists());
}
