//! The `Policy` trait: how a tiering policy plugs into every tierkit platform.
//!
//! A policy is a plain struct. The platform (the simulator, a live process, Python)
//! drives it through four calls:
//!
//! 1. [`Policy::sources`] once at start: which access information it needs. The
//!    platform wires the matching mechanism (simulated PEBS, real perf sampling, hint
//!    faults, DAMON, device trackers) or refuses to start, saying what is missing.
//! 2. [`Policy::on_events`] with each batch of [`Event`]s those sources produced.
//! 3. [`Policy::on_tick`] every [`Policy::tick_interval`], with per-tier [`Telemetry`].
//! 4. [`Policy::on_moved`] with the outcome of the migrations it asked for.
//!
//! In calls 2 and 3 the policy receives a [`Ctx`]: a read-only view of [`Memory`] (the
//! clock, tiers, free pages, where a page lives, a wrapping scan of resident pages), a
//! [`Plan`] to queue migrations in, and its own [`SourceRequest`], which it may change
//! at run time (FreqTier lowers its sampling rate; HybridTier suspends sampling). The
//! platform's [`crate::Mover`] executes the plan under its rate limits between calls.
//!
//! A policy never imports a platform, so the same code runs simulated and live.
//!
//! # Writing a policy
//!
//! This one promotes every sampled page found on a slow tier, and demotes nothing:
//!
//! ```
//! use tierkit_core::{Ctx, Event, Policy, Sampling, SourceRequest, Telemetry, TierId};
//!
//! struct PromoteOnSample;
//!
//! impl Policy for PromoteOnSample {
//!     fn name(&self) -> &str { "promote-on-sample" }
//!
//!     fn sources(&self) -> SourceRequest {
//!         // 10 kHz of access samples from every tier.
//!         SourceRequest { samples: Some(Sampling::new(10_000.0)), ..Default::default() }
//!     }
//!
//!     fn on_events(&mut self, events: &[Event], ctx: &mut Ctx<'_>) {
//!         for e in events {
//!             if let Event::Sample { page, tier, .. } = *e {
//!                 if tier != TierId::FAST && ctx.mem.free_pages(TierId::FAST) > ctx.plan.len() as u64 {
//!                     ctx.promote(page);
//!                 }
//!             }
//!         }
//!     }
//!
//!     fn on_tick(&mut self, _telemetry: &Telemetry, _ctx: &mut Ctx<'_>) {}
//!
//!     fn metadata_bytes(&self) -> usize { 0 }
//! }
//!
//! // Drive it by hand against the in-memory platform:
//! use tierkit_core::{InMemory, Memory, Mover, Plan};
//! let mut mem = InMemory::new(&[4, 16]).unwrap();
//! for page in 0..8 { mem.touch(page); }          // pages 4..8 spill to the slow tier
//! let mut policy = PromoteOnSample;
//! let mut sources = policy.sources();
//! let mut plan = Plan::default();
//! mem.free(0);                                   // make room for one promotion
//! let batch = [Event::Sample { page: 6, tier: TierId(1), word: None, write: false, time: 0, stall_ns: None }];
//! policy.on_events(&batch, &mut Ctx { mem: &mem, plan: &mut plan, sources: &mut sources });
//! Mover::default().execute(&mut plan, &mut mem, &mut Vec::new());
//! assert_eq!(mem.tier_of(6), Some(TierId::FAST));
//! ```
//!
//! A fuller example, with a counting Bloom filter, a hot threshold, watermarks and a
//! wrapping demotion scan, is [`crate::policies::ThresholdPolicy`].

use crate::event::Event;
use crate::memory::{Memory, MoveStatus};
use crate::telemetry::Telemetry;
use crate::types::{Nanos, Page, TierId, MILLISECOND};

/// How often a sampler fires.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SampleRate {
    /// Samples per second (perf's `-F`; FreqTier §V-B-2 switches between 100k, 10k
    /// and 1k Hz). 0 suspends sampling.
    Hz(f64),
    /// One sample every `n` counted accesses (perf's `-c`); 1 samples every access,
    /// which is how a policy runs as a plain cache. 0 suspends sampling.
    Period(u64),
}

/// PEBS/IBS-style sampling of memory accesses, delivered as [`Event::Sample`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sampling {
    /// How often.
    pub rate: SampleRate,
    /// Count and sample only accesses served by slower tiers.
    pub slow_tiers_only: bool,
    /// Report the 64-byte word of each access when the mechanism can.
    pub words: bool,
}

impl Sampling {
    /// Sampling of every tier at `rate_hz`, without word addresses.
    pub fn new(rate_hz: f64) -> Self {
        Self { rate: SampleRate::Hz(rate_hz), slow_tiers_only: false, words: false }
    }

    /// Sampling of every tier, one sample every `period` accesses.
    pub fn every(period: u64) -> Self {
        Self { rate: SampleRate::Period(period), slow_tiers_only: false, words: false }
    }
}

/// NUMA hint-fault scanning (AutoNUMA; TPP §5.2 restricts it to the slow tier),
/// delivered as [`Event::HintFault`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HintFaults {
    /// Pages protected per scan period (Linux's default window is 256 MB = 65536 pages).
    pub window_pages: u64,
    /// Time between scan windows.
    pub period: Nanos,
    /// Protect pages on slower tiers only (TPP).
    pub slow_tiers_only: bool,
}

/// Accessed-bit scanning, delivered as [`Event::Accessed`]: per page, or by
/// DAMON-style adaptive regions when `regions` is set.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AccessedScan {
    /// Time between accessed-bit checks (DAMON's sampling interval).
    pub sample_interval: Nanos,
    /// Time over which checks are summed into one report (DAMON's aggregation interval).
    pub aggregation_interval: Nanos,
    /// `(min, max)` number of adaptive regions; `None` scans every page.
    pub regions: Option<(u32, u32)>,
}

/// Device-side access tracking in the slow tier's controller (M5 §5), delivered as
/// [`Event::TopK`] runs at the end of each query period: the hot-page / hot-word
/// trackers (HPT / HWT, Count-Min + top-K), or with `exact` the page / word access
/// counters (PAC / WAC) that count every access precisely.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeviceTopK {
    /// Entries reported per query.
    pub k: usize,
    /// Time between queries (the tracker is reset after each).
    pub query_period: Nanos,
    /// Track 64-byte words (HWT, WAC) instead of pages (HPT, PAC).
    pub words: bool,
    /// Exact counters (PAC / WAC) instead of the Count-Min tracker.
    pub exact: bool,
}

/// The access information a policy asks for. Everything is off by default; per-tier
/// [`Telemetry`] is always delivered with ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SourceRequest {
    /// Access sampling.
    pub samples: Option<Sampling>,
    /// Hint-fault scanning.
    pub hint_faults: Option<HintFaults>,
    /// Accessed-bit scanning.
    pub accessed: Option<AccessedScan>,
    /// Device top-K reports.
    pub device_topk: Option<DeviceTopK>,
    /// [`Event::Alloc`] and [`Event::Free`].
    pub allocations: bool,
}

/// One requested page move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Migration {
    /// The page.
    pub page: Page,
    /// Its destination.
    pub to: TierId,
}

/// Migrations a policy has queued and the platform has not executed yet, in order.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    moves: Vec<Migration>,
}

impl Plan {
    /// Queues moving `page` to `to`.
    pub fn push(&mut self, page: Page, to: TierId) {
        self.moves.push(Migration { page, to });
    }

    /// Queued migrations.
    pub fn len(&self) -> usize {
        self.moves.len()
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.moves.is_empty()
    }

    /// The queue, oldest first.
    pub fn as_slice(&self) -> &[Migration] {
        &self.moves
    }

    /// Drops every queued migration.
    pub fn clear(&mut self) {
        self.moves.clear();
    }

    /// Removes and returns the first `n` migrations (or all, if fewer).
    pub(crate) fn take_front(&mut self, n: usize) -> std::vec::Drain<'_, Migration> {
        let n = n.min(self.moves.len());
        self.moves.drain(..n)
    }
}

/// What a policy may use while handling events or a tick.
pub struct Ctx<'a> {
    /// Read-only view of the process's memory.
    pub mem: &'a dyn Memory,
    /// Where to queue migrations.
    pub plan: &'a mut Plan,
    /// The policy's current source configuration; changes take effect after the call.
    pub sources: &'a mut SourceRequest,
}

impl Ctx<'_> {
    /// Queues moving `page` to the fastest tier.
    pub fn promote(&mut self, page: Page) {
        self.plan.push(page, TierId::FAST);
    }

    /// Queues moving `page` one tier slower than where it is now. Does nothing when the
    /// page is not resident or already on the slowest tier.
    pub fn demote(&mut self, page: Page) {
        if let Some(to) = self.mem.tier_of(page).and_then(|t| self.mem.slower_than(t)) {
            self.plan.push(page, to);
        }
    }
}

/// A tiering policy. See the [module documentation](self) for the life cycle and a
/// complete example.
///
/// Implementations must be deterministic given the same calls (no clocks, no thread
/// randomness): the simulator's reproducibility depends on it.
pub trait Policy: Send {
    /// Short name used on the command line and in reports, e.g. `"freqtier"`.
    fn name(&self) -> &str;

    /// The sources this policy needs, asked once before the first event.
    fn sources(&self) -> SourceRequest;

    /// How often [`on_tick`](Self::on_tick) is called. Default 100 ms.
    fn tick_interval(&self) -> Nanos {
        100 * MILLISECOND
    }

    /// The time the policy needs to act and settle after a change: a run shorter than
    /// this says little about it. Default ten ticks; policies whose own time constants
    /// (scan periods, aging, cooling) are longer say so.
    fn horizon(&self) -> Nanos {
        10 * self.tick_interval()
    }

    /// Handles a batch of events. Called many times per tick; keep it a tight loop.
    fn on_events(&mut self, events: &[Event], ctx: &mut Ctx<'_>);

    /// Periodic work: thresholds, aging, demotion scans, sampling-rate changes.
    fn on_tick(&mut self, telemetry: &Telemetry, ctx: &mut Ctx<'_>);

    /// Asks the platform for non-exclusive tiering (NOMAD, OSDI '24): a page promoted
    /// from a slower tier keeps its old copy there as a shadow until the page is written,
    /// so demoting it again is a remap with no copy ([`Memory::shadowed`]), and a
    /// promotion is transactional: the page is copied while it stays accessible and the
    /// move is committed only if the page was not written during the copy (else it
    /// fails as [`MoveStatus::Busy`]). Asked once before the first event. A platform
    /// that cannot keep shadows (a live process moved with `move_pages(2)`) migrates
    /// exclusively as usual. Default: false.
    fn non_exclusive(&self) -> bool {
        false
    }

    /// The outcome of queued migrations, as the platform executed them. Default: ignore.
    fn on_moved(&mut self, _results: &[(Migration, MoveStatus)]) {}

    /// Heap bytes of the policy's own metadata (its sketches, lists, tables), as
    /// allocated: what the papers report as tracking overhead.
    fn metadata_bytes(&self) -> usize;
}
