//! `simulate` and `compare`: the grids `tierkit sim` and `tierkit compare` build from
//! their flags, built from keyword arguments and run with the GIL released.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use tierkit_sim::compare::{
    compare as run_grid, default_suite, paper_suite, Grid, Row, DEFAULT_POLICIES, DEFAULT_RATIOS, PAPER_RATIOS,
};
use tierkit_sim::SimError;

use crate::convert::{summary, timeline};
use crate::errors::{to_py, BadOptionError};
use crate::options::{ratio, MachineOptions, SizeOptions};

/// The grid settings of `compare` (`--workload`, `--suite`, `--quick`, `--policies`,
/// `--ratios`, `--jobs`).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub struct GridOptions {
    /// Workload names; empty for a suite.
    pub workloads: Vec<String>,
    /// `default` or `paper`; the default suite when absent and no workloads are named.
    pub suite: Option<String>,
    /// Shrink the paper suite 4x.
    pub quick: bool,
    /// Policies and references; empty for all-local and the default policies.
    pub policies: Vec<String>,
    /// Fast:slow ratios as `"1:16"`; empty for the suite's ratios.
    pub ratios: Vec<String>,
    /// Parallel runs; one per core when absent.
    pub jobs: Option<usize>,
}

fn grid(machine: &MachineOptions, workloads: Vec<tierkit_sim::workload::WorkloadSpec>) -> PyResult<Grid> {
    Ok(Grid {
        machine: machine.config()?,
        workloads,
        ratios: Vec::new(),
        policies: Vec::new(),
        seed: machine.seed,
        scale: machine.scale,
        prefault: machine.prefault,
        cache_mode: machine.cache_mode,
        measure_acr: machine.access_count_ratio,
    })
}

fn execute(py: Python<'_>, grid: &Grid, threads: usize) -> PyResult<Vec<Row>> {
    py.detach(|| run_grid(grid, threads, &|_, _, _| {})).map_err(to_py)
}

/// One policy on one workload at one ratio, as `tierkit sim`: the run's summary (with
/// its fractions of all-local and the oracle) under its keys and its timeline's columns
/// under `"timeline"`.
#[pyfunction]
pub fn simulate<'py>(
    py: Python<'py>,
    workload: &str,
    policy: &str,
    ratio_text: &str,
    size: SizeOptions,
    machine: MachineOptions,
) -> PyResult<Bound<'py, PyDict>> {
    let spec = size.workload(workload, machine.seed)?;
    let mut g = grid(&machine, vec![spec])?;
    g.ratios = vec![ratio(ratio_text)?];
    g.policies = vec![policy.to_string()];
    let rows = execute(py, &g, 2)?;
    let row = rows.first().expect("a one-cell grid has one row");
    let d = summary(py, row)?;
    d.set_item("timeline", timeline(py, &row.result.timeline)?)?;
    Ok(d)
}

/// A grid of runs as `tierkit compare`: one summary dict per (workload, ratio, policy),
/// in that order.
#[pyfunction]
pub fn compare<'py>(
    py: Python<'py>,
    grid_options: GridOptions,
    size: SizeOptions,
    machine: MachineOptions,
) -> PyResult<Bound<'py, PyList>> {
    let o = grid_options;
    let seed = machine.seed;
    let paper = match o.suite.as_deref() {
        None | Some("default") => false,
        Some("paper") => true,
        Some(other) => return Err(to_py(SimError::unknown("suite", other, ["default", "paper"]))),
    };
    if o.suite.is_some() && !o.workloads.is_empty() {
        return Err(BadOptionError::new_err("workloads and suite: give one of them, not both"));
    }
    let workloads = if o.workloads.is_empty() {
        let suite = if paper { paper_suite(seed, o.quick) } else { default_suite(seed) };
        suite.into_iter().map(|w| size.apply(w)).collect::<PyResult<Vec<_>>>()?
    } else {
        o.workloads.iter().map(|n| size.workload(n, seed)).collect::<PyResult<Vec<_>>>()?
    };
    let mut g = grid(&machine, workloads)?;
    g.policies = if o.policies.is_empty() {
        std::iter::once("all-local").chain(DEFAULT_POLICIES.iter().copied()).map(String::from).collect()
    } else {
        o.policies
    };
    g.ratios = match (o.ratios.is_empty(), paper) {
        (false, _) => o.ratios.iter().map(|r| ratio(r)).collect::<PyResult<Vec<_>>>()?,
        (true, true) => PAPER_RATIOS.to_vec(),
        (true, false) => DEFAULT_RATIOS.to_vec(),
    };
    let threads = o.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let rows = execute(py, &g, threads)?;
    let list = PyList::empty(py);
    for row in &rows {
        list.append(summary(py, row)?)?;
    }
    Ok(list)
}
