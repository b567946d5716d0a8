//! Seeded bijections on `0..n`: shuffles that need no table and can be inverted by
//! nobody, for scattering ids (Zipf ranks over pages, graph vertex ids) and for visiting
//! a range in a random order one element at a time.

use crate::dist::Rng;

/// A seeded bijection on `0..n` of `R` rounds: each round is `x -> x * odd + c` and an
/// xorshift by half the bits, both bijective on the next power of two; values that land
/// at or beyond `n` are mapped again until they fall inside (cycle-walking), which ends
/// because the rounds are a permutation of the power-of-two domain.
#[derive(Clone, Debug)]
pub struct Bijection<const R: usize> {
    n: u64,
    mask: u64,
    shift: u32,
    keys: [(u64, u64); R],
}

impl<const R: usize> Bijection<R> {
    /// A bijection on `0..n` whose round keys are drawn from `rng`, each round's
    /// multiplier (made odd) then its addend.
    pub fn new(n: u64, rng: &mut Rng) -> Self {
        let mask = n.next_power_of_two().max(2) - 1;
        let keys = std::array::from_fn(|_| (rng.next_u64() | 1, rng.next_u64()));
        Self { n, mask, shift: mask.count_ones().div_ceil(2), keys }
    }

    /// The image of `x < n`.
    #[inline]
    pub fn apply(&self, mut x: u64) -> u64 {
        loop {
            for (mul, add) in self.keys {
                x = x.wrapping_mul(mul).wrapping_add(add) & self.mask;
                x ^= x >> self.shift;
            }
            if x < self.n {
                return x;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check<const R: usize>(n: u64) {
        let b = Bijection::<R>::new(n, &mut Rng::new(n ^ 7));
        let mut seen = vec![false; n as usize];
        for x in 0..n {
            let y = b.apply(x);
            assert!(y < n && !std::mem::replace(&mut seen[y as usize], true), "n {n}: {x} -> {y} twice");
        }
    }

    #[test]
    fn every_size_is_a_permutation() {
        for n in [1u64, 2, 3, 7, 1000, 4096, 5000] {
            check::<1>(n);
            check::<2>(n);
        }
    }

    #[test]
    fn two_rounds_scatter_neighbours() {
        let b = Bijection::<2>::new(1 << 16, &mut Rng::new(3));
        let ascending = (0..4095u64).filter(|&x| b.apply(x) < b.apply(x + 1)).count();
        assert!((1700..2400).contains(&ascending), "{ascending} of 4095 steps ascend");
        let near = (0..4095u64).filter(|&x| b.apply(x).abs_diff(b.apply(x + 1)) <= 64).count();
        assert!(near < 40, "{near} of 4095 neighbours land within 64 of each other");
    }
}
