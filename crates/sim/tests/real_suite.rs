//! The real suite at CI size: every trace in `corpus/` (recorded programs, replayed
//! whole on their own clock) at 1:32, 1:16 and 1:8, tierkit against not migrating. tierkit's
//! policy does no harm there: its throughput stays within `HARM_POINTS` of `none`'s, as a
//! percentage of all-local. Every policy in every cell is `make results`' work
//! (docs/RESULTS.md). Prefixes would not do: the first second of a trace is the policy's
//! start-up, which a whole run amortizes as the program's would.

use std::path::PathBuf;

use tierkit_sim::engine::{run, RunSpec, Subject};
use tierkit_sim::workload::WorkloadSpec;

/// The do-no-harm bar, in points of all-local throughput.
const HARM_POINTS: f64 = 0.5;

fn corpus() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../corpus");
    let mut traces: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "tktrace"))
        .collect();
    traces.sort();
    assert!(traces.len() >= 10, "corpus/ holds {} traces, expected the 10 or more recorded programs", traces.len());
    traces
}

fn throughput(path: &std::path::Path, ratio: (u64, u64), subject: &str) -> f64 {
    let w = WorkloadSpec::new("trace", 0, 0, 1).with("path", path.display());
    run(&RunSpec::new(w, ratio), Subject::Named(subject.into()), &mut |_| {}).unwrap().throughput
}

#[test]
fn tierkit_does_no_harm_on_any_recorded_program() {
    let mut harm = Vec::new();
    let mut report = Vec::new();
    for path in corpus() {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let local = throughput(&path, (1, 16), "all-local");
        for ratio in [(1, 32), (1, 16), (1, 8)] {
            let none = 100.0 * throughput(&path, ratio, "none") / local;
            let tierkit = 100.0 * throughput(&path, ratio, "tierkit") / local;
            let line = format!("{name} {}:{}: tierkit {tierkit:.2} vs none {none:.2}", ratio.0, ratio.1);
            if tierkit < none - HARM_POINTS {
                harm.push(line.clone());
            }
            report.push(line);
        }
    }
    assert!(harm.is_empty(), "tierkit does harm in {harm:#?}\nall cells: {report:#?}");
}
