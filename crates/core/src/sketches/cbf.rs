//! The standard counting Bloom filter (FreqTier §V-A, HybridTier §4.2).

use super::counters::{self, CounterBits};
use super::sizing::{self, MAX_K};
use super::FrequencySketch;
use crate::error::{nonzero, ParamError};
use crate::hash::{hash_page, mix64, reduce, DEFAULT_SEED};
use crate::Page;

/// A counting Bloom filter: `m` small counters shared by all pages, `k` hash functions.
///
/// GET is the minimum of the page's `k` counters; INCREMENT raises only the counters that
/// hold that minimum (conservative update), so an estimate never falls below the true
/// count until aging or saturation. The `k` positions come from one 64-bit hash by double
/// hashing (Kirsch and Mitzenmacher, 2006), so a lookup costs one hash but up to `k`
/// cache misses: see [`super::BlockedCountingBloomFilter`] for the one-miss variant.
#[derive(Clone, Debug)]
pub struct CountingBloomFilter {
    words: Vec<u64>,
    m: u64,
    k: u32,
    bits: CounterBits,
    seed: u64,
}

impl CountingBloomFilter {
    /// A filter with exactly `m` counters.
    pub fn new(m: u64, k: u32, bits: CounterBits) -> Result<Self, ParamError> {
        nonzero("m", m)?;
        sizing::check_k(k)?;
        let per_word = 1u64 << bits.per_word_log2();
        let words = crate::alloc::filled(m.div_ceil(per_word), "m", m)?;
        Ok(Self { words, m, k, bits, seed: DEFAULT_SEED })
    }

    /// A filter sized for `n` pages at false-positive rate `p` (HybridTier §4.2 formula,
    /// see [`sizing::counters_for`]). The papers' default is `(fast-tier pages, 0.001, 4,
    /// CounterBits::Four)`.
    pub fn with_error_rate(n: u64, p: f64, k: u32, bits: CounterBits) -> Result<Self, ParamError> {
        Self::new(sizing::counters_for(n, p, k)?, k, bits)
    }

    /// A filter occupying `bytes` bytes of counters.
    pub fn with_bytes(bytes: u64, k: u32, bits: CounterBits) -> Result<Self, ParamError> {
        nonzero("bytes", bytes)?;
        Self::new(bytes.saturating_mul(8) / bits.bits() as u64, k, bits)
    }

    /// Uses `seed` for hashing instead of the default (independent filters over the same
    /// pages should use different seeds). Clears nothing.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Number of counters.
    pub fn counters(&self) -> u64 {
        self.m
    }

    /// Number of hash functions.
    pub fn hashes(&self) -> u32 {
        self.k
    }

    /// Counter width.
    pub fn counter_bits(&self) -> CounterBits {
        self.bits
    }

    /// Sets every counter to zero.
    pub fn clear(&mut self) {
        self.words.fill(0);
    }

    #[inline(always)]
    fn indices(&self, page: Page, out: &mut [usize; MAX_K]) -> usize {
        let h1 = hash_page(page, self.seed);
        let h2 = mix64(h1) | 1;
        for (i, slot) in out.iter_mut().enumerate().take(self.k as usize) {
            *slot = reduce(h1.wrapping_add((i as u64).wrapping_mul(h2)), self.m) as usize;
        }
        self.k as usize
    }
}

impl FrequencySketch for CountingBloomFilter {
    #[inline]
    fn get(&self, page: Page) -> u32 {
        let mut idx = [0usize; MAX_K];
        let k = self.indices(page, &mut idx);
        counters::min_of(&self.words, &idx[..k], self.bits)
    }

    #[inline]
    fn increase(&mut self, page: Page, amount: u32) -> u32 {
        let mut idx = [0usize; MAX_K];
        let k = self.indices(page, &mut idx);
        counters::conservative_add(&mut self.words, &idx[..k], self.bits, amount)
    }

    fn age(&mut self) {
        counters::halve_all(&mut self.words, self.bits);
    }

    fn max_count(&self) -> u32 {
        self.bits.max()
    }

    fn heap_bytes(&self) -> usize {
        self.words.capacity() * std::mem::size_of::<u64>()
    }
}
