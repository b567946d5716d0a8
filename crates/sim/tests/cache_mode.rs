//! Cache mode: `lru-cache` and `clock-cache` behave exactly like textbook LRU and CLOCK
//! caches of the fast tier's size (the libCacheSim comparison runs in tests/libcachesim).

use std::collections::{BTreeMap, HashMap};

use tierkit_core::policies::PolicySetup;
use tierkit_core::{Ctx, Event, Migration, MoveStatus, Nanos, Policy, SourceRequest, Telemetry};
use tierkit_sim::catalog;
use tierkit_sim::engine::{run, RunSpec, Subject};
use tierkit_sim::machine::capacities;
use tierkit_sim::model::MachineConfig;
use tierkit_sim::workload::{self, Access, WorkloadSpec};

fn stream(spec: &WorkloadSpec) -> Vec<u64> {
    let mut wl = workload::build(spec).unwrap();
    let mut out: Vec<Access> = Vec::new();
    while wl.fill(&mut out, 4096) > 0 {}
    out.iter().map(|a| a.page).collect()
}

fn reference_lru(reqs: &[u64], cap: usize) -> u64 {
    let (mut stamp_of, mut by_stamp) = (HashMap::new(), BTreeMap::new());
    let mut misses = 0;
    for (t, &p) in reqs.iter().enumerate() {
        match stamp_of.insert(p, t) {
            Some(old) => {
                by_stamp.remove(&old);
            }
            None => {
                misses += 1;
                if by_stamp.len() == cap {
                    let (_, victim) = by_stamp.pop_first().unwrap();
                    stamp_of.remove(&victim);
                }
            }
        }
        by_stamp.insert(t, p);
    }
    misses
}

fn reference_clock(reqs: &[u64], cap: usize) -> u64 {
    let mut ring: Vec<(u64, bool)> = Vec::new();
    let mut slot: HashMap<u64, usize> = HashMap::new();
    let (mut hand, mut misses) = (0, 0);
    for &p in reqs {
        if let Some(&i) = slot.get(&p) {
            ring[i].1 = true;
            continue;
        }
        misses += 1;
        if ring.len() < cap {
            slot.insert(p, ring.len());
            ring.push((p, false));
            continue;
        }
        loop {
            let i = hand;
            hand = (hand + 1) % cap;
            if ring[i].1 {
                ring[i].1 = false;
            } else {
                slot.remove(&ring[i].0);
                ring[i] = (p, false);
                slot.insert(p, i);
                break;
            }
        }
    }
    misses
}

fn cache_run(spec: &WorkloadSpec, policy: &str, ratio: (u64, u64)) -> (f64, u64) {
    let run_spec = RunSpec {
        machine: MachineConfig::preset("cxl").unwrap(),
        ratio,
        workload: spec.clone(),
        seed: 1,
        scale: 1,
        follow_clock: true,
        prefault: true, // ignored in cache mode
        cache_mode: true,
        measure_acr: false,
        measure_hot: false,
    };
    let caps = capacities(2, spec.pages, ratio);
    let subject = catalog::subject(policy, &PolicySetup { fast_pages: caps[0], pages: spec.pages }).unwrap();
    let r = run(&run_spec, subject, &mut |_| {}).unwrap();
    (r.miss_ratio, caps[0])
}

#[test]
fn lru_cache_matches_a_reference_lru_exactly() {
    for (alpha, ratio) in [(0.99, (1, 16)), (0.7, (1, 8)), (1.2, (1, 32))] {
        let spec = WorkloadSpec::new("zipf", 20_000, 300_000, 5).with("alpha", alpha);
        let reqs = stream(&spec);
        let (miss_ratio, cap) = cache_run(&spec, "lru-cache", ratio);
        let want = reference_lru(&reqs, cap as usize) as f64 / reqs.len() as f64;
        assert_eq!(miss_ratio, want, "alpha {alpha} ratio {ratio:?}");
    }
}

#[test]
fn clock_cache_matches_a_reference_clock_exactly() {
    for (alpha, ratio) in [(0.99, (1, 16)), (0.8, (1, 8))] {
        let spec = WorkloadSpec::new("zipf", 20_000, 300_000, 6).with("alpha", alpha);
        let reqs = stream(&spec);
        let (miss_ratio, cap) = cache_run(&spec, "clock-cache", ratio);
        let want = reference_clock(&reqs, cap as usize) as f64 / reqs.len() as f64;
        assert_eq!(miss_ratio, want, "alpha {alpha} ratio {ratio:?}");
    }
}

/// The same policy under another name: the engine then drives it through events, plans
/// and the mover, as it drives every other policy.
struct ThroughEvents(Box<dyn Policy>);

impl Policy for ThroughEvents {
    fn name(&self) -> &str {
        "through-events"
    }
    fn sources(&self) -> SourceRequest {
        self.0.sources()
    }
    fn tick_interval(&self) -> Nanos {
        self.0.tick_interval()
    }
    fn horizon(&self) -> Nanos {
        self.0.horizon()
    }
    fn on_events(&mut self, events: &[Event], ctx: &mut Ctx<'_>) {
        self.0.on_events(events, ctx)
    }
    fn on_tick(&mut self, telemetry: &Telemetry, ctx: &mut Ctx<'_>) {
        self.0.on_tick(telemetry, ctx)
    }
    fn on_moved(&mut self, results: &[(Migration, MoveStatus)]) {
        self.0.on_moved(results)
    }
    fn metadata_bytes(&self) -> usize {
        self.0.metadata_bytes()
    }
}

/// A run's result as JSON, without the fields that name the path taken.
fn result_of(spec: &RunSpec, subject: Subject) -> serde_json::Value {
    let mut v = serde_json::to_value(run(spec, subject, &mut |_| {}).unwrap()).unwrap();
    let m = v.as_object_mut().unwrap();
    m.remove("policy");
    m.remove("tracking_bytes");
    v
}

#[test]
fn the_array_replay_gives_the_event_paths_result_field_for_field() {
    let cases = [
        ("lru-cache", WorkloadSpec::new("zipf", 30_000, 200_000, 3).with("alpha", 0.9), (1, 16), false),
        ("lru-cache", WorkloadSpec::new("ycsb-a", 20_000, 150_000, 4), (1, 32), true),
        ("lru-cache", WorkloadSpec::new("gups", 16_384, 150_000, 5), (1, 8), false),
        ("clock-cache", WorkloadSpec::new("zipf", 30_000, 200_000, 3).with("alpha", 0.9), (1, 16), true),
        ("clock-cache", WorkloadSpec::new("hotset-shift", 30_000, 200_000, 6), (1, 8), false),
        // Misses of three MLP classes, each timed at its own parallelism on either path.
        ("lru-cache", WorkloadSpec::new("chase-stream", 20_000, 200_000, 7), (1, 16), false),
    ];
    for (policy, workload, ratio, measure_acr) in cases {
        let spec = RunSpec {
            machine: MachineConfig::preset("cxl").unwrap(),
            ratio,
            workload: workload.clone(),
            seed: 1,
            scale: 1000,
            follow_clock: true,
            prefault: false,
            cache_mode: true,
            measure_acr,
            measure_hot: false,
        };
        let setup = PolicySetup { fast_pages: capacities(2, workload.pages, ratio)[0], pages: workload.pages };
        let Subject::Policy(through) = catalog::subject(policy, &setup).unwrap() else { panic!("{policy}") };
        let direct = result_of(&spec, Subject::Named(policy.into()));
        let events = result_of(&spec, Subject::Policy(Box::new(ThroughEvents(through))));
        let promotions = direct["promotions"].as_u64().unwrap();
        assert!(promotions > 1000, "{policy} on {}: {promotions} misses are too few to compare", workload.name);
        assert_eq!(direct, events, "{policy} on {} at {ratio:?}", workload.name);
    }
}
