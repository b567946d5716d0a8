//! `lru`: least-recently-used tiering (HybridTier §5.2 compares against LRU).
//!
//! The fast tier is managed as an LRU list of the pages known to be there: pages enter
//! at the head when first touched on the fast tier or promoted, and move to the head
//! when sampled. A sampled access served by a slower tier promotes its page at once;
//! when that would leave fewer than `headroom` free fast pages, the tail (least
//! recently sampled) is demoted. With `SampleRate::Period(1)` every access is seen and
//! the fast tier behaves as an LRU cache (`lru-cache`).

use super::admission::{sampled_with_allocations, Admission};
use super::lru_lists::LruList;
use super::PolicySetup;
use crate::memory::MoveStatus;
use crate::policy::{Ctx, Migration, Policy, SampleRate, SourceRequest};
use crate::telemetry::Telemetry;
use crate::types::TierId;
use crate::{Event, ParamError};

/// Parameters of [`LruPolicy`].
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct LruParams {
    /// Sampling of accesses. HybridTier and FreqTier sample PEBS at up to 100 kHz
    /// (FreqTier §V-B-2): the default.
    pub rate: SampleRate,
    /// Free fast pages kept for promotions, as a fraction of the fast tier (0: a cache).
    pub headroom: f64,
}

impl Default for LruParams {
    fn default() -> Self {
        Self { rate: SampleRate::Hz(100_000.0), headroom: 0.0 }
    }
}

/// LRU tiering; see the module documentation.
#[derive(Clone, Debug)]
pub struct LruPolicy {
    name: &'static str,
    params: LruParams,
    list: LruList,
    admission: Admission,
}

impl LruPolicy {
    /// An LRU policy for `setup`.
    pub fn new(params: LruParams, setup: &PolicySetup) -> Result<Self, ParamError> {
        if !(0.0..0.5).contains(&params.headroom) {
            return Err(ParamError::new("headroom", params.headroom, "a fraction in [0, 0.5)"));
        }
        let headroom = (setup.fast_pages as f64 * params.headroom).ceil() as u64;
        Ok(Self { name: "lru", params, list: LruList::new(), admission: Admission::with_headroom(headroom) })
    }

    /// LRU as a plain cache: every access is seen, every slow access promotes.
    pub fn cache(setup: &PolicySetup) -> Result<Self, ParamError> {
        let mut p = Self::new(LruParams { rate: SampleRate::Period(1), headroom: 0.0 }, setup)?;
        p.name = "lru-cache";
        Ok(p)
    }
}

impl Policy for LruPolicy {
    fn name(&self) -> &str {
        self.name
    }

    fn sources(&self) -> SourceRequest {
        sampled_with_allocations(self.params.rate)
    }

    fn on_events(&mut self, events: &[Event], ctx: &mut Ctx<'_>) {
        for e in events {
            match *e {
                Event::Alloc { page, tier, .. } | Event::Sample { page, tier, .. } if tier == TierId::FAST => {
                    self.list.touch(page)
                }
                Event::Sample { page, .. } => {
                    if self.admission.needs_room(ctx) {
                        if let Some(victim) = self.list.pop_tail() {
                            self.admission.demote(ctx, victim);
                        }
                    }
                    self.admission.promote(ctx, page);
                    self.list.touch(page);
                }
                Event::Free { page } => {
                    self.list.remove(page);
                }
                _ => {}
            }
        }
    }

    fn on_tick(&mut self, _telemetry: &Telemetry, _ctx: &mut Ctx<'_>) {}

    fn on_moved(&mut self, results: &[(Migration, MoveStatus)]) {
        let list = &mut self.list;
        self.admission.settle(results, |page| {
            list.remove(page); // it did not arrive
        });
    }

    fn metadata_bytes(&self) -> usize {
        self.list.heap_bytes()
    }
}
