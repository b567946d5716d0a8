//! Names: every policy and reference a run can use.

use tierkit_core::policies::{self, PolicySetup};

use crate::engine::Subject;
use crate::reference::Reference;
use crate::SimError;

/// Every valid subject name: references first, then policies (any policy may also be
/// wrapped in Colloid with the `+colloid` suffix).
pub fn names() -> Vec<String> {
    let mut names: Vec<String> = Reference::ALL.iter().map(|(n, _)| n.to_string()).collect();
    names.extend(policies::REGISTRY.iter().map(|r| r.name.to_string()));
    names.push(format!("<policy>{}", policies::COLLOID_SUFFIX));
    names
}

/// The subject called `name`, set up for `setup`; an unknown name lists the valid ones.
pub fn subject(name: &str, setup: &PolicySetup) -> Result<Subject, SimError> {
    if let Some((_, r)) = Reference::ALL.iter().find(|(n, _)| *n == name) {
        return Ok(Subject::Reference(*r));
    }
    match policies::build(name, setup) {
        Some(p) => Ok(Subject::Policy(p?)),
        None => Err(SimError::unknown("policy", name, names().iter().map(String::as_str))),
    }
}
