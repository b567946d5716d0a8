//! # tierkit-sim
//!
//! The simulator: a modeled DRAM+CXL machine (tiers with loaded-latency curves, an
//! application of threads with memory-level parallelism, first-touch allocation,
//! migration costs), simulated sources (sampling, hint faults, accessed bits, device
//! top-K trackers, per-tier telemetry), workload generators and trace readers, and the
//! engine that runs `tierkit_core` policies against them with all-local and oracle
//! references. Built by the simulator issue; this crate has no code yet.
