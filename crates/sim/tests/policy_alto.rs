//! SOAR/ALTO (OSDI'25) in the simulator, the direction of its claim: where pointer
//! chasing and streaming share the memory, ranking pages by the stall their misses cause
//! (amortized offcore latency) beats ranking them by access counts, and where every
//! miss has the same memory-level parallelism it costs next to nothing.
//!
//! The frequency rankings are ALTO's own mechanics with `weigh_stalls=false` (the same
//! sampling, hot set, gate and regulation, ranked by sample counts) and HeMem (exact
//! per-page counts, hot at 4 samples).

use tierkit_core::policies::{AltoParams, AltoPolicy, HememParams, HememPolicy, PolicySetup};
use tierkit_core::Policy;
use tierkit_sim::engine::{run, RunSpec, Subject};
use tierkit_sim::machine::capacities;
use tierkit_sim::workload::WorkloadSpec;

/// On the mixed workload ALTO must beat each frequency ranking by this share of its
/// throughput, at least.
const WIN: f64 = 0.02;

/// On a workload of one MLP class ALTO may fall this far below the frequency rankings.
const MARGIN: f64 = 0.02;

fn spec(name: &str, ratio: (u64, u64)) -> RunSpec {
    // 6M accesses of 1000 misses: ~10-20 s simulated, ten of ALTO's 1 s cooling periods.
    RunSpec::new(WorkloadSpec::new(name, 20_000, 6_000_000, 7), ratio)
}

fn throughput(spec: &RunSpec, build: &dyn Fn(&PolicySetup) -> Box<dyn Policy>) -> f64 {
    let pages = spec.workload.pages;
    let setup = PolicySetup { fast_pages: capacities(2, pages, spec.ratio)[0], pages };
    run(spec, Subject::Policy(build(&setup)), &mut |_| {}).unwrap().throughput
}

/// Throughput in % of all-local of ALTO, count-ranked ALTO and HeMem.
fn contenders(spec: &RunSpec) -> [(&'static str, f64); 3] {
    let local = run(spec, Subject::Named("all-local".into()), &mut |_| {}).unwrap().throughput;
    let alto = |weigh_stalls| {
        move |s: &PolicySetup| -> Box<dyn Policy> {
            Box::new(AltoPolicy::new(AltoParams { weigh_stalls, ..Default::default() }, s).unwrap())
        }
    };
    let hemem = |s: &PolicySetup| -> Box<dyn Policy> { Box::new(HememPolicy::new(HememParams::default(), s).unwrap()) };
    let pct = |t: f64| 100.0 * t / local;
    [
        ("alto", pct(throughput(spec, &alto(true)))),
        ("alto:weigh_stalls=false", pct(throughput(spec, &alto(false)))),
        ("hemem", pct(throughput(spec, &hemem))),
    ]
}

#[test]
fn ranking_by_stall_beats_ranking_by_counts_on_chasing_beside_streaming() {
    let mut failures = Vec::new();
    for ratio in [(1, 16), (1, 8)] {
        let results = contenders(&spec("chase-stream", ratio));
        println!("chase-stream {}:{}: {results:?} (% of all-local)", ratio.0, ratio.1);
        let alto = results[0].1;
        for &(name, pct) in &results[1..] {
            if alto < (1.0 + WIN) * pct {
                failures.push(format!("{}:{}: alto {alto:.2}% vs {name} {pct:.2}%", ratio.0, ratio.1));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn with_one_mlp_class_stall_ranking_costs_at_most_the_margin() {
    let mut failures = Vec::new();
    for name in ["zipf", "gups"] {
        let results = contenders(&spec(name, (1, 16)));
        println!("{name} 1:16: {results:?} (% of all-local)");
        let alto = results[0].1;
        for &(other, pct) in &results[1..] {
            if alto < (1.0 - MARGIN) * pct {
                failures.push(format!("{name}: alto {alto:.2}% vs {other} {pct:.2}%"));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
