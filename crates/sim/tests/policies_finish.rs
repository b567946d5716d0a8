//! Every policy finishes every cell: each registered policy, alone and behind `+colloid`,
//! runs adversarial cells (a tiny fast tier, a fast tier whose pages are all equally hot,
//! a hot set that overfills the fast tier so no fast page is demotable, pages allocated
//! during the run, the 1,025-page shape of the report of an endless HybridTier scan),
//! and no call of a policy scans more than two passes over the resident pages (three
//! behind `+colloid`, whose FindPages takes one more scan of its own in the same tick).
//!
//! The scans are counted through a [`ScanMeter`] around the simulator's memory. Its cap
//! (eight passes) stops a scan that would not end, and the count shows how far it went.

use std::sync::{Arc, Mutex};

use tierkit_core::policies::{build, PolicySetup, COLLOID_SUFFIX, REGISTRY};
use tierkit_core::{Ctx, Event, Migration, MoveStatus, Nanos, Policy, ScanMeter, SourceRequest, Telemetry};
use tierkit_sim::engine::{run, RunSpec, Subject};
use tierkit_sim::machine::capacities;
use tierkit_sim::workload::WorkloadSpec;

/// Passes over the resident pages that the meter lets a call scan before it stops it.
const CAP_PASSES: u64 = 8;

/// The call that scanned the most units for the pages resident then.
#[derive(Clone, Copy, Debug, Default)]
struct Worst {
    units: u64,
    calls: u64,
    resident: u64,
    what: &'static str,
}

impl Worst {
    fn passes(&self) -> f64 {
        self.units as f64 / self.resident.max(1) as f64
    }
}

/// A policy whose memory is metered in every call.
struct Metered {
    inner: Box<dyn Policy>,
    worst: Arc<Mutex<Worst>>,
}

impl Metered {
    fn metered(&mut self, what: &'static str, ctx: &mut Ctx<'_>, call: impl FnOnce(&mut dyn Policy, &mut Ctx<'_>)) {
        let mem = ctx.mem;
        let resident: u64 = mem.tiers().iter().map(|t| t.capacity_pages.saturating_sub(mem.free_pages(t.id))).sum();
        let meter = ScanMeter::new(mem, CAP_PASSES * resident.max(1));
        call(&mut *self.inner, &mut Ctx { mem: &meter, plan: ctx.plan, sources: ctx.sources });
        let mut worst = self.worst.lock().unwrap();
        let this = Worst { units: meter.units(), calls: meter.calls(), resident, what };
        if this.units > 0 && this.passes() > worst.passes() {
            *worst = this;
        }
    }
}

impl Policy for Metered {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn sources(&self) -> SourceRequest {
        self.inner.sources()
    }

    fn tick_interval(&self) -> Nanos {
        self.inner.tick_interval()
    }

    fn non_exclusive(&self) -> bool {
        self.inner.non_exclusive()
    }

    fn on_events(&mut self, events: &[Event], ctx: &mut Ctx<'_>) {
        self.metered("on_events", ctx, |p, ctx| p.on_events(events, ctx));
    }

    fn on_tick(&mut self, telemetry: &Telemetry, ctx: &mut Ctx<'_>) {
        self.metered("on_tick", ctx, |p, ctx| p.on_tick(telemetry, ctx));
    }

    fn on_moved(&mut self, results: &[(Migration, MoveStatus)]) {
        self.inner.on_moved(results);
    }

    fn metadata_bytes(&self) -> usize {
        self.inner.metadata_bytes()
    }
}

/// A cell: its name and its run.
fn cells() -> Vec<(&'static str, RunSpec)> {
    // Scale 10,000: each generated access stands for 10,000 misses, so 200,000 accesses
    // span seconds of the workload's time, tens of ticks.
    let cell = |workload: WorkloadSpec, ratio, prefault| {
        let mut spec = RunSpec::new(workload, ratio);
        (spec.scale, spec.prefault) = (10_000, prefault);
        spec
    };
    let zipf = |pages, alpha: f64| WorkloadSpec::new("zipf", pages, 200_000, 3).with("alpha", alpha);
    vec![
        ("tiny fast tier (30 of 3,000 pages)", cell(zipf(3_000, 0.99), (1, 99), true)),
        ("every page equally hot", cell(zipf(3_000, 0.01), (1, 3), true)),
        (
            "a uniform hot set twice the fast tier: no fast page colder than another",
            cell(
                WorkloadSpec::new("gups", 3_000, 200_000, 3).with("hot_fraction", 0.5).with("hot_share", 1.0),
                (1, 3),
                true,
            ),
        ),
        ("pages allocated during the run", cell(WorkloadSpec::new("hotset-shift", 3_000, 200_000, 3), (1, 8), false)),
        ("1,025 pages at 1:16", cell(zipf(1_025, 0.99), (1, 16), true)),
    ]
}

#[test]
fn no_policy_scans_more_than_two_passes_a_call_in_any_cell() {
    let names = REGISTRY.iter().flat_map(|r| [r.name.to_string(), format!("{}{COLLOID_SUFFIX}", r.name)]);
    let names: Vec<String> = names.collect();
    let mut failed = Vec::new();
    for (cell, spec) in cells() {
        let pages = spec.workload.pages;
        let setup = PolicySetup { fast_pages: capacities(2, pages, spec.ratio)[0], pages };
        for name in &names {
            let worst = Arc::new(Mutex::new(Worst::default()));
            let inner = build(name, &setup).expect("a registered name").expect("defaults are valid");
            let policy = Metered { inner, worst: Arc::clone(&worst) };
            run(&spec, Subject::Policy(Box::new(policy)), &mut |_| {}).expect("the cell runs");
            let w = *worst.lock().unwrap();
            let bound = if name.ends_with(COLLOID_SUFFIX) { 3.0 } else { 2.0 };
            if w.passes() > bound {
                failed.push(format!(
                    "{name} on {cell}: one {} scanned {} units in {} calls with {} resident ({:.1} passes{})",
                    w.what,
                    w.units,
                    w.calls,
                    w.resident,
                    w.passes(),
                    if w.units >= CAP_PASSES * w.resident { ", stopped by the meter's cap" } else { "" },
                ));
            }
        }
    }
    assert!(failed.is_empty(), "{} policy-cells scanned too much:\n{}", failed.len(), failed.join("\n"));
}
