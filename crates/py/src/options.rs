//! The keyword arguments of `simulate` and `compare`, as the Python layer passes them
//! (one dict per group), turned into the simulator's types the way the CLI's flags are.

use pyo3::prelude::*;
use tierkit_sim::model::MachineConfig;
use tierkit_sim::workload::WorkloadSpec;

use crate::errors::{to_py, BadOptionError};

/// Footprint and accesses of a run when not given (the CLI's defaults).
pub const DEFAULT_PAGES: u64 = 65_536;
/// Generated accesses of a run when not given.
pub const DEFAULT_ACCESSES: u64 = 3_000_000;

/// The machine and run settings (`--machine`, `--machine-file`, `--set`, `--antagonist`,
/// `--scale`, `--no-prefault`, `--cache-mode`, `--access-count-ratio`, `--seed`).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub struct MachineOptions {
    /// Preset name.
    pub machine: String,
    /// TOML file overlaying the preset.
    pub machine_file: Option<String>,
    /// `KEY=VALUE` overrides, applied in order.
    pub overrides: Vec<String>,
    /// Background traffic on the fast tier, as a fraction of its bandwidth.
    pub antagonist: Option<f64>,
    /// Real misses per generated access; `None` for the default, and then traces follow
    /// their own clock.
    pub scale: Option<u64>,
    /// Initialize memory in address order before the stream.
    pub prefault: bool,
    /// Plain-cache semantics.
    pub cache_mode: bool,
    /// Report M5's access-count ratio.
    pub access_count_ratio: bool,
    /// Seed of every random choice.
    pub seed: u64,
}

impl MachineOptions {
    /// The machine these settings describe (see [`MachineConfig::resolve`]).
    pub fn config(&self) -> PyResult<MachineConfig> {
        MachineConfig::resolve(&self.machine, self.machine_file.as_deref(), &self.overrides, self.antagonist)
            .map_err(to_py)
    }
}

/// A workload's size and options (`--pages`, `--footprint`, `--accesses`, `--opt`).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub struct SizeOptions {
    /// Footprint in 4 KiB pages.
    pub pages: Option<u64>,
    /// Footprint in bytes.
    pub footprint: Option<u64>,
    /// Generated accesses.
    pub accesses: Option<u64>,
    /// Workload options as `KEY=VALUE`, applied in order.
    pub options: Vec<String>,
}

impl SizeOptions {
    /// `spec` resized and with the options applied (see [`WorkloadSpec::resized`]).
    pub fn apply(&self, spec: WorkloadSpec) -> PyResult<WorkloadSpec> {
        spec.resized(self.pages, self.footprint, self.accesses, &self.options).map_err(to_py)
    }

    /// The workload `name` at the default size, resized and with the options applied.
    pub fn workload(&self, name: &str, seed: u64) -> PyResult<WorkloadSpec> {
        self.apply(WorkloadSpec::new(name, DEFAULT_PAGES, DEFAULT_ACCESSES, seed))
    }
}

/// A fast:slow capacity ratio such as `1:16`, as `(fast, slow)`; both parts at least 1
/// (the form rows hold it in too: [`tierkit_sim::result::ratio`]).
pub fn parse_ratio(text: &str) -> Result<(u64, u64), String> {
    tierkit_sim::result::ratio::parse(text)
}

/// [`parse_ratio`] raising [`BadOptionError`].
pub fn ratio(text: &str) -> PyResult<(u64, u64)> {
    parse_ratio(text).map_err(BadOptionError::new_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios() {
        assert_eq!(parse_ratio("1:16"), Ok((1, 16)));
        assert_eq!(parse_ratio(" 2 : 3 "), Ok((2, 3)));
        assert_eq!(parse_ratio("1:0"), Err("ratio \"1:0\": the slow part must be at least 1".to_string()));
        for bad in ["16", "0:4", "a:b", "1:2:3", ":"] {
            let e = parse_ratio(bad).unwrap_err();
            assert!(e.starts_with(&format!("ratio {bad:?}: ")), "{e}");
        }
    }
}
