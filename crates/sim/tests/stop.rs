//! A run or a grid asked to stop gives up within a chunk and returns nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tierkit_sim::compare::{compare, compare_until, Grid};
use tierkit_sim::engine::{run, run_until, RunSpec, Subject};
use tierkit_sim::workload::WorkloadSpec;

fn long_run() -> RunSpec {
    RunSpec::new(WorkloadSpec::new("zipf", 1 << 16, 1 << 40, 1), (1, 16))
}

#[test]
fn a_stopped_run_returns_none_soon() {
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let mut chunks = 0u64;
    let out = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(200));
            stop.store(true, Ordering::Relaxed);
        });
        run_until(&long_run(), Subject::Named("lru".into()), &mut |_| chunks += 1, &stop)
    });
    assert!(out.unwrap().is_none());
    assert!(chunks > 0, "the run was under way when asked to stop");
    // 2^40 accesses would take days.
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}

#[test]
fn the_oracles_stop_while_learning() {
    for oracle in ["oracle", "static-oracle"] {
        let stop = AtomicBool::new(false);
        let started = Instant::now();
        let out = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(100));
                stop.store(true, Ordering::Relaxed);
            });
            run_until(&long_run(), Subject::Named(oracle.into()), &mut |_| {}, &stop)
        });
        assert!(out.unwrap().is_none(), "{oracle}");
        assert!(started.elapsed() < Duration::from_secs(5), "{oracle}: {:?}", started.elapsed());
    }
}

#[test]
fn an_unstopped_run_is_the_plain_run() {
    let spec = RunSpec::new(WorkloadSpec::new("zipf", 2000, 50_000, 1), (1, 8));
    let never = AtomicBool::new(false);
    let a = run_until(&spec, Subject::Named("lru".into()), &mut |_| {}, &never).unwrap().unwrap();
    let b = run(&spec, Subject::Named("lru".into()), &mut |_| {}).unwrap();
    assert_eq!((a.throughput, a.promotions), (b.throughput, b.promotions));
}

#[test]
fn a_stopped_grid_returns_none_and_starts_nothing() {
    let grid = Grid::new(vec![WorkloadSpec::new("zipf", 2000, 50_000, 1)], vec![(1, 8), (1, 16)], vec!["lru".into()]);
    let ran = std::sync::atomic::AtomicUsize::new(0);
    let stopped = AtomicBool::new(true);
    let out = compare_until(&grid, 2, &|_, _, _| _ = ran.fetch_add(1, Ordering::Relaxed), &stopped).unwrap();
    assert!(out.is_none());
    assert_eq!(ran.load(Ordering::Relaxed), 0);
    let never = AtomicBool::new(false);
    let rows = compare_until(&grid, 2, &|_, _, _| {}, &never).unwrap().unwrap();
    assert_eq!(rows.len(), compare(&grid, 2, &|_, _, _| {}).unwrap().len());
    assert_eq!(rows.len(), 2);
}
