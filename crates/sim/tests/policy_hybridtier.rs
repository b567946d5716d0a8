//! HybridTier in the simulator: near the static oracle on a skewed workload, and the
//! finding of HybridTier §3.1 / §6.3.1: tracking momentum besides frequency adapts to
//! a shifted hot set faster than frequency alone.

use tierkit_core::policies::{HybridTierParams, HybridTierPolicy, PolicySetup};
use tierkit_core::MILLISECOND;
use tierkit_sim::engine::{run, RunSpec, Subject};
use tierkit_sim::machine::capacities;
use tierkit_sim::result::RunResult;
use tierkit_sim::workload::WorkloadSpec;

const PAGES: u64 = 20_000;

fn spec(workload: &str, accesses: u64) -> RunSpec {
    RunSpec::new(WorkloadSpec::new(workload, PAGES, accesses, 7), (1, 16))
}

fn go(spec: &RunSpec, params: HybridTierParams) -> RunResult {
    let setup = PolicySetup { fast_pages: capacities(2, PAGES, (1, 16))[0], pages: PAGES };
    run(spec, Subject::Policy(Box::new(HybridTierPolicy::new(params, &setup).unwrap())), &mut |_| {}).unwrap()
}

/// Mean fast-tier hit ratio over timeline points `range`.
fn hit_ratio(r: &RunResult, range: std::ops::Range<usize>) -> f64 {
    let n = range.len() as f64;
    r.timeline[range].iter().map(|t| t.fast_hit_ratio).sum::<f64>() / n
}

#[test]
fn beats_none_and_nears_the_static_oracle_on_zipf() {
    let s = spec("zipf", 2_000_000);
    let named = |n: &str| run(&s, Subject::Named(n.into()), &mut |_| {}).unwrap();
    let (none, stat, oracle) = (named("none"), named("static-oracle"), named("oracle"));
    let ht = go(&s, HybridTierParams::default());
    let h = ht.fast_hit_ratio;
    assert!(
        h > none.fast_hit_ratio + 0.5 && ht.throughput > 1.3 * none.throughput,
        "{h} vs none {}",
        none.fast_hit_ratio
    );
    assert!(h >= 0.95 * stat.fast_hit_ratio, "{h} vs static oracle {}", stat.fast_hit_ratio);
    assert!(
        h <= oracle.fast_hit_ratio && ht.throughput <= oracle.throughput,
        "{h} vs oracle {}",
        oracle.fast_hit_ratio
    );

    // Suspending sampling once the hit ratio is stable (judged every 300 ms instead of
    // every minute, for this 6 s run) keeps the hit ratio at a fraction of the CPU.
    let suspending = go(&s, HybridTierParams { hit_ratio_window: 300 * MILLISECOND, ..Default::default() });
    assert!((suspending.fast_hit_ratio - h).abs() < 0.01, "{} vs {h}", suspending.fast_hit_ratio);
    assert!(
        suspending.mechanism_cpu_ns < 0.5 * ht.mechanism_cpu_ns,
        "{} vs {}",
        suspending.mechanism_cpu_ns,
        ht.mechanism_cpu_ns
    );
}

#[test]
fn momentum_regains_the_hit_ratio_after_a_hotset_shift_faster_than_frequency_alone() {
    // 4M accesses span 12 s; 2/3 of the hot set turns cold at 6 s (timeline point 50).
    // HybridTier revisits second-chance pages after a minute of hour-long runs; here
    // after 200 ms. Everything else keeps its paper default.
    let s = spec("hotset-shift", 4_000_000);
    let revisit = 200 * MILLISECOND;
    let hybrid = go(&s, HybridTierParams { revisit, ..Default::default() });
    let frequency_only = go(&s, HybridTierParams { revisit, momentum: false, ..Default::default() });
    let before = hit_ratio(&hybrid, 40..50);
    assert!((hit_ratio(&frequency_only, 40..50) - before).abs() < 0.02, "the same before the shift");
    // The second after the shift: formerly hot pages with no momentum leave at their
    // revisit, while the frequency-only variant waits for cooling to age them out.
    let (h, f) = (hit_ratio(&hybrid, 51..59), hit_ratio(&frequency_only, 51..59));
    assert!(h > f + 0.15, "after the shift: hybrid {h}, frequency only {f}");
    assert!(h > before - 0.1, "hybrid is back near {before}: {h}");
    // Both settle again.
    for r in [&hybrid, &frequency_only] {
        assert!(hit_ratio(r, 90..100) > before - 0.03, "{} vs {before}", hit_ratio(r, 90..100));
    }
}
