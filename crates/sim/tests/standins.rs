//! The built-in stand-ins against the recorded programs they are named after
//! (corpus/standins.toml): each stand-in, at its program's footprint and seen through the
//! LLC and sampling the recorder applied to the program, stays within its bounds — its
//! hot shares (top 1/32, 1/16 and 1/8 of pages) within `SHARE_FACTOR` of the program's,
//! and the policies ranked alike (Spearman's ρ ≥ `RHO_MIN` at 1:16 over the policies of
//! `RANKED`; docs/CORPUS.md reports 1:8 too, which would double the test's time).

use std::path::PathBuf;

use serde::Deserialize;
use tierkit_sim::compare::Grid;
use tierkit_sim::model::MachineConfig;
use tierkit_sim::profile::{profile, rankings};
use tierkit_sim::workload::WorkloadSpec;

/// A stand-in's top shares may differ from its program's by this factor at most.
const SHARE_FACTOR: f64 = 1.6;

/// The least rank correlation of the policies on a stand-in and on its program.
const RHO_MIN: f64 = 0.8;

/// Policies of every kind: never migrating, a plain cache, frequency sketches, sampled
/// counts, hint faults, DAMON regions and tierkit's own.
const RANKED: [&str; 9] = ["none", "tierkit", "lru", "freqtier", "hybridtier", "memtis", "hemem", "tpp", "damon"];

#[derive(Deserialize)]
struct File {
    standin: Vec<Standin>,
}

#[derive(Deserialize)]
struct Standin {
    program: String,
    workload: String,
    pages: u64,
    accesses: u64,
    options: std::collections::BTreeMap<String, String>,
}

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../corpus")
}

fn standins() -> Vec<Standin> {
    let path = corpus().join("standins.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    toml::from_str::<File>(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display())).standin
}

fn pair(s: &Standin) -> [WorkloadSpec; 2] {
    let trace = corpus().join(format!("{}.tktrace", s.program));
    let program = WorkloadSpec::new("trace", 0, 0, 1).with("path", trace.display());
    let mut standin = WorkloadSpec::new(&s.workload, s.pages, s.accesses, 1);
    standin.options.extend(s.options.clone());
    [program, standin]
}

#[test]
fn every_standin_has_the_hot_shares_of_its_program() {
    let mut off = Vec::new();
    for s in standins() {
        let [program, standin] = pair(&s);
        let (p, q) = (profile(&program, u64::MAX).unwrap(), profile(&standin, u64::MAX).unwrap());
        for ((fraction, a), (_, b)) in p.top_share.iter().zip(&q.top_share) {
            if !(a / SHARE_FACTOR..=a * SHARE_FACTOR).contains(b) {
                off.push(format!("{} top {}/{}: program {a:.3}, {} {b:.3}", s.program, fraction.0, fraction.1, s.workload));
            }
        }
    }
    assert!(off.is_empty(), "hot shares beyond {SHARE_FACTOR}x: {off:#?}");
}

#[test]
fn every_standin_ranks_the_policies_as_its_program_does() {
    let base = Grid {
        machine: MachineConfig::preset("cxl").unwrap(),
        workloads: Vec::new(),
        ratios: Vec::new(),
        policies: Vec::new(),
        seed: 1,
        scale: tierkit_sim::engine::DEFAULT_SCALE,
        follow_clock: true,
        prefault: true,
        cache_mode: false,
        measure_acr: false,
    };
    let policies: Vec<String> = RANKED.map(String::from).to_vec();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut off = Vec::new();
    for s in standins() {
        for r in rankings(&base, pair(&s), &[(1, 16)], &policies, threads).unwrap() {
            let rho = r.rho.unwrap_or(f64::NAN);
            if !(rho >= RHO_MIN) {
                off.push(format!(
                    "{} vs {} at {}:{}: rho {rho:.2}; program {:?}, stand-in {:?}",
                    s.program, s.workload, r.ratio.0, r.ratio.1, r.first, r.second
                ));
            }
        }
    }
    assert!(off.is_empty(), "rankings apart (rho < {RHO_MIN}): {off:#?}");
}
