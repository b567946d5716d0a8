//! Deterministic random numbers for generators, tests and benchmarks.
//!
//! Simulator results must be byte-identical for a given seed on every machine and every
//! dependency version, so tierkit carries its own generator instead of relying on a
//! crate whose streams may change between releases.

use crate::error::ParamError;
use crate::hash::mix64;

/// SplitMix64 (Steele, Lea, Flood, OOPSLA 2014): tiny, fast, passes BigCrush, and its
/// stream is fixed by its definition.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator whose stream is determined by `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 uniformly distributed bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64_splitmix(self.state)
    }

    /// A uniform float in `[0, 1)` with 53 bits of precision.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A uniform integer in `0..n` (`n > 0`).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        crate::hash::reduce(self.next_u64(), n)
    }
}

#[inline(always)]
fn mix64_splitmix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Ranks tabulated exactly in the alias table; rarer ranks are drawn by bucket.
const HEAD: u64 = 1 << 16;

/// Zipf distribution over ranks `1..=n` with exponent `s`: P(rank r) ∝ r^-s.
///
/// Sampling is O(1): an alias table (Walker 1977; Vose 1991) holds the 65536 most
/// popular ranks exactly, plus one entry per geometric bucket `[lo, lo·17/16)` of the
/// rarer ranks, weighted by the bucket's mass; a rank inside a bucket is drawn by
/// rejection from the uniform (acceptance `(r/lo)^-s ≥ (17/16)^-s`, tested against that
/// precomputed bound first so `powf` runs only for the few uniforms above it). Bucket
/// masses use the midpoint rule
/// `Σ_{r=a}^{b} r^-s ≈ ∫_{a-1/2}^{b+1/2} x^-s dx`, whose relative error is below
/// `s(s+1)/(24·a²)` < 1e-9 for `a > 65536`: exact for every practical purpose. Memory:
/// 12 bytes per table entry (≤ 800 KB).
#[derive(Clone, Debug)]
pub struct Zipf {
    s: f64,
    head: usize,
    /// Tail buckets: first rank, last rank, and `(last/first)^-s` (the squeeze).
    buckets: Vec<(u64, u64, f64)>,
    prob: Vec<f64>,
    alias: Vec<u32>,
}

impl Zipf {
    /// Zipf over `1..=n` with exponent `s > 0` (0.99 is YCSB's and the papers' default).
    pub fn new(n: u64, s: f64) -> Result<Self, ParamError> {
        if n == 0 {
            return Err(ParamError::new("n", n, "at least one item"));
        }
        if !(s.is_finite() && s > 0.0) {
            return Err(ParamError::new("s", s, "a finite exponent greater than 0"));
        }
        let head = n.min(HEAD);
        let mut weights: Vec<f64> = (1..=head).map(|r| (r as f64).powf(-s)).collect();
        let mut buckets = Vec::new();
        let mut lo = head + 1;
        while lo <= n {
            let hi = n.min(lo.saturating_add(lo / 16).saturating_sub(1));
            weights.push(midpoint_sum(lo, hi, s));
            buckets.push((lo, hi, (hi as f64 / lo as f64).powf(-s)));
            lo = hi + 1;
        }
        let (prob, alias) = alias_table(&weights);
        Ok(Self { s, head: head as usize, buckets, prob, alias })
    }

    /// A rank in `1..=n`; rank 1 is the most popular.
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        // One uniform picks the entry (high bits) and decides against its alias (low bits).
        let m = rng.next_u64() as u128 * self.prob.len() as u128;
        let i = (m >> 64) as usize;
        let frac = ((m as u64) >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        let j = if frac < self.prob[i] { i } else { self.alias[i] as usize };
        if j < self.head {
            return j as u64 + 1;
        }
        let (lo, hi, squeeze) = self.buckets[j - self.head];
        loop {
            let r = lo + rng.below(hi - lo + 1);
            let u = rng.next_f64();
            if u < squeeze || u < (r as f64 / lo as f64).powf(-self.s) {
                return r;
            }
        }
    }

    /// A page number for the sampled rank: ranks are scattered over the `u64` space by a
    /// bijection, so popular pages are not neighbours (as in YCSB's scrambled Zipf).
    pub fn sample_scrambled(&self, rng: &mut Rng) -> u64 {
        mix64(self.sample(rng))
    }
}

/// `Σ_{r=a}^{b} r^-s` by the midpoint rule (see [`Zipf`]).
fn midpoint_sum(a: u64, b: u64, s: f64) -> f64 {
    let (x0, x1) = (a as f64 - 0.5, b as f64 + 0.5);
    if (s - 1.0).abs() < 1e-12 {
        (x1 / x0).ln()
    } else {
        (x1.powf(1.0 - s) - x0.powf(1.0 - s)) / (1.0 - s)
    }
}

/// Vose's alias table for `weights` (all positive).
fn alias_table(weights: &[f64]) -> (Vec<f64>, Vec<u32>) {
    let n = weights.len();
    let total: f64 = weights.iter().sum();
    let mut p: Vec<f64> = weights.iter().map(|w| w * n as f64 / total).collect();
    let mut alias: Vec<u32> = (0..n as u32).collect();
    let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..n).partition(|&i| p[i] < 1.0);
    while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
        small.pop();
        alias[s] = l as u32;
        p[l] -= 1.0 - p[s];
        if p[l] < 1.0 {
            large.pop();
            small.push(l);
        }
    }
    for i in small.into_iter().chain(large) {
        p[i] = 1.0; // numerical leftovers
    }
    (p, alias)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_deterministic_and_uniform() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let mut sum = 0.0;
        for _ in 0..100_000 {
            let x = a.next_f64();
            assert_eq!(x, b.next_f64());
            assert!((0.0..1.0).contains(&x));
            sum += x;
        }
        assert!((sum / 100_000.0 - 0.5).abs() < 0.01);
    }

    #[test]
    fn zipf_matches_its_pmf() {
        // Compare the empirical frequency of the top ranks with the exact pmf.
        let n = 1000u64;
        let s = 0.99;
        let z = Zipf::new(n, s).unwrap();
        let norm: f64 = (1..=n).map(|r| (r as f64).powf(-s)).sum();
        let mut rng = Rng::new(1);
        let draws = 400_000;
        let mut counts = vec![0u32; n as usize + 1];
        for _ in 0..draws {
            let r = z.sample(&mut rng);
            assert!((1..=n).contains(&r));
            counts[r as usize] += 1;
        }
        for r in [1usize, 2, 3, 10, 100] {
            let expected = draws as f64 * (r as f64).powf(-s) / norm;
            let got = counts[r] as f64;
            assert!((got - expected).abs() < 5.0 * expected.sqrt() + 1.0, "rank {r}: {got} vs {expected}");
        }
    }

    #[test]
    fn zipf_tail_buckets_carry_their_mass() {
        // n = 1M: ranks above 65536 come from buckets; check their total mass and the
        // relative frequency of two tail ranges against the exact pmf.
        let (n, s) = (1u64 << 20, 0.99);
        let z = Zipf::new(n, s).unwrap();
        let w = |a: u64, b: u64| (a..=b).map(|r| (r as f64).powf(-s)).sum::<f64>();
        let total = w(1, n);
        let mut rng = Rng::new(2);
        let draws = 2_000_000;
        let (mut tail, mut low_tail, mut high_tail) = (0u64, 0u64, 0u64);
        for _ in 0..draws {
            let r = z.sample(&mut rng);
            assert!((1..=n).contains(&r));
            tail += (r > 65536) as u64;
            low_tail += (100_000..200_000).contains(&r) as u64;
            high_tail += (900_000..1_000_000).contains(&r) as u64;
        }
        for (got, want) in [
            (tail, w(65537, n) / total),
            (low_tail, w(100_000, 199_999) / total),
            (high_tail, w(900_000, 999_999) / total),
        ] {
            let expected = want * draws as f64;
            assert!((got as f64 - expected).abs() < 5.0 * expected.sqrt(), "{got} vs {expected}");
        }
    }

    #[test]
    fn zipf_rejects_bad_parameters() {
        assert_eq!(Zipf::new(0, 1.0).unwrap_err().param, "n");
        assert_eq!(Zipf::new(10, 0.0).unwrap_err().param, "s");
        assert_eq!(Zipf::new(10, f64::NAN).unwrap_err().param, "s");
    }
}
