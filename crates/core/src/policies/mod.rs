//! Tiering policies, one per file. Each keeps its constants in a `Params` struct whose
//! defaults come from the paper it implements.

mod threshold;

pub use threshold::{ThresholdParams, ThresholdPolicy};
