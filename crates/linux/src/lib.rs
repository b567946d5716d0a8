//! # tierkit-linux
//!
//! The live platform: NUMA topology and memory tiers from sysfs, a process's pages from
//! procfs, `move_pages(2)` migration, and real sources (perf sampling, DAMON, kernel NUMA
//! balancing), implementing `tierkit_core::Memory` for a running process. Built by the
//! live-tiering issue; this crate has no code yet.
