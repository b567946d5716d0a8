//! Cache mode at array speed: `lru-cache` and `clock-cache` replayed by the engine itself
//! over dense arrays, instead of an event per access through the policy and the mover.
//!
//! In cache mode those two policies see every access (`SampleRate::Period(1)`) and act
//! on it before the next: a fast-tier access refreshes the page, a slower-tier access
//! demotes a victim and promotes the page. Delivering that as a `Sample` event, a
//! one-move plan and a mover round per access costs several times the decision itself,
//! and the policies' page indexes are hash tables built for sparse live address spaces.
//! Here the same decisions run in one loop over the chunk, with the link and slot arrays
//! indexed by the simulator's dense page ids, and every move still goes through
//! [`Machine::migrate`] in the mover's order (demotion, then promotion, one call each),
//! so placement, move counts and their modeled costs are the policies' own:
//! `tests/cache_mode.rs` checks that a run's result is the policy path's, field for
//! field, apart from the size of the tracking structures.

use tierkit_core::prefetch::prefetch_at;
use tierkit_core::{Memory, MoveStatus, TierId};

use crate::acr::AccessCountRatio;
use crate::machine::Machine;
use crate::workload::Access;

const NIL: u32 = u32::MAX;

/// Accesses ahead of the current one whose placement and links are prefetched.
const AHEAD: usize = 12;
/// Accesses ahead of the current one whose neighbours' links are prefetched (the links
/// themselves arrived since [`AHEAD`]).
const NEAR: usize = 6;

/// What a chunk adds to the run's counters.
pub(crate) struct ChunkCounts<'a> {
    /// Accesses per tier.
    pub per_tier: &'a mut [u64],
    /// Of those, the accesses of the dependent and of the streaming MLP class per tier.
    pub classed: &'a mut [Vec<u64>; 2],
    /// Accesses not served by the fast tier, first touches included.
    pub misses: &'a mut u64,
    /// M5's access-count ratio, when measured.
    pub acr: Option<&'a mut AccessCountRatio>,
}

/// A plain cache over the fast tier.
pub(crate) enum PlainCache {
    Lru(DenseLru),
    Clock(DenseClock),
}

impl PlainCache {
    /// The array-speed replay of the cache policy `name` over `pages` dense page ids, if
    /// it has one.
    pub(crate) fn for_policy(name: &str, pages: u64) -> Option<Self> {
        let n = usize::try_from(pages).ok().filter(|&n| n < NIL as usize)?;
        match name {
            "lru-cache" => Some(Self::Lru(DenseLru::new(n))),
            "clock-cache" => Some(Self::Clock(DenseClock::new(n))),
            _ => None,
        }
    }

    /// Replays `accesses` in order.
    pub(crate) fn run(&mut self, accesses: &[Access], machine: &mut Machine, out: &mut ChunkCounts<'_>) {
        match self {
            Self::Lru(c) => replay(c, accesses, machine, out),
            Self::Clock(c) => replay(c, accesses, machine, out),
        }
    }

    /// Heap bytes of the cache's structures.
    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            Self::Lru(c) => c.links.capacity() * size_of::<[u32; 2]>(),
            Self::Clock(c) => {
                c.ring.capacity() * size_of::<(u32, bool)>()
                    + (c.slot.capacity() + c.holes.capacity()) * size_of::<u32>()
            }
        }
    }
}

/// What a replacement policy decides; the loop in [`replay`] does the placement.
trait Replacement {
    fn prefetch(&self, page: u32);
    /// A second stage, once `page`'s own entry is in the cache: what touching it will
    /// also load (an LRU's neighbours). Nothing by default.
    fn prefetch_near(&self, _page: u32) {}
    /// Prefetches what the next eviction reads and returns its likely victim, whose
    /// placement the caller prefetches. Nothing by default.
    fn prepare_eviction(&self) -> Option<u32> {
        None
    }
    /// A page first touched in the fast tier.
    fn admitted(&mut self, page: u32);
    /// A fast-tier access to a page already there.
    fn hit(&mut self, page: u32);
    /// The page to demote for a promotion, taken out of the cache.
    fn evict(&mut self) -> Option<u32>;
    /// A promoted page, inserted before its move (and removed if the move fails).
    fn insert(&mut self, page: u32);
    fn remove(&mut self, page: u32);
}

fn replay<R: Replacement>(r: &mut R, accesses: &[Access], machine: &mut Machine, out: &mut ChunkCounts<'_>) {
    let mut status = Vec::with_capacity(1);
    for (i, a) in accesses.iter().enumerate() {
        if let Some(ahead) = accesses.get(i + AHEAD) {
            machine.prefetch(ahead.page);
            r.prefetch(ahead.page as u32);
        }
        if let Some(near) = accesses.get(i + NEAR) {
            r.prefetch_near(near.page as u32);
        }
        let page = a.page as u32;
        let (tier, first) = match machine.tier_index(a.page) {
            Some(t) => (t, false),
            None => (machine.first_touch(a.page, true), true),
        };
        out.per_tier[tier as usize] += 1;
        a.class.count(out.classed, tier as usize);
        if tier == 0 {
            if first {
                *out.misses += 1; // a first touch misses even when it lands in the fast tier
                r.admitted(page);
            } else {
                r.hit(page);
            }
            continue;
        }
        *out.misses += 1;
        if let Some(acr) = out.acr.as_deref_mut() {
            acr.slow_access(a.page);
        }
        // The policy's `Admission`: with no free fast page, demote a victim first.
        let victim = if machine.free_pages(TierId::FAST) == 0 { r.evict() } else { None };
        r.insert(page);
        if let Some(v) = victim {
            status.clear();
            machine.migrate(&[u64::from(v)], TierId(1), &mut status);
            if let Some(next) = r.prepare_eviction() {
                machine.prefetch(u64::from(next));
            }
        }
        status.clear();
        machine.migrate(&[a.page], TierId::FAST, &mut status);
        if status[0] == MoveStatus::Moved {
            if let Some(acr) = out.acr.as_deref_mut() {
                acr.promoted(a.page);
            }
        } else {
            r.remove(page);
        }
    }
}

/// LRU: a doubly linked list threaded through an array indexed by page.
pub(crate) struct DenseLru {
    /// `[prev, next]` per page; `NIL` ends the list.
    links: Vec<[u32; 2]>,
    head: u32,
    tail: u32,
}

impl DenseLru {
    fn new(pages: usize) -> Self {
        Self { links: vec![[NIL, NIL]; pages], head: NIL, tail: NIL }
    }

    fn unlink(&mut self, p: u32) {
        let [prev, next] = self.links[p as usize];
        match prev {
            NIL => self.head = next,
            _ => self.links[prev as usize][1] = next,
        }
        match next {
            NIL => self.tail = prev,
            _ => self.links[next as usize][0] = prev,
        }
    }

    fn push_head(&mut self, p: u32) {
        self.links[p as usize] = [NIL, self.head];
        match self.head {
            NIL => self.tail = p,
            h => self.links[h as usize][0] = p,
        }
        self.head = p;
    }

    fn linked(&self, p: u32) -> bool {
        self.head == p || self.links[p as usize][0] != NIL
    }
}

impl Replacement for DenseLru {
    #[inline(always)]
    fn prefetch(&self, page: u32) {
        prefetch_at(&self.links, page as usize);
    }

    #[inline(always)]
    fn prefetch_near(&self, page: u32) {
        if let Some(&[prev, next]) = self.links.get(page as usize) {
            prefetch_at(&self.links, prev as usize);
            prefetch_at(&self.links, next as usize);
        }
    }

    #[inline(always)]
    fn prepare_eviction(&self) -> Option<u32> {
        let t = self.tail;
        let &[prev, _] = self.links.get(t as usize)?;
        prefetch_at(&self.links, prev as usize);
        Some(t)
    }

    fn admitted(&mut self, page: u32) {
        self.push_head(page);
    }

    fn hit(&mut self, page: u32) {
        if self.head == page {
            return;
        }
        if self.linked(page) {
            self.unlink(page);
        }
        self.push_head(page);
    }

    fn evict(&mut self) -> Option<u32> {
        let t = self.tail;
        (t != NIL).then(|| {
            self.unlink(t);
            self.links[t as usize] = [NIL, NIL];
            t
        })
    }

    fn insert(&mut self, page: u32) {
        self.hit(page);
    }

    fn remove(&mut self, page: u32) {
        if self.linked(page) {
            self.unlink(page);
            self.links[page as usize] = [NIL, NIL];
        }
    }
}

/// CLOCK: a ring of pages with referenced bits, a slot per page, freed slots reused
/// last-freed first, as `clock-cache` keeps them.
pub(crate) struct DenseClock {
    ring: Vec<(u32, bool)>,
    slot: Vec<u32>,
    holes: Vec<u32>,
    hand: usize,
    /// Pages in the ring.
    len: usize,
}

impl DenseClock {
    fn new(pages: usize) -> Self {
        Self { ring: Vec::new(), slot: vec![NIL; pages], holes: Vec::new(), hand: 0, len: 0 }
    }

    fn put(&mut self, page: u32, referenced: bool) {
        match self.slot[page as usize] {
            NIL => {
                let i = match self.holes.pop() {
                    Some(i) => {
                        self.ring[i as usize] = (page, referenced);
                        i
                    }
                    None => {
                        self.ring.push((page, referenced));
                        (self.ring.len() - 1) as u32
                    }
                };
                self.slot[page as usize] = i;
                self.len += 1;
            }
            i => self.ring[i as usize].1 |= referenced,
        }
    }
}

impl Replacement for DenseClock {
    #[inline(always)]
    fn prefetch(&self, page: u32) {
        prefetch_at(&self.slot, page as usize);
    }

    /// Allocation does not reference the page (a cache inserts on a miss without the bit).
    fn admitted(&mut self, page: u32) {
        self.put(page, false);
    }

    fn hit(&mut self, page: u32) {
        let referenced = self.slot[page as usize] != NIL;
        self.put(page, referenced);
    }

    fn evict(&mut self) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        loop {
            let i = self.hand;
            self.hand = (self.hand + 1) % self.ring.len();
            match self.ring[i] {
                (NIL, _) => {}
                (_, true) => self.ring[i].1 = false,
                (page, false) => {
                    self.remove(page);
                    return Some(page);
                }
            }
        }
    }

    fn insert(&mut self, page: u32) {
        self.put(page, false);
    }

    fn remove(&mut self, page: u32) {
        let i = std::mem::replace(&mut self.slot[page as usize], NIL);
        if i != NIL {
            self.ring[i as usize] = (NIL, false);
            self.holes.push(i);
            self.len -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lru_order(l: &mut DenseLru) -> Vec<u32> {
        std::iter::from_fn(|| l.evict()).collect()
    }

    #[test]
    fn lru_evicts_least_recent_first() {
        let mut l = DenseLru::new(10);
        for p in [1, 2, 3] {
            l.admitted(p);
        }
        l.hit(1);
        l.insert(4);
        l.remove(3);
        l.remove(3);
        assert_eq!(lru_order(&mut l), vec![2, 1, 4]);
        l.insert(9);
        l.hit(9);
        assert_eq!(lru_order(&mut l), vec![9]);
    }

    #[test]
    fn clock_spares_referenced_pages_once_and_reuses_the_victims_slot() {
        let mut c = DenseClock::new(10);
        for p in [1, 2, 3] {
            c.admitted(p);
        }
        c.hit(1);
        assert_eq!(c.evict(), Some(2), "1 gets a second chance");
        c.insert(4);
        assert_eq!(c.slot[4], 1, "the promoted page takes the victim's slot");
        assert_eq!(c.evict(), Some(3));
        assert_eq!(c.evict(), Some(1), "its bit was cleared by the first sweep");
        assert_eq!(c.evict(), Some(4));
        assert_eq!(c.evict(), None);
    }
}
