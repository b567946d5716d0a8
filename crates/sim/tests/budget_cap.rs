//! `budget::cap` on its own: a process-wide setting, so this file holds one test (its
//! own process) and no other test sees the cap. The inputs are the `workload_opt` fuzz
//! target's, which runs under the same cap.

use tierkit_sim::budget;
use tierkit_sim::workload::{self, WorkloadSpec};

/// Under a cap of 64 MiB, sizes from options that need more are refused by name before
/// anything is allocated for them, and the same options at a small size still build:
/// a graph of 2^20 vertices and degree 22 on a 64-page footprint (it ran past the
/// target's time limit) and an LLC of 2,000 MiB (its model asked for one allocation of
/// 500 MiB).
#[test]
fn a_capped_budget_refuses_sizes_larger_than_the_cap_by_name() {
    budget::cap(64 << 20);
    let spec = |opts: &[&str]| WorkloadSpec::new("gap-bc", 64, 4096, 1).resized(None, None, None, opts).unwrap();
    let e = workload::build(&spec(&["degree=22", "scale=20"])).err().expect("refused").to_string();
    assert!(e.contains("scale = 20, degree = 22") && e.contains("generating the graph needs ~"), "{e}");
    assert!(e.ends_with(" available"), "{e}");
    assert!(workload::build(&spec(&["degree=22", "scale=10"])).is_ok());

    let e = workload::build(&spec(&["llc_mib=2000"])).err().expect("refused").to_string();
    assert!(e.contains("llc = 2000 MiB (16 ways)") && e.contains("the LLC model needs ~"), "{e}");
    assert!(workload::build(&spec(&["llc_mib=8"])).is_ok());
}
