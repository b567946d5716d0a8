//! Names: every policy and reference a run can use.

use tierkit_core::policies::{self, PolicySetup};

use crate::engine::Subject;
use crate::reference::Reference;
use crate::SimError;

/// Every valid subject name: references first, then policies.
pub fn names() -> Vec<&'static str> {
    Reference::ALL.iter().map(|(n, _)| *n).chain(policies::REGISTRY.iter().map(|r| r.name)).collect()
}

/// The subject called `name`, set up for `setup`; an unknown name lists the valid ones.
pub fn subject(name: &str, setup: &PolicySetup) -> Result<Subject, SimError> {
    if let Some((_, r)) = Reference::ALL.iter().find(|(n, _)| *n == name) {
        return Ok(Subject::Reference(*r));
    }
    match policies::find(name) {
        Some(p) => Ok(Subject::Policy((p.build)(setup)?)),
        None => Err(SimError::unknown("policy", name, names())),
    }
}
