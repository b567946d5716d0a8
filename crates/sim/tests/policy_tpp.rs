//! TPP (ASPLOS '23, §5) in the simulator: it beats first-touch placement on skewed
//! workloads, and its active-LRU promotion filter (§5.3) promotes fewer pages, with less
//! ping-pong, than instant promotion for about the same hit ratio.

use std::sync::{Arc, Mutex};

use tierkit_core::policies::{TppParams, TppPolicy, TppStats};
use tierkit_core::{Ctx, Event, Migration, MoveStatus, Nanos, Policy, SourceRequest, Telemetry};
use tierkit_sim::engine::{run, RunSpec, Subject};
use tierkit_sim::result::RunResult;
use tierkit_sim::workload::WorkloadSpec;

/// Runs a shared TPP so its §5.5 counters can be read after the run.
struct Shared(Arc<Mutex<TppPolicy>>, &'static str);

impl Policy for Shared {
    fn name(&self) -> &str {
        self.1
    }
    fn sources(&self) -> SourceRequest {
        self.0.lock().unwrap().sources()
    }
    fn tick_interval(&self) -> Nanos {
        self.0.lock().unwrap().tick_interval()
    }
    fn on_events(&mut self, events: &[Event], ctx: &mut Ctx<'_>) {
        self.0.lock().unwrap().on_events(events, ctx)
    }
    fn on_tick(&mut self, telemetry: &Telemetry, ctx: &mut Ctx<'_>) {
        self.0.lock().unwrap().on_tick(telemetry, ctx)
    }
    fn on_moved(&mut self, results: &[(Migration, MoveStatus)]) {
        self.0.lock().unwrap().on_moved(results)
    }
    fn metadata_bytes(&self) -> usize {
        self.0.lock().unwrap().metadata_bytes()
    }
}

fn spec(workload: WorkloadSpec, ratio: (u64, u64)) -> RunSpec {
    RunSpec::new(workload, ratio)
}

fn named(s: &RunSpec, name: &str) -> RunResult {
    run(s, Subject::Named(name.into()), &mut |_| {}).unwrap()
}

fn tpp(s: &RunSpec, params: TppParams) -> (RunResult, TppStats) {
    let policy = Arc::new(Mutex::new(TppPolicy::new(params).unwrap()));
    let name = if params.active_lru_filter { "tpp" } else { "tpp-instant" };
    let r = run(s, Subject::Policy(Box::new(Shared(policy.clone(), name))), &mut |_| {}).unwrap();
    let stats = policy.lock().unwrap().stats();
    (r, stats)
}

fn show(r: &RunResult) {
    println!("{:12} hit {:.3} promotions {:7} demotions {:7}", r.policy, r.fast_hit_ratio, r.promotions, r.demotions);
}

#[test]
fn the_active_lru_filter_promotes_less_for_the_same_hits_on_zipf() {
    // 100k pages: most are touched about once a second, so one fault in a scan period
    // says little about a page (at 20k pages every page faults every period).
    let s = spec(WorkloadSpec::new("zipf", 100_000, 4_000_000, 7), (1, 16));
    let (none, oracle) = (named(&s, "none"), named(&s, "oracle"));
    let (filtered, fs) = tpp(&s, TppParams::default());
    let (instant, is) = tpp(&s, TppParams { active_lru_filter: false, ..Default::default() });
    for r in [&none, &oracle, &filtered, &instant] {
        show(r);
    }
    println!("stats tpp {fs:?}\nstats instant {is:?}");
    assert!(filtered.fast_hit_ratio > none.fast_hit_ratio + 0.3, "TPP clearly beats first touch");
    assert!(filtered.fast_hit_ratio < oracle.fast_hit_ratio);
    // §5.3: fewer promotions and less ping-pong, for nearly the same hit ratio.
    assert!(filtered.promotions < instant.promotions * 9 / 10);
    assert!(fs.ping_pong < is.ping_pong);
    assert!(filtered.fast_hit_ratio > 0.95 * instant.fast_hit_ratio);
    // The counters agree with the platform's.
    assert_eq!((fs.promotions, fs.demotions), (filtered.promotions, filtered.demotions));
    assert!(fs.promotion_candidates >= fs.promotions && fs.hint_faults > fs.promotion_candidates);
}

#[test]
fn tpp_beats_first_touch_on_gups() {
    // GUPS (Colloid §2): the hot third of the pages fits the fast tier.
    let s = spec(WorkloadSpec::new("gups", 100_000, 4_000_000, 7), (1, 2));
    let (none, oracle, (r, _)) = (named(&s, "none"), named(&s, "oracle"), tpp(&s, TppParams::default()));
    for r in [&none, &oracle, &r] {
        show(r);
    }
    assert!(r.fast_hit_ratio > none.fast_hit_ratio + 0.2);
    assert!(r.fast_hit_ratio < oracle.fast_hit_ratio);
}
