//! # tierkit-linux
//!
//! The live platform: NUMA topology and memory tiers from sysfs, a process's pages from
//! procfs, `move_pages(2)` migration, and real sources (perf sampling, DAMON, kernel NUMA
//! balancing), implementing `tierkit_core::Memory` for a running process.
//!
//! The crate follows the pipeline of a live run:
//!
//! - [`source`]: where access information comes from (perf, DAMON, the kernel's own
//!   tiering, smaps referenced bits);
//! - [`memory`]: the process's memory as tierkit sees and moves it (procfs, the process
//!   view and its migrations, move pacing);
//! - [`run`]: a tiering session tying sources, policy, mover, metrics and status together.
//!
//! Beside them, [`profile`] (the heat report of `tierkit profile`) and [`record`] (DAMON
//! snapshots for `tierkit record --via damon`) observe a process without tiering it.
//!
//! Every reader of sysfs/procfs takes a root directory (`/` on a live system), so unit
//! tests run against fixture trees; everything that talks to the kernel is tested inside
//! the QEMU guest (`tests/vm`).

pub mod memory;
pub mod metrics;
pub mod metrics_server;
pub mod perms;
pub mod profile;
pub mod record;
pub mod run;
pub mod selfstat;
pub mod signals;
pub mod source;
pub mod status;
pub mod sys;
pub mod sysfs_io;
pub mod target;
pub mod topology;
