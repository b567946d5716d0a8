//! Sizing and expected error of counting Bloom filters.
//!
//! HybridTier §4.2 sizes its filters with the Bloom-filter calculator formula it cites
//! (Hurst, \[30\]): `r = -k / ln(1 - p^(1/k))` counters per item and `m = ceil(n · r)`.
//! (The paper prints `exp(-log(p)/k)`; the sign is a typo — `p^(1/k) = exp(ln(p)/k)` is
//! the formula of the cited calculator, and the only one for which `m` is finite.)
//! HybridTier and FreqTier set `k = 4`, `p = 0.001` and `n` = the fast tier's pages.

use crate::error::{nonzero, ParamError};

/// Largest number of hash functions a filter accepts.
pub const MAX_K: usize = 16;

/// Checks `k` (number of hash functions).
pub(crate) fn check_k(k: u32) -> Result<u32, ParamError> {
    if k == 0 || k as usize > MAX_K {
        Err(ParamError::new("k", k, "between 1 and 16 hash functions"))
    } else {
        Ok(k)
    }
}

/// Counters needed to hold `n` items at false-positive rate `p` with `k` hashes.
pub fn counters_for(n: u64, p: f64, k: u32) -> Result<u64, ParamError> {
    nonzero("n", n)?;
    if !(p > 0.0 && p < 1.0) {
        return Err(ParamError::new("p", p, "an error rate strictly between 0 and 1"));
    }
    check_k(k)?;
    let r = -(k as f64) / (1.0 - p.powf(1.0 / k as f64)).ln();
    let m = (n as f64 * r).ceil();
    if m >= (1u64 << 48) as f64 {
        return Err(ParamError::new("n", n, "a size whose filter fits in memory (< 2^48 counters)"));
    }
    Ok(m as u64)
}

/// The classic false-positive rate of a Bloom filter with `m` counters, `n` items and
/// `k` hashes: `(1 - e^(-kn/m))^k`. For a counting filter this is the probability that a
/// page never inserted reads a non-zero count.
pub fn false_positive_rate(m: u64, n: u64, k: u32) -> f64 {
    (1.0 - (-(k as f64) * n as f64 / m as f64).exp()).powi(k as i32)
}

/// False-positive rate of a blocked filter (Putze, Sanders, Singler, "Cache-, hash- and
/// space-efficient Bloom filters", 2007): the load of a block is Poisson with mean
/// `n / blocks`, and within a block of `c` counters each item sets `k` positions.
pub fn blocked_false_positive_rate(blocks: u64, counters_per_block: u64, n: u64, k: u32) -> f64 {
    let lambda = n as f64 / blocks as f64;
    let miss = 1.0 - 1.0 / counters_per_block as f64;
    let upper = (lambda + 12.0 * lambda.sqrt() + 30.0).ceil() as u64;
    let mut pois = (-lambda).exp(); // P(load = 0)
    let mut fp = 0.0;
    for i in 0..=upper {
        if i > 0 {
            pois *= lambda / i as f64;
        }
        fp += pois * (1.0 - miss.powf((k as u64 * i) as f64)).powi(k as i32);
    }
    fp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hybridtier_default_is_about_20_counters_per_page() {
        // k = 4, p = 0.001: p^(1/4) = 0.1778, r = 4 / -ln(0.8222) = 20.43.
        let m = counters_for(1_000_000, 0.001, 4).unwrap();
        assert!((20_400_000..20_500_000).contains(&m), "{m}");
        // And the filter sized so meets the target error rate.
        assert!((false_positive_rate(m, 1_000_000, 4) - 0.001).abs() < 1e-5);
    }

    #[test]
    fn invalid_parameters_are_named() {
        assert_eq!(counters_for(0, 0.01, 4).unwrap_err().param, "n");
        for p in [0.0, 1.0, -0.5, 2.0, f64::NAN] {
            assert_eq!(counters_for(10, p, 4).unwrap_err().param, "p");
        }
        assert_eq!(counters_for(10, 0.01, 0).unwrap_err().param, "k");
        assert_eq!(counters_for(10, 0.01, 17).unwrap_err().param, "k");
        assert_eq!(counters_for(u64::MAX, 0.01, 4).unwrap_err().param, "n");
    }

    #[test]
    fn blocked_rate_exceeds_standard_but_stays_close() {
        let n = 100_000;
        let m = counters_for(n, 0.01, 4).unwrap();
        let std = false_positive_rate(m, n, 4);
        let blocked = blocked_false_positive_rate(m / 128, 128, n, 4);
        assert!(blocked > std && blocked < 2.0 * std, "{blocked} vs {std}");
    }
}
