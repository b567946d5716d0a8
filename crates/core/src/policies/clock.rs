//! `clock`: CLOCK (second-chance) tiering (HybridTier §5.2 compares against CLOCK).
//!
//! Fast-tier pages join the ring unreferenced when allocated there (or when first
//! sampled there, if their allocation was not seen) and get their referenced bit set
//! when sampled again; the access that allocates a page does not reference it (a cache
//! inserts on a miss without setting the bit).
//! A sampled access served by a slower tier promotes its page; when that would leave
//! fewer than `headroom` free fast pages, the hand sweeps the ring clearing referenced
//! bits and demotes the first page found unreferenced, whose slot the promoted page
//! takes. With `SampleRate::Period(1)` it is a CLOCK cache (`clock-cache`).

use super::admission::{sampled_with_allocations, Admission};
use super::PolicySetup;
use crate::memory::MoveStatus;
use crate::policy::{Ctx, Migration, Policy, SampleRate, SourceRequest};
use crate::sketches::PageTable;
use crate::telemetry::Telemetry;
use crate::types::{Page, TierId};
use crate::{Event, ParamError};

/// Parameters of [`ClockPolicy`].
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ClockParams {
    /// Sampling of accesses (PEBS up to 100 kHz, FreqTier §V-B-2).
    pub rate: SampleRate,
    /// Free fast pages kept for promotions, as a fraction of the fast tier.
    pub headroom: f64,
}

impl Default for ClockParams {
    fn default() -> Self {
        Self { rate: SampleRate::Hz(100_000.0), headroom: 0.0 }
    }
}

const EMPTY: Page = u64::MAX;

/// CLOCK tiering; see the module documentation.
#[derive(Clone, Debug)]
pub struct ClockPolicy {
    name: &'static str,
    params: ClockParams,
    ring: Vec<(Page, bool)>,
    /// Bit `i` set: ring slot `i` holds a page. The hand skips empty slots a word of
    /// bits at a time, so a ring left mostly empty (pages removed faster than promotions
    /// refill their slots) costs a sweep little more than a full one.
    held: Vec<u64>,
    slot: PageTable,
    holes: Vec<u32>,
    hand: usize,
    admission: Admission,
    /// The page allocated by the latest `Alloc`: its first sample is that same access.
    fresh: Option<Page>,
}

impl ClockPolicy {
    /// A CLOCK policy for `setup`.
    pub fn new(params: ClockParams, setup: &PolicySetup) -> Result<Self, ParamError> {
        if !(0.0..0.5).contains(&params.headroom) {
            return Err(ParamError::new("headroom", params.headroom, "a fraction in [0, 0.5)"));
        }
        let headroom = (setup.fast_pages as f64 * params.headroom).ceil() as u64;
        Ok(Self {
            name: "clock",
            params,
            ring: Vec::new(),
            held: Vec::new(),
            slot: PageTable::new(),
            holes: Vec::new(),
            hand: 0,
            admission: Admission::with_headroom(headroom),
            fresh: None,
        })
    }

    /// CLOCK as a plain cache: every access is seen, every slow access promotes.
    pub fn cache(setup: &PolicySetup) -> Result<Self, ParamError> {
        let mut p = Self::new(ClockParams { rate: SampleRate::Period(1), headroom: 0.0 }, setup)?;
        p.name = "clock-cache";
        Ok(p)
    }

    fn insert(&mut self, page: Page, referenced: bool) {
        if let Some(i) = self.slot.get(page) {
            self.ring[i as usize].1 |= referenced;
            return;
        }
        let i = match self.holes.pop() {
            Some(i) => {
                self.ring[i as usize] = (page, referenced);
                i
            }
            None => {
                self.ring.push((page, referenced));
                self.held.resize(self.ring.len().div_ceil(64), 0);
                (self.ring.len() - 1) as u32
            }
        };
        self.held[i as usize / 64] |= 1 << (i % 64);
        *self.slot.entry(page, 0) = i;
    }

    fn remove(&mut self, page: Page) {
        if let Some(i) = self.slot.remove(page) {
            self.ring[i as usize] = (EMPTY, false);
            self.held[i as usize / 64] &= !(1 << (i % 64));
            self.holes.push(i);
        }
    }

    /// The first slot holding a page at or after `from`, wrapping around the ring; the
    /// ring must hold one.
    fn next_held(&self, from: usize) -> usize {
        let mut w = from / 64;
        let mut bits = self.held[w] & (u64::MAX << (from % 64));
        while bits == 0 {
            w = (w + 1) % self.held.len();
            bits = self.held[w];
        }
        w * 64 + bits.trailing_zeros() as usize
    }

    /// Sweeps to the first unreferenced page, clearing bits on the way, and removes it.
    fn victim(&mut self) -> Option<Page> {
        if self.slot.is_empty() {
            return None;
        }
        loop {
            let i = self.next_held(self.hand);
            self.hand = (i + 1) % self.ring.len();
            match self.ring[i] {
                (_, true) => self.ring[i].1 = false,
                (page, _) => {
                    self.remove(page);
                    return Some(page);
                }
            }
        }
    }
}

impl Policy for ClockPolicy {
    fn name(&self) -> &str {
        self.name
    }

    fn sources(&self) -> SourceRequest {
        sampled_with_allocations(self.params.rate)
    }

    fn on_events(&mut self, events: &[Event], ctx: &mut Ctx<'_>) {
        for e in events {
            match *e {
                Event::Alloc { page, tier, .. } => {
                    if tier == TierId::FAST {
                        self.insert(page, false);
                    }
                    self.fresh = Some(page);
                }
                Event::Sample { page, tier, .. } if tier == TierId::FAST => {
                    let referenced = self.slot.get(page).is_some() && self.fresh != Some(page);
                    self.fresh = None;
                    self.insert(page, referenced);
                }
                Event::Sample { page, .. } => {
                    self.fresh = None;
                    if self.admission.needs_room(ctx) {
                        if let Some(victim) = self.victim() {
                            self.admission.demote(ctx, victim);
                        }
                    }
                    self.admission.promote(ctx, page);
                    self.insert(page, false);
                }
                Event::Free { page } => self.remove(page),
                _ => {}
            }
        }
    }

    fn on_tick(&mut self, _telemetry: &Telemetry, _ctx: &mut Ctx<'_>) {}

    fn on_moved(&mut self, results: &[(Migration, MoveStatus)]) {
        let mut failed = Vec::new();
        self.admission.settle(results, |page| failed.push(page));
        for page in failed {
            self.remove(page);
        }
    }

    fn metadata_bytes(&self) -> usize {
        self.ring.capacity() * std::mem::size_of::<(Page, bool)>()
            + self.held.capacity() * 8
            + self.slot.heap_bytes()
            + self.holes.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_chance_spares_referenced_pages() {
        let setup = PolicySetup { fast_pages: 3, pages: 10 };
        let mut c = ClockPolicy::new(ClockParams::default(), &setup).unwrap();
        for p in [1, 2, 3] {
            c.insert(p, false);
        }
        c.insert(1, true); // page 1 referenced
        assert_eq!(c.victim(), Some(2), "1 gets a second chance");
        c.insert(4, false);
        assert_eq!(c.victim(), Some(3));
        assert_eq!(c.victim(), Some(1), "its bit was cleared by the first sweep");
    }

    /// The sweep of a ring with holes, slot by slot: what `victim` must match.
    fn swept(c: &mut ClockPolicy) -> Option<Page> {
        if c.slot.is_empty() {
            return None;
        }
        loop {
            let i = c.hand;
            c.hand = (c.hand + 1) % c.ring.len();
            match c.ring[i] {
                (EMPTY, _) => {}
                (_, true) => c.ring[i].1 = false,
                (page, false) => {
                    c.remove(page);
                    return Some(page);
                }
            }
        }
    }

    #[test]
    fn the_hand_skips_empty_slots_exactly_as_a_slot_by_slot_sweep() {
        // Rings of up to 300 slots (several words of bits), often mostly empty, the hand
        // wrapping around: every victim, the hand and the ring equal the plain sweep's.
        let setup = PolicySetup { fast_pages: 300, pages: 1000 };
        let mut rng = crate::dist::Rng::new(7);
        let mut c = ClockPolicy::new(ClockParams::default(), &setup).unwrap();
        for page in 0..300 {
            c.insert(page, page % 3 == 0);
        }
        for step in 0..40_000 {
            let page = rng.below(400);
            match rng.below(10) {
                0..=3 => c.insert(page, rng.below(2) == 0),
                4..=6 => c.remove(page),
                _ => {
                    let mut plain = c.clone();
                    let want = swept(&mut plain);
                    assert_eq!(c.victim(), want, "step {step}");
                    assert_eq!((c.hand, &c.ring), (plain.hand, &plain.ring), "step {step}");
                }
            }
            let held = c.ring.iter().enumerate().filter(|(_, &(p, _))| p != EMPTY);
            assert!(held.clone().all(|(i, _)| c.held[i / 64] >> (i % 64) & 1 == 1), "step {step}");
            assert_eq!(c.held.iter().map(|w| w.count_ones() as usize).sum::<usize>(), held.count());
        }
        assert!(c.ring.len() >= 300 && c.slot.len() < 100, "a ring of {} slots, {} held", c.ring.len(), c.slot.len());
    }
}
