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

/// Zipf distribution over ranks `1..=n` with exponent `s`: P(rank r) ∝ r^-s.
///
/// Sampling is by rejection-inversion (Hörmann and Derflinger, "Rejection-inversion to
/// generate variates from monotone discrete distributions", 1996): O(1) memory and an
/// expected constant number of uniforms per sample, for any `n` (64M pages and beyond).
#[derive(Clone, Debug)]
pub struct Zipf {
    n: f64,
    s: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    squeeze: f64,
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
        let mut z = Self { n: n as f64, s, h_integral_x1: 0.0, h_integral_n: 0.0, squeeze: 0.0 };
        z.h_integral_x1 = z.h_integral(1.5) - 1.0;
        z.h_integral_n = z.h_integral(z.n + 0.5);
        z.squeeze = 2.0 - z.h_integral_inv(z.h_integral(2.5) - z.h(2.0));
        Ok(z)
    }

    /// A rank in `1..=n`; rank 1 is the most popular.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_integral_n + rng.next_f64() * (self.h_integral_x1 - self.h_integral_n);
            let x = self.h_integral_inv(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.squeeze || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }

    /// A page number for the sampled rank: ranks are scattered over the `u64` space by a
    /// bijection, so popular pages are not neighbours (as in YCSB's scrambled Zipf).
    pub fn sample_scrambled(&self, rng: &mut Rng) -> u64 {
        mix64(self.sample(rng))
    }

    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    /// H(x) = (x^(1-s) - 1) / (1-s), continuous at s = 1 (where it is ln x).
    fn h_integral(&self, x: f64) -> f64 {
        let log_x = x.ln();
        helper_expm1_div((1.0 - self.s) * log_x) * log_x
    }

    fn h_integral_inv(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.s)).max(-1.0);
        (helper_ln1p_div(t) * x).exp()
    }
}

/// ln(1+x)/x, continuous at 0.
fn helper_ln1p_div(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x / 3.0)
    }
}

/// (e^x - 1)/x, continuous at 0.
fn helper_expm1_div(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0)
    }
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
    fn zipf_rejects_bad_parameters() {
        assert_eq!(Zipf::new(0, 1.0).unwrap_err().param, "n");
        assert_eq!(Zipf::new(10, 0.0).unwrap_err().param, "s");
        assert_eq!(Zipf::new(10, f64::NAN).unwrap_err().param, "s");
    }
}
