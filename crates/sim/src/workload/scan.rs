//! Placeholder until its helper lands it (this session).

use super::{Workload, WorkloadSpec};
use crate::error::SimError;

pub(super) fn build(spec: &WorkloadSpec) -> Result<Box<dyn Workload>, SimError> {
    Err(SimError::bad_option(format!("workload {}", spec.name), "name", &spec.name, "a workload that is implemented"))
}
