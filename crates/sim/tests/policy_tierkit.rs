//! tierkit's own policy in the simulator: on a skewed workload (zipf) and on a graph
//! workload with a small hot set (gap-pr) at 1:16 it keeps up with the best of the
//! other sampling policies (≥ 98% of their best throughput), clearly beats no
//! migration, and stays below the oracle.

use tierkit_core::policies::{PolicySetup, TierkitParams, TierkitPolicy};
use tierkit_sim::engine::{run, RunSpec, Subject};
use tierkit_sim::machine::capacities;
use tierkit_sim::result::RunResult;
use tierkit_sim::workload::WorkloadSpec;

const PAGES: u64 = 20_000;

fn spec(workload: &str) -> RunSpec {
    RunSpec::new(WorkloadSpec::new(workload, PAGES, 2_000_000, 7), (1, 16))
}

fn tierkit(spec: &RunSpec) -> RunResult {
    let setup = PolicySetup { fast_pages: capacities(2, PAGES, (1, 16))[0], pages: PAGES };
    let policy = TierkitPolicy::new(TierkitParams::default(), &setup).unwrap();
    run(spec, Subject::Policy(Box::new(policy)), &mut |_| {}).unwrap()
}

fn keeps_up_with_the_best(workload: &str) {
    let s = spec(workload);
    let named = |n: &str| run(&s, Subject::Named(n.into()), &mut |_| {}).unwrap();
    let tk = tierkit(&s);
    let (none, oracle) = (named("none"), named("oracle"));
    assert!(
        tk.throughput > 1.2 * none.throughput && tk.fast_hit_ratio > none.fast_hit_ratio + 0.3,
        "{workload}: {} ({}) vs none {} ({})",
        tk.throughput,
        tk.fast_hit_ratio,
        none.throughput,
        none.fast_hit_ratio
    );
    assert!(tk.throughput <= oracle.throughput, "{workload}: {} vs oracle {}", tk.throughput, oracle.throughput);
    for other in ["freqtier", "hybridtier", "memtis", "lru", "damon"] {
        let o = named(other);
        assert!(
            tk.throughput >= 0.98 * o.throughput,
            "{workload}: tierkit {} ({}) vs {other} {} ({})",
            tk.throughput,
            tk.fast_hit_ratio,
            o.throughput,
            o.fast_hit_ratio
        );
    }
}

#[test]
fn keeps_up_with_the_best_policy_on_zipf() {
    keeps_up_with_the_best("zipf");
}

#[test]
fn keeps_up_with_the_best_policy_on_gap_pr() {
    keeps_up_with_the_best("gap-pr");
}

#[test]
fn runs_are_deterministic() {
    let s = spec("zipf");
    assert_eq!(tierkit(&s), tierkit(&s));
}
