//! The DAMON source: the kernel's Data Access MONitor watches the target's virtual
//! address space through sysfs, and each aggregation interval's regions become
//! [`tierkit_core::Event::Accessed`] events (raw regions stay available for profiling).
//! [`DamosTiering`] instead has the kernel migrate by itself, with DAMOS
//! `migrate_hot`/`migrate_cold` schemes over physical memory.
//!
//! ```no_run
//! # use std::path::Path;
//! # use tierkit_linux::source::damon::{to_events, DamonMonitor, DamonOptions, Poll};
//! let mut monitor = DamonMonitor::start(Path::new("/"), 1234, &DamonOptions::default())?;
//! let (mut regions, mut events) = (Vec::new(), Vec::new());
//! while let Poll::Regions { .. } = monitor.poll(&mut regions)? {
//!     events.clear();
//!     to_events(&regions, &mut events);
//!     // hand `events` to the policy
//! }
//! monitor.stop()?;
//! # Ok::<(), tierkit_linux::source::damon::DamonError>(())
//! ```

pub mod kdamond;
pub mod memcg;
pub mod node_ranges;
pub mod quota_tuner;
pub mod regions;
pub mod schemes;
pub mod sysfs;
pub mod target_regions;
mod tried_regions;

pub use kdamond::KdamondClaim;
pub use quota_tuner::{access_ladder, QuotaTuner, Quotas, TunerInput, TunerParams, Tuning};
pub use regions::{to_events, Region};
pub use schemes::{DamosOptions, DamosStats, DamosTiering, SchemeStats};
pub use sysfs::{DamonError, DamonMonitor, DamonOptions, Poll, Unavailable};
pub use target_regions::initial_regions;
