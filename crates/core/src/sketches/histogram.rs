//! Log2-binned hotness histogram with a capacity-aware threshold (MEMTIS; FreqTier
//! §V-C-a's dynamic hot threshold and HybridTier §3.1's capacity-aware frequency
//! threshold).

/// Number of bins: bin 0 holds count 0, bin `b ≥ 1` holds counts in `[2^(b-1), 2^b)`.
pub const BINS: usize = 65;

/// Pages (weighted: a 2 MiB huge page can weigh 512) per log2 bin of access count.
///
/// Policies keep it current as counts change (`add`, `remove`, `moved`) and read the
/// threshold that makes the hot set fit the fast tier. Halving every count moves each
/// page exactly one bin down, so [`cool`](Self::cool) keeps the histogram exact without
/// visiting pages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HotnessHistogram {
    bins: [u64; BINS],
}

/// The hot threshold chosen by [`HotnessHistogram::threshold`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HotThreshold {
    /// Pages in bins `>= bin` are hot: the lowest non-empty bin of the hot set.
    /// `BINS` when the hot set is empty (nothing accessed, or the hottest bin alone
    /// overflows the capacity).
    pub bin: usize,
    /// The smallest count that is hot: `2^(bin-1)`.
    pub min_count: u64,
    /// Weighted pages in the hot set; at most the capacity asked for.
    pub hot_pages: u64,
    /// Weighted pages in the bin just below (MEMTIS's warm set).
    pub warm_pages: u64,
}

impl Default for HotnessHistogram {
    fn default() -> Self {
        Self { bins: [0; BINS] }
    }
}

impl HotnessHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Self::default()
    }

    /// The bin of `count`.
    #[inline]
    pub fn bin_of(count: u64) -> usize {
        (64 - count.leading_zeros()) as usize
    }

    /// Adds `pages` pages with access count `count`.
    #[inline]
    pub fn add(&mut self, count: u64, pages: u64) {
        self.bins[Self::bin_of(count)] += pages;
    }

    /// Removes `pages` pages with access count `count` (saturating at an empty bin).
    #[inline]
    pub fn remove(&mut self, count: u64, pages: u64) {
        let b = &mut self.bins[Self::bin_of(count)];
        *b = b.saturating_sub(pages);
    }

    /// Records that `pages` pages went from count `old` to count `new`.
    #[inline]
    pub fn moved(&mut self, old: u64, new: u64, pages: u64) {
        if Self::bin_of(old) != Self::bin_of(new) {
            self.remove(old, pages);
            self.add(new, pages);
        }
    }

    /// Applies the halving of every count: each bin moves one down, bin 1 joins bin 0.
    pub fn cool(&mut self) {
        self.bins[0] += self.bins[1];
        for b in 1..BINS - 1 {
            self.bins[b] = self.bins[b + 1];
        }
        self.bins[BINS - 1] = 0;
    }

    /// Weighted pages in bin `b`.
    pub fn pages_in(&self, b: usize) -> u64 {
        self.bins.get(b).copied().unwrap_or(0)
    }

    /// Weighted pages counted.
    pub fn total(&self) -> u64 {
        self.bins.iter().sum()
    }

    /// Empties the histogram.
    pub fn clear(&mut self) {
        self.bins = [0; BINS];
    }

    /// The threshold whose hot set (pages in bins at or above it) is the largest that
    /// still fits in `capacity_pages`, placed at the lowest non-empty bin of that set so
    /// that pages of counts between it and the next lower non-empty bin are not
    /// counted hot for free. Pages never accessed (bin 0) are never hot.
    pub fn threshold(&self, capacity_pages: u64) -> HotThreshold {
        let mut hot = 0u64;
        let mut bin = BINS;
        for b in (1..BINS).rev() {
            if hot + self.bins[b] > capacity_pages {
                break;
            }
            hot += self.bins[b];
            if self.bins[b] > 0 {
                bin = b; // the lowest non-empty bin: empty bins below add nothing
            }
        }
        HotThreshold {
            bin,
            min_count: if bin >= BINS { u64::MAX } else { 1u64 << (bin - 1) },
            hot_pages: hot,
            warm_pages: self.pages_in(bin - 1),
        }
    }
}
