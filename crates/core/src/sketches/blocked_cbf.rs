//! The blocked counting Bloom filter (FreqTier §V-C-b, HybridTier §4.2 and Fig. 8).

use super::counters::{self, CounterBits};
use super::sizing::{self, MAX_K};
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

    /// The line of `page` and the positions of its `k` counters inside that line.
    #[inline(always)]
    fn locate(&self, page: Page, out: &mut [usize; MAX_K]) -> (usize, usize) {
        let h = hash_page(page, self.seed);
        let line = reduce(h, self.lines.len() as u64) as usize;
        let width = 9 - self.bits.log2(); // log2(counters per line)
        let mask = (1u64 << width) - 1;
        let mut bits = mix64(h);
        let mut left = 64;
        for slot in out.iter_mut().take(self.k as usize) {
            if left < width {
                bits = mix64(bits ^ h);
                left = 64;
            }
            *slot = (bits & mask) as usize;
            bits >>= width;
            left -= width;
        }
        (line, self.k as usize)
    }
}

impl FrequencySketch for BlockedCountingBloomFilter {
    #[inline]
    fn get(&self, page: Page) -> u32 {
        let mut idx = [0usize; MAX_K];
        let (line, k) = self.locate(page, &mut idx);
        counters::min_of(&self.lines[line].0, &idx[..k], self.bits)
    }

    #[inline]
    fn increase(&mut self, page: Page, amount: u32) -> u32 {
        let mut idx = [0usize; MAX_K];
        let (line, k) = self.locate(page, &mut idx);
        counters::conservative_add(&mut self.lines[line].0, &idx[..k], self.bits, amount)
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
