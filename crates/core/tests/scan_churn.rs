//! Every registered policy, alone and behind `+colloid`, on a platform whose pages come
//! and go: every other tick the top fifth of the address space is freed (a heap shrunk
//! from its top) and allocated again at the next, and a few pages elsewhere come and go
//! each tick, while every page is sampled alike, so no fast page is colder than
//! another. No call of a policy scans more than two passes over the resident units
//! (three behind `+colloid`, whose FindPages takes a scan of its own in the same tick).
//!
//! The simulator's machine never frees a page; this is the scan of [`InMemory`] and of
//! the live process view, which resumes just past the last unit it returned wherever
//! that unit went. Scans are counted by a [`ScanMeter`] whose cap (eight passes) stops a
//! scan that would not end.

use tierkit_core::dist::Rng;
use tierkit_core::policies::{build, PolicySetup, COLLOID_SUFFIX, REGISTRY};
use tierkit_core::{
    Ctx, Event, InMemory, Memory, Mover, PageKind, Plan, Policy, ScanMeter, SourceRequest, Telemetry, TierId,
    TierStats, MILLISECOND,
};

const FAST: u64 = 256;
const PAGES: u64 = 1500;
/// The top of the address space that is freed and allocated again.
const TOP: std::ops::Range<u64> = 1200..PAGES;
const TICKS: u64 = 60;
const CAP_PASSES: u64 = 8;

/// The most units one call scanned over the units resident then: `(units, resident)`.
type Worst = (u64, u64);

/// Runs `policy` through the churn; the call that scanned the most passes.
fn churn(policy: &mut dyn Policy) -> Worst {
    let mut mem = InMemory::new(&[FAST, 10 * PAGES]).unwrap();
    for p in 0..PAGES {
        mem.touch(p);
    }
    let (mut plan, mut sources, mut rng) = (Plan::default(), policy.sources(), Rng::new(11));
    let (mut moved, mut worst) = (Vec::new(), (0, 1));
    let mut metered =
        |mem: &InMemory, plan: &mut Plan, sources: &mut SourceRequest, call: &mut dyn FnMut(&mut Ctx<'_>)| {
            let resident = mem.resident() as u64;
            let meter = ScanMeter::new(mem, CAP_PASSES * resident.max(1));
            call(&mut Ctx { mem: &meter, plan, sources });
            if meter.units() * worst.1 > worst.0 * resident.max(1) {
                worst = (meter.units(), resident);
            }
        };
    for tick in 0..TICKS {
        let mut events = Vec::new();
        let mut free = |mem: &mut InMemory, page| {
            if mem.free(page) {
                events.push(Event::Free { page });
            }
        };
        let alloc = |mem: &mut InMemory, events: &mut Vec<Event>, page| {
            if mem.tier_of(page).is_none() {
                let tier = mem.touch(page).expect("room for every page");
                events.push(Event::Alloc { page, kind: PageKind::Anon, tier });
            }
        };
        if tick % 2 == 0 {
            TOP.for_each(|p| free(&mut mem, p));
        }
        let few: Vec<u64> = (0..8).map(|_| rng.below(TOP.start)).collect();
        few.iter().for_each(|&p| free(&mut mem, p));
        if tick % 2 == 1 {
            TOP.for_each(|p| alloc(&mut mem, &mut events, p));
        }
        few.iter().for_each(|&p| alloc(&mut mem, &mut events, p));
        for _ in 0..3 {
            for page in (0..PAGES).filter(|&p| (p + tick) % 2 == 0) {
                if let Some(tier) = mem.tier_of(page) {
                    events.push(Event::Sample {
                        page,
                        tier,
                        word: None,
                        write: false,
                        time: mem.now(),
                        stall_ns: None,
                    });
                }
            }
        }
        metered(&mem, &mut plan, &mut sources, &mut |ctx| policy.on_events(&events, ctx));
        mem.advance(100 * MILLISECOND);
        let stats = |t: u8| TierStats {
            tier: TierId(t),
            accesses: 1000,
            free_pages: mem.free_pages(TierId(t)),
            capacity_pages: mem.tiers()[t as usize].capacity_pages,
            ..Default::default()
        };
        let telemetry = Telemetry {
            now: mem.now(),
            interval: 100 * MILLISECOND,
            tiers: vec![stats(0), stats(1)],
            ..Default::default()
        };
        metered(&mem, &mut plan, &mut sources, &mut |ctx| policy.on_tick(&telemetry, ctx));
        moved.clear();
        Mover::default().execute(&mut plan, &mut mem, &mut moved);
        policy.on_moved(&moved);
    }
    worst
}

#[test]
fn no_policy_scans_more_than_two_passes_a_call_while_pages_come_and_go() {
    let setup = PolicySetup { fast_pages: FAST, pages: PAGES };
    let mut failed = Vec::new();
    for name in REGISTRY.iter().flat_map(|r| [r.name.to_string(), format!("{}{COLLOID_SUFFIX}", r.name)]) {
        let mut policy = build(&name, &setup).expect("a registered name").expect("defaults are valid");
        let (units, resident) = churn(&mut *policy);
        let bound = if name.ends_with(COLLOID_SUFFIX) { 3 } else { 2 };
        if units > bound * resident {
            let capped = if units >= CAP_PASSES * resident { ", stopped by the meter's cap" } else { "" };
            failed.push(format!("{name}: one call scanned {units} units with {resident} resident{capped}"));
        }
    }
    assert!(failed.is_empty(), "{} policies scanned too much:\n{}", failed.len(), failed.join("\n"));
}
