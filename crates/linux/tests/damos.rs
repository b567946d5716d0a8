//! The DAMOS tiering driver against a fake DAMON sysfs tree in a temp dir. A plain tree
//! cannot create directories when an `nr_*` file is written, so the tree holds them
//! already (as `tests/damon.rs`'s fixture does); a `state` file keeps the last command
//! word written.

use std::fs;
use std::path::{Path, PathBuf};

use tierkit_core::InMemory;
use tierkit_linux::source::damon::{
    node_ranges::node_ranges, DamonError, DamosOptions, DamosTiering, KdamondClaim, Quotas, SchemeStats, TunerParams,
    Unavailable,
};
use tierkit_linux::source::damos_live::{DamosLive, DamosSettings};

const PID: i32 = 4242;
const K0: &str = "sys/kernel/mm/damon/admin/kdamonds/0";
const CTX: &str = "sys/kernel/mm/damon/admin/kdamonds/0/contexts/0";
const GIB: u64 = 1 << 30;
/// The schemes at DAMON's default intervals: two migrations and a histogram of six rungs
/// (accessed at least 0, 1, 2, 4, 8 and 16 times of 20 samples) per node.
const SCHEMES: usize = 14;

/// A fake sysfs tree: DAMON's admin directory with one (not yet counted) kdamond, and
/// two nodes of memory blocks (node 0: blocks 0-7, node 1: blocks 8-14, 128 MiB each).
struct Tree {
    root: PathBuf,
}

impl Tree {
    fn new(name: &str) -> Tree {
        let root = std::env::temp_dir().join(format!("tierkit-damos-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let tree = Tree { root };
        tree.file("sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds", "0");
        tree.file(&format!("{K0}/state"), "off");
        tree.file(&format!("{K0}/pid"), "-1");
        tree.file(&format!("{K0}/contexts/nr_contexts"), "0");
        tree.file(&format!("{CTX}/avail_operations"), "vaddr\nfvaddr\npaddr");
        tree.file(&format!("{CTX}/operations"), "vaddr");
        for f in ["intervals/sample_us", "intervals/aggr_us", "intervals/update_us", "nr_regions/min", "nr_regions/max"]
        {
            tree.file(&format!("{CTX}/monitoring_attrs/{f}"), "0");
        }
        tree.file(&format!("{CTX}/targets/nr_targets"), "0");
        tree.file(&format!("{CTX}/targets/0/pid_target"), "0");
        tree.file(&format!("{CTX}/targets/0/regions/nr_regions"), "0");
        for r in 0..2 {
            for f in ["start", "end"] {
                tree.file(&format!("{CTX}/targets/0/regions/{r}/{f}"), "0");
            }
        }
        tree.file(&format!("{CTX}/schemes/nr_schemes"), "0");
        for s in 0..SCHEMES {
            let dir = format!("{CTX}/schemes/{s}");
            for f in ["action", "target_nid", "apply_interval_us", "filters/nr_filters"] {
                tree.file(&format!("{dir}/{f}"), "0");
            }
            for f in ["sz", "nr_accesses", "age"] {
                tree.file(&format!("{dir}/access_pattern/{f}/min"), "0");
                tree.file(&format!("{dir}/access_pattern/{f}/max"), "0");
            }
            for f in ["ms", "bytes", "reset_interval_ms", "weights/sz_permil", "weights/nr_accesses_permil"] {
                tree.file(&format!("{dir}/quotas/{f}"), "0");
            }
            tree.file(&format!("{dir}/quotas/weights/age_permil"), "0");
            tree.file(&format!("{dir}/quotas/effective_bytes"), "0");
            for f in ["metric", "interval_us", "high", "mid", "low"] {
                tree.file(&format!("{dir}/watermarks/{f}"), "0");
            }
            for f in 0..3 {
                for file in ["type", "matching", "memcg_path", "addr_start", "addr_end"] {
                    tree.file(&format!("{dir}/filters/{f}/{file}"), "0");
                }
            }
            for f in ["nr_tried", "sz_tried", "nr_applied", "sz_applied", "qt_exceeds"] {
                tree.file(&format!("{dir}/stats/{f}"), "0");
            }
        }
        tree.file(
            "proc/self/mountinfo",
            "24 28 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate",
        );
        tree.file("sys/fs/cgroup/tk/app/memory.current", "0");
        tree.file("sys/devices/system/memory/block_size_bytes", "8000000");
        for block in 0..15 {
            let node = if block < 8 { 0 } else { 1 };
            fs::create_dir_all(tree.root.join(format!("sys/devices/system/node/node{node}/memory{block}"))).unwrap();
            tree.file(&format!("sys/devices/system/memory/memory{block}/state"), "online");
        }
        tree
    }

    fn file(&self, path: &str, value: &str) {
        let path = self.root.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, format!("{value}\n")).unwrap();
    }

    fn read(&self, path: &str) -> String {
        fs::read_to_string(self.root.join(path)).unwrap().trim().to_owned()
    }

    fn scheme(&self, index: usize, file: &str) -> String {
        self.read(&format!("{CTX}/schemes/{index}/{file}"))
    }

    fn state_file(&self) -> PathBuf {
        self.root.join("run/tierkit/damos.json")
    }

    fn options(&self) -> DamosOptions {
        let mut opts =
            DamosOptions::new((0, node_ranges(&self.root, 0).unwrap()), (1, node_ranges(&self.root, 1).unwrap()), 100);
        opts.state_file = Some(self.state_file());
        fs::create_dir_all(self.root.join("run/tierkit")).unwrap();
        opts
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

#[test]
fn start_writes_promotion_demotion_and_an_access_histogram_per_node_each_kept_to_its_node() {
    let tree = Tree::new("start");
    let t = DamosTiering::start(&tree.root, PID, &tree.options()).unwrap();
    assert_eq!(tree.read("sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds"), "1", "a kdamond was added");
    assert_eq!(tree.read(&format!("{K0}/state")), "on");
    assert_eq!(tree.read(&format!("{CTX}/operations")), "paddr", "migrate_hot/cold work on physical memory");
    assert_eq!(tree.read(&format!("{CTX}/targets/0/pid_target")), PID.to_string(), "recorded for recovery");
    // One region per node, in address order: node 0 [0, 1 GiB), node 1 [1 GiB, 1.875 GiB).
    assert_eq!(tree.read(&format!("{CTX}/targets/0/regions/nr_regions")), "2");
    let region = |r: usize, f: &str| tree.read(&format!("{CTX}/targets/0/regions/{r}/{f}"));
    assert_eq!((region(0, "start"), region(0, "end")), ("0".to_string(), GIB.to_string()));
    assert_eq!((region(1, "start"), region(1, "end")), (GIB.to_string(), (GIB + (7 << 27)).to_string()));
    assert_eq!(tree.read(&format!("{CTX}/schemes/nr_schemes")), SCHEMES.to_string());
    let actions: Vec<String> = (0..SCHEMES).map(|s| tree.scheme(s, "action")).collect();
    assert_eq!(actions[..2], ["migrate_hot", "migrate_cold"]);
    assert!(actions[2..].iter().all(|a| a == "stat"), "{actions:?}");
    assert_eq!(t.ladder(), [0, 1, 2, 4, 8, 16]);
    let rungs: Vec<String> = (2..SCHEMES).map(|s| tree.scheme(s, "access_pattern/nr_accesses/min")).collect();
    assert_eq!(rungs, ["0", "1", "2", "4", "8", "16", "0", "1", "2", "4", "8", "16"], "fast node, then slow");
    assert_eq!((tree.scheme(0, "target_nid"), tree.scheme(1, "target_nid")), ("0".into(), "1".into()));
    // At start DAMOS's own rule (the tuner then moves both bounds): hot is accessed at least
    // once per aggregation, cold never.
    assert_eq!(tree.scheme(0, "access_pattern/nr_accesses/min"), "1");
    assert_eq!(
        (tree.scheme(1, "access_pattern/nr_accesses/min"), tree.scheme(1, "access_pattern/nr_accesses/max")),
        ("0".into(), "0".into())
    );
    // Promotion acts on the slow node: the fast node's range is filtered out (after the
    // young filter that keeps it to pages accessed since the last check); demotion the reverse.
    assert!(t.young_filter());
    assert_eq!(tree.scheme(0, "filters/nr_filters"), "2");
    assert_eq!((tree.scheme(0, "filters/0/type"), tree.scheme(0, "filters/0/matching")), ("young".into(), "N".into()));
    assert_eq!((tree.scheme(1, "filters/0/type"), tree.scheme(1, "filters/0/matching")), ("young".into(), "Y".into()));
    let addr = |s: usize, f: usize| {
        let file = |name: &str| tree.scheme(s, &format!("filters/{f}/{name}"));
        (file("type"), file("matching"), file("addr_start"), file("addr_end"))
    };
    assert_eq!(addr(0, 1), ("addr".into(), "Y".into(), "0".into(), GIB.to_string()), "promotion: not from node 0");
    assert_eq!(addr(1, 1), ("addr".into(), "Y".into(), GIB.to_string(), (GIB + (7 << 27)).to_string()));
    for s in 2..SCHEMES {
        assert_eq!(tree.scheme(s, "filters/nr_filters"), "1");
        let (kept, left_out) = if s < 8 { ("node 0", GIB..GIB + (7 << 27)) } else { ("node 1", 0..GIB) };
        let range = (addr(s, 0).2, addr(s, 0).3);
        assert_eq!(range, (left_out.start.to_string(), left_out.end.to_string()), "scheme {s} counts {kept}");
    }
    // Both migrations start paused: a one-page quota (0 would be unlimited) and a minimum
    // age no region reaches; they run while more than 2% of memory is free.
    for s in [0, 1] {
        assert_eq!(
            (tree.scheme(s, "quotas/bytes"), tree.scheme(s, "quotas/reset_interval_ms")),
            ("4096".into(), "1000".into())
        );
        assert_eq!(tree.scheme(s, "access_pattern/age/min"), u32::MAX.to_string());
        assert_eq!(tree.scheme(s, "watermarks/metric"), "free_mem_rate");
        let marks = ["high", "mid", "low"].map(|w| tree.scheme(s, &format!("watermarks/{w}")));
        assert_eq!(marks, ["1000", "1000", "20"]);
    }
    assert_eq!(tree.scheme(2, "watermarks/metric"), "none", "the stat schemes always run");
    assert!(tree.state_file().exists());
    t.stop().unwrap();
    assert_eq!(tree.read("sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds"), "0", "given back");
    assert_eq!(tree.read(&format!("{K0}/state")), "off");
    assert!(!tree.state_file().exists());
}

#[test]
fn new_quotas_are_committed_and_stats_read_after_asking_the_kernel() {
    let tree = Tree::new("quotas");
    let mut t = DamosTiering::start(&tree.root, PID, &tree.options()).unwrap();
    let wanted = Quotas { promote: 8 << 20, demote: 4 << 20, hot_min_accesses: 4, cold_max_accesses: 1 };
    // The kernel enforces no quota yet (effective_bytes 0): both stay paused.
    assert_eq!(t.set_quotas(wanted).unwrap(), Some(Quotas::default()));
    assert_eq!(tree.scheme(0, "quotas/bytes"), "4096");
    assert_eq!(tree.scheme(0, "access_pattern/age/min"), u32::MAX.to_string());
    tree.file(&format!("{CTX}/schemes/0/quotas/effective_bytes"), "4096");
    tree.file(&format!("{CTX}/schemes/1/quotas/effective_bytes"), "4096");
    assert_eq!(t.set_quotas(wanted).unwrap(), Some(wanted));
    assert_eq!(tree.read(&format!("{K0}/state")), "commit");
    assert_eq!(
        (tree.scheme(0, "quotas/bytes"), tree.scheme(1, "quotas/bytes")),
        ((8 << 20).to_string(), (4 << 20).to_string())
    );
    assert_eq!(tree.scheme(1, "access_pattern/age/min"), "0", "demotion runs now");
    let accesses = |s: usize| {
        let bound = |b: &str| tree.scheme(s, &format!("access_pattern/nr_accesses/{b}"));
        (bound("min"), bound("max"))
    };
    assert_eq!(accesses(0), ("4".into(), u32::MAX.to_string()), "promoted: accessed at least 4 times");
    assert_eq!(accesses(1), ("0".into(), "1".into()), "demoted: at most once");
    assert_eq!(
        t.set_quotas(Quotas { promote: 1 << 20, ..Quotas::default() }).unwrap(),
        Some(Quotas { promote: 1 << 20, ..Quotas::default() })
    );
    assert_eq!(
        (tree.scheme(1, "quotas/bytes"), tree.scheme(1, "access_pattern/age/min")),
        ("4096".into(), u32::MAX.to_string())
    );
    for (file, value) in
        [("nr_tried", "30"), ("sz_tried", "123"), ("nr_applied", "7"), ("sz_applied", "40960"), ("qt_exceeds", "2")]
    {
        tree.file(&format!("{CTX}/schemes/1/stats/{file}"), value);
    }
    let stats = t.stats().unwrap().unwrap();
    assert_eq!(tree.read(&format!("{K0}/state")), "update_schemes_stats");
    assert_eq!(
        stats.demote,
        SchemeStats { nr_tried: 30, sz_tried: 123, nr_applied: 7, sz_applied: 40960, qt_exceeds: 2 }
    );
    assert_eq!(stats.promote, SchemeStats::default());
    tree.file(&format!("{K0}/state"), "off");
    assert_eq!(t.stats().unwrap(), None, "a kdamond someone turned off");
    drop(t);
    assert_eq!(tree.read("sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds"), "0", "dropping gives it back");
}

#[test]
fn after_a_kill_the_next_start_recovers_the_kdamond() {
    let tree = Tree::new("recover");
    let t = DamosTiering::start(&tree.root, PID, &tree.options()).unwrap();
    std::mem::forget(t); // as SIGKILL: nothing given back
    assert_eq!(tree.read(&format!("{K0}/state")), "on");
    let err = DamosTiering::start(&tree.root, PID, &tree.options()).unwrap_err();
    assert!(matches!(err, DamonError::LeftoverState { .. }), "{err}");
    assert!(KdamondClaim::recover(&tree.root, &tree.state_file()).unwrap());
    assert_eq!(tree.read(&format!("{K0}/state")), "off");
    assert_eq!(tree.read("sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds"), "0");
    assert!(!tree.state_file().exists());
    assert!(!KdamondClaim::recover(&tree.root, &tree.state_file()).unwrap(), "nothing left");
}

#[test]
fn a_kernel_without_paddr_or_migration_is_refused_and_the_kdamond_given_back() {
    let tree = Tree::new("nopaddr");
    tree.file(&format!("{CTX}/avail_operations"), "vaddr\nfvaddr");
    let err = DamosTiering::start(&tree.root, PID, &tree.options()).unwrap_err();
    assert!(matches!(err, DamonError::NotAvailable(Unavailable::NoPaddr { .. })), "{err}");
    assert!(err.to_string().contains("CONFIG_DAMON_PADDR"), "{err}");
    assert_eq!(tree.read("sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds"), "0");
    assert!(!tree.state_file().exists());

    let tree = Tree::new("nonid");
    fs::remove_file(tree.root.join(format!("{CTX}/schemes/0/target_nid"))).unwrap();
    let err = DamosTiering::start(&tree.root, PID, &tree.options()).unwrap_err().to_string();
    assert!(err.contains("Linux 6.11+") && err.contains("target_nid"), "{err}");
    assert_eq!(tree.read("sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds"), "0");
}

#[test]
fn options_the_kernel_would_refuse_change_nothing() {
    let tree = Tree::new("bad");
    let ok = tree.options();
    for bad in [
        DamosOptions { slow_node: 0, ..ok.clone() },
        DamosOptions { slow_ranges: Vec::new(), ..ok.clone() },
        DamosOptions { min_regions: 2, ..ok.clone() },
        DamosOptions { slow_ranges: std::iter::once(GIB / 2..GIB * 2).collect(), ..ok.clone() },
        DamosOptions { min_free_permil: 1000, ..ok.clone() },
        DamosOptions { min_free_permil: 500, max_free_permil: 500, ..ok.clone() },
        DamosOptions { max_free_permil: 1001, ..ok.clone() },
        DamosOptions { memcg: Some("tk/app".to_string()), ..ok.clone() },
    ] {
        let err = DamosTiering::start(&tree.root, PID, &bad).unwrap_err();
        assert!(matches!(err, DamonError::InvalidOptions(_)), "{err}");
    }
    assert_eq!(tree.read("sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds"), "0");
    assert!(!Path::new(&tree.state_file()).exists());
}

#[test]
fn the_users_settings_reach_the_schemes_written() {
    let tree = Tree::new("settings");
    let settings = DamosSettings {
        tuner: TunerParams { max_bytes_per_sec: 3 << 20, hit_goal: 0.9 },
        min_free_permil: 5,
        max_free_permil: 800,
        memcg: Some("tk/app".to_string()),
    };
    let mut live = DamosLive::open(&tree.root, PID, (0, 1), &tree.state_file(), &settings).unwrap();
    assert!(live.describe().contains("only pages of memory cgroup /tk/app (memcg filter)"), "{}", live.describe());
    for s in [0, 1] {
        let marks = ["high", "mid", "low"].map(|w| tree.scheme(s, &format!("watermarks/{w}")));
        assert_eq!(marks, ["800", "800", "5"], "scheme {s}");
        // young, then memcg (leaving out what is not in the cgroup), then the other node's range.
        assert_eq!(tree.scheme(s, "filters/nr_filters"), "3");
        let memcg = ["type", "memcg_path", "matching"].map(|f| tree.scheme(s, &format!("filters/1/{f}")));
        assert_eq!(memcg, ["memcg", "/tk/app", "N"], "scheme {s}");
        assert_eq!(tree.scheme(s, "filters/2/type"), "addr");
    }
    for s in 2..SCHEMES {
        assert_eq!(tree.scheme(s, "filters/nr_filters"), "1", "the stat schemes count every page");
        assert_eq!(tree.scheme(s, "watermarks/high"), "1000");
    }
    // Once the kernel enforces quotas, promotion gets half the room, at most the ceiling.
    tree.file(&format!("{CTX}/schemes/0/quotas/effective_bytes"), "4096");
    tree.file(&format!("{CTX}/schemes/1/quotas/effective_bytes"), "4096");
    let mem = InMemory::new(&[65536, 65536]).unwrap(); // 256 MiB of room
    tree.file(&format!("{CTX}/schemes/9/stats/sz_tried"), "4096"); // a page on node 1 was accessed
    live.poll(&mem, false).unwrap();
    assert_eq!(tree.scheme(0, "quotas/bytes"), (3 << 20).to_string());
    assert!(live.note().contains("promote 3 MiB/s"), "{}", live.note());
    assert_eq!(live.stop(), None);
    assert_eq!(tree.read("sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds"), "0");
}

#[test]
fn a_memcg_filter_the_kernel_lacks_or_a_cgroup_that_is_not_there_is_refused_and_nothing_kept() {
    let tree = Tree::new("nomemcg");
    for s in [0, 1] {
        for f in 0..3 {
            fs::remove_file(tree.root.join(format!("{CTX}/schemes/{s}/filters/{f}/memcg_path"))).unwrap();
        }
    }
    let opts = DamosOptions { memcg: Some("/tk/app".to_string()), ..tree.options() };
    let err = DamosTiering::start(&tree.root, PID, &opts).unwrap_err();
    assert!(matches!(err, DamonError::NotAvailable(Unavailable::NoMemcgFilter { .. })), "{err}");
    assert!(err.to_string().contains("Linux 6.3+") && err.to_string().contains("memcg_path"), "{err}");
    assert_eq!(tree.read("sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds"), "0");
    assert!(!tree.state_file().exists());
    // Without the option the same kernel tiers as before.
    DamosTiering::start(&tree.root, PID, &tree.options()).unwrap().stop().unwrap();

    let settings = DamosSettings { memcg: Some("tk/other".to_string()), ..DamosSettings::default() };
    let err = DamosLive::open(&tree.root, PID, (0, 1), &tree.state_file(), &settings).err().unwrap().to_string();
    assert!(err.contains("memory cgroup \"tk/other\"") && err.contains("does not exist"), "{err}");
    assert_eq!(tree.read("sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds"), "0");
}

#[test]
fn the_promotion_threshold_follows_the_histogram_the_kernel_counts() {
    let tree = Tree::new("histogram");
    let mut live = DamosLive::open(&tree.root, PID, (0, 1), &tree.state_file(), &DamosSettings::default()).unwrap();
    tree.file(&format!("{CTX}/schemes/0/quotas/effective_bytes"), "4096");
    tree.file(&format!("{CTX}/schemes/1/quotas/effective_bytes"), "4096");
    // Periods of ten aggregation intervals: rung 0 of node 0 counts its 1 GiB ten times. On node 1,
    // in the second, 96 MiB were accessed at least once, 40 twice, 16 four times, 6 eight and 2 sixteen.
    const MIB: u64 = 1 << 20;
    let sz_tried = |scheme: usize, bytes: u64| {
        tree.file(&format!("{CTX}/schemes/{scheme}/stats/sz_tried"), &(bytes * 10).to_string());
    };
    let mem = InMemory::new(&[8192, 65536]).unwrap(); // 32 MiB of room on node 0
                                                      // A period in which DAMON found nothing accessed tells nothing: the migrations stay paused.
    sz_tried(2, GIB);
    live.poll(&mem, false).unwrap();
    assert_eq!(tree.scheme(0, "quotas/bytes"), "4096", "still paused");
    std::thread::sleep(std::time::Duration::from_millis(1_050)); // the next tuning period
    sz_tried(2, 2 * GIB);
    for (k, mib) in [96, 40, 16, 6, 2].into_iter().enumerate() {
        sz_tried(9 + k, mib * MIB);
    }
    tree.file(&format!("{CTX}/schemes/9/stats/nr_tried"), "100");
    live.poll(&mem, false).unwrap();
    let accesses = |s: usize, b: &str| tree.scheme(s, &format!("access_pattern/nr_accesses/{b}"));
    assert_eq!(accesses(0, "min"), "4", "the 16 MiB accessed at least 4 times fit in the room, the 40 do not");
    assert_eq!(accesses(1, "max"), "1", "regions accessed twice or three times stay where they are");
    assert_eq!(tree.scheme(0, "quotas/bytes"), (16 * MIB).to_string(), "half the room a second");
    assert!(live.note().contains("promote 16 MiB/s (accessed >= 4) demote 0 MiB/s (accessed <= 1)"), "{}", live.note());
    assert_eq!(live.hit_ratio(), Some(0.0), "none of the 16 MiB on node 0");
    assert_eq!(live.stop(), None);
}
