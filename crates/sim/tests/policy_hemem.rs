//! HeMem (SOSP'21, as Colloid §4.1 describes it) in the simulator: it finds the hot set
//! of GUPS, HeMem's own benchmark, and the head of a Zipf distribution, beating
//! first-touch placement and staying below the oracle.

use tierkit_core::policies::{HememParams, HememPolicy, PolicySetup};
use tierkit_sim::engine::{run, RunSpec, Subject};
use tierkit_sim::machine::capacities;
use tierkit_sim::result::RunResult;
use tierkit_sim::workload::WorkloadSpec;

fn spec(workload: WorkloadSpec, ratio: (u64, u64)) -> RunSpec {
    RunSpec::new(workload, ratio)
}

fn go(spec: &RunSpec, subject: Subject) -> RunResult {
    run(spec, subject, &mut |_| {}).unwrap()
}

fn hemem(spec: &RunSpec) -> RunResult {
    let pages = spec.workload.pages;
    let setup = PolicySetup { fast_pages: capacities(2, pages, spec.ratio)[0], pages };
    go(spec, Subject::Policy(Box::new(HememPolicy::new(HememParams::default(), &setup).unwrap())))
}

#[test]
fn hemem_finds_the_gups_hot_set() {
    // Colloid §2's GUPS: 90% of the updates go to a hot third of the pages; the fast
    // tier holds a third. Ten million updates are about 30 s of the modeled machine.
    let s = spec(WorkloadSpec::new("gups", 20_000, 10_000_000, 7), (1, 2));
    let (none, oracle, h) = (go(&s, Subject::Named("none".into())), go(&s, Subject::Named("oracle".into())), hemem(&s));
    println!("gups: none {:.3} hemem {:.3} oracle {:.3}", none.fast_hit_ratio, h.fast_hit_ratio, oracle.fast_hit_ratio);
    assert!(h.fast_hit_ratio > none.fast_hit_ratio + 0.3, "{} vs {}", h.fast_hit_ratio, none.fast_hit_ratio);
    assert!(h.throughput > 1.2 * none.throughput, "{} vs {}", h.throughput, none.throughput);
    assert!(h.throughput < oracle.throughput && h.fast_hit_ratio <= oracle.fast_hit_ratio + 0.01);
    // Each hot page is sampled a few times a second: the hot set is found over seconds,
    // and by the last tenth of the run the placement is the oracle's.
    let tail = h.timeline[90..].iter().map(|t| t.fast_hit_ratio).sum::<f64>() / 10.0;
    assert!(h.timeline[5].fast_hit_ratio < tail - 0.2, "{} then {tail}", h.timeline[5].fast_hit_ratio);
    assert!(tail > oracle.fast_hit_ratio - 0.02, "{tail} vs {}", oracle.fast_hit_ratio);
    // A record and a hash-table slot for every page of the footprint.
    assert!(h.tracking_bytes >= 40 * 20_000, "{}", h.tracking_bytes);
}

#[test]
fn hemem_keeps_only_the_hottest_zipf_pages_hot() {
    let s = spec(WorkloadSpec::new("zipf", 20_000, 2_000_000, 7), (1, 16));
    let (none, oracle, h) = (go(&s, Subject::Named("none".into())), go(&s, Subject::Named("oracle".into())), hemem(&s));
    println!("zipf: none {:.3} hemem {:.3} oracle {:.3}", none.fast_hit_ratio, h.fast_hit_ratio, oracle.fast_hit_ratio);
    assert!(h.fast_hit_ratio > 3.0 * none.fast_hit_ratio, "{} vs {}", h.fast_hit_ratio, none.fast_hit_ratio);
    assert!(h.throughput > 1.1 * none.throughput, "{} vs {}", h.throughput, none.throughput);
    assert!(h.throughput < oracle.throughput);
    // The hottest page takes a tenth of the samples and reaches the cooling threshold
    // every ~50 samples, so every count halves long before a page with under ~4% of the
    // samples collects 4: only the head of the distribution is ever hot.
    assert!(h.promotions < 100, "{} promotions", h.promotions);
    assert!(h.fast_hit_ratio < oracle.fast_hit_ratio - 0.2);
}
