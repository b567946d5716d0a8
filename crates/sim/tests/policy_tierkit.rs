//! tierkit's own policy in the simulator: on a skewed workload (zipf) and on a graph
//! workload with a small hot set (gap-pr) at 1:16 it keeps up with the best of the
//! other sampling policies (≥ 98% of their best throughput), clearly beats no
//! migration, and stays below the oracle; and on the whole default suite it beats not
//! migrating and stays within `DEFAULT_SUITE_SLACK` points of every other policy in every
//! cell (about 100 s of the test run). The slack is the price of the benefit ledger's slow
//! start, which real programs need (tests/real_suite.rs): it costs the generated suite up
//! to a third of a point where moving everything at once pays.

use tierkit_core::policies::{PolicySetup, TierkitParams, TierkitPolicy};
use tierkit_sim::engine::{run, RunSpec, Subject};
use tierkit_sim::machine::capacities;
use tierkit_sim::result::RunResult;
use tierkit_sim::workload::WorkloadSpec;

const PAGES: u64 = 20_000;

/// How far below another policy tierkit may fall in a default-suite cell, in points of
/// all-local throughput.
const DEFAULT_SUITE_SLACK: f64 = 0.5;

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

/// On the default suite (`tierkit compare` with no arguments) tierkit beats not migrating
/// and stays within `DEFAULT_SUITE_SLACK` of every other policy in every workload × ratio
/// cell.
#[test]
fn beats_none_and_keeps_up_with_every_policy_in_every_default_cell() {
    use tierkit_sim::compare::{compare, default_suite, Grid, DEFAULT_POLICIES, DEFAULT_RATIOS};
    let references = ["all-local", "oracle", "static-oracle", "none"];
    let grid =
        Grid::new(default_suite(1), DEFAULT_RATIOS.to_vec(), DEFAULT_POLICIES.iter().map(|p| p.to_string()).collect());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let rows = compare(&grid, threads, &|_, _, _| {}).unwrap();
    let mut losses = Vec::new();
    for cell in rows.chunk_by(|a, b| a.result.workload == b.result.workload && a.result.ratio == b.result.ratio) {
        let tk = cell.iter().find(|r| r.result.policy == "tierkit").unwrap();
        let none = cell.iter().find(|r| r.result.policy == "none").unwrap();
        if tk.result.throughput <= none.result.throughput {
            losses.push(format!(
                "{} {:?}: tierkit {:.2}% <= none {:.2}%",
                tk.result.workload, tk.result.ratio, tk.pct_of_all_local, none.pct_of_all_local
            ));
        }
        for other in
            cell.iter().filter(|r| r.result.policy != "tierkit" && !references.contains(&r.result.policy.as_str()))
        {
            if tk.pct_of_all_local < other.pct_of_all_local - DEFAULT_SUITE_SLACK {
                losses.push(format!(
                    "{} {:?}: tierkit {:.2}% < {} {:.2}%",
                    tk.result.workload,
                    tk.result.ratio,
                    tk.pct_of_all_local,
                    other.result.policy,
                    other.pct_of_all_local
                ));
            }
        }
    }
    assert_eq!(rows.len() / DEFAULT_POLICIES.len(), 24, "8 workloads x 3 ratios");
    assert!(losses.is_empty(), "{losses:#?}");
}
