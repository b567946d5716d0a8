//! A trace without a clock of its own replayed over the program time it covers.
//!
//! DAMON's and perf's recordings sample which pages were accessed; their records carry no
//! count of the misses each stands for, so a replay at the default scale puts the
//! program's time wherever that scale does (a 30 s DAMON recording replays in about 2 s),
//! and the policies' ticks, scans and moves per second run against that time instead of
//! the program's. Given the time the recording covered, the scale (misses a record) is
//! chosen so that the all-DRAM run spans it: a run's span is its misses times the time
//! each takes (compute and DRAM latency, both per miss), so one all-DRAM run at the
//! default scale measures that time.

use std::time::Duration;

use crate::compare::Grid;
use crate::engine::{run, RunSpec, Subject, DEFAULT_SCALE};
use crate::SimError;

/// Sets `grid`'s scale so that the all-DRAM run of its first workload at its first ratio
/// spans `span` of simulated time, for the trace at `trace` without a clock; returns
/// whether it did (`false`, and `grid` unchanged, when the trace has a clock: it is
/// replayed on it).
pub fn fit_scale(grid: &mut Grid, trace: &str, span: Duration) -> Result<bool, SimError> {
    if crate::trace::open(trace, None)?.clock().is_some() {
        return Ok(false);
    }
    let probe = RunSpec {
        scale: DEFAULT_SCALE,
        follow_clock: false,
        measure_hot: false,
        ..grid.run_spec(&grid.workloads[0], grid.ratios[0])
    };
    let wall_ns = run(&probe, Subject::Named("all-local".into()), &mut |_| {})?.wall_ns;
    if wall_ns <= 0.0 {
        return Err(SimError::bad_option(
            "advise",
            "span",
            format!("{} s", span.as_secs_f64()),
            "a trace whose all-DRAM run takes time",
        ));
    }
    let misses = DEFAULT_SCALE as f64 * span.as_nanos() as f64 / wall_ns;
    grid.scale = (misses.round() as u64).max(1);
    grid.follow_clock = false;
    Ok(true)
}

/// What the time base adds when the scale was fitted to `span`.
pub fn note(scale: u64, span: Duration) -> String {
    format!(
        "; {scale} misses a record so that all-DRAM spans the program's {:.1} s (the trace has no clock)",
        span.as_secs_f64()
    )
}
