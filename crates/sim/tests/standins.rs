//! The built-in stand-ins against the recorded programs they are named after
//! (corpus/standins.toml): each stand-in, at its program's footprint and seen through the
//! LLC and sampling the recorder applied to the program, stays within its bounds — its
//! hot shares (top 1/32, 1/16 and 1/8 of pages) within `SHARE_FACTOR` of the program's,
//! and the policies ranked alike (Spearman's ρ ≥ `RHO_MIN` at 1:16 over the policies of
//! `RANKED`; docs/CORPUS.md reports 1:8 too, which would double the test's time). A
//! program that several stand-ins are checked against is profiled and run once.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use tierkit_sim::corpus_class::{read_standins, Standin};
use tierkit_sim::engine::{run, RunSpec, Subject};
use tierkit_sim::profile::{profile, spearman};
use tierkit_sim::workload::WorkloadSpec;

/// A stand-in's top shares may differ from its program's by this factor at most.
const SHARE_FACTOR: f64 = 1.6;

/// The least rank correlation of the policies on a stand-in and on its program.
const RHO_MIN: f64 = 0.8;

/// The ratio the rankings are compared at.
const RATIO: (u64, u64) = (1, 16);

/// Policies of every kind: never migrating, a plain cache, frequency sketches, sampled
/// counts, hint faults, DAMON regions and tierkit's own.
const RANKED: [&str; 9] = ["none", "tierkit", "lru", "freqtier", "hybridtier", "memtis", "hemem", "tpp", "damon"];

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../corpus")
}

fn standins() -> Vec<Standin> {
    read_standins(&corpus().join("standins.toml")).unwrap()
}

fn program(name: &str) -> WorkloadSpec {
    let trace = corpus().join(format!("{name}.tktrace"));
    WorkloadSpec::new("trace", 0, 0, 1).with("path", trace.display())
}

fn standin(s: &Standin) -> WorkloadSpec {
    let mut w = WorkloadSpec::new(&s.workload, s.pages, s.accesses, 1);
    w.options.extend(s.options.clone());
    w
}

/// The throughput of every policy of `RANKED` on each workload at `RATIO`, runs spread
/// over the machine's cores.
fn throughputs(workloads: &[WorkloadSpec]) -> Vec<Vec<f64>> {
    let jobs: Vec<(usize, usize)> = (0..workloads.len()).flat_map(|w| (0..RANKED.len()).map(move |p| (w, p))).collect();
    let out = Mutex::new(vec![vec![f64::NAN; RANKED.len()]; workloads.len()]);
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                while let Some(&(w, p)) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let spec = RunSpec::new(workloads[w].clone(), RATIO);
                    let t = run(&spec, Subject::Named(RANKED[p].into()), &mut |_| {}).unwrap().throughput;
                    out.lock().unwrap()[w][p] = t;
                }
            });
        }
    });
    out.into_inner().unwrap()
}

#[test]
fn every_standin_has_the_hot_shares_of_its_program() {
    let mut programs = BTreeMap::new();
    let mut off = Vec::new();
    for s in standins() {
        let p = programs.entry(s.program.clone()).or_insert_with(|| profile(&program(&s.program), u64::MAX).unwrap());
        let q = profile(&standin(&s), u64::MAX).unwrap();
        for ((fraction, a), (_, b)) in p.top_share.iter().zip(&q.top_share) {
            if !(a / SHARE_FACTOR..=a * SHARE_FACTOR).contains(b) {
                off.push(format!(
                    "{} top {}/{}: program {a:.3}, {} {b:.3}",
                    s.program, fraction.0, fraction.1, s.workload
                ));
            }
        }
    }
    assert!(off.is_empty(), "hot shares beyond {SHARE_FACTOR}x: {off:#?}");
}

#[test]
fn every_standin_ranks_the_policies_as_its_program_does() {
    let standins = standins();
    let mut names: Vec<String> = standins.iter().map(|s| s.program.clone()).collect();
    names.sort();
    names.dedup();
    let workloads: Vec<WorkloadSpec> = names.iter().map(|n| program(n)).chain(standins.iter().map(standin)).collect();
    let runs = throughputs(&workloads);
    let mut off = Vec::new();
    for (i, s) in standins.iter().enumerate() {
        let first = &runs[names.iter().position(|n| *n == s.program).expect("listed")];
        let second = &runs[names.len() + i];
        let rho = spearman(first, second).unwrap_or(f64::NAN);
        if rho.is_nan() || rho < RHO_MIN {
            off.push(format!(
                "{} vs {} at {}:{}: rho {rho:.2}; program {first:?}, stand-in {second:?}",
                s.program, s.workload, RATIO.0, RATIO.1
            ));
        }
    }
    assert!(off.is_empty(), "rankings apart (rho < {RHO_MIN}): {off:#?}");
}
