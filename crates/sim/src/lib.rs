//! # tierkit-sim
//!
//! The simulator: a modeled DRAM+CXL machine that runs `tierkit_core` policies on
//! page-access streams, deterministically for a seed.

pub mod error;
pub mod workload;

pub use error::SimError;
mod acr;
pub mod advise;
pub mod budget;
pub mod catalog;
pub mod compare;
pub mod corpus_class;
pub mod engine;
mod hot_set;
pub mod machine;
pub mod model;
mod plain_cache;
pub mod profile;
mod profile_cache;
pub mod reference;
pub mod result;
pub(crate) mod sources;
pub mod span_fit;
pub mod trace;
