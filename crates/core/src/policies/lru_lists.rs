//! Least-recently-used lists of pages: doubly linked over one node arena, with one page
//! index for all the lists a policy keeps (TPP's active and inactive lists, ARC's four).
//! A page is on at most one list; its index entry names the list and the node, so moving
//! a page from one list to another's head is one lookup and a relink, where separate
//! lists would delete it from one index and insert it into another.

use crate::sketches::PageTable;
use crate::types::Page;

const NIL: u32 = u32::MAX;
/// An index entry is the node's index below this bit and the list's number above it.
const LIST_SHIFT: u32 = 30;
const NODE_MASK: u32 = (1 << LIST_SHIFT) - 1;
/// The most lists one [`LruLists`] keeps.
const MAX_LISTS: usize = 4;

#[derive(Clone, Copy, Debug)]
struct Node {
    page: Page,
    prev: u32,
    next: u32,
}

#[derive(Clone, Copy, Debug)]
struct Ends {
    head: u32,
    tail: u32,
    len: usize,
}

const EMPTY: Ends = Ends { head: NIL, tail: NIL, len: 0 };

/// Up to four LRU lists sharing one arena and one index; see the module documentation.
#[derive(Clone, Debug)]
pub(crate) struct LruLists {
    nodes: Vec<Node>,
    free: Vec<u32>,
    index: PageTable,
    ends: [Ends; MAX_LISTS],
    lists: usize,
}

impl LruLists {
    /// `lists` empty lists, numbered from 0.
    pub(crate) fn new(lists: usize) -> Self {
        assert!((1..=MAX_LISTS).contains(&lists), "1 to {MAX_LISTS} lists, not {lists}");
        Self { nodes: Vec::new(), free: Vec::new(), index: PageTable::new(), ends: [EMPTY; MAX_LISTS], lists }
    }

    fn split(entry: u32) -> (usize, u32) {
        ((entry >> LIST_SHIFT) as usize, entry & NODE_MASK)
    }

    fn unlink(&mut self, list: usize, i: u32) {
        let Node { prev, next, .. } = self.nodes[i as usize];
        let ends = &mut self.ends[list];
        match prev {
            NIL => ends.head = next,
            p => self.nodes[p as usize].next = next,
        }
        match next {
            NIL => ends.tail = prev,
            n => self.nodes[n as usize].prev = prev,
        }
        ends.len -= 1;
    }

    fn push_head(&mut self, list: usize, i: u32) {
        let ends = &mut self.ends[list];
        self.nodes[i as usize].prev = NIL;
        self.nodes[i as usize].next = ends.head;
        if ends.head != NIL {
            self.nodes[ends.head as usize].prev = i;
        }
        ends.head = i;
        if ends.tail == NIL {
            ends.tail = i;
        }
        ends.len += 1;
    }

    /// Moves `page` to the head of `list`, from whichever list holds it, inserting it
    /// if no list does.
    pub(crate) fn touch(&mut self, list: usize, page: Page) {
        debug_assert!(list < self.lists, "list {list} of {}", self.lists);
        let entry = self.index.entry(page, NIL);
        if *entry == NIL {
            let node = Node { page, prev: NIL, next: NIL };
            let i = match self.free.pop() {
                Some(i) => {
                    self.nodes[i as usize] = node;
                    i
                }
                None => {
                    assert!(self.nodes.len() <= NODE_MASK as usize, "more than 2^30 pages on LRU lists");
                    self.nodes.push(node);
                    (self.nodes.len() - 1) as u32
                }
            };
            *entry = (list as u32) << LIST_SHIFT | i;
            self.push_head(list, i);
        } else {
            let (from, i) = Self::split(*entry);
            if from != list {
                *entry = (list as u32) << LIST_SHIFT | i;
            }
            self.relink(from, list, i);
        }
    }

    /// Moves `page` to the head of `list` if a list holds it; false if none does.
    pub(crate) fn move_to(&mut self, list: usize, page: Page) -> bool {
        debug_assert!(list < self.lists, "list {list} of {}", self.lists);
        let Some(entry) = self.index.get_mut(page) else { return false };
        let (from, i) = Self::split(*entry);
        *entry = (list as u32) << LIST_SHIFT | i;
        self.relink(from, list, i);
        true
    }

    /// Moves node `i` from list `from` to the head of list `to`.
    fn relink(&mut self, from: usize, to: usize, i: u32) {
        if from != to || self.ends[to].head != i {
            self.unlink(from, i);
            self.push_head(to, i);
        }
    }

    /// The list holding `page`, if any.
    pub(crate) fn list_of(&self, page: Page) -> Option<usize> {
        self.index.get(page).map(|e| Self::split(e).0)
    }

    /// Pages on `list`.
    pub(crate) fn len(&self, list: usize) -> usize {
        self.ends[list].len
    }

    /// Puts `page` at the head of `list` if no list holds it (FIFO use: a present page
    /// keeps its place).
    pub(crate) fn insert(&mut self, list: usize, page: Page) {
        if self.list_of(page).is_none() {
            self.touch(list, page);
        }
    }

    /// Removes `page` from the list holding it; returns that list.
    pub(crate) fn remove(&mut self, page: Page) -> Option<usize> {
        let (list, i) = Self::split(self.index.remove(page)?);
        self.unlink(list, i);
        self.free.push(i);
        Some(list)
    }

    /// Removes and returns the tail (least recent) of `list`.
    pub(crate) fn pop_tail(&mut self, list: usize) -> Option<Page> {
        let tail = self.ends[list].tail;
        let page = (tail != NIL).then(|| self.nodes[tail as usize].page)?;
        self.remove(page);
        Some(page)
    }

    /// The pages of `list` from the tail (least recent) towards the head.
    pub(crate) fn tail_first(&self, list: usize) -> impl Iterator<Item = Page> + '_ {
        let mut at = self.ends[list].tail;
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

/// One LRU list: [`LruLists`] with a single list.
#[derive(Clone, Debug)]
pub(crate) struct LruList(LruLists);

impl Default for LruList {
    fn default() -> Self {
        Self::new()
    }
}

impl LruList {
    pub(crate) fn new() -> Self {
        Self(LruLists::new(1))
    }

    /// Moves `page` to the head, inserting it if absent.
    pub(crate) fn touch(&mut self, page: Page) {
        self.0.touch(0, page);
    }

    /// Whether `page` is on the list.
    pub(crate) fn contains(&self, page: Page) -> bool {
        self.0.list_of(page).is_some()
    }

    /// Pages on the list.
    pub(crate) fn len(&self) -> usize {
        self.0.len(0)
    }

    /// Inserts `page` at the head if it is absent (FIFO use: a present page keeps its
    /// place).
    pub(crate) fn insert(&mut self, page: Page) {
        self.0.insert(0, page);
    }

    /// Removes `page`; false if absent.
    pub(crate) fn remove(&mut self, page: Page) -> bool {
        self.0.remove(page).is_some()
    }

    /// Removes and returns the tail (least recent).
    pub(crate) fn pop_tail(&mut self) -> Option<Page> {
        self.0.pop_tail(0)
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.0.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::Rng;

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

    /// Separate vectors, most recent first: what the lists must hold after any history.
    fn model_touch(model: &mut [Vec<Page>], list: usize, page: Page) {
        for l in model.iter_mut() {
            l.retain(|&p| p != page);
        }
        model[list].insert(0, page);
    }

    #[test]
    fn shared_lists_move_pages_between_them_like_separate_lists() {
        let mut rng = Rng::new(11);
        let mut lists = LruLists::new(3);
        let mut model: Vec<Vec<Page>> = vec![Vec::new(); 3];
        for step in 0..20_000 {
            let page = rng.below(200);
            let list = rng.below(3) as usize;
            match rng.below(7) {
                0 => {
                    let held = model.iter().position(|l| l.contains(&page));
                    assert_eq!(lists.remove(page), held, "step {step}");
                    if let Some(l) = held {
                        model[l].retain(|&p| p != page);
                    }
                }
                1 => assert_eq!(lists.pop_tail(list), model[list].pop(), "step {step}"),
                2 => {
                    if model.iter().all(|l| !l.contains(&page)) {
                        model[list].insert(0, page);
                    }
                    lists.insert(list, page);
                }
                3 => {
                    let held = model.iter().any(|l| l.contains(&page));
                    if held {
                        model_touch(&mut model, list, page);
                    }
                    assert_eq!(lists.move_to(list, page), held, "step {step}");
                }
                _ => {
                    model_touch(&mut model, list, page);
                    lists.touch(list, page);
                }
            }
            assert_eq!(lists.list_of(page), model.iter().position(|l| l.contains(&page)), "step {step}");
        }
        for (i, want) in model.iter().enumerate() {
            let mut got: Vec<Page> = lists.tail_first(i).collect();
            got.reverse();
            assert_eq!(&got, want, "list {i}");
            assert_eq!(lists.len(i), want.len());
        }
    }
}
