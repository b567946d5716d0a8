//! The error every tierkit-core constructor returns for a bad parameter.

use std::fmt::Display;

/// A parameter was outside its valid range.
///
/// `param` is the parameter's name as it appears in the constructor's signature (for
/// example `"p"`, `"k"`, `"counter_bits"`), so a caller can report exactly which input
/// was wrong; `expected` says what would have been accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {param} = {value}: expected {expected}")]
pub struct ParamError {
    /// Name of the offending parameter.
    pub param: &'static str,
    /// The value that was given, formatted.
    pub value: String,
    /// What the parameter must satisfy.
    pub expected: &'static str,
}

impl ParamError {
    pub(crate) fn new(param: &'static str, value: impl Display, expected: &'static str) -> Self {
        Self { param, value: value.to_string(), expected }
    }
}

/// Returns `Err` naming `param` unless `value` is non-zero.
pub(crate) fn nonzero(param: &'static str, value: u64) -> Result<u64, ParamError> {
    if value == 0 {
        Err(ParamError::new(param, value, "a value greater than 0"))
    } else {
        Ok(value)
    }
}
