//! The names `tierkit list` shows: workloads, policies and references, machine presets.

use pyo3::prelude::*;
use tierkit_core::policies::REGISTRY as POLICIES;
use tierkit_sim::model::config::PRESETS;
use tierkit_sim::reference::Reference;
use tierkit_sim::workload::REGISTRY as WORKLOADS;

/// Every workload name.
#[pyfunction]
pub fn workloads() -> Vec<&'static str> {
    WORKLOADS.iter().map(|w| w.name).collect()
}

/// Every reference name, then every policy name (any policy also runs with Colloid's
/// balancing as `<policy>+colloid`).
#[pyfunction]
pub fn policies() -> Vec<&'static str> {
    Reference::ALL.iter().map(|(n, _)| *n).chain(POLICIES.iter().map(|p| p.name)).collect()
}

/// Every machine preset name.
#[pyfunction]
pub fn machines() -> Vec<&'static str> {
    PRESETS.to_vec()
}
