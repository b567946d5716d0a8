//! The error every tierkit-core constructor returns for a bad parameter.

use std::borrow::Cow;
use std::fmt::Display;

/// A parameter was outside its valid range.
///
/// `param` is the parameter's name as it appears in the constructor's signature (for
/// example `"p"`, `"k"`, `"counter_bits"`; a nested one by its dotted path, such as
/// `"ledger.memory_ticks"`, when set by name), so a caller can report exactly which input
/// was wrong; `expected` says what would have been accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {param} = {value}: expected {expected}")]
pub struct ParamError {
    /// Name of the offending parameter.
    pub param: Cow<'static, str>,
    /// The value that was given, formatted.
    pub value: String,
    /// What the parameter must satisfy.
    pub expected: Cow<'static, str>,
}

impl ParamError {
    pub(crate) fn new(param: &'static str, value: impl Display, expected: &'static str) -> Self {
        Self { param: param.into(), value: value.to_string(), expected: expected.into() }
    }

    /// An error about a parameter named at run time (set by name, see
    /// [`crate::policies::tuning`]).
    pub(crate) fn named(param: String, value: impl Display, expected: String) -> Self {
        Self { param: param.into(), value: value.to_string(), expected: expected.into() }
    }

    /// The same error about a parameter nested under `parent` (`parent.param`), as a
    /// setting by name spells it.
    pub(crate) fn within(self, parent: &str) -> Self {
        Self { param: format!("{parent}.{}", self.param).into(), ..self }
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
