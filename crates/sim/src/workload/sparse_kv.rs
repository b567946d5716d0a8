//! `sparse-kv`: a key-value store of small objects whose hot pages are sparse, as M5 §4
//! measures for Redis, Memcached and CacheLib (in 74-86% of their pages at most 16 of
//! the 64 words are ever accessed): a page is hot because of a few hot objects, and
//! migrating it moves mostly cold bytes. M5's hot-word tracker (HWT) tells such pages
//! from dense ones by the `word` of each access.
//!
//! Every page holds `4096 / object_bytes` objects; popularity is Zipf over all of them. Placement spreads the hot objects thinly: the `pages * h` most popular
//! objects (`h` = the objects in `hot_words` words) are dealt `h` at a time, in rank
//! order, to the pages (scattered by a [`Permutation`]), so every page gets `h`
//! consecutive ranks in `hot_words` adjacent words; the remaining objects are dealt
//! round robin into the remaining slots. Every object in a page's other words is thus
//! colder than every hot-band object, and a hot page's accesses nearly all hit its
//! `hot_words` words. Each page starts its slots at its own word offset. Each access is a
//! read of one object (objects are at most one line: one access, its line's `word`).
//!
//! Options:
//! - `object_bytes` (default 64): object size, a power of two from 8 to 64.
//! - `hot_words` (default 2): words per page that hold the page's hot objects (64 makes
//!   every page dense).
//! - `alpha` (default 0.99): the Zipf exponent of object popularity.

use tierkit_core::dist::{Rng, Zipf};

use super::zipf::Permutation;
use super::{Access, Generate, MlpClass, Stream, Workload, WorkloadSpec};
use crate::error::SimError;

struct SparseKv {
    zipf: Zipf,
    rng: Rng,
    perm: Permutation,
    pages: u64,
    /// Hot objects per page, and the first rank outside the hot band (`pages * hot`).
    hot: u64,
    band: u64,
    /// log2 of the objects per word.
    per_word_log: u32,
}

pub(super) fn build(spec: &WorkloadSpec) -> Result<Box<dyn Workload>, SimError> {
    spec.check_options(&["object_bytes", "hot_words", "alpha"])?;
    spec.check_sizes(1)?;
    let object_bytes = spec.u64_opt("object_bytes", 64, 8..=64)?;
    if !object_bytes.is_power_of_two() {
        let owner = format!("workload {}", spec.name);
        return Err(SimError::bad_option(owner, "object_bytes", object_bytes, "a power of two from 8 to 64"));
    }
    let hot_words = spec.u64_opt("hot_words", 2, 1..=64)?;
    let alpha = spec.f64_opt("alpha", 0.99, 0.01..=5.0)?;
    let hot = hot_words * (64 / object_bytes);
    Ok(Stream::boxed(
        SparseKv {
            zipf: Zipf::new(spec.pages * (4096 / object_bytes), alpha)?,
            rng: Rng::new(spec.seed),
            perm: Permutation::new(spec.pages, spec.seed),
            pages: spec.pages,
            hot,
            band: spec.pages * hot,
            per_word_log: (64 / object_bytes).trailing_zeros(),
        },
        spec.accesses,
    ))
}

impl Generate for SparseKv {
    fn pages(&self) -> u64 {
        self.pages
    }

    fn next_access(&mut self) -> Access {
        let rank = self.zipf.sample(&mut self.rng) - 1;
        let (index, slot) = if rank < self.band {
            (rank / self.hot, rank % self.hot)
        } else {
            let cold = rank - self.band;
            (cold % self.pages, self.hot + cold / self.pages)
        };
        let page = self.perm.apply(index);
        let offset = page.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58;
        let word = ((slot >> self.per_word_log) + offset) & 63;
        Access { page, word: word as u8, write: false, class: MlpClass::Default }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::testing::drain_checked;

    /// Per-page, per-word counts of `spec`'s stream.
    fn word_counts(spec: &WorkloadSpec) -> Vec<[u64; 64]> {
        let mut w = build(spec).unwrap();
        let mut counts = vec![[0u64; 64]; spec.pages as usize];
        let mut out = Vec::new();
        while w.fill(&mut out, 4096) > 0 {
            out.drain(..).for_each(|a| counts[a.page as usize][a.word as usize] += 1);
        }
        counts
    }

    /// For the `top` hottest pages: (accesses, distinct words, words with >= 5% of them).
    fn hottest(spec: &WorkloadSpec, top: usize) -> Vec<(u64, usize, usize)> {
        let mut pages: Vec<(u64, usize, usize)> = word_counts(spec)
            .iter()
            .map(|w| {
                let sum = w.iter().sum::<u64>();
                (sum, w.iter().filter(|&&c| c > 0).count(), w.iter().filter(|&&c| c * 20 >= sum).count())
            })
            .collect();
        pages.sort_unstable_by(|a, b| b.cmp(a));
        pages.truncate(top);
        pages
    }

    #[test]
    fn hot_pages_are_sparse() {
        let spec = WorkloadSpec::new("sparse-kv", 4096, 200_000, 6);
        let counts = drain_checked(&spec);
        let hot = hottest(&spec, 41);
        assert_eq!(hot.iter().map(|h| h.0).sum::<u64>(), {
            let mut c = counts;
            c.sort_unstable_by(|a, b| b.cmp(a));
            c[..41].iter().sum::<u64>()
        });
        // The hottest 1% of pages: 2 words carry them, few others are ever touched (M5
        // calls a page sparse at <= 16 of 64 words).
        assert!(hot.iter().all(|&(_, _, busy)| busy == 2), "{hot:?}");
        assert!(hot.iter().map(|h| h.1).sum::<usize>() <= 41 * 16, "{hot:?}");
        // hot_words = 64 makes the same pages dense.
        let dense = hottest(&spec.with("hot_words", 64), 41);
        assert!(dense.iter().all(|&(_, distinct, _)| distinct >= 60), "{dense:?}");
    }

    #[test]
    fn small_objects_share_words_and_offsets_vary() {
        // 16-byte objects: 4 per word, so 2 hot words hold 8 hot objects per page.
        let spec = WorkloadSpec::new("sparse-kv", 1000, 100_000, 8).with("object_bytes", 16);
        drain_checked(&spec);
        let counts = word_counts(&spec);
        let mut busiest: Vec<(u64, usize)> =
            counts.iter().map(|w| (0..64).map(|i| (w[i], i)).max().unwrap()).filter(|b| b.0 > 100).collect();
        assert!(busiest.len() > 10, "{busiest:?}");
        busiest.sort_unstable_by_key(|b| b.1);
        busiest.dedup_by_key(|b| b.1);
        assert!(busiest.len() > 5, "hot words sit at different offsets: {busiest:?}");
        assert!(hottest(&spec, 10).iter().all(|&(_, _, busy)| busy <= 2));
    }

    #[test]
    fn bad_options_are_named() {
        let spec = WorkloadSpec::new("sparse-kv", 10, 10, 1);
        let e = build(&spec.clone().with("object_bytes", 48)).err().unwrap().to_string();
        assert!(e.contains("object_bytes") && e.contains("power of two"), "{e}");
        let e = build(&spec.clone().with("hot_words", 0)).err().unwrap().to_string();
        assert!(e.contains("hot_words"), "{e}");
        let e = build(&spec.with("words", 1)).err().unwrap().to_string();
        assert!(e.contains("object_bytes, hot_words, alpha"), "{e}");
    }
}
