//! The simulator's errors: each names the input that was wrong.

use tierkit_core::ParamError;

/// What can go wrong setting up or running a simulation.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A name (workload, policy, preset) that does not exist.
    #[error("unknown {kind} {name:?}; valid: {valid}")]
    UnknownName {
        /// "workload", "policy", "machine preset", ...
        kind: &'static str,
        /// What was given.
        name: String,
        /// The valid names, comma-separated.
        valid: String,
    },
    /// An option of a workload or model that is malformed or out of range.
    #[error("{owner}: option {key} = {value:?}: expected {expected}")]
    BadOption {
        /// Who reads the option (e.g. "workload zipf").
        owner: String,
        /// The option's name.
        key: String,
        /// What was given.
        value: String,
        /// What is accepted.
        expected: String,
    },
    /// A parameter error from tierkit-core.
    #[error(transparent)]
    Param(#[from] ParamError),
    /// A trace or configuration file that cannot be read or parsed.
    #[error("{file}: {at}: {message}")]
    File {
        /// The file.
        file: String,
        /// Where: "offset 4096", "line 12", "field machine.tiers".
        at: String,
        /// What is wrong.
        message: String,
    },
    /// An I/O error on a named file.
    #[error("{file}: {source}")]
    Io {
        /// The file.
        file: String,
        /// The error.
        source: std::io::Error,
    },
}

impl SimError {
    /// A [`SimError::BadOption`].
    pub fn bad_option(owner: impl Into<String>, key: &str, value: impl ToString, expected: impl Into<String>) -> Self {
        Self::BadOption {
            owner: owner.into(),
            key: key.to_string(),
            value: value.to_string(),
            expected: expected.into(),
        }
    }

    /// A [`SimError::UnknownName`] listing `valid`.
    pub fn unknown<'a>(kind: &'static str, name: &str, valid: impl IntoIterator<Item = &'a str>) -> Self {
        Self::UnknownName { kind, name: name.to_string(), valid: valid.into_iter().collect::<Vec<_>>().join(", ") }
    }
}
