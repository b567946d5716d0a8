//! DAMON regions as page samples: the rule shared by the damo reader and `tierkit record
//! --via damon`.
//!
//! After each aggregation interval DAMON reports, per region, in how many of its
//! sampling checks the region was found accessed (`k`). It cannot tell a region's pages
//! apart, so every page of a region stands for `k` accesses. Writing every page of every
//! snapshot would make traces of gigabytes for large programs, so the pages take turns:
//! snapshot `n` writes the pages whose number is `n mod turns`, each `k` times. Every
//! page is then written once every `turns` snapshots with its region's count at that
//! time, and a page's share of the trace follows its regions' counts. (The live DAMON
//! source of `tierkit run` visits pages the same way.)
//!
//! A snapshot's samples come in a shuffled order (seeded by the snapshot's index, so a
//! trace is reproducible): in address order they would read as sequential sweeps to a
//! policy that watches for them. They are made one at a time, by a seeded bijection on
//! the snapshot's sample indices, so a snapshot that stands for millions of samples (a
//! damo file of a few hundred bytes can) costs no memory and only the time of the
//! samples taken from it.

use tierkit_core::bijection::Bijection;
use tierkit_core::dist::Rng;

/// Snapshots over which a region's pages take turns by default: a page is written once
/// every 16 snapshots (1.6 s at DAMON's default 100 ms aggregation), so a program whose
/// whole 1 GiB is hot makes about 3.3 M accesses per second of trace.
pub const DAMON_TURNS: u64 = 16;

/// Seed of the per-snapshot shuffles (xored with the snapshot's index).
const SHUFFLE_SEED: u64 = 0x7469_6572_6b69_7464;

/// One DAMON region in pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DamonRegion {
    /// Its first page (virtual address >> 12).
    pub first: u64,
    /// Its length in pages.
    pub pages: u64,
    /// DAMON's count for it (checks that found it accessed).
    pub nr_accesses: u32,
}

/// The page samples snapshot `n` of `regions` stands for (see the
/// [module documentation](self)), shuffled, one at a time.
#[derive(Clone, Debug)]
pub struct SnapshotSamples {
    /// Per region with pages in this turn: the samples before it, its first page in the
    /// turn and its count.
    spans: Vec<(u64, u64, u64)>,
    turns: u64,
    order: Bijection<2>,
    total: u64,
    next: u64,
}

impl SnapshotSamples {
    /// The samples of snapshot `n`; `turns` is at least 1.
    pub fn new(regions: &[DamonRegion], turns: u64, n: u64) -> Self {
        let turns = turns.max(1);
        let turn = n % turns;
        let mut spans = Vec::new();
        let mut total = 0u64;
        for r in regions.iter().filter(|r| r.nr_accesses > 0) {
            let end = r.first.saturating_add(r.pages);
            let first = r.first.saturating_add((turn + turns - r.first % turns) % turns);
            if first >= end {
                continue;
            }
            let pages = (end - 1 - first) / turns + 1;
            spans.push((total, first, u64::from(r.nr_accesses)));
            total = total.saturating_add(pages.saturating_mul(u64::from(r.nr_accesses)));
        }
        let order = Bijection::new(total, &mut Rng::new(SHUFFLE_SEED ^ n));
        Self { spans, turns, order, total, next: 0 }
    }

    /// Samples in the snapshot.
    pub fn total(&self) -> u64 {
        self.total
    }
}

impl Iterator for SnapshotSamples {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        if self.next >= self.total {
            return None;
        }
        let j = self.order.apply(self.next);
        self.next += 1;
        let (before, first, k) = self.spans[self.spans.partition_point(|s| s.0 <= j) - 1];
        Some(first + (j - before) / k * self.turns)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = usize::try_from(self.total - self.next).unwrap_or(usize::MAX);
        (left, Some(left))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(first: u64, pages: u64, nr_accesses: u32) -> DamonRegion {
        DamonRegion { first, pages, nr_accesses }
    }

    #[test]
    fn every_page_takes_its_turn_once_per_cycle_with_its_regions_count() {
        let regions = [region(1000, 37, 3), region(2000, 5, 0), region(3001, 64, 20)];
        let mut seen = std::collections::BTreeMap::<u64, u64>::new();
        for n in 8..16 {
            let out: Vec<u64> = SnapshotSamples::new(&regions, 8, n).collect();
            assert!(out.iter().all(|p| p % 8 == n % 8), "snapshot {n} writes only its turn's pages");
            for p in out {
                *seen.entry(p).or_default() += 1;
            }
        }
        let expect: Vec<(u64, u64)> = (1000..1037).map(|p| (p, 3)).chain((3001..3065).map(|p| (p, 20))).collect();
        assert_eq!(
            seen.into_iter().collect::<Vec<_>>(),
            expect,
            "each page once per cycle, k times; idle regions none"
        );
    }

    #[test]
    fn one_turn_writes_every_page_every_snapshot() {
        let samples = SnapshotSamples::new(&[region(10, 4, 2)], 1, 7);
        assert_eq!(samples.total(), 8);
        let mut out: Vec<u64> = samples.collect();
        out.sort_unstable();
        assert_eq!(out, [10, 10, 11, 11, 12, 12, 13, 13]);
    }

    #[test]
    fn samples_come_shuffled_and_reproducibly() {
        let regions = [region(0, 4096, 1)];
        let a: Vec<u64> = SnapshotSamples::new(&regions, 1, 3).collect();
        let b: Vec<u64> = SnapshotSamples::new(&regions, 1, 3).collect();
        assert_eq!(a, b, "the same snapshot shuffles the same way");
        let ascending = a.windows(2).filter(|w| w[0] < w[1]).count();
        assert!((1500..2600).contains(&ascending), "not in address order: {ascending} of 4095 steps ascend");
    }

    #[test]
    fn a_snapshot_of_a_trillion_samples_is_read_one_sample_at_a_time() {
        // 2^40 pages of 4 KiB (4 PiB) found accessed in 5 checks: no snapshot list could
        // hold its samples.
        let mut samples = SnapshotSamples::new(&[region(1 << 20, 1 << 40, 5)], 16, 3);
        assert_eq!(samples.total(), (1u64 << 40) / 16 * 5);
        let first: Vec<u64> = samples.by_ref().take(1000).collect();
        assert!(first.iter().all(|&p| p % 16 == 3 && ((1 << 20)..(1 << 20) + (1 << 40)).contains(&p)));
        assert_eq!(samples.size_hint().0 as u64, (1u64 << 40) / 16 * 5 - 1000);
    }

    #[test]
    fn regions_at_the_top_of_the_address_space_do_not_overflow() {
        let out: Vec<u64> = SnapshotSamples::new(&[region(u64::MAX - 10, 10, 1)], 4, 1).collect();
        assert!(!out.is_empty() && out.iter().all(|&p| p >= u64::MAX - 10 && p % 4 == 1));
    }
}
