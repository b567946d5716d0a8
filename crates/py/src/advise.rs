//! `advise`: `tierkit advise --trace` for Python, the same runs and the same answer.

use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use tierkit_sim::advise::{advise as answer, check_target, subjects, RATIOS};
use tierkit_sim::corpus_class::class_of;
use tierkit_sim::span_fit;
use tierkit_sim::workload::WorkloadSpec;
use tierkit_sim::SimError;

use crate::convert::summary;
use crate::errors::to_py;
use crate::options::{ratio, MachineOptions, SizeOptions, DEFAULT_ACCESSES, DEFAULT_PAGES};
use crate::runs::{execute, grid};

/// The answer for the program whose trace is at `trace`, at `target_pct` percent of
/// slowdown: `{"advice": JSON text of the answer (as `tierkit advise --json`), "runs":
/// one summary dict per run}`. Empty `policies` and `ratios` take `advise`'s defaults.
/// With `corpus`, the answer places the trace among that directory's recorded programs.
/// With `span_s` (seconds), a trace without a clock is replayed over that much program
/// time ([`span_fit`]).
#[pyfunction]
#[pyo3(signature = (trace, target_pct, policies, ratios, size, machine, jobs=None, corpus=None, span_s=None))]
#[allow(clippy::too_many_arguments)]
pub fn advise<'py>(
    py: Python<'py>,
    trace: &str,
    target_pct: f64,
    policies: Vec<String>,
    ratios: Vec<String>,
    size: SizeOptions,
    machine: MachineOptions,
    jobs: Option<usize>,
    corpus: Option<std::path::PathBuf>,
    span_s: Option<f64>,
) -> PyResult<Bound<'py, PyDict>> {
    check_target(target_pct).map_err(to_py)?;
    let spec =
        size.apply(WorkloadSpec::new("trace", DEFAULT_PAGES, DEFAULT_ACCESSES, machine.seed).with("path", trace))?;
    let mut g = grid(&machine, vec![spec.clone()])?;
    // A plain cache or M5's access-count ratio is no part of the answer.
    (g.cache_mode, g.measure_acr) = (false, false);
    g.ratios =
        if ratios.is_empty() { RATIOS.to_vec() } else { ratios.iter().map(|r| ratio(r)).collect::<PyResult<_>>()? };
    g.policies = subjects(&policies);
    let threads = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let span = span_s
        .map(|s| {
            Duration::try_from_secs_f64(s)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| to_py(SimError::bad_option("advise", "span", s, "seconds of program time above 0")))
        })
        .transpose()?;
    let fitted = match span {
        Some(span) => py.detach(|| span_fit::fit_scale(&mut g, trace, span)).map_err(to_py)?.then_some(span),
        None => None,
    };
    let rows = execute(py, &g, threads)?;
    let runs = PyList::empty(py);
    for row in &rows {
        runs.append(summary(py, row)?)?;
    }
    // After the runs, which have named any bad policy or trace.
    let class = corpus.map(|dir| py.detach(|| class_of(&spec, &dir, threads))).transpose().map_err(to_py)?;
    let mut advice = answer(trace, target_pct, rows, class).map_err(to_py)?;
    if let Some(span) = fitted {
        advice.time_base += &span_fit::note(g.scale, span);
    }
    let out = PyDict::new(py);
    out.set_item("advice", serde_json::to_string(&advice).expect("the answer serializes"))?;
    out.set_item("runs", runs)?;
    Ok(out)
}
