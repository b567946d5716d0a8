//! End-to-end runs of the simulator: references bracket the policies, runs are
//! deterministic, and the model responds to contention.

use tierkit_core::policies::PolicySetup;
use tierkit_sim::engine::{run, RunSpec};
use tierkit_sim::machine::capacities;
use tierkit_sim::result::RunResult;
use tierkit_sim::workload::WorkloadSpec;
use tierkit_sim::{catalog, SimError};

fn spec(workload: WorkloadSpec, ratio: (u64, u64)) -> RunSpec {
    RunSpec::new(workload, ratio)
}

fn go(spec: &RunSpec, name: &str) -> Result<RunResult, SimError> {
    let caps = capacities(2, spec.workload.pages, spec.ratio);
    let setup = PolicySetup { fast_pages: caps[0], pages: spec.workload.pages };
    run(spec, catalog::subject(name, &setup)?, &mut |_| {})
}

#[test]
fn references_bracket_the_policies_on_zipf() {
    let s = spec(WorkloadSpec::new("zipf", 20_000, 2_000_000, 7), (1, 16));
    let r = |n| go(&s, n).unwrap();
    let (all, oracle, stat, none, lru) = (r("all-local"), r("oracle"), r("static-oracle"), r("none"), r("lru"));
    assert_eq!(all.fast_hit_ratio, 1.0);
    assert!(all.throughput > oracle.throughput, "{} vs {}", all.throughput, oracle.throughput);
    assert!(oracle.fast_hit_ratio >= stat.fast_hit_ratio, "{} {}", oracle.fast_hit_ratio, stat.fast_hit_ratio);
    // First touch already catches the pages touched early; the static oracle does better.
    assert!(stat.throughput > none.throughput && stat.fast_hit_ratio > none.fast_hit_ratio + 0.05);
    assert_eq!((stat.promotions, none.promotions, none.demotions), (0, 0, 0));
    assert!(lru.promotions > 0 && lru.demotions > 0);
    // Recency chases every sampled slow access: far more migration than the oracle
    // for no better placement (HybridTier §5.2).
    assert!(lru.promotions > 10 * oracle.promotions, "{} vs {}", lru.promotions, oracle.promotions);
    assert!(lru.fast_hit_ratio <= oracle.fast_hit_ratio + 0.02);
    assert!(lru.mechanism_cpu_pct > 0.0 && lru.tracking_bytes > 0);
    assert_eq!(all.timeline.len(), 100);
    assert_eq!(all.timeline.iter().map(|t| t.accesses).sum::<u64>(), 2_000_000 * 1000);
}

#[test]
fn runs_are_deterministic() {
    let s = spec(WorkloadSpec::new("zipf", 5_000, 300_000, 3), (1, 8));
    for name in ["lru", "clock", "oracle", "threshold"] {
        assert_eq!(go(&s, name).unwrap(), go(&s, name).unwrap(), "{name}");
    }
}

#[test]
fn contention_on_the_fast_tier_costs_throughput() {
    let mut s = spec(WorkloadSpec::new("zipf", 5_000, 300_000, 3), (1, 8));
    let quiet = go(&s, "all-local").unwrap();
    s.machine.tiers[0].background_gbps = 0.65 * s.machine.tiers[0].bandwidth_gbps; // Colloid's 2x
    let busy = go(&s, "all-local").unwrap();
    assert!(busy.throughput < 0.8 * quiet.throughput, "{} vs {}", busy.throughput, quiet.throughput);
}

#[test]
fn unknown_names_list_the_valid_ones() {
    let s = spec(WorkloadSpec::new("zipf", 100, 100, 3), (1, 8));
    let e = go(&s, "magic").unwrap_err().to_string();
    assert!(e.contains("magic") && e.contains("oracle") && e.contains("lru"), "{e}");
    let s = spec(WorkloadSpec::new("zipfian", 100, 100, 3), (1, 8));
    let e = go(&s, "none").unwrap_err().to_string();
    assert!(e.contains("zipfian") && e.contains("gups"), "{e}");
}

#[test]
fn the_hot_set_is_measured_where_the_run_leaves_it_when_asked() {
    let plain = spec(WorkloadSpec::new("zipf", 20_000, 1_000_000, 7), (1, 16));
    let measured = RunSpec { measure_hot: true, ..plain.clone() };
    let hot = |n| go(&measured, n).unwrap().hot_fast_residency.unwrap();
    assert_eq!(go(&plain, "lru").unwrap().hot_fast_residency, None, "not measured unless asked");
    // All-DRAM holds every page; a policy that moves the hot pages up holds more of them
    // than first touch does, and the oracle, which places by the future, most.
    let (all, none, tierkit, oracle) = (hot("all-local"), hot("none"), hot("tierkit"), hot("oracle"));
    assert_eq!(all, 1.0);
    assert!(tierkit > none + 0.2, "tierkit {tierkit} none {none}");
    assert!(oracle > none + 0.2 && oracle <= 1.0, "oracle {oracle} none {none}");
    // Measuring changes nothing else of the run.
    let (a, b) = (go(&plain, "tierkit").unwrap(), go(&measured, "tierkit").unwrap());
    assert_eq!((a.throughput, a.promotions), (b.throughput, b.promotions));
}

/// Filling while prefetching a per-page table yields the same stream as filling alone,
/// for every built-in generator (the engine fills that way), and a table shorter than
/// the footprint is only a hint.
#[test]
fn filling_with_prefetches_yields_the_same_stream() {
    for name in ["zipf", "gups", "hotset-shift", "cachelib-cdn", "gap-bfs", "xgboost", "ycsb-a"] {
        let spec = WorkloadSpec::new(name, 4096, 30_000, 7);
        let (mut plain, mut hinted) =
            (tierkit_sim::workload::build(&spec).unwrap(), tierkit_sim::workload::build(&spec).unwrap());
        let table = vec![0u8; 100];
        let (mut a, mut b) = (Vec::new(), Vec::new());
        loop {
            let (n, m) = (plain.fill(&mut a, 1000), hinted.fill_prefetching(&mut b, 1000, &table));
            assert_eq!(n, m, "{name}");
            if n == 0 {
                break;
            }
        }
        assert_eq!(a.len(), 30_000, "{name}");
        assert!(a == b, "{name}: the streams differ");
    }
}
