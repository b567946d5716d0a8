//! The modeled machine: its parameters ([`config`]), the loaded-latency curve
//! ([`latency`]) and the time model that turns access counts into wall time
//! ([`timing`]).

pub mod config;
pub mod latency;
mod resolve;
pub mod timing;

pub use config::{AppModel, MachineConfig, MechanismCosts, MigrationModel, MlpClass, TierModel};
pub use latency::LatencyCurve;
