//! M5 (ASPLOS '25, §5) in the simulator: device-tracked promotion beats first-touch
//! placement on skewed workloads, and on sparse hot pages (M5 §4) the HWT-driven
//! Nominator promotes fewer pages than HPT-only for a similar hit ratio.

use tierkit_core::policies::{ArcParams, ArcPolicy, M5Mode, M5Params, M5Policy, PolicySetup};
use tierkit_sim::engine::{run, RunSpec, Subject};
use tierkit_sim::machine::capacities;
use tierkit_sim::result::RunResult;
use tierkit_sim::workload::WorkloadSpec;

fn spec(workload: WorkloadSpec, ratio: (u64, u64)) -> RunSpec {
    RunSpec::new(workload, ratio)
}

fn setup(s: &RunSpec) -> PolicySetup {
    PolicySetup { fast_pages: capacities(2, s.workload.pages, s.ratio)[0], pages: s.workload.pages }
}

fn named(s: &RunSpec, name: &str) -> RunResult {
    run(s, Subject::Named(name.into()), &mut |_| {}).unwrap()
}

fn m5(s: &RunSpec, mode: M5Mode) -> RunResult {
    let policy = M5Policy::new(M5Params { mode, ..Default::default() }, &setup(s)).unwrap();
    run(s, Subject::Policy(Box::new(policy)), &mut |_| {}).unwrap()
}

fn show(tag: &str, r: &RunResult) {
    eprintln!(
        "{tag:8} wall {:.2}s hit {:.3} thr {:.4e} promo {} demo {}",
        r.wall_ns / 1e9,
        r.fast_hit_ratio,
        r.throughput,
        r.promotions,
        r.demotions
    );
}

#[test]
fn m5_beats_first_touch_on_skewed_workloads() {
    for (name, pages) in [("zipf", 20_000), ("gups", 20_000)] {
        let s = spec(WorkloadSpec::new(name, pages, 2_000_000, 3), (1, 16));
        let (none, oracle, lru) = (named(&s, "none"), named(&s, "oracle"), named(&s, "lru"));
        let m = m5(&s, M5Mode::HptOnly);
        let arc =
            run(&s, Subject::Policy(Box::new(ArcPolicy::new(ArcParams::default(), &setup(&s)).unwrap())), &mut |_| {})
                .unwrap();
        eprintln!("{name}");
        for (t, r) in [("none", &none), ("oracle", &oracle), ("lru", &lru), ("m5", &m), ("arc", &arc)] {
            show(t, r);
        }
        assert!(
            m.fast_hit_ratio > none.fast_hit_ratio + 0.08,
            "{name}: {} vs {}",
            m.fast_hit_ratio,
            none.fast_hit_ratio
        );
        assert!(m.throughput > 1.05 * none.throughput, "{name}: {} vs {}", m.throughput, none.throughput);
        // Device tracking moves far fewer pages than chasing every sampled access.
        assert!(m.promotions < lru.promotions, "{name}: {} vs {}", m.promotions, lru.promotions);
        assert!(m.throughput < oracle.throughput, "{name}: {} vs {}", m.throughput, oracle.throughput);
    }
}

#[test]
fn hwt_driven_promotes_fewer_sparse_pages_for_a_similar_hit_ratio() {
    let s = spec(WorkloadSpec::new("sparse-kv", 20_000, 2_000_000, 5), (1, 16));
    let (hpt, hwt, none) = (m5(&s, M5Mode::HptOnly), m5(&s, M5Mode::HwtDriven), named(&s, "none"));
    for (t, r) in [("none", &none), ("hpt", &hpt), ("hwt", &hwt)] {
        show(t, r);
    }
    assert!(hwt.promotions < hpt.promotions, "{} vs {}", hwt.promotions, hpt.promotions);
    assert!(hwt.fast_hit_ratio > hpt.fast_hit_ratio - 0.02, "{} vs {}", hwt.fast_hit_ratio, hpt.fast_hit_ratio);
}
