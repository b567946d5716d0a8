//! Colloid (SOSP'24, §3–5) in the simulator: on GUPS with the fast tier under 2x memory
//! interconnect contention, X+colloid beats X for HeMem, MEMTIS and TPP (Colloid Fig. 5),
//! and without contention it stays within 2% of X.

use tierkit_core::policies::{find, with_colloid, PolicySetup};
use tierkit_core::Policy;
use tierkit_sim::engine::{run, RunSpec, Subject};
use tierkit_sim::machine::capacities;
use tierkit_sim::model::MachineConfig;
use tierkit_sim::result::RunResult;
use tierkit_sim::workload::WorkloadSpec;

fn spec(contended: bool) -> RunSpec {
    let mut machine = MachineConfig::preset("cxl").unwrap();
    if contended {
        machine.tiers[0].background_gbps = 0.65 * machine.tiers[0].bandwidth_gbps;
        // Colloid's 2x
    }
    RunSpec {
        machine,
        ratio: (1, 2),
        workload: WorkloadSpec::new("gups", 20_000, 5_000_000, 7),
        seed: 1,
        scale: 1000,
        follow_clock: true,
        prefault: true,
        cache_mode: false,
        measure_acr: false,
        measure_hot: false,
    }
}

fn base(name: &str, spec: &RunSpec) -> Box<dyn Policy> {
    let pages = spec.workload.pages;
    let setup = PolicySetup { fast_pages: capacities(2, pages, spec.ratio)[0], pages };
    (find(name).unwrap().build)(&setup, &[]).unwrap()
}

fn go(spec: &RunSpec, policy: Box<dyn Policy>) -> RunResult {
    run(spec, Subject::Policy(policy), &mut |_| {}).unwrap()
}

fn pair(name: &str, contended: bool) -> (RunResult, RunResult) {
    let s = spec(contended);
    let plain = go(&s, base(name, &s));
    let colloid = go(&s, with_colloid(base(name, &s)).unwrap());
    println!(
        "{name} contended={contended}: plain {:.4e} hit {:.3} | +colloid {:.4e} hit {:.3} ({} promotions, {} demotions) x{:.3}",
        plain.throughput,
        plain.fast_hit_ratio,
        colloid.throughput,
        colloid.fast_hit_ratio,
        colloid.promotions,
        colloid.demotions,
        colloid.throughput / plain.throughput
    );
    (plain, colloid)
}

#[test]
fn colloid_beats_its_base_under_contention() {
    for name in ["hemem", "memtis", "tpp"] {
        let (plain, colloid) = pair(name, true);
        assert_eq!(colloid.policy, format!("{name}+colloid"));
        assert!(colloid.throughput > 1.05 * plain.throughput, "{name}: {} vs {}", colloid.throughput, plain.throughput);
        assert!(colloid.fast_hit_ratio < plain.fast_hit_ratio, "{name}: hot pages leave the loaded fast tier");
    }
}

#[test]
fn colloid_matches_its_base_without_contention() {
    let s = spec(false);
    let none = run(&s, Subject::Named("none".into()), &mut |_| {}).unwrap();
    let oracle = run(&s, Subject::Named("oracle".into()), &mut |_| {}).unwrap();
    println!(
        "none {:.4e} hit {:.3} | oracle {:.4e} hit {:.3}",
        none.throughput, none.fast_hit_ratio, oracle.throughput, oracle.fast_hit_ratio
    );
    for name in ["hemem", "memtis", "tpp"] {
        let (plain, colloid) = pair(name, false);
        assert!(colloid.throughput > 0.98 * plain.throughput, "{name}: {} vs {}", colloid.throughput, plain.throughput);
        // The fast tier is the faster one throughout: the base's hot set still goes there.
        assert!(colloid.throughput > 1.15 * none.throughput && colloid.throughput < oracle.throughput);
    }
}
