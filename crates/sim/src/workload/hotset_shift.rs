//! `hotset-shift`: a Zipf stream whose hot set changes mid-run, as in HybridTier §2.3.2
//! (CacheLib items under Meta's Zipf popularity; at the 1800 s mark the distribution
//! changes so that 2/3 of the previously hot data is no longer hot). FreqTier §VII-D
//! runs the worst case of the same experiment (every hot item turns cold); this
//! workload follows HybridTier, the Zipf setup with a partial shift.
//!
//! Pages are ranked by popularity (scrambled Zipf, as in `zipf`); the hot set is the
//! `hot_fraction` most popular ranks. At the shift, every hot rank that is not a multiple
//! of 3 (2/3 of the hot set, spread over its whole popularity range, so about 2/3 of its
//! traffic) swaps pages with one of the coldest ranks: the retired pages become the
//! coldest pages and as many previously coldest pages take over their popularity.
//!
//! Options:
//! - `alpha` (default 0.99): the Zipf exponent.
//! - `hot_fraction` (default 0.1, at most 0.5): share of the pages in the hot set (at
//!   least one page).
//! - `shift_at` (default 0.5): when the hot set shifts, as a fraction of the accesses.

use tierkit_core::dist::{Rng, Zipf};

use super::zipf::Permutation;
use super::{Access, Generate, MlpClass, Stream, Workload, WorkloadSpec};
use crate::error::SimError;

struct HotsetShift {
    zipf: Zipf,
    rng: Rng,
    perm: Permutation,
    pages: u64,
    /// Size of the hot set (ranks `0..hot`).
    hot: u64,
    /// Ranks `pages - retired..pages` trade places with the retired hot ranks.
    retired: u64,
    /// Accesses left before the shift.
    before_shift: u64,
}

pub(super) fn build(spec: &WorkloadSpec) -> Result<Box<dyn Workload>, SimError> {
    Ok(Stream::boxed(HotsetShift::new(spec)?, spec.accesses))
}

impl HotsetShift {
    fn new(spec: &WorkloadSpec) -> Result<Self, SimError> {
        spec.check_options(&["alpha", "hot_fraction", "shift_at"])?;
        spec.check_sizes(1)?;
        let alpha = spec.f64_opt("alpha", 0.99, 0.01..=5.0)?;
        let hot_fraction = spec.f64_opt("hot_fraction", 0.1, 0.0..=0.5)?;
        let shift_at = spec.f64_opt("shift_at", 0.5, 0.0..=1.0)?;
        // hot <= round(pages / 2), so hot + retired <= pages: the swapped ranges are disjoint.
        let hot = ((hot_fraction * spec.pages as f64).round() as u64).max(1);
        Ok(Self {
            zipf: Zipf::new(spec.pages, alpha)?,
            rng: Rng::new(spec.seed),
            perm: Permutation::new(spec.pages, spec.seed),
            pages: spec.pages,
            hot,
            retired: hot - hot.div_ceil(3),
            before_shift: (shift_at * spec.accesses as f64).round() as u64,
        })
    }

    /// The rank whose page `rank` uses after the shift.
    #[inline]
    fn shifted(&self, rank: u64) -> u64 {
        let thirds = rank / 3;
        if rank < self.hot && rank > 3 * thirds {
            // The k-th retired rank (k = rank - thirds - 1 = 0, 1, 2, ... for ranks 1, 2,
            // 4, 5, ...) takes the k-th coldest rank, pages - 1 - k.
            self.pages - rank + thirds
        } else if rank >= self.pages - self.retired {
            let k = self.pages - 1 - rank;
            3 * (k / 2) + k % 2 + 1
        } else {
            rank
        }
    }
}

impl Generate for HotsetShift {
    fn pages(&self) -> u64 {
        self.pages
    }

    fn next_access(&mut self) -> Access {
        let mut rank = self.zipf.sample(&mut self.rng) - 1;
        if self.before_shift == 0 {
            rank = self.shifted(rank);
        } else {
            self.before_shift -= 1;
        }
        let word = (self.rng.next_u64() & 63) as u8;
        Access { page: self.perm.apply(rank), word, write: false, class: MlpClass::Default }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::testing::drain_checked;

    /// Per-page counts before and after access `at`.
    fn split_counts(spec: &WorkloadSpec, at: usize) -> (Vec<u64>, Vec<u64>) {
        let mut w = build(spec).unwrap();
        let mut out = Vec::new();
        while w.fill(&mut out, 4096) > 0 {}
        let count = |xs: &[Access]| {
            let mut c = vec![0u64; spec.pages as usize];
            xs.iter().for_each(|a| c[a.page as usize] += 1);
            c
        };
        (count(&out[..at]), count(&out[at..]))
    }

    #[test]
    fn two_thirds_of_the_hot_set_turn_cold() {
        let (pages, accesses) = (10_000u64, 400_000);
        let spec = WorkloadSpec::new("hotset-shift", pages, accesses, 7);
        drain_checked(&spec);
        let (before, after) = split_counts(&spec, 200_000);
        let perm = Permutation::new(pages, 7);
        let sum = |c: &[u64], ranks: &[u64]| ranks.iter().map(|&r| c[perm.apply(r) as usize]).sum::<u64>();
        let kept: Vec<u64> = (0..1000).step_by(3).collect();
        let retired: Vec<u64> = (0..1000).filter(|r| !kept.contains(r)).collect();
        let new: Vec<u64> = (0..retired.len() as u64).map(|k| pages - 1 - k).collect();
        let (rb, ra) = (sum(&before, &retired), sum(&after, &retired));
        let (nb, na) = (sum(&before, &new), sum(&after, &new));
        // The retired pages held about 2/3 of the hot set's traffic; afterwards they get
        // the coldest ranks' share (under 2% of it), and the new pages take over theirs.
        assert!(rb > 60_000 && ra * 50 < rb, "retired: {rb} before, {ra} after");
        assert!(na > 60_000 && nb * 50 < na, "new: {nb} before, {na} after");
        assert!((na as f64 / rb as f64 - 1.0).abs() < 0.05, "{na} vs {rb}");
        let (kb, ka) = (sum(&before, &kept), sum(&after, &kept));
        assert!((ka as f64 / kb as f64 - 1.0).abs() < 0.05, "kept: {kb} before, {ka} after");
        assert!(rb > kb, "the retired 2/3 carry more traffic than the kept third");
    }

    #[test]
    fn shift_at_moves_the_change() {
        let spec = WorkloadSpec::new("hotset-shift", 1000, 20_000, 3).with("shift_at", 0.25);
        let (before, after) = split_counts(&spec, 5000);
        let page1 = Permutation::new(1000, 3).apply(1) as usize;
        assert!(before[page1] > 200 && after[page1] < 15, "{} {}", before[page1], after[page1]);
    }

    #[test]
    fn the_shift_swaps_retired_ranks_with_the_coldest() {
        for pages in (1..40).chain([1000, 1001, 1002]) {
            for fraction in [0.0, 0.1, 0.34, 0.5] {
                let spec = WorkloadSpec::new("hotset-shift", pages, 1, 1).with("hot_fraction", fraction);
                let w = HotsetShift::new(&spec).unwrap();
                for rank in 0..pages {
                    let to = w.shifted(rank);
                    assert!(to < pages && w.shifted(to) == rank, "{pages} {fraction}: {rank} -> {to}");
                    // Moved: the retired 2/3 of the hot ranks and as many coldest ranks.
                    let retired = rank < w.hot && rank / 3 * 3 != rank;
                    assert_eq!(to != rank, retired || rank >= pages - w.retired, "{pages} {fraction}: {rank}");
                }
            }
        }
    }

    #[test]
    fn bad_options_are_named() {
        let spec = WorkloadSpec::new("hotset-shift", 10, 10, 1);
        let e = build(&spec.clone().with("hot_fraction", 0.6)).err().unwrap().to_string();
        assert!(e.contains("hot_fraction") && e.contains("0.5"), "{e}");
        let e = build(&spec.clone().with("shift_at", "late")).err().unwrap().to_string();
        assert!(e.contains("shift_at"), "{e}");
        let e = build(&spec.with("hot_share", 1)).err().unwrap().to_string();
        assert!(e.contains("hot_share") && e.contains("alpha, hot_fraction, shift_at"), "{e}");
    }
}
