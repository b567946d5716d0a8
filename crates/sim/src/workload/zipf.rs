//! `zipf`: scrambled Zipf popularity over every page, the papers' standard skewed load
//! (YCSB's request distribution; FreqTier §VII and HybridTier §5 use Zipf 0.99 key
//! popularity). Pages' ranks are scattered over the address space by a fixed
//! permutation, so hot pages are not neighbours.

use tierkit_core::bijection::Bijection;
use tierkit_core::dist::{Rng, Zipf};

use super::{Access, Generate, MlpClass, Stream, Workload, WorkloadSpec};
use crate::error::SimError;

struct ZipfWorkload {
    zipf: Zipf,
    rng: Rng,
    pages: u64,
    perm: Permutation,
}

/// A seeded bijection on `0..n` (one round of [`Bijection`]), so scrambled ranks stay
/// inside the footprint.
#[derive(Clone, Debug)]
pub(crate) struct Permutation(Bijection<1>);

impl Permutation {
    pub(crate) fn new(n: u64, seed: u64) -> Self {
        Self(Bijection::new(n, &mut Rng::new(seed ^ 0x9e37_79b9)))
    }

    /// The image of `i < n`.
    #[inline]
    pub(crate) fn apply(&self, i: u64) -> u64 {
        self.0.apply(i)
    }
}

pub(super) fn build(spec: &WorkloadSpec) -> Result<Box<dyn Workload>, SimError> {
    spec.check_options(&["alpha"])?;
    spec.check_sizes(1)?;
    let alpha = spec.f64_opt("alpha", 0.99, 0.01..=5.0)?;
    Ok(Stream::boxed(
        ZipfWorkload {
            zipf: Zipf::new(spec.pages, alpha)?,
            rng: Rng::new(spec.seed),
            pages: spec.pages,
            perm: Permutation::new(spec.pages, spec.seed),
        },
        spec.accesses,
    ))
}

impl Generate for ZipfWorkload {
    fn pages(&self) -> u64 {
        self.pages
    }

    fn next_access(&mut self) -> Access {
        let rank = self.zipf.sample(&mut self.rng) - 1;
        let word = (self.rng.next_u64() & 63) as u8;
        Access { page: self.perm.apply(rank), word, write: false, class: MlpClass::Default }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::testing::drain_checked;

    #[test]
    fn skewed_deterministic_and_in_range() {
        let spec = WorkloadSpec::new("zipf", 10_000, 200_000, 3);
        let counts = drain_checked(&spec);
        let mut sorted = counts.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        // Zipf 0.99 over 10k: the top 1% of pages take about 45% of accesses.
        let top: u64 = sorted[..100].iter().sum();
        assert!((0.38..0.52).contains(&(top as f64 / 200_000.0)), "{top}");
        // Scrambled: the hottest page is not page 0.
        assert_ne!(counts.iter().position(|&c| c == sorted[0]), Some(0));
    }

    #[test]
    fn permutation_is_a_bijection() {
        for n in [1u64, 2, 7, 1000, 4096] {
            let p = Permutation::new(n, 9);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let j = p.apply(i);
                assert!(j < n && !seen[j as usize]);
                seen[j as usize] = true;
            }
        }
    }

    #[test]
    fn bad_options_are_named() {
        let e = build(&WorkloadSpec::new("zipf", 10, 10, 1).with("alpha", "x")).err().unwrap().to_string();
        assert!(e.contains("alpha") && e.contains("\"x\""), "{e}");
        let e = build(&WorkloadSpec::new("zipf", 10, 10, 1).with("beta", "1")).err().unwrap().to_string();
        assert!(e.contains("beta") && e.contains("alpha"), "{e}");
        assert!(build(&WorkloadSpec::new("zipf", 0, 10, 1)).is_err());
    }
}
