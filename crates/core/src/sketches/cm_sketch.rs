//! Count-Min sketch and the M5 hot-page / hot-word tracker built on it (M5 §5.1).

use super::topk::TopKTable;
use crate::error::{nonzero, ParamError};
use crate::hash::{hash_page, reduce, DEFAULT_SEED};
use crate::Page;

/// A Count-Min sketch (Cormode and Muthukrishnan, 2005): `depth` rows of `width`
/// counters, one hash per row; every access increments one counter per row and the
/// estimate is the minimum over the rows.
///
/// Guarantee: after `N` counted accesses, an estimate exceeds the true count by more
/// than `ε·N` (ε = e / width) with probability at most δ = e^-depth, and never falls
/// below it. M5's HPT uses 32K entries with depth 4 (§6, Table 4).
#[derive(Clone, Debug)]
pub struct CountMinSketch {
    counts: Vec<u32>,
    depth: usize,
    width: u64,
    seed: u64,
    total: u64,
}

impl CountMinSketch {
    /// A sketch of `depth` rows × `width` counters.
    pub fn new(depth: usize, width: u64) -> Result<Self, ParamError> {
        nonzero("depth", depth as u64)?;
        nonzero("width", width)?;
        if depth > 64 {
            return Err(ParamError::new("depth", depth, "at most 64 rows"));
        }
        let counts = crate::alloc::filled(width.saturating_mul(depth as u64), "width", width)?;
        Ok(Self { counts, depth, width, seed: DEFAULT_SEED, total: 0 })
    }

    /// The smallest sketch with over-estimate at most `epsilon·N` with probability at
    /// least `1 - delta`: width `⌈e/ε⌉`, depth `⌈ln(1/δ)⌉`.
    pub fn with_error(epsilon: f64, delta: f64) -> Result<Self, ParamError> {
        if !(epsilon > 0.0 && epsilon < 1.0) {
            return Err(ParamError::new("epsilon", epsilon, "a value strictly between 0 and 1"));
        }
        if !(delta > 0.0 && delta < 1.0) {
            return Err(ParamError::new("delta", delta, "a value strictly between 0 and 1"));
        }
        let width = (std::f64::consts::E / epsilon).ceil() as u64;
        let depth = (1.0 / delta).ln().ceil().max(1.0) as usize;
        Self::new(depth, width)
    }

    /// ε of the guarantee: e / width.
    pub fn epsilon(&self) -> f64 {
        std::f64::consts::E / self.width as f64
    }

    /// δ of the guarantee: e^-depth.
    pub fn delta(&self) -> f64 {
        (-(self.depth as f64)).exp()
    }

    /// Accesses counted since the last reset (the `N` of the guarantee).
    pub fn total(&self) -> u64 {
        self.total
    }

    #[inline(always)]
    fn cell(&self, row: usize, page: Page) -> usize {
        let h = hash_page(page, self.seed.wrapping_add((row as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)));
        row * self.width as usize + reduce(h, self.width) as usize
    }

    /// Counts `amount` accesses to `page`; returns its new estimate.
    #[inline]
    pub fn increase(&mut self, page: Page, amount: u32) -> u32 {
        self.total += amount as u64;
        let mut est = u32::MAX;
        for row in 0..self.depth {
            let i = self.cell(row, page);
            self.counts[i] = self.counts[i].saturating_add(amount);
            est = est.min(self.counts[i]);
        }
        est
    }

    /// Counts one access to `page`; returns its new estimate.
    #[inline]
    pub fn increment(&mut self, page: Page) -> u32 {
        self.increase(page, 1)
    }

    /// The estimated count of `page`.
    #[inline]
    pub fn estimate(&self, page: Page) -> u32 {
        (0..self.depth).map(|row| self.counts[self.cell(row, page)]).min().unwrap_or(0)
    }

    /// Zeroes every counter (M5 resets its trackers after each query).
    pub fn reset(&mut self) {
        self.counts.fill(0);
        self.total = 0;
    }

    /// Heap bytes allocated.
    pub fn heap_bytes(&self) -> usize {
        self.counts.capacity() * std::mem::size_of::<u32>()
    }
}

/// M5's top-K tracker (HPT over page addresses, HWT over 64-byte word addresses): a
/// Count-Min sketch that estimates each access's count and a sorted top-K table fed with
/// those estimates, both reset when the host queries them at the end of an epoch.
#[derive(Clone, Debug)]
pub struct CmTopK {
    sketch: CountMinSketch,
    table: TopKTable,
}

impl CmTopK {
    /// A tracker with a `depth × width` sketch and a `k`-entry table.
    pub fn new(depth: usize, width: u64, k: usize) -> Result<Self, ParamError> {
        Ok(Self { sketch: CountMinSketch::new(depth, width)?, table: TopKTable::new(k)? })
    }

    /// M5's evaluated HPT: 32K sketch entries in 4 rows (M5 §6 and §7), `k` hot entries.
    pub fn m5_hpt(k: usize) -> Result<Self, ParamError> {
        Self::new(4, 32 * 1024 / 4, k)
    }

    /// Counts one access to `key` (a page, or a word address for the HWT).
    #[inline]
    pub fn record(&mut self, key: Page) {
        let est = self.sketch.increment(key);
        self.table.offer(key, est as u64);
    }

    /// The current top-K, highest estimated count first.
    pub fn top(&self) -> &[(Page, u64)] {
        self.table.entries()
    }

    /// The sketch (for estimates of keys outside the table).
    pub fn sketch(&self) -> &CountMinSketch {
        &self.sketch
    }

    /// Starts a new epoch: clears sketch and table.
    pub fn reset(&mut self) {
        self.sketch.reset();
        self.table.clear();
    }

    /// Heap bytes allocated.
    pub fn heap_bytes(&self) -> usize {
        self.sketch.heap_bytes() + self.table.heap_bytes()
    }
}
