//! MEMTIS (SOSP'23, as Colloid §4.2 and HybridTier §2.3 describe it) in the simulator:
//! its capacity-aware threshold places a Zipf head close to the oracle, and after a
//! hot-set shift it recovers over many intervals, because old counts wait for cooling
//! (HybridTier §2.3.2, Table 3).

use tierkit_core::policies::{MemtisParams, MemtisPolicy, PolicySetup};
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

fn memtis(spec: &RunSpec, params: MemtisParams) -> RunResult {
    let pages = spec.workload.pages;
    let setup = PolicySetup { fast_pages: capacities(2, pages, spec.ratio)[0], pages };
    go(spec, Subject::Policy(Box::new(MemtisPolicy::new(params, &setup).unwrap())))
}

fn hits(r: &RunResult) -> Vec<f64> {
    r.timeline.iter().map(|t| t.fast_hit_ratio).collect()
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Timeline intervals from `from` until the hit ratio first reaches `target`.
fn intervals_to(hits: &[f64], from: usize, target: f64) -> usize {
    hits[from..].iter().position(|&h| h >= target).unwrap_or(hits.len() - from)
}

#[test]
fn memtis_beats_first_touch_on_zipf() {
    let s = spec(WorkloadSpec::new("zipf", 20_000, 2_000_000, 7), (1, 16));
    let (none, oracle) = (go(&s, Subject::Named("none".into())), go(&s, Subject::Named("oracle".into())));
    let m = memtis(&s, MemtisParams::default());
    println!(
        "zipf: none {:.3} memtis {:.3} oracle {:.3}",
        none.fast_hit_ratio, m.fast_hit_ratio, oracle.fast_hit_ratio
    );
    assert!(m.fast_hit_ratio > none.fast_hit_ratio + 0.4, "{} vs {}", m.fast_hit_ratio, none.fast_hit_ratio);
    assert!(m.throughput > 1.3 * none.throughput, "{} vs {}", m.throughput, none.throughput);
    assert!(m.throughput < oracle.throughput && m.fast_hit_ratio <= oracle.fast_hit_ratio + 0.01);
    // An exact 16-byte count slot for every page of the footprint.
    assert!(m.tracking_bytes >= 16 * 20_000, "{}", m.tracking_bytes);
}

#[test]
fn memtis_adapts_slowly_after_the_hot_set_shifts() {
    // HybridTier §2.3.2's experiment: at mid-run 2/3 of the hot set turns cold.
    let s = spec(WorkloadSpec::new("hotset-shift", 20_000, 6_000_000, 7), (1, 16));
    let m = hits(&memtis(&s, MemtisParams::default()));
    let plateau = mean(&m[40..50]);
    let target = 0.95 * plateau;
    let warmup = intervals_to(&m, 0, target);
    let recovery = intervals_to(&m, 50, target);
    println!("memtis: plateau {plateau:.3}, {warmup} intervals to reach 95% of it, {recovery} after the shift");
    // The retired pages keep their counts, above a threshold that only cooling lowers:
    // for several intervals the fast tier keeps serving them...
    assert!(mean(&m[50..55]) < 0.5 * plateau, "{:?}", &m[50..55]);
    // ...and getting back takes far longer than learning the distribution did.
    assert!(warmup <= 10 && recovery >= 3 * warmup.max(5), "warm-up {warmup}, recovery {recovery}");
    // It is the cooling (HybridTier Fig. 3a): with a 10x shorter cooling period the new
    // hot pages overtake the old counts far sooner.
    let quick = hits(&memtis(&s, MemtisParams { cooling_samples: 200_000, ..Default::default() }));
    let quick_recovery = intervals_to(&quick, 50, 0.95 * mean(&quick[40..50]));
    assert!(3 * quick_recovery <= recovery, "{quick_recovery} vs {recovery}");
}
