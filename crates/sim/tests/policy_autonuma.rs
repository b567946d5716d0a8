//! AutoNUMA (Linux NUMA balancing, memory-tiering mode) in the simulator: it beats
//! first-touch placement on skewed workloads and on GUPS, and, promoting on recency
//! (FreqTier §II-C, HybridTier §2.3), it moves many pages that are not hot.

use std::sync::{Arc, Mutex};

use tierkit_core::policies::{AutoNumaParams, AutoNumaPolicy, ThresholdParams, ThresholdPolicy};
use tierkit_core::{Ctx, Event, Migration, MoveStatus, Nanos, Page, Policy, SourceRequest, Telemetry, TierId};
use tierkit_sim::engine::{run, RunSpec, Subject};
use tierkit_sim::machine::capacities;
use tierkit_sim::result::RunResult;
use tierkit_sim::workload::WorkloadSpec;

/// Wraps a policy and records the pages it promoted.
struct Recorder<P> {
    inner: P,
    promoted: Arc<Mutex<Vec<Page>>>,
}

impl<P: Policy> Policy for Recorder<P> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn sources(&self) -> SourceRequest {
        self.inner.sources()
    }
    fn tick_interval(&self) -> Nanos {
        self.inner.tick_interval()
    }
    fn on_events(&mut self, events: &[Event], ctx: &mut Ctx<'_>) {
        self.inner.on_events(events, ctx)
    }
    fn on_tick(&mut self, telemetry: &Telemetry, ctx: &mut Ctx<'_>) {
        self.inner.on_tick(telemetry, ctx)
    }
    fn on_moved(&mut self, results: &[(Migration, MoveStatus)]) {
        let mut promoted = self.promoted.lock().unwrap();
        for (m, status) in results {
            if m.to == TierId::FAST && *status == MoveStatus::Moved {
                promoted.push(m.page);
            }
        }
        self.inner.on_moved(results)
    }
    fn metadata_bytes(&self) -> usize {
        self.inner.metadata_bytes()
    }
}

fn spec(workload: WorkloadSpec, ratio: (u64, u64)) -> RunSpec {
    RunSpec::new(workload, ratio)
}

/// The fast tier's capacity in pages.
fn fast_pages(s: &RunSpec) -> u64 {
    capacities(2, s.workload.pages, s.ratio)[0]
}

fn show(r: &RunResult) {
    println!("{:10} hit {:.3} promotions {:7} demotions {:7}", r.policy, r.fast_hit_ratio, r.promotions, r.demotions);
}

fn named(s: &RunSpec, name: &str) -> RunResult {
    let r = run(s, Subject::Named(name.into()), &mut |_| {}).unwrap();
    show(&r);
    r
}

/// Runs `policy`, returning the result and the pages it promoted.
fn recorded<P: Policy + 'static>(s: &RunSpec, policy: P) -> (RunResult, Vec<Page>) {
    let promoted = Arc::new(Mutex::new(Vec::new()));
    let r =
        run(s, Subject::Policy(Box::new(Recorder { inner: policy, promoted: promoted.clone() })), &mut |_| {}).unwrap();
    show(&r);
    let pages = std::mem::take(&mut *promoted.lock().unwrap());
    (r, pages)
}

/// The `n` most accessed pages of the whole run (the static oracle's choice).
fn hottest(spec: &WorkloadSpec, n: u64) -> Vec<bool> {
    let mut w = tierkit_sim::workload::build(spec).unwrap();
    let mut counts = vec![0u64; spec.pages as usize];
    let mut buf = Vec::new();
    while w.fill(&mut buf, 4096) > 0 {
        for a in buf.drain(..) {
            counts[a.page as usize] += 1;
        }
    }
    let mut order: Vec<usize> = (0..counts.len()).collect();
    order.sort_by_key(|&p| std::cmp::Reverse(counts[p]));
    let mut hot = vec![false; counts.len()];
    for &p in order.iter().take(n as usize) {
        hot[p] = true;
    }
    hot
}

#[test]
fn autonuma_beats_first_touch_on_zipf() {
    let s = spec(WorkloadSpec::new("zipf", 20_000, 2_000_000, 7), (1, 16));
    let (none, oracle, r) = (named(&s, "none"), named(&s, "oracle"), named(&s, "autonuma"));
    assert!(r.fast_hit_ratio > 3.0 * none.fast_hit_ratio, "{} vs {}", r.fast_hit_ratio, none.fast_hit_ratio);
    assert!(r.fast_hit_ratio < oracle.fast_hit_ratio);
}

#[test]
fn autonuma_beats_first_touch_on_gups() {
    // GUPS as Colloid runs it: the hot third of the pages fits the fast tier. With 100k
    // pages each page is touched a few times a second, the range AutoNUMA's 1 s hot
    // threshold tells apart (at 20k pages every page faults within the second).
    let s = spec(WorkloadSpec::new("gups", 100_000, 8_000_000, 7), (1, 2));
    let (none, oracle, r) = (named(&s, "none"), named(&s, "oracle"), named(&s, "autonuma"));
    assert!(r.fast_hit_ratio > none.fast_hit_ratio + 0.15, "{} vs {}", r.fast_hit_ratio, none.fast_hit_ratio);
    assert!(r.fast_hit_ratio < oracle.fast_hit_ratio);
}

#[test]
fn recency_promotes_pages_that_are_not_hot() {
    // One-time sequential pollution, and a hot set that moves (FreqTier Fig. 3,
    // HybridTier §2.3): a fault soon after protection is all AutoNUMA asks of a page.
    for (workload, ratio) in [("scan", (1, 4)), ("hotset-shift", (1, 16))] {
        let s = spec(WorkloadSpec::new(workload, 20_000, 2_000_000, 7), ratio);
        let hot = hottest(&s.workload, fast_pages(&s));
        let (_, auto) = recorded(&s, AutoNumaPolicy::new(AutoNumaParams::default()).unwrap());
        let (_, freq) = recorded(&s, ThresholdPolicy::new(ThresholdParams::default(), fast_pages(&s)).unwrap());
        let not_hot = |p: &[Page]| p.iter().filter(|&&p| !hot[p as usize]).count();
        let share = |p: &[Page]| not_hot(p) as f64 / p.len().max(1) as f64;
        println!(
            "{workload}: promoted pages outside the hot set: autonuma {} of {}, threshold {} of {}",
            not_hot(&auto),
            auto.len(),
            not_hot(&freq),
            freq.len()
        );
        assert!(share(&auto) > 0.6, "{workload}");
        assert!(share(&auto) > 2.0 * share(&freq), "{workload}");
        assert!(not_hot(&auto) > not_hot(&freq), "{workload}");
    }
}
