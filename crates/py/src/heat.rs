//! Page hotness over time, counted from a workload's generated access stream (no
//! simulation): what `tierkit.plot.page_heatmap` draws.

use pyo3::prelude::*;
use tierkit_sim::workload;

use crate::errors::{to_py, BadOptionError};
use crate::options::SizeOptions;

/// Accesses of `workload` (sized and configured by `size`, generated with `seed`) per
/// (time bin, page bin): `time_bins` rows of `page_bins` counts, time bins splitting the
/// stream into equal numbers of accesses and page bins the footprint into equal ranges.
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
    py.detach(|| {
        let mut wl = workload::build(&spec)?;
        let (pages, total) = (wl.pages().max(1), wl.len().max(1));
        let mut counts = vec![vec![0u64; page_bins]; time_bins];
        let mut buf = Vec::with_capacity(4096);
        let mut done = 0u64;
        loop {
            buf.clear();
            if wl.fill(&mut buf, 4096) == 0 {
                break;
            }
            for a in &buf {
                let t = ((done as u128 * time_bins as u128) / total as u128).min(time_bins as u128 - 1) as usize;
                let p = ((a.page as u128 * page_bins as u128) / pages as u128).min(page_bins as u128 - 1) as usize;
                counts[t][p] += 1;
                done += 1;
            }
        }
        Ok(counts)
    })
    .map_err(to_py)
}
