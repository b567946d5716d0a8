//! `gups`: the GUPS microbenchmark as HeMem and Colloid (§2, §5) run it: random updates
//! of small objects where a hot set takes most of them. Colloid's setup is a 72 GB
//! buffer whose random 24 GB region is the hot set, picked with 90% probability.
//!
//! Options:
//! - `hot_fraction` (default 1/3, Colloid's 24 of 72 GB): share of the pages in the hot
//!   set; the hot set keeps at least one page and leaves at least one cold page.
//! - `hot_share` (default 0.9): share of the updates that go, uniformly, to a hot page;
//!   the rest go uniformly to the cold pages (Colloid draws them from the whole buffer,
//!   which gives the hot set 0.9 + 0.1/3; here `hot_share` is exactly the hot set's).
//!
//! Each update is one access: a store to a uniformly random 64-byte word (the
//! read-modify-write misses once, the store's read-for-ownership). Hot pages are
//! scattered over the footprint by a [`Permutation`], not contiguous.

use tierkit_core::dist::Rng;

use super::zipf::Permutation;
use super::{Access, Generate, MlpClass, Stream, Workload, WorkloadSpec};
use crate::error::SimError;

struct Gups {
    rng: Rng,
    perm: Permutation,
    pages: u64,
    hot: u64,
    /// An access is hot when 53 random bits fall below this.
    hot_below: u64,
}

pub(super) fn build(spec: &WorkloadSpec) -> Result<Box<dyn Workload>, SimError> {
    spec.check_options(&["hot_fraction", "hot_share"])?;
    spec.check_sizes(2)?;
    let hot_fraction = spec.f64_opt("hot_fraction", 1.0 / 3.0, 0.0..=1.0)?;
    let hot_share = spec.f64_opt("hot_share", 0.9, 0.0..=1.0)?;
    Ok(Stream::boxed(
        Gups {
            rng: Rng::new(spec.seed),
            perm: Permutation::new(spec.pages, spec.seed),
            pages: spec.pages,
            hot: ((hot_fraction * spec.pages as f64).round() as u64).clamp(1, spec.pages - 1),
            hot_below: (hot_share * (1u64 << 53) as f64) as u64,
        },
        spec.accesses,
    ))
}

impl Generate for Gups {
    fn pages(&self) -> u64 {
        self.pages
    }

    fn next_access(&mut self) -> Access {
        let x = self.rng.next_u64();
        // Hot ranks are 0..hot, cold ones hot..pages; the permutation scatters both.
        let rank = if x >> 11 < self.hot_below {
            self.rng.below(self.hot)
        } else {
            self.hot + self.rng.below(self.pages - self.hot)
        };
        Access { page: self.perm.apply(rank), word: (x & 63) as u8, write: true, class: MlpClass::Default }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::testing::drain_checked;

    #[test]
    fn hot_set_takes_hot_share_uniformly() {
        let (pages, accesses) = (3000, 600_000);
        let spec = WorkloadSpec::new("gups", pages, accesses, 5).with("hot_fraction", 0.1);
        let counts = drain_checked(&spec);
        let perm = Permutation::new(pages, 5);
        let hot: Vec<u64> = (0..300).map(|r| perm.apply(r)).collect();
        let hot_sum: u64 = hot.iter().map(|&p| counts[p as usize]).sum();
        assert!((0.89..0.91).contains(&(hot_sum as f64 / accesses as f64)), "{hot_sum}");
        // Uniform within each set: every hot page ~1800 updates, every cold page ~22.
        let min_hot = hot.iter().map(|&p| counts[p as usize]).min().unwrap();
        let max_cold = (0..pages).filter(|p| !hot.contains(p)).map(|p| counts[p as usize]).max().unwrap();
        assert!(min_hot > 1500 && max_cold < 60, "{min_hot} {max_cold}");
        // Scattered: the hot set is not the first pages.
        assert!(hot.iter().any(|&p| p >= 1500));
    }

    #[test]
    fn defaults_are_colloids_and_updates_are_stores() {
        let spec = WorkloadSpec::new("gups", 900, 90_000, 1);
        let counts = drain_checked(&spec);
        let mut sorted = counts.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let top: u64 = sorted[..300].iter().sum();
        assert!((0.88..0.92).contains(&(top as f64 / 90_000.0)), "{top}");
        let mut out = Vec::new();
        build(&spec).unwrap().fill(&mut out, 1000);
        assert!(out.iter().all(|a| a.write));
        assert!(out.iter().any(|a| a.word > 31) && out.iter().any(|a| a.word < 32));
    }

    #[test]
    fn bad_options_are_named() {
        let e = build(&WorkloadSpec::new("gups", 10, 10, 1).with("hot_share", 2)).err().unwrap().to_string();
        assert!(e.contains("hot_share"), "{e}");
        let e = build(&WorkloadSpec::new("gups", 10, 10, 1).with("alpha", 1)).err().unwrap().to_string();
        assert!(e.contains("alpha") && e.contains("hot_fraction"), "{e}");
        assert!(build(&WorkloadSpec::new("gups", 1, 10, 1)).is_err());
    }
}
