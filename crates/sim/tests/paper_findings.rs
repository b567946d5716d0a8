//! The papers' findings that compare several systems, reproduced in direction (not in
//! exact numbers) by the simulator. Findings about one system live in its own
//! `policy_<name>.rs`; Colloid's (Fig. 5) in `policy_colloid.rs`, TPP's §5.3 in
//! `policy_tpp.rs`, M5's sparse pages in `policy_m5.rs`.

use tierkit_sim::engine::{run, RunSpec, Subject};
use tierkit_sim::result::RunResult;
use tierkit_sim::workload::WorkloadSpec;

fn go(workload: &str, accesses: u64, ratio: (u64, u64), policy: &str) -> RunResult {
    let spec = RunSpec { measure_acr: true, ..RunSpec::new(WorkloadSpec::new(workload, 20_000, accesses, 7), ratio) };
    run(&spec, Subject::Named(policy.into()), &mut |_| {}).unwrap()
}

/// FreqTier §VII-A: on CacheLib CDN at 1:32, the frequency-based systems reach a
/// higher fast-tier hit ratio than the recency-based AutoNUMA and TPP.
#[test]
fn frequency_beats_recency_on_cachelib_cdn() {
    let hit = |p| go("cachelib-cdn", 2_000_000, (1, 32), p).fast_hit_ratio;
    let (freq, hybrid, autonuma, tpp) = (hit("freqtier"), hit("hybridtier"), hit("autonuma"), hit("tpp"));
    for (name, h) in [("freqtier", freq), ("hybridtier", hybrid)] {
        assert!(h > autonuma && h > tpp, "{name} {h} vs autonuma {autonuma}, tpp {tpp}");
    }
}

/// HybridTier Table 3: after 2/3 of the hot set turns cold, HybridTier returns to
/// within 1% of its steady state sooner than MEMTIS, whose cooling makes old counts
/// linger.
#[test]
fn hybridtier_adapts_to_a_shift_sooner_than_memtis() {
    // The timeline has 100 points; the shift happens at point 50.
    let recovery = |policy| {
        let r = go("hotset-shift", 4_000_000, (1, 16), policy);
        let hits: Vec<f64> = r.timeline.iter().map(|t| t.fast_hit_ratio).collect();
        let steady = hits[40..50].iter().sum::<f64>() / 10.0;
        assert!(hits[51] < steady - 0.2, "{policy}: the shift costs hits");
        hits[50..].iter().position(|&h| h >= 0.99 * steady).unwrap_or(usize::MAX)
    };
    let (hybrid, memtis) = (recovery("hybridtier"), recovery("memtis"));
    assert!(hybrid < memtis, "hybridtier recovers after {hybrid} intervals, memtis after {memtis}");
}

/// FreqTier §VII-C and HybridTier Table 4: the counting Bloom filters cost far less
/// tracking memory than per-page metadata.
#[test]
fn filters_track_with_less_memory_than_per_page_counts() {
    let bytes = |p| go("zipf", 1_000_000, (1, 16), p).tracking_bytes;
    let exact = bytes("hemem").min(bytes("memtis"));
    for p in ["freqtier", "hybridtier"] {
        assert!(bytes(p) * 2 < exact, "{p}: {} vs per-page {exact}", bytes(p));
    }
}

/// M5 Fig. 3/8: the hot pages M5's device tracker nominates are much closer to the
/// true hottest pages (a higher access-count ratio, M5 §4.1) than what AutoNUMA's
/// hint faults or DAMON's regions find.
#[test]
fn m5_promotes_hotter_pages_than_autonuma_and_damon() {
    for workload in ["zipf", "gups"] {
        let acr = |p| go(workload, 2_000_000, (1, 16), p).access_count_ratio.unwrap_or(0.0);
        let (m5, autonuma, damon) = (acr("m5"), acr("autonuma"), acr("damon"));
        assert!(m5 > autonuma && m5 > damon, "{workload}: m5 {m5}, autonuma {autonuma}, damon {damon}");
    }
}
