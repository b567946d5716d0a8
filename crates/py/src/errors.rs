//! The Python exceptions: one base class, [`TierkitError`], and a subclass per kind of
//! [`SimError`], each carrying the Rust error's message.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::{create_exception, PyErr};
use tierkit_sim::SimError;

create_exception!(_tierkit, TierkitError, PyValueError, "Base class of every error tierkit raises.");
create_exception!(
    _tierkit,
    UnknownNameError,
    TierkitError,
    "A workload, policy, machine preset or suite that does not exist; the message lists the valid names."
);
create_exception!(
    _tierkit,
    BadOptionError,
    TierkitError,
    "An argument, workload option or machine parameter that is malformed or out of range, or a size (a \
     trace header's too) that needs more memory than the machine has available."
);
create_exception!(
    _tierkit,
    InputFileError,
    TierkitError,
    "A machine or trace file that cannot be read or parsed; the message names the file and where."
);

create_exception!(
    _tierkit,
    PolicyError,
    TierkitError,
    "A policy written in Python broke its contract or raised; the original exception is the __cause__."
);

/// `e` as the matching Python exception, with the message the CLI prints.
pub fn to_py(e: SimError) -> PyErr {
    let message = e.to_string();
    match e {
        SimError::UnknownName { .. } => UnknownNameError::new_err(message),
        SimError::BadOption { .. } | SimError::Param(_) | SimError::TooLarge { .. } => BadOptionError::new_err(message),
        SimError::File { .. } | SimError::Io { .. } => InputFileError::new_err(message),
    }
}

/// Adds the exception classes to `m`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("TierkitError", py.get_type::<TierkitError>())?;
    m.add("UnknownNameError", py.get_type::<UnknownNameError>())?;
    m.add("BadOptionError", py.get_type::<BadOptionError>())?;
    m.add("InputFileError", py.get_type::<InputFileError>())?;
    m.add("PolicyError", py.get_type::<PolicyError>())?;
    Ok(())
}
