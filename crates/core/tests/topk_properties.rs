//! Count-Min, the M5 top-K tracker and Space-Saving checked against exact counts.

use proptest::prelude::*;
use std::collections::HashMap;
use tierkit_core::dist::{Rng, Zipf};
use tierkit_core::sketches::{CmTopK, CountMinSketch, SpaceSaving};

fn zipf_stream(n_pages: u64, len: usize, seed: u64) -> Vec<u64> {
    let zipf = Zipf::new(n_pages, 0.99).unwrap();
    let mut rng = Rng::new(seed);
    (0..len).map(|_| zipf.sample_scrambled(&mut rng)).collect()
}

fn exact(stream: &[u64]) -> HashMap<u64, u64> {
    let mut m = HashMap::new();
    for &p in stream {
        *m.entry(p).or_default() += 1;
    }
    m
}

fn true_top(truth: &HashMap<u64, u64>, k: usize) -> Vec<u64> {
    let mut v: Vec<_> = truth.iter().map(|(&p, &c)| (c, p)).collect();
    v.sort_unstable_by(|a, b| b.cmp(a));
    v.into_iter().take(k).map(|(_, p)| p).collect()
}

/// Over-estimates stay within ε·N for all but a δ fraction of items, and never under.
#[test]
fn count_min_error_within_epsilon_n_with_probability_one_minus_delta() {
    for (seed, eps, delta) in [(1, 0.001, 0.02), (2, 0.005, 0.05), (3, 0.0005, 0.01)] {
        let stream = zipf_stream(200_000, 300_000, seed);
        let truth = exact(&stream);
        let mut cm = CountMinSketch::with_error(eps, delta).unwrap();
        for &p in &stream {
            cm.increment(p);
        }
        assert_eq!(cm.total(), stream.len() as u64);
        assert!(cm.epsilon() <= eps && cm.delta() <= delta);
        let bound = cm.epsilon() * cm.total() as f64;
        let mut violations = 0;
        for (&p, &c) in &truth {
            let est = cm.estimate(p) as u64;
            assert!(est >= c, "under-count");
            violations += (est as f64 > c as f64 + bound) as usize;
        }
        let rate = violations as f64 / truth.len() as f64;
        assert!(rate <= cm.delta(), "seed {seed}: {rate} of items exceed eps*N, allowed {}", cm.delta());
    }
}

/// M5's HPT at its evaluated size (32K entries, H = 4) finds the true hottest pages of a
/// Zipf stream; a reset starts a fresh epoch.
#[test]
fn m5_tracker_returns_the_true_heavy_hitters() {
    let stream = zipf_stream(1 << 20, 500_000, 9);
    let truth = exact(&stream);
    let mut hpt = CmTopK::m5_hpt(10).unwrap();
    for &p in &stream {
        hpt.record(p);
    }
    let found: Vec<u64> = hpt.top().iter().map(|&(p, _)| p).collect();
    let want = true_top(&truth, 10);
    assert_eq!(found[..5], want[..5], "the five hottest, in order");
    let hits = want.iter().filter(|p| found.contains(p)).count();
    assert!(hits >= 9, "{hits}/10 of the true top-10 found");
    assert!(hpt.top().windows(2).all(|w| w[0].1 >= w[1].1), "sorted");
    hpt.reset();
    assert!(hpt.top().is_empty());
    assert_eq!(hpt.sketch().total(), 0);
}

#[test]
fn space_saving_finds_heavy_hitters() {
    let stream = zipf_stream(1 << 20, 500_000, 4);
    let truth = exact(&stream);
    let mut ss = SpaceSaving::new(1000).unwrap();
    for &p in &stream {
        ss.offer(p);
    }
    let found: Vec<u64> = ss.top(10).iter().map(|e| e.page).collect();
    let want = true_top(&truth, 10);
    let hits = want.iter().filter(|p| found.contains(p)).count();
    assert!(hits >= 9, "{hits}/10");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Space-Saving's guarantees: each monitored count over-estimates by at most its
    /// error, every error is at most the minimum counter, and any page not monitored has
    /// a true count of at most the minimum counter.
    #[test]
    fn space_saving_error_bounds(
        stream in prop::collection::vec(0u64..200, 1..3000),
        capacity in 1usize..64,
    ) {
        let mut ss = SpaceSaving::new(capacity).unwrap();
        let mut truth: HashMap<u64, u64> = HashMap::new();
        for &p in &stream {
            ss.offer(p);
            *truth.entry(p).or_default() += 1;
        }
        let min = ss.min_count();
        for (&page, &c) in &truth {
            match ss.get(page) {
                Some(e) => {
                    prop_assert!(e.count >= c && e.count - e.error <= c, "{:?} truth {}", e, c);
                    prop_assert!(e.error <= min);
                }
                None => prop_assert!(c <= min, "unmonitored page {} count {} > min {}", page, c, min),
            }
        }
        let total: u64 = ss.top(capacity).iter().map(|e| e.count).sum();
        prop_assert_eq!(total, stream.len() as u64, "Space-Saving conserves the stream length");
    }
}
