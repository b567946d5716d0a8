//! Bad parameters give typed errors that name the parameter; nothing panics.

use proptest::prelude::*;
use tierkit_core::dist::Zipf;
use tierkit_core::sketches::sizing::counters_for;
use tierkit_core::sketches::{
    BlockedCountingBloomFilter, CmTopK, CountMinSketch, CounterBits, CountingBloomFilter, SpaceSaving, TopKTable,
};
use tierkit_core::InMemory;

#[test]
fn each_bad_parameter_is_named() {
    let four = CounterBits::Four;
    let cases: Vec<(&str, Option<tierkit_core::ParamError>)> = vec![
        ("p", CountingBloomFilter::with_error_rate(100, 0.0, 4, four).err()),
        ("p", CountingBloomFilter::with_error_rate(100, 1.0, 4, four).err()),
        ("p", BlockedCountingBloomFilter::with_error_rate(100, -1.0, 4, four).err()),
        ("p", BlockedCountingBloomFilter::with_error_rate(100, f64::INFINITY, 4, four).err()),
        ("k", CountingBloomFilter::with_error_rate(100, 0.01, 0, four).err()),
        ("k", BlockedCountingBloomFilter::new(100, 0, four).err()),
        ("k", CountingBloomFilter::new(100, 99, four).err()),
        ("n", CountingBloomFilter::with_error_rate(0, 0.01, 4, four).err()),
        ("n", BlockedCountingBloomFilter::with_error_rate(0, 0.01, 4, four).err()),
        ("m", CountingBloomFilter::new(0, 4, four).err()),
        ("m", BlockedCountingBloomFilter::new(0, 4, four).err()),
        ("bytes", CountingBloomFilter::with_bytes(0, 4, four).err()),
        ("bytes", BlockedCountingBloomFilter::with_bytes(0, 4, four).err()),
        ("m", CountingBloomFilter::new(u64::MAX, 4, four).err()),
        ("m", BlockedCountingBloomFilter::with_bytes(u64::MAX, 4, four).err()),
        ("counter_bits", CounterBits::new(3).err()),
        ("counter_bits", CounterBits::new(32).err()),
        ("depth", CountMinSketch::new(0, 10).err()),
        ("width", CountMinSketch::new(4, 0).err()),
        ("width", CountMinSketch::new(4, u64::MAX).err()),
        ("epsilon", CountMinSketch::with_error(0.0, 0.1).err()),
        ("delta", CountMinSketch::with_error(0.1, 1.5).err()),
        ("k", CmTopK::new(4, 100, 0).err()),
        ("k", TopKTable::new(0).err()),
        ("capacity", SpaceSaving::new(0).err()),
        ("n", Zipf::new(0, 0.99).err()),
        ("capacities", InMemory::new(&[]).err()),
    ];
    for (i, (param, err)) in cases.into_iter().enumerate() {
        let err = err.unwrap_or_else(|| panic!("case {i} ({param}) was accepted"));
        assert_eq!(err.param, param, "case {i}: {err}");
        let msg = err.to_string();
        assert!(msg.contains(param) && msg.contains("expected"), "case {i}: message {msg:?}");
    }
}

proptest! {
    /// Any (n, p, k) either sizes a filter or is refused naming one of them; no panic.
    #[test]
    fn sizing_never_panics(n in any::<u64>(), p in any::<f64>(), k in any::<u32>()) {
        match counters_for(n, p, k) {
            Ok(m) => prop_assert!(m >= n && n > 0 && p > 0.0 && p < 1.0 && (1..=16).contains(&k)),
            Err(e) => prop_assert!(["n", "p", "k"].contains(&e.param.as_ref())),
        }
    }

    #[test]
    fn counter_width_is_4_8_or_16(bits in any::<u32>()) {
        let ok = CounterBits::new(bits).is_ok();
        prop_assert_eq!(ok, matches!(bits, 4 | 8 | 16));
    }
}
