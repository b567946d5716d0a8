//! # tierkit-core
//!
//! The policy library of tierkit, a memory-tiering system for CXL memory. Everything a
//! tiering policy needs and nothing about where it runs:
//!
//! - [`sketches`]: hotness trackers from the papers — counting Bloom filters (standard
//!   and blocked, 4/8/16-bit), increment coalescing, Count-Min with top-K, Space-Saving,
//!   exact per-page counts and the log2 hotness histogram.
//! - The contract every platform implements and every policy programs against:
//!   [`Event`]s in, [`Telemetry`] at ticks, the [`Memory`] trait, the [`Policy`] trait,
//!   a [`Plan`] of migrations that a [`Mover`] executes, and the [`Driver`] that runs a
//!   policy through them on every platform.
//! - [`policies`]: the policies themselves, one file each.
//! - [`InMemory`]: a plain `Memory` for tests, and [`dist`] for deterministic
//!   random streams.
//!
//! Start with the [`policy`] module documentation: it walks through writing a policy.

mod alloc;
pub mod bijection;
pub mod dist;
mod driver;
mod error;
mod event;
pub mod hash;
mod in_memory;
mod memory;
mod mover;
pub mod policies;
pub mod policy;
pub mod prefetch;
pub mod sketches;
mod telemetry;
mod types;

pub use driver::{Driver, Round, Totals, MAX_QUEUED};
pub use error::ParamError;
pub use event::Event;
pub use in_memory::InMemory;
pub use memory::{Memory, MoveStatus, Resident, ScanCursor, ScanMeter};
pub use mover::{MoveStats, Mover};
pub use policy::{
    AccessedScan, Ctx, DeviceTopK, HintFaults, Migration, Plan, Policy, SampleRate, Sampling, SourceRequest,
};
pub use telemetry::{littles_law_latency_ns, Telemetry, TierStats};
pub use types::{Nanos, Page, PageKind, TierId, TierInfo, HUGE_PAGE_PAGES, MILLISECOND, PAGE_SIZE, SECOND};
