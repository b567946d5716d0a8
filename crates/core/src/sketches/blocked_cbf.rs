//! The blocked counting Bloom filter (FreqTier §V-C-b, HybridTier §4.2 and Fig. 8).

use super::counters::{self, CounterBits};
use super::sizing;
use super::FrequencySketch;
use crate::error::{nonzero, ParamError};
use crate::hash::{hash_page, mix64, reduce, DEFAULT_SEED};
use crate::Page;

/// One 64-byte cache line of counters.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(64))]
struct Line([u64; 8]);

/// A counting Bloom filter whose `k` counters for a page all sit in one 64-byte cache
/// line: a lookup is one cache access and at most one miss.
///
/// As FreqTier describes (after Caffeine's frequency sketch), part of one hash picks the
/// line and the rest of the hash bits pick the `k` counters inside it (7 bits each for
/// the 128 four-bit counters of a line, 6 for 8-bit, 5 for 16-bit). GET, conservative
/// INCREMENT, `increase` and aging behave exactly as in
/// [`super::CountingBloomFilter`]; the false-positive rate is slightly higher for the
/// same memory ([`sizing::blocked_false_positive_rate`]).
#[derive(Clone, Debug)]
pub struct BlockedCountingBloomFilter {
    lines: Vec<Line>,
    k: u32,
    bits: CounterBits,
    seed: u64,
}

impl BlockedCountingBloomFilter {
    /// A filter with at least `m` counters (rounded up to whole cache lines).
    pub fn new(m: u64, k: u32, bits: CounterBits) -> Result<Self, ParamError> {
        nonzero("m", m)?;
        sizing::check_k(k)?;
        let per_line = 512 / bits.bits() as u64;
        let lines = crate::alloc::filled(m.div_ceil(per_line), "m", m)?;
        Ok(Self { lines, k, bits, seed: DEFAULT_SEED })
    }

    /// A filter sized for `n` pages at false-positive rate `p`, with the same counter
    /// budget as [`super::CountingBloomFilter::with_error_rate`] (HybridTier §4.2).
    pub fn with_error_rate(n: u64, p: f64, k: u32, bits: CounterBits) -> Result<Self, ParamError> {
        Self::new(sizing::counters_for(n, p, k)?, k, bits)
    }

    /// A filter occupying `bytes` bytes of counters (rounded up to a cache line).
    pub fn with_bytes(bytes: u64, k: u32, bits: CounterBits) -> Result<Self, ParamError> {
        nonzero("bytes", bytes)?;
        Self::new(bytes.saturating_mul(8) / bits.bits() as u64, k, bits)
    }

    /// Uses `seed` for hashing instead of the default.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Number of 64-byte lines.
    pub fn lines(&self) -> u64 {
        self.lines.len() as u64
    }

    /// Counters per line (128, 64 or 32).
    pub fn counters_per_line(&self) -> u64 {
        512 / self.bits.bits() as u64
    }

    /// Number of hash functions.
    pub fn hashes(&self) -> u32 {
        self.k
    }

    /// Sets every counter to zero.
    pub fn clear(&mut self) {
        self.lines.fill(Line::default());
    }

    #[inline(always)]
    fn line_of(&self, h: u64) -> usize {
        reduce(h, self.lines.len() as u64) as usize
    }

    /// Reads (and, with `amount > 0`, conservatively raises) the `k` counters of the page
    /// hashed to `h` inside `line`. Monomorphized per counter width (`LOG2` = log2 of the
    /// bits per counter) so all index arithmetic is constant; branch-free, because
    /// whether a counter holds the minimum is unpredictable.
    #[inline(always)]
    fn in_line<const LOG2: u32>(line: &mut [u64; 8], h: u64, k: u32, amount: u32) -> u32 {
        let width = 9 - LOG2; // log2(counters per line)
        let per_word = 6 - LOG2; // log2(counters per word)
        let cmask = (1u64 << (1 << LOG2)) - 1;
        let per_hash = 64 / width; // positions one 64-bit hash provides
        let counter = |line: &[u64; 8], p: u64| {
            let shift = (p & ((1 << per_word) - 1)) << LOG2;
            ((p >> per_word) as usize, shift, (line[(p >> per_word) as usize] >> shift) & cmask)
        };
        // Pass 1: the minimum. Positions come `width` bits at a time from `bits`,
        // re-mixed when a hash runs out (k > per_hash only).
        let first = mix64(h);
        let (mut bits, mut min) = (first, cmask);
        for i in 0..k {
            if i > 0 && i % per_hash == 0 {
                bits = mix64(bits ^ h);
            }
            min = min.min(counter(line, bits & ((1 << width) - 1)).2);
            bits >>= width;
        }
        if amount == 0 {
            return min as u32;
        }
        // Pass 2: raise every counter below the target to it (the same positions).
        let target = min.saturating_add(amount as u64).min(cmask);
        bits = first;
        for i in 0..k {
            if i > 0 && i % per_hash == 0 {
                bits = mix64(bits ^ h);
            }
            let (word, shift, c) = counter(line, bits & ((1 << width) - 1));
            line[word] = (line[word] & !(cmask << shift)) | (c.max(target) << shift);
            bits >>= width;
        }
        target as u32
    }

    /// Runs [`Self::in_line`] for this filter's width, with `k` a compile-time constant
    /// in the papers' configuration (k = 4) so both passes unroll completely.
    #[inline(always)]
    fn dispatch(bits: CounterBits, k: u32, line: &mut [u64; 8], h: u64, amount: u32) -> u32 {
        match (bits, k) {
            (CounterBits::Four, 4) => Self::in_line::<2>(line, h, 4, amount),
            (CounterBits::Four, _) => Self::in_line::<2>(line, h, k, amount),
            (CounterBits::Eight, 4) => Self::in_line::<3>(line, h, 4, amount),
            (CounterBits::Eight, _) => Self::in_line::<3>(line, h, k, amount),
            (CounterBits::Sixteen, 4) => Self::in_line::<4>(line, h, 4, amount),
            (CounterBits::Sixteen, _) => Self::in_line::<4>(line, h, k, amount),
        }
    }

    #[inline(always)]
    fn access(&mut self, page: Page, amount: u32) -> u32 {
        let h = hash_page(page, self.seed);
        let i = self.line_of(h);
        Self::dispatch(self.bits, self.k, &mut self.lines[i].0, h, amount)
    }

    /// Counts one access to each page of `pages`, in order, with the same result as
    /// calling [`FrequencySketch::increment`] on each. Hashes a group of pages ahead and
    /// prefetches their cache lines, so large filters overlap their memory misses.
    pub fn increment_all(&mut self, pages: &[Page]) {
        const AHEAD: usize = 16;
        let mut hashes = [0u64; AHEAD];
        for group in pages.chunks(AHEAD) {
            for (h, &page) in hashes.iter_mut().zip(group) {
                *h = hash_page(page, self.seed);
                crate::prefetch::prefetch(&self.lines[self.line_of(*h)]);
            }
            for &h in &hashes[..group.len()] {
                let i = self.line_of(h);
                Self::dispatch(self.bits, self.k, &mut self.lines[i].0, h, 1);
            }
        }
    }
}

impl FrequencySketch for BlockedCountingBloomFilter {
    #[inline]
    fn prefetch(&self, page: Page) {
        crate::prefetch::prefetch(&self.lines[self.line_of(hash_page(page, self.seed))]);
    }

    #[inline]
    fn get(&self, page: Page) -> u32 {
        let h = hash_page(page, self.seed);
        let mut line = self.lines[self.line_of(h)].0; // a 64-byte copy: reads never write
        Self::dispatch(self.bits, self.k, &mut line, h, 0)
    }

    #[inline]
    fn increase(&mut self, page: Page, amount: u32) -> u32 {
        if amount == 0 {
            return self.get(page);
        }
        self.access(page, amount)
    }

    fn age(&mut self) {
        for line in &mut self.lines {
            counters::halve_all(&mut line.0, self.bits);
        }
    }

    fn max_count(&self) -> u32 {
        self.bits.max()
    }

    fn heap_bytes(&self) -> usize {
        self.lines.capacity() * std::mem::size_of::<Line>()
    }
}
