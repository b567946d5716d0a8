//! ARMS (arXiv 2508.04417) in the simulator, the direction of its claim: untuned ARMS
//! (its defaults) against HeMem and MEMTIS run with their main thresholds perturbed by
//! 2x and by 0.5x — the "untuned" systems of its study — and with their defaults. ARMS
//! stays within `MARGIN` (the paper's 3%) of the best variant of either on every
//! workload, and beats the worst variant of every system that its tuning matters to:
//! one whose variants differ by more than `SENSITIVE` on that workload (a system its
//! knobs barely move is not hurt by running untuned). At least one such case must occur,
//! or the test would not test the claim.
//!
//! HeMem's thresholds: the hot read/write counts (4) and the cooling count (10). MEMTIS's
//! hot threshold adapts by itself; its tunables are the sample counts between threshold
//! adaptations (100,000) and between coolings (2,000,000).

use tierkit_core::policies::{
    ArmsParams, ArmsPolicy, HememParams, HememPolicy, MemtisParams, MemtisPolicy, PolicySetup,
};
use tierkit_core::Policy;
use tierkit_sim::engine::{run, RunSpec, Subject};
use tierkit_sim::machine::capacities;
use tierkit_sim::workload::WorkloadSpec;

/// Below the best variant, at most: the paper's "within 3% of the best tuned".
const MARGIN: f64 = 0.03;

/// A system's tuning matters on a workload when its best variant is this much above its
/// worst.
const SENSITIVE: f64 = 0.05;

fn spec(name: &str) -> RunSpec {
    // 6M accesses of 1000 misses: ~20 s simulated, twice ARMS's 10 s long-term window.
    RunSpec::new(WorkloadSpec::new(name, 20_000, 6_000_000, 7), (1, 16))
}

fn throughput(spec: &RunSpec, build: &dyn Fn(&PolicySetup) -> Box<dyn Policy>) -> f64 {
    let pages = spec.workload.pages;
    let setup = PolicySetup { fast_pages: capacities(2, pages, spec.ratio)[0], pages };
    run(spec, Subject::Policy(build(&setup)), &mut |_| {}).unwrap().throughput
}

fn hemem(f: f64) -> HememParams {
    let d = HememParams::default();
    let scale = |x: u8| (f64::from(x) * f).round() as u8;
    HememParams {
        hot_reads: scale(d.hot_reads),
        hot_writes: scale(d.hot_writes),
        cooling_threshold: scale(d.cooling_threshold),
        ..d
    }
}

fn memtis(f: f64) -> MemtisParams {
    let d = MemtisParams::default();
    let scale = |x: u64| (x as f64 * f).round() as u64;
    MemtisParams { adaptation_samples: scale(d.adaptation_samples), cooling_samples: scale(d.cooling_samples), ..d }
}

#[test]
fn untuned_arms_keeps_up_with_the_best_and_beats_the_untuned_where_tuning_matters() {
    let mut failures = Vec::new();
    let mut sensitive = Vec::new();
    for name in ["zipf", "ycsb-b", "gap-pr"] {
        let s = spec(name);
        let arms = throughput(&s, &|setup| Box::new(ArmsPolicy::new(ArmsParams::default(), setup).unwrap()));
        let none = run(&s, Subject::Named("none".into()), &mut |_| {}).unwrap().throughput;
        let mut best = (String::new(), 0.0f64);
        let mut line = format!("{name}: arms {:.4} (x none)", arms / none);
        for system in ["hemem", "memtis"] {
            let mut worst = (0.0, f64::INFINITY);
            let mut top = 0.0f64;
            for f in [0.5, 1.0, 2.0] {
                let t = match system {
                    "hemem" => throughput(&s, &|setup| Box::new(HememPolicy::new(hemem(f), setup).unwrap())),
                    _ => throughput(&s, &|setup| Box::new(MemtisPolicy::new(memtis(f), setup).unwrap())),
                };
                line += &format!(" | {system} x{f} {:.4}", t / none);
                top = top.max(t);
                if t < worst.1 {
                    worst = (f, t);
                }
                if t > best.1 {
                    best = (format!("{system} x{f}"), t);
                }
            }
            if top <= (1.0 + SENSITIVE) * worst.1 {
                continue;
            }
            sensitive.push(format!("{name} {system}"));
            if arms <= worst.1 {
                failures.push(format!("{name}: arms {arms:.4e} <= worst {system} (x{}) {:.4e}", worst.0, worst.1));
            }
        }
        println!("{line}");
        if arms < (1.0 - MARGIN) * best.1 {
            failures.push(format!(
                "{name}: arms {arms:.4e} is {:.1}% below the best, {} {:.4e}",
                100.0 * (1.0 - arms / best.1),
                best.0,
                best.1
            ));
        }
    }
    assert!(!sensitive.is_empty(), "no system's tuning mattered on these workloads: the claim went untested");
    println!("tuning mattered to: {sensitive:?}");
    assert!(failures.is_empty(), "{failures:#?}");
}
