//! FreqTier in the simulator: near the static oracle on a skewed workload, and the
//! dynamic tiering intensity of FreqTier §V-B-2 (the sampling rate steps down while
//! the hit ratio is stable, monitoring mode wakes up when the hot set shifts).

use std::sync::{Arc, Mutex};

use tierkit_core::policies::{FreqTierParams, FreqTierPolicy, PolicySetup, ThresholdParams, ThresholdPolicy};
use tierkit_core::{Ctx, Event, Migration, MoveStatus, Policy, SourceRequest, Telemetry, MILLISECOND};
use tierkit_sim::engine::{run, RunSpec, Subject};
use tierkit_sim::machine::capacities;
use tierkit_sim::result::RunResult;
use tierkit_sim::workload::WorkloadSpec;

const PAGES: u64 = 20_000;

fn spec(workload: &str, accesses: u64) -> RunSpec {
    RunSpec::new(WorkloadSpec::new(workload, PAGES, accesses, 7), (1, 16))
}

fn setup() -> PolicySetup {
    PolicySetup { fast_pages: capacities(2, PAGES, (1, 16))[0], pages: PAGES }
}

fn go(spec: &RunSpec, subject: Subject) -> RunResult {
    run(spec, subject, &mut |_| {}).unwrap()
}

fn freqtier(params: FreqTierParams) -> Subject {
    Subject::Policy(Box::new(FreqTierPolicy::new(params, &setup()).unwrap()))
}

/// Mean fast-tier hit ratio over timeline points `range`.
fn hit_ratio(r: &RunResult, range: std::ops::Range<usize>) -> f64 {
    let n = range.len() as f64;
    r.timeline[range].iter().map(|t| t.fast_hit_ratio).sum::<f64>() / n
}

#[test]
fn beats_none_and_nears_the_static_oracle_on_zipf() {
    let s = spec("zipf", 2_000_000);
    let named = |n: &str| go(&s, Subject::Named(n.into()));
    let (none, stat, oracle) = (named("none"), named("static-oracle"), named("oracle"));
    let ft = go(&s, freqtier(FreqTierParams::default()));
    let h = ft.fast_hit_ratio;
    assert!(
        h > none.fast_hit_ratio + 0.5 && ft.throughput > 1.3 * none.throughput,
        "{h} vs none {}",
        none.fast_hit_ratio
    );
    assert!(h >= 0.95 * stat.fast_hit_ratio, "{h} vs static oracle {}", stat.fast_hit_ratio);
    assert!(
        h <= oracle.fast_hit_ratio && ft.throughput <= oracle.throughput,
        "{h} vs oracle {}",
        oracle.fast_hit_ratio
    );
    // Frequency, not recency: about as many migrations as the oracle (LRU makes ~100x).
    assert!(ft.promotions < 2 * oracle.promotions, "{} vs {}", ft.promotions, oracle.promotions);
}

/// FreqTier that records the sampling rate it asks for at every tick.
struct Recorded(FreqTierPolicy, Arc<Mutex<Vec<(u64, f64)>>>);

impl Policy for Recorded {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn sources(&self) -> SourceRequest {
        self.0.sources()
    }
    fn on_events(&mut self, events: &[Event], ctx: &mut Ctx<'_>) {
        self.0.on_events(events, ctx)
    }
    fn on_tick(&mut self, telemetry: &Telemetry, ctx: &mut Ctx<'_>) {
        self.0.on_tick(telemetry, ctx);
        self.1.lock().unwrap().push((telemetry.now, self.0.sample_rate_hz()));
    }
    fn on_moved(&mut self, results: &[(Migration, MoveStatus)]) {
        self.0.on_moved(results)
    }
    fn metadata_bytes(&self) -> usize {
        self.0.metadata_bytes()
    }
}

#[test]
fn recovers_from_a_hotset_shift_and_samples_less_while_stable() {
    // 10M accesses span 30 s of simulated time, the hot set shifting at 15 s. FreqTier
    // judges the hit ratio every minute of hour-long runs; here every 300 ms.
    let s = spec("hotset-shift", 10_000_000);
    let params = FreqTierParams { window: 300 * MILLISECOND, ..Default::default() };
    let rates = Arc::new(Mutex::new(Vec::new()));
    let policy = FreqTierPolicy::new(params, &setup()).unwrap();
    let ft = go(&s, Subject::Policy(Box::new(Recorded(policy, rates.clone()))));
    let (before, after, end) = (hit_ratio(&ft, 40..50), hit_ratio(&ft, 50..51), hit_ratio(&ft, 90..100));
    assert!(after < before - 0.2, "the shift costs hits: {after} vs {before}");
    assert!(end >= before - 0.02, "recovered: {end} vs {before} before the shift");

    // Before the shift the rate stepped down, then monitoring (entered when stable at
    // the lowest rate or, here, when a demotion pass found no cold page) suspended it;
    // after it, monitoring saw the hit ratio change and sampling restarted at 100 kHz.
    let shift = ft.timeline[49].end_ns as u64;
    let rates = rates.lock().unwrap();
    let seen = |from: u64, to: u64, hz: f64| rates.iter().any(|&(t, r)| (from..to).contains(&t) && r == hz);
    for hz in [10_000.0, 0.0] {
        assert!(seen(0, shift, hz), "{hz} Hz before the shift");
    }
    assert_eq!(rates.iter().rev().find(|&&(t, _)| t < shift).unwrap().1, 0.0, "monitoring at the shift");
    assert!(seen(shift, shift + 3_000 * MILLISECOND, 100_000.0), "woken within 3 s");

    // Less tiering CPU than counting the same samples at a fixed 100 kHz.
    let fixed = ThresholdParams { sample_rate_hz: 100_000.0, ..Default::default() };
    let fixed = go(&s, Subject::Policy(Box::new(ThresholdPolicy::new(fixed, setup().fast_pages).unwrap())));
    assert!(
        ft.mechanism_cpu_ns < 0.5 * fixed.mechanism_cpu_ns,
        "{} vs {} ns at a fixed 100 kHz",
        ft.mechanism_cpu_ns,
        fixed.mechanism_cpu_ns
    );
}
