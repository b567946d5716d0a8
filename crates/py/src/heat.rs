//! Page hotness over time, counted from a workload's generated access stream (no
//! simulation): what `tierkit.plot.page_heatmap` draws.

use pyo3::prelude::*;
use tierkit_sim::workload;

use crate::errors::{to_py, BadOptionError};
use crate::options::SizeOptions;

/// Accesses of `workload` (sized and configured by `size`, generated with `seed`) per
/// (time bin, page bin): `time_bins` rows of `page_bins` counts, time bins splitting the
/// stream into equal numbers of accesses and page bins the footprint into equal ranges
/// (counted by [`workload::page_heat`]).
#[pyfunction]
pub fn heatmap(
    py: Python<'_>,
    workload: &str,
    size: SizeOptions,
    seed: u64,
    page_bins: usize,
    time_bins: usize,
) -> PyResult<Vec<Vec<u64>>> {
    if page_bins == 0 || time_bins == 0 {
        return Err(BadOptionError::new_err(format!(
            "heatmap bins {page_bins} pages x {time_bins} times: both must be at least 1"
        )));
    }
    let spec = size.workload(workload, seed)?;
    py.detach(|| workload::page_heat(&spec, page_bins, time_bins)).map_err(to_py)
}
