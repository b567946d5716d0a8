//! What the cache-like baselines (LRU, CLOCK, 2Q, LFU) share: sampled accesses with
//! allocation events as their source, and promotion into a full fast tier with one
//! demotion per promotion, accounted until the mover has executed both.

use crate::memory::MoveStatus;
use crate::policy::{Ctx, Migration, SampleRate, Sampling, SourceRequest};
use crate::types::{Page, TierId};

/// Sampled accesses of every tier plus allocation events.
pub(crate) fn sampled_with_allocations(rate: SampleRate) -> SourceRequest {
    SourceRequest {
        samples: Some(Sampling { rate, slow_tiers_only: false, words: false }),
        allocations: true,
        ..Default::default()
    }
}

/// Fast-tier room, counting the promotions and demotions queued but not executed yet.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Admission {
    /// Free fast pages to keep for promotions.
    headroom: u64,
    /// Promotions minus demotions queued and not yet executed.
    inflight: i64,
}

impl Admission {
    /// Admission keeping `headroom` fast pages free.
    pub(crate) fn with_headroom(headroom: u64) -> Self {
        Self { headroom, inflight: 0 }
    }

    /// Whether promoting one more page needs a demotion first.
    pub(crate) fn needs_room(&self, ctx: &Ctx<'_>) -> bool {
        ctx.mem.free_pages(TierId::FAST) as i64 - self.inflight <= self.headroom as i64
    }

    /// Queues demoting `victim` to the next tier.
    pub(crate) fn demote(&mut self, ctx: &mut Ctx<'_>, victim: Page) {
        ctx.plan.push(victim, TierId(1));
        self.inflight -= 1;
    }

    /// Queues promoting `page`.
    pub(crate) fn promote(&mut self, ctx: &mut Ctx<'_>, page: Page) {
        ctx.promote(page);
        self.inflight += 1;
    }

    /// Settles executed migrations; calls `not_admitted` for each promotion that did not
    /// bring its page to the fast tier.
    pub(crate) fn settle(&mut self, results: &[(Migration, MoveStatus)], mut not_admitted: impl FnMut(Page)) {
        for &(m, status) in results {
            let promotion = m.to == TierId::FAST;
            self.inflight += if promotion { -1 } else { 1 };
            if promotion && status != MoveStatus::Moved && status != MoveStatus::AlreadyThere {
                not_admitted(m.page);
            }
        }
    }
}
