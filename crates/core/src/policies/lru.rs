//! `lru`: least-recently-used tiering (HybridTier §5.2 compares against LRU).
//!
//! The fast tier is managed as an LRU list of the pages known to be there: pages enter
//! at the head when first touched on the fast tier or promoted, and move to the head
//! when sampled. A sampled access served by a slower tier promotes its page at once;
//! when that would leave fewer than `headroom` free fast pages, the tail (least
//! recently sampled) is demoted. With `SampleRate::Period(1)` every access is seen and
//! the fast tier behaves as an LRU cache (`lru-cache`).

use super::admission::{sampled_with_allocations, Admission};
use super::PolicySetup;
use crate::memory::MoveStatus;
use crate::policy::{Ctx, Migration, Policy, SampleRate, SourceRequest};
use crate::sketches::PageTable;
use crate::telemetry::Telemetry;
use crate::types::{Page, TierId};
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

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Node {
    page: Page,
    prev: u32,
    next: u32,
}

/// A doubly linked list over a node arena, indexed by page.
#[derive(Clone, Debug, Default)]
pub(crate) struct LruList {
    nodes: Vec<Node>,
    free: Vec<u32>,
    index: PageTable,
    head: u32,
    tail: u32,
}

impl LruList {
    pub(crate) fn new() -> Self {
        Self { head: NIL, tail: NIL, ..Default::default() }
    }

    fn unlink(&mut self, i: u32) {
        let Node { prev, next, .. } = self.nodes[i as usize];
        match prev {
            NIL => self.head = next,
            p => self.nodes[p as usize].next = next,
        }
        match next {
            NIL => self.tail = prev,
            n => self.nodes[n as usize].prev = prev,
        }
    }

    fn push_head(&mut self, i: u32) {
        self.nodes[i as usize].prev = NIL;
        self.nodes[i as usize].next = self.head;
        if self.head != NIL {
            self.nodes[self.head as usize].prev = i;
        }
        self.head = i;
        if self.tail == NIL {
            self.tail = i;
        }
    }

    /// Moves `page` to the head, inserting it if absent.
    pub(crate) fn touch(&mut self, page: Page) {
        match self.index.get(page) {
            Some(i) => {
                if self.head != i {
                    self.unlink(i);
                    self.push_head(i);
                }
            }
            None => {
                let node = Node { page, prev: NIL, next: NIL };
                let i = match self.free.pop() {
                    Some(i) => {
                        self.nodes[i as usize] = node;
                        i
                    }
                    None => {
                        self.nodes.push(node);
                        (self.nodes.len() - 1) as u32
                    }
                };
                *self.index.entry(page, 0) = i;
                self.push_head(i);
            }
        }
    }

    /// Whether `page` is on the list.
    pub(crate) fn contains(&self, page: Page) -> bool {
        self.index.get(page).is_some()
    }

    /// Pages on the list.
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    /// Inserts `page` at the head if it is absent (FIFO use: a present page keeps its
    /// place).
    pub(crate) fn insert(&mut self, page: Page) {
        if !self.contains(page) {
            self.touch(page);
        }
    }

    /// Removes `page`; false if absent.
    pub(crate) fn remove(&mut self, page: Page) -> bool {
        match self.index.remove(page) {
            Some(i) => {
                self.unlink(i);
                self.free.push(i);
                true
            }
            None => false,
        }
    }

    /// Removes and returns the tail (least recent).
    pub(crate) fn pop_tail(&mut self) -> Option<Page> {
        let page = (self.tail != NIL).then(|| self.nodes[self.tail as usize].page)?;
        self.remove(page);
        Some(page)
    }

    /// The pages from the tail (least recent) towards the head.
    pub(crate) fn tail_first(&self) -> impl Iterator<Item = Page> + '_ {
        let mut at = self.tail;
        std::iter::from_fn(move || {
            let node = self.nodes.get(at as usize)?;
            at = node.prev;
            Some(node.page)
        })
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>() + self.free.capacity() * 4 + self.index.heap_bytes()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_orders_by_recency() {
        let mut l = LruList::new();
        for p in [1, 2, 3, 1, 4] {
            l.touch(p);
        }
        assert!(l.remove(3));
        assert!(!l.remove(3));
        assert_eq!((l.pop_tail(), l.pop_tail(), l.pop_tail(), l.pop_tail()), (Some(2), Some(1), Some(4), None));
        l.touch(9);
        assert_eq!(l.pop_tail(), Some(9));
    }
}
