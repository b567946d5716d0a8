//! The DAMON-style policy in the simulator: region-granular monitoring finds hot
//! contiguous arrays (GAP's per-vertex arrays) but not hot pages scattered among cold
//! ones (scrambled Zipf), where per-page frequency wins (M5 §3: DAMON identifies hot
//! pages less precisely than per-page trackers).

use tierkit_sim::engine::{run, RunSpec, Subject};
use tierkit_sim::result::RunResult;
use tierkit_sim::workload::WorkloadSpec;

fn go(workload: &str, policy: &str) -> RunResult {
    let spec = RunSpec::new(WorkloadSpec::new(workload, 20_000, 2_000_000, 7), (1, 16));
    run(&spec, Subject::Named(policy.into()), &mut |_| {}).unwrap()
}

#[test]
fn regions_find_contiguous_hot_arrays() {
    let (damon, none, oracle) = (go("gap-pr", "damon"), go("gap-pr", "none"), go("gap-pr", "oracle"));
    assert!(damon.fast_hit_ratio > none.fast_hit_ratio + 0.5, "{} vs {}", damon.fast_hit_ratio, none.fast_hit_ratio);
    assert!(damon.fast_hit_ratio <= oracle.fast_hit_ratio);
    assert!(damon.tracking_bytes < 64 * 1024, "regions cost little: {}", damon.tracking_bytes);
}

#[test]
fn regions_miss_scattered_hot_pages() {
    let (damon, freqtier) = (go("zipf", "damon"), go("zipf", "freqtier"));
    assert!(
        freqtier.fast_hit_ratio > damon.fast_hit_ratio + 0.3,
        "{} vs {}",
        freqtier.fast_hit_ratio,
        damon.fast_hit_ratio
    );
}
