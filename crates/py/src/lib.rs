//! # tierkit-py
//!
//! The native part of the Python package `tierkit` (module `tierkit._tierkit`, built with
//! maturin): the simulator's runs, names and errors. The Python layer
//! (`python/tierkit/__init__.py`) turns keyword arguments into the option dicts these
//! functions take and results into pandas DataFrames.

use pyo3::prelude::*;

mod advise;
mod convert;
mod custom;
mod errors;
mod heat;
mod interrupt;
mod names;
mod options;
mod runs;

/// The module `tierkit._tierkit`; it needs the GIL (see [`custom::PolicyCtx`]).
#[pymodule(gil_used = true)]
fn _tierkit(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(runs::simulate, m)?)?;
    m.add_function(wrap_pyfunction!(runs::compare, m)?)?;
    m.add_function(wrap_pyfunction!(advise::advise, m)?)?;
    m.add_function(wrap_pyfunction!(heat::heatmap, m)?)?;
    m.add_function(wrap_pyfunction!(names::workloads, m)?)?;
    m.add_function(wrap_pyfunction!(names::policies, m)?)?;
    m.add_function(wrap_pyfunction!(names::machines, m)?)?;
    m.add_class::<custom::PolicyCtx>()?;
    errors::register(m)?;
    Ok(())
}
