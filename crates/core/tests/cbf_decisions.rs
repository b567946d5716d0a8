//! HybridTier Table 5: a counting Bloom filter at the papers' sizing agrees with exact
//! per-page counts on at least 99% of migration decisions.

use tierkit_core::dist::{Rng, Zipf};
use tierkit_core::sketches::{BlockedCountingBloomFilter, CounterBits, ExactCounter, FrequencySketch};

#[test]
fn blocked_cbf_agrees_with_exact_counts_on_99_percent_of_promotions() {
    // 1M pages at 1:16: the filter is sized for the 61,681 fast pages (k = 4, p = 1e-3,
    // 4-bit), as HybridTier §4.2 does; exact counts saturate at 15 like the filter.
    let (pages, fast) = (1u64 << 20, (1u64 << 20) / 17);
    let zipf = Zipf::new(pages, 0.99).unwrap();
    let mut rng = Rng::new(21);
    let mut cbf = BlockedCountingBloomFilter::with_error_rate(fast, 1e-3, 4, CounterBits::Four).unwrap();
    let mut exact = ExactCounter::new();
    let threshold = 5; // FreqTier §V-C-a's initial hot threshold
    let (mut decisions, mut agree) = (0u64, 0u64);
    for i in 1..=3_000_000u64 {
        let page = zipf.sample_scrambled(&mut rng);
        let est = cbf.increment(page);
        let truth = exact.increment(page).min(15);
        decisions += 1;
        agree += ((est >= threshold) == (truth >= threshold)) as u64;
        if i % 500_000 == 0 {
            // Aging, as both papers do periodically.
            cbf.age();
            exact.age();
        }
    }
    let rate = agree as f64 / decisions as f64;
    assert!(rate >= 0.99, "agreement {rate}");
}
