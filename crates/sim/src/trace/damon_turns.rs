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
//! A snapshot's samples are shuffled (seeded by the snapshot's index, so a trace is
//! reproducible): in address order they would read as sequential sweeps to a policy
//! that watches for them.

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

/// Appends to `out` the page samples snapshot `n` of `regions` stands for (see the
/// [module documentation](self)), shuffled; `turns` is at least 1.
pub fn snapshot_samples(regions: &[DamonRegion], turns: u64, n: u64, out: &mut Vec<u64>) {
    let turns = turns.max(1);
    let (turn, before) = (n % turns, out.len());
    for r in regions.iter().filter(|r| r.nr_accesses > 0) {
        let end = r.first.saturating_add(r.pages);
        let mut page = r.first + (turn + turns - r.first % turns) % turns;
        while page < end {
            out.extend(std::iter::repeat_n(page, r.nr_accesses as usize));
            page = page.saturating_add(turns);
        }
    }
    let made = &mut out[before..];
    let mut rng = Rng::new(SHUFFLE_SEED ^ n);
    for i in (1..made.len()).rev() {
        made.swap(i, rng.below(i as u64 + 1) as usize);
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
            let mut out = Vec::new();
            snapshot_samples(&regions, 8, n, &mut out);
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
        let mut out = vec![99];
        snapshot_samples(&[region(10, 4, 2)], 1, 7, &mut out);
        assert_eq!(out[0], 99, "what was there stays");
        out[1..].sort_unstable();
        assert_eq!(out[1..], [10, 10, 11, 11, 12, 12, 13, 13]);
    }

    #[test]
    fn samples_come_shuffled_and_reproducibly() {
        let regions = [region(0, 4096, 1)];
        let (mut a, mut b) = (Vec::new(), Vec::new());
        snapshot_samples(&regions, 1, 3, &mut a);
        snapshot_samples(&regions, 1, 3, &mut b);
        assert_eq!(a, b, "the same snapshot shuffles the same way");
        let ascending = a.windows(2).filter(|w| w[0] < w[1]).count();
        assert!((1500..2600).contains(&ascending), "not in address order: {ascending} of 4095 steps ascend");
    }

    #[test]
    fn regions_at_the_top_of_the_address_space_do_not_overflow() {
        let mut out = Vec::new();
        snapshot_samples(&[region(u64::MAX - 10, 10, 1)], 4, 1, &mut out);
        assert!(!out.is_empty() && out.iter().all(|&p| p >= u64::MAX - 10 && p % 4 == 1));
    }
}
