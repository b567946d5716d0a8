//! # tierkit-linux
//!
//! The live platform: NUMA topology and memory tiers from sysfs, a process's pages from
//! procfs, `move_pages(2)` migration, and real sources (perf sampling, DAMON, kernel NUMA
//! balancing), implementing `tierkit_core::Memory` for a running process.
//!
//! Every reader of sysfs/procfs takes a root directory (`/` on a live system), so unit
//! tests run against fixture trees; everything that talks to the kernel is tested inside
//! the QEMU guest (`tests/vm`).

pub mod daemon;
pub mod damon;
pub mod kernel_tiering;
pub mod metrics;
pub mod metrics_server;
pub mod pacing;
pub mod perf;
pub mod perms;
pub mod process;
pub mod procfs;
pub mod selfstat;
pub mod signals;
pub mod status;
pub mod sys;
pub mod sysfs_io;
pub mod target;
pub mod topology;
