//! A comparison records each workload's stream once and replays it to all its runs: every
//! row must equal the run made alone, which builds (decodes, generates) its own stream.

use std::path::PathBuf;

use tierkit_sim::compare::{compare, Grid};
use tierkit_sim::engine::{run, Subject};
use tierkit_sim::workload::WorkloadSpec;

#[test]
fn every_row_of_a_shared_compare_is_the_run_made_alone() {
    let redis = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../corpus/redis.tktrace");
    let workloads = vec![
        // A recorded program with its own clock and store flags (a prefix, for time).
        WorkloadSpec::new("trace", 0, 0, 1).with("path", redis.display()).with("limit", 60_000),
        // MLP classes per access, and words within pages.
        WorkloadSpec::new("chase-stream", 4000, 60_000, 3),
        WorkloadSpec::new("sparse-kv", 4000, 60_000, 5),
    ];
    let policies = ["all-local", "oracle", "static-oracle", "none", "tierkit", "lru", "m5-hwt", "tpp", "alto"];
    let grid = Grid::new(workloads, vec![(1, 8), (1, 16)], policies.map(String::from).to_vec());
    let rows = compare(&grid, 2, &|_, _, _| {}).unwrap();
    assert_eq!(rows.len(), 3 * 2 * policies.len());
    let mut moved = 0;
    for row in &rows {
        let r = &row.result;
        let w = grid.workloads.iter().find(|w| w.name == r.workload).unwrap();
        let ratio = if r.policy == "all-local" { grid.ratios[0] } else { r.ratio };
        let alone = run(&grid.run_spec(w, ratio), Subject::Named(r.policy.clone()), &mut |_| {}).unwrap();
        let alone =
            if r.policy == "all-local" { tierkit_sim::result::RunResult { ratio: r.ratio, ..alone } } else { alone };
        assert_eq!(r, &alone, "{} {:?} {}", r.workload, r.ratio, r.policy);
        moved += r.promotions;
    }
    assert!(moved > 0, "the policies moved pages, so placement depended on the stream");
}
