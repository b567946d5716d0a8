//! `arc`: the Adaptive Replacement Cache (Megiddo and Modha, FAST '03) as tiering.
//!
//! The fast tier is the cache, of size `c` = fast pages. Resident pages live on `T1`
//! (seen once recently) or `T2` (seen at least twice); the ghost lists `B1` and `B2`
//! remember pages recently demoted from `T1` and `T2`. A sampled fast-tier access is a
//! hit and moves its page to the front of `T2`. A sampled slow-tier access is a miss: the
//! page is promoted, into `T2` when a ghost list remembers it (adapting the target size
//! `p` of `T1`: up on a `B1` hit, down on a `B2` hit, by ARC's δ), else into `T1`; when
//! the fast tier has no room, ARC's REPLACE demotes the least recent page of `T1` (into
//! `B1`) if `T1` exceeds `p`, else that of `T2` (into `B2`). The directory is kept to
//! ARC's bounds, `|T1| + |B1| ≤ c` and `|T1| + |T2| + |B1| + |B2| ≤ 2c` (case IV).

use super::admission::{sampled_with_allocations, Admission};
use super::lru_lists::LruList;
use super::PolicySetup;
use crate::memory::MoveStatus;
use crate::policy::{Ctx, Migration, Policy, SampleRate, SourceRequest};
use crate::telemetry::Telemetry;
use crate::types::{Page, TierId};
use crate::{Event, ParamError};

/// Parameters of [`ArcPolicy`].
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ArcParams {
    /// Sampling of accesses (PEBS up to 100 kHz, FreqTier §V-B-2), as for the other
    /// caching baselines.
    pub rate: SampleRate,
}

impl Default for ArcParams {
    fn default() -> Self {
        Self { rate: SampleRate::Hz(100_000.0) }
    }
}

/// ARC tiering; see the module documentation.
#[derive(Clone, Debug)]
pub struct ArcPolicy {
    params: ArcParams,
    t1: LruList,
    t2: LruList,
    b1: LruList,
    b2: LruList,
    /// Cache size: fast pages.
    c: usize,
    /// ARC's adaptive target size of `T1`, in `[0, c]`.
    p: f64,
    admission: Admission,
}

impl ArcPolicy {
    /// An ARC policy for `setup`.
    pub fn new(params: ArcParams, setup: &PolicySetup) -> Result<Self, ParamError> {
        if setup.fast_pages == 0 {
            return Err(ParamError::new("fast_pages", 0, "at least one fast page"));
        }
        Ok(Self {
            params,
            t1: LruList::new(),
            t2: LruList::new(),
            b1: LruList::new(),
            b2: LruList::new(),
            c: setup.fast_pages as usize,
            p: 0.0,
            admission: Admission::default(),
        })
    }

    /// ARC's target size of `T1`.
    pub fn target_t1(&self) -> f64 {
        self.p
    }

    /// ARC's REPLACE: unlinks the page to demote and remembers it in a ghost list.
    fn replace(&mut self, hit_in_b2: bool) -> Option<Page> {
        let t1 = self.t1.len() as f64;
        let from_t1 = self.t1.len() > 0 && (t1 > self.p || (hit_in_b2 && t1 == self.p.floor()));
        if from_t1 || self.t2.len() == 0 {
            let v = self.t1.pop_tail()?;
            self.b1.touch(v);
            Some(v)
        } else {
            let v = self.t2.pop_tail()?;
            self.b2.touch(v);
            Some(v)
        }
    }

    /// Handles a miss on `page` (a sampled slow-tier access): adapts, makes room, promotes.
    fn miss(&mut self, page: Page, ctx: &mut Ctx<'_>) {
        if self.t1.contains(page) || self.t2.contains(page) {
            return; // its promotion is already queued
        }
        let full = self.admission.needs_room(ctx);
        let (b1, b2) = (self.b1.len() as f64, self.b2.len() as f64);
        let (victim, ghost) = if self.b1.remove(page) {
            // Case II: recency would have hit; grow T1's target by δ1.
            self.p = (self.p + if b1 >= b2 { 1.0 } else { b2 / b1 }).min(self.c as f64);
            (full.then(|| self.replace(false)).flatten(), true)
        } else if self.b2.remove(page) {
            // Case III: frequency would have hit; shrink T1's target by δ2.
            self.p = (self.p - if b2 >= b1 { 1.0 } else { b1 / b2 }).max(0.0);
            (full.then(|| self.replace(true)).flatten(), true)
        } else {
            (self.new_page(full), false)
        };
        if let Some(v) = victim {
            self.admission.demote(ctx, v);
        }
        self.admission.promote(ctx, page);
        if ghost {
            self.t2.touch(page);
        } else {
            self.t1.touch(page);
        }
    }

    /// Case IV: a page in no list. Trims the directory to ARC's bounds and, when the fast
    /// tier is full, picks the page to demote.
    fn new_page(&mut self, full: bool) -> Option<Page> {
        if self.t1.len() + self.b1.len() >= self.c {
            if self.t1.len() < self.c {
                self.b1.pop_tail();
                full.then(|| self.replace(false)).flatten()
            } else {
                // T1 alone fills the cache: its LRU page leaves without a ghost.
                full.then(|| self.t1.pop_tail()).flatten()
            }
        } else {
            let total = self.t1.len() + self.t2.len() + self.b1.len() + self.b2.len();
            if total >= 2 * self.c {
                self.b2.pop_tail();
            }
            full.then(|| self.replace(false)).flatten()
        }
    }
}

impl Policy for ArcPolicy {
    fn name(&self) -> &str {
        "arc"
    }

    fn sources(&self) -> SourceRequest {
        sampled_with_allocations(self.params.rate)
    }

    fn on_events(&mut self, events: &[Event], ctx: &mut Ctx<'_>) {
        for e in events {
            match *e {
                Event::Alloc { page, tier, .. } if tier == TierId::FAST => self.t1.insert(page),
                Event::Sample { page, tier, .. } if tier == TierId::FAST => {
                    // A hit: T1 or T2 page goes to T2's front; an untracked one enters T1.
                    if self.t1.remove(page) || self.t2.contains(page) {
                        self.t2.touch(page);
                    } else {
                        self.t1.touch(page);
                    }
                }
                Event::Sample { page, .. } => self.miss(page, ctx),
                Event::Free { page } => {
                    for list in [&mut self.t1, &mut self.t2, &mut self.b1, &mut self.b2] {
                        list.remove(page);
                    }
                }
                _ => {}
            }
        }
    }

    fn on_tick(&mut self, _telemetry: &Telemetry, _ctx: &mut Ctx<'_>) {}

    fn on_moved(&mut self, results: &[(Migration, MoveStatus)]) {
        let (t1, t2) = (&mut self.t1, &mut self.t2);
        self.admission.settle(results, |page| {
            t1.remove(page);
            t2.remove(page);
        });
    }

    fn metadata_bytes(&self) -> usize {
        self.t1.heap_bytes() + self.t2.heap_bytes() + self.b1.heap_bytes() + self.b2.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{InMemory, Memory, Mover, Plan};

    /// ARC over 8 fast pages, driven one sampled access at a time.
    struct Harness {
        arc: ArcPolicy,
        mem: InMemory,
        sources: SourceRequest,
    }

    impl Harness {
        fn new() -> Self {
            let arc = ArcPolicy::new(ArcParams::default(), &PolicySetup { fast_pages: 8, pages: 1000 }).unwrap();
            let sources = arc.sources();
            Self { arc, mem: InMemory::new(&[8, 1000]).unwrap(), sources }
        }

        fn access(&mut self, page: Page) {
            if self.mem.tier_of(page).is_none() {
                self.mem.touch(page);
            }
            let ev = [Event::Sample {
                page,
                tier: self.mem.tier_of(page).unwrap(),
                word: None,
                write: false,
                time: 0,
                stall_ns: None,
            }];
            let mut plan = Plan::default();
            self.arc.on_events(&ev, &mut Ctx { mem: &self.mem, plan: &mut plan, sources: &mut self.sources });
            let mut results = Vec::new();
            Mover::default().execute(&mut plan, &mut self.mem, &mut results);
            self.arc.on_moved(&results);
        }

        fn fast(&self, page: Page) -> bool {
            self.mem.tier_of(page) == Some(TierId::FAST)
        }
    }

    #[test]
    fn p_follows_recency_then_frequency() {
        let mut h = Harness::new();
        for page in (0..8).chain(0..4) {
            h.access(page); // T2 = pages 0..4 (seen twice), T1 = pages 4..8
        }
        assert_eq!((h.arc.t1.len(), h.arc.t2.len(), h.arc.target_t1()), (4, 4, 0.0));
        // Recency-friendly: a loop over 6 new pages, more than T1 holds. The pages
        // demoted from T1 come back from B1: T1's target grows.
        for _ in 0..4 {
            for page in 100..106 {
                h.access(page);
            }
        }
        let recency = h.arc.target_t1();
        assert!(recency >= 2.0, "p grew to {recency}");
        assert!(h.arc.b2.len() > 0, "T2 pages gave way to the recent ones");
        // Frequency-friendly: the old reused pages come back from B2, between one-time
        // pages: T1's target shrinks.
        for round in 0..6u64 {
            for page in 0..4 {
                h.access(page);
            }
            h.access(1000 + round);
        }
        let frequency = h.arc.target_t1();
        assert!(frequency < recency, "p {recency} -> {frequency}");
        assert!(h.arc.t1.len() + h.arc.b1.len() <= 8);
        assert!(h.arc.t1.len() + h.arc.t2.len() + h.arc.b1.len() + h.arc.b2.len() <= 16);
    }

    #[test]
    fn a_scan_does_not_flush_t2() {
        let mut h = Harness::new();
        for page in 0..8 {
            h.access(page); // fill the fast tier: T1
        }
        for page in 0..4 {
            h.access(page); // seen again: T2
        }
        assert_eq!(h.arc.t2.len(), 4);
        for page in 500..600 {
            h.access(page); // a one-time scan
        }
        assert!((0..4).all(|p| h.fast(p)), "T2 pages stay fast");
        assert_eq!(h.arc.t2.len(), 4);
        assert!(h.arc.t1.len() + h.arc.b1.len() <= 8);
        let none = PolicySetup { fast_pages: 0, pages: 10 };
        assert_eq!(ArcPolicy::new(ArcParams::default(), &none).unwrap_err().param, "fast_pages");
    }
}
