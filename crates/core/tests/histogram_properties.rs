//! The capacity-aware hot threshold (MEMTIS; FreqTier §V-C-a; HybridTier §3.1).

use proptest::prelude::*;
use tierkit_core::sketches::HotnessHistogram;

fn histogram_of(counts: &[(u64, u64)]) -> HotnessHistogram {
    let mut h = HotnessHistogram::new();
    for &(count, pages) in counts {
        h.add(count, pages);
    }
    h
}

#[test]
fn crafted_threshold_examples() {
    // 10 pages counted 100+, 50 counted 8..15, 1000 counted once.
    let h = histogram_of(&[(100, 10), (9, 50), (1, 1000)]);
    // Capacity 60 holds exactly the two hottest groups.
    let t = h.threshold(60);
    assert_eq!((t.min_count, t.hot_pages, t.warm_pages), (8, 60, 0), "threshold at the lowest non-empty hot bin");
    // Capacity 59 cannot hold the second group: only the hottest 10 are hot.
    let t = h.threshold(59);
    assert_eq!((t.min_count, t.hot_pages), (64, 10));
    // Room for everything that was accessed; never-accessed pages are never hot.
    let h2 = histogram_of(&[(100, 10), (0, 5000)]);
    assert_eq!(h2.threshold(1_000_000).hot_pages, 10);
    assert_eq!(h2.threshold(1_000_000).min_count, 64);
    assert_eq!(HotnessHistogram::new().threshold(10).hot_pages, 0);
    // Not even the hottest bin fits: nothing is hot.
    let t = histogram_of(&[(1000, 500)]).threshold(100);
    assert_eq!((t.hot_pages, t.min_count), (0, u64::MAX));
    // Huge pages weigh 512 base pages.
    let t = histogram_of(&[(50, 512), (3, 1)]).threshold(512);
    assert_eq!((t.hot_pages, t.min_count), (512, 32));
}

proptest! {
    /// The threshold's hot set fits the capacity, is the weighted sum of the bins at or
    /// above it, and is maximal: lowering the threshold one bin would overflow.
    #[test]
    fn hot_set_fits_and_is_maximal(
        counts in prop::collection::vec((0u64..100_000, 1u64..1000), 0..60),
        capacity in 0u64..20_000,
    ) {
        let h = histogram_of(&counts);
        let t = h.threshold(capacity);
        prop_assert!(t.hot_pages <= capacity);
        let hot: u64 = counts.iter().filter(|&&(c, _)| c > 0 && c >= t.min_count).map(|&(_, p)| p).sum();
        prop_assert_eq!(hot, t.hot_pages);
        prop_assert!(t.bin == HotnessHistogram::bin_of(t.min_count) || t.hot_pages == 0);
        // Maximal: the next non-empty bin below the threshold would overflow.
        let top = if t.hot_pages == 0 { 65 } else { t.bin };
        if let Some(below) = (1..top).rev().find(|&b| h.pages_in(b) > 0) {
            prop_assert!(t.hot_pages + h.pages_in(below) > capacity, "bin {} would also fit", below);
        }
    }

    /// Cooling the histogram equals rebuilding it from halved counts.
    #[test]
    fn cool_equals_halving_counts(counts in prop::collection::vec((0u64..1u64 << 40, 1u64..100), 0..60)) {
        let mut h = histogram_of(&counts);
        h.cool();
        let halved: Vec<_> = counts.iter().map(|&(c, p)| (c / 2, p)).collect();
        prop_assert_eq!(h, histogram_of(&halved));
    }
}
