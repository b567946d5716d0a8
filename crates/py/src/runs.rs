//! `simulate` and `compare`: the grids `tierkit sim` and `tierkit compare` build from
//! their flags, built from keyword arguments and run with the GIL released.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use tierkit_sim::compare::{
    compare_until, default_suite, paper_suite, Grid, Row, DEFAULT_POLICIES, DEFAULT_RATIOS, PAPER_RATIOS,
};
use tierkit_sim::engine::{run_until, Subject};
use tierkit_sim::workload::WorkloadSpec;
use tierkit_sim::SimError;

use crate::convert::{summary, timeline};
use crate::custom::PyPolicy;
use crate::errors::{to_py, BadOptionError};
use crate::interrupt::interruptible;
use crate::options::{ratio, MachineOptions, SizeOptions};

/// A policy argument: a built-in name, or an object with the policy hooks.
#[derive(FromPyObject)]
pub enum PolicyArg {
    /// A policy or reference name.
    Name(String),
    /// A policy written in Python (see [`crate::custom`]).
    Custom(Py<PyAny>),
}

/// The references every row is measured against.
const REFERENCES: [&str; 2] = ["all-local", "oracle"];

/// The grid settings of `compare` (`--workload`, `--suite`, `--quick`, `--policies`,
/// `--ratios`, `--jobs`); policies may also be Python policy objects.
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
    pub policies: Vec<PolicyArg>,
    /// Fast:slow ratios as `"1:16"`; empty for the suite's ratios.
    pub ratios: Vec<String>,
    /// Parallel runs; one per core when absent.
    pub jobs: Option<usize>,
}

pub(crate) fn grid(machine: &MachineOptions, workloads: Vec<tierkit_sim::workload::WorkloadSpec>) -> PyResult<Grid> {
    Ok(Grid {
        machine: machine.config()?,
        workloads,
        ratios: Vec::new(),
        policies: Vec::new(),
        seed: machine.seed,
        scale: machine.scale.unwrap_or(tierkit_sim::engine::DEFAULT_SCALE),
        follow_clock: machine.scale.is_none(),
        prefault: machine.prefault,
        cache_mode: machine.cache_mode,
        measure_acr: machine.access_count_ratio,
        measure_hot: false,
    })
}

pub(crate) fn execute(py: Python<'_>, grid: &Grid, threads: usize) -> PyResult<Vec<Row>> {
    interruptible(py, |stop| compare_until(grid, threads, &|_, _, _| {}, stop))
}

/// Runs a fresh deep copy of the Python policy `object` on `workload` at `ratio` of
/// `grid`, measured against the references `local` and `oracle` (rows of the same
/// workload and ratio). The copy keeps each run's state its own.
fn run_custom(
    py: Python<'_>,
    object: &Py<PyAny>,
    grid: &Grid,
    workload: &WorkloadSpec,
    ratio: (u64, u64),
    local: &Row,
    oracle: &Row,
) -> PyResult<Row> {
    let copy = py.import("copy")?.call_method1("deepcopy", (object,))?;
    let policy = PyPolicy::new(&copy)?;
    let errors = policy.errors();
    let spec = grid.run_spec(workload, ratio);
    let result = interruptible(py, |stop| run_until(&spec, Subject::Policy(Box::new(policy)), &mut |_| {}, stop))?;
    if let Some(e) = errors.lock().ok().and_then(|mut e| e.take()) {
        return Err(e);
    }
    Ok(Row {
        pct_of_all_local: 100.0 * result.throughput / local.result.throughput,
        pct_of_oracle: 100.0 * result.throughput / oracle.result.throughput,
        result,
    })
}

/// Runs `policies` (names and Python objects) on every workload and ratio of `g`, in
/// grid order: the named ones (and the references) in parallel on `threads` threads,
/// then each Python policy in turn.
fn run_all(py: Python<'_>, mut g: Grid, policies: &[PolicyArg], threads: usize) -> PyResult<Vec<Row>> {
    let mut names: Vec<String> = policies
        .iter()
        .filter_map(|p| match p {
            PolicyArg::Name(n) => Some(n.clone()),
            PolicyArg::Custom(_) => None,
        })
        .collect();
    let has_custom = names.len() < policies.len();
    if has_custom {
        for r in REFERENCES {
            if !names.iter().any(|n| n == r) {
                names.push(r.to_string());
            }
        }
    }
    g.policies = names;
    let rows = execute(py, &g, threads)?;
    if !has_custom {
        return Ok(rows);
    }
    let per_cell = g.policies.len();
    let column = |name: &str| g.policies.iter().position(|n| n == name).expect("listed above");
    let mut out = Vec::with_capacity(g.workloads.len() * g.ratios.len() * policies.len());
    for (w, workload) in g.workloads.iter().enumerate() {
        for (r, &ratio) in g.ratios.iter().enumerate() {
            let cell = &rows[(w * g.ratios.len() + r) * per_cell..][..per_cell];
            for p in policies {
                out.push(match p {
                    PolicyArg::Name(n) => cell[column(n)].clone(),
                    PolicyArg::Custom(object) => run_custom(
                        py,
                        object,
                        &g,
                        workload,
                        ratio,
                        &cell[column(REFERENCES[0])],
                        &cell[column(REFERENCES[1])],
                    )?,
                });
            }
        }
    }
    Ok(out)
}

/// One policy on one workload at one ratio, as `tierkit sim`: the run's summary (with
/// its fractions of all-local and the oracle) under its keys and its timeline's columns
/// under `"timeline"`. `policy` is a name or a Python policy object.
#[pyfunction]
pub fn simulate<'py>(
    py: Python<'py>,
    workload: &str,
    policy: PolicyArg,
    ratio_text: &str,
    size: SizeOptions,
    machine: MachineOptions,
) -> PyResult<Bound<'py, PyDict>> {
    let spec = size.workload(workload, machine.seed)?;
    let mut g = grid(&machine, vec![spec])?;
    g.ratios = vec![ratio(ratio_text)?];
    let rows = run_all(py, g, &[policy], 2)?;
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
    let policies = if o.policies.is_empty() {
        std::iter::once("all-local")
            .chain(DEFAULT_POLICIES.iter().copied())
            .map(|n| PolicyArg::Name(n.into()))
            .collect()
    } else {
        o.policies
    };
    g.ratios = match (o.ratios.is_empty(), paper) {
        (false, _) => o.ratios.iter().map(|r| ratio(r)).collect::<PyResult<Vec<_>>>()?,
        (true, true) => PAPER_RATIOS.to_vec(),
        (true, false) => DEFAULT_RATIOS.to_vec(),
    };
    let threads = o.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let rows = run_all(py, g, &policies, threads)?;
    let list = PyList::empty(py);
    for row in &rows {
        list.append(summary(py, row)?)?;
    }
    Ok(list)
}
