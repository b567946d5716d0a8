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
    /// A size from user input or a file (pages, an option, a trace header's count) that
    /// needs more memory than the machine has available; refused before allocating.
    #[error("{input}: {what} needs ~{}, the machine has {} available", bytes(*need), bytes(u128::from(*available)))]
    TooLarge {
        /// The value and who reads it, e.g. "workload zipf: pages = 100000000000".
        input: String,
        /// What would need the memory, e.g. "the run".
        what: String,
        /// Bytes needed (an estimate).
        need: u128,
        /// Bytes available (`MemAvailable`).
        available: u64,
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

/// `n` bytes in the largest binary unit below it, e.g. "1.5 GiB".
fn bytes(n: u128) -> String {
    let (mut value, mut unit) = (n as f64, "bytes");
    for next in ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"] {
        if value < 1024.0 {
            break;
        }
        (value, unit) = (value / 1024.0, next);
    }
    if unit == "bytes" {
        format!("{n} bytes")
    } else {
        format!("{value:.1} {unit}")
    }
}
