//! Unit tests of tierkit's policy, driven by hand against an `InMemory`.

use super::*;
use crate::policies::{LedgerParams, StreamParams};
use crate::policy::SampleRate;
use crate::telemetry::TierStats;
use crate::types::MILLISECOND;
use crate::{InMemory, Memory, Mover, Plan};

/// Accesses in a tick that make every sampled page worth its migration (a cost model,
/// as the simulator and PEBS give).
const COSTED: u64 = 1 << 30;

/// A policy driven by hand against an [`InMemory`], 100 ms per tick.
struct Rig {
    mem: InMemory,
    policy: TierkitPolicy,
    sources: SourceRequest,
    plan: Plan,
}

impl Rig {
    /// `fast` fast pages, the first `used` taken by pages `0..used`; `hot` pages
    /// from 1000 on the slow tier.
    fn new(params: TierkitParams, fast: u64, used: u64, hot: u64) -> Self {
        let mut mem = InMemory::new(&[fast, 10_000]).unwrap();
        for p in 0..fast {
            mem.touch(p);
        }
        for p in 1000..1000 + hot {
            mem.touch(p);
        }
        for p in used..fast {
            mem.free(p);
        }
        let policy = TierkitPolicy::new(params, &PolicySetup { fast_pages: fast, pages: fast + hot }).unwrap();
        Self { mem, sources: policy.sources(), policy, plan: Plan::default() }
    }

    /// `times` samples of each of `pages`; then the mover runs.
    fn sample(&mut self, pages: impl Iterator<Item = Page> + Clone, times: usize) {
        let tier = |p| self.mem.tier_of(p).unwrap_or(TierId(1));
        let events: Vec<Event> = (0..times)
            .flat_map(|_| pages.clone())
            .map(|page| Event::Sample { page, tier: tier(page), word: None, write: false, time: 0, stall_ns: None })
            .collect();
        self.policy.on_events(&events, &mut Ctx { mem: &self.mem, plan: &mut self.plan, sources: &mut self.sources });
        self.run_mover();
    }

    fn run_mover(&mut self) {
        let mut moved = Vec::new();
        Mover::default().execute(&mut self.plan, &mut self.mem, &mut moved);
        self.policy.on_moved(&moved);
    }

    /// A tick whose interval saw `accesses` accesses; then the mover runs.
    fn tick(&mut self, accesses: u64) {
        self.mem.advance(100 * MILLISECOND);
        let stats = TierStats { tier: TierId(1), accesses, ..Default::default() };
        let t = Telemetry { now: self.mem.now(), tiers: vec![stats], ..Default::default() };
        self.policy.on_tick(&t, &mut Ctx { mem: &self.mem, plan: &mut self.plan, sources: &mut self.sources });
        self.run_mover();
    }

    fn fast(&self, pages: std::ops::Range<Page>) -> bool {
        pages.into_iter().all(|p| self.mem.tier_of(p) == Some(TierId::FAST))
    }
}

#[test]
fn hot_slow_pages_are_promoted_at_once_while_there_is_room() {
    let mut rig = Rig::new(open_ledger(), 100, 50, 20);
    rig.sample(1000..1010, 1);
    assert!(!rig.fast(1000..1001), "one sample shows no reuse");
    rig.sample(1000..1010, 1);
    assert!(rig.fast(1000..1010));
    assert_eq!(rig.mem.free_pages(TierId::FAST), 40);
    assert_eq!(rig.policy.count(1000), 2);
    assert_eq!(rig.sources.samples, Some(Sampling::new(100_000.0)), "a constant rate");
}

#[test]
fn with_the_fast_tier_full_the_tick_demotes_cold_pages_from_its_cursor_for_the_hottest_candidates() {
    let mut rig = Rig::new(open_ledger(), 100, 100, 20);
    rig.sample(0..50, 3); // the first half of the fast tier is hot
    rig.sample(1000..1010, 4);
    rig.sample(1010..1020, 2);
    assert!(!rig.fast(1000..1001), "no room: candidates wait for the tick");
    rig.tick(COSTED);
    // Threshold 2 fits: 70 pages counted. Nothing allocates, so the headroom is the
    // 0.2% floor (1 page, demoting to 2): 20 candidates + 2 free = 22 cold pages (from
    // 50 on) go, every candidate comes in.
    assert_eq!(rig.policy.hot_threshold(), 2);
    assert!(rig.fast(0..50) && rig.fast(1000..1020) && rig.fast(72..100));
    assert!((50..72).all(|p| rig.mem.tier_of(p) == Some(TierId(1))));
    assert_eq!(rig.mem.free_pages(TierId::FAST), 2);
}

#[test]
fn without_a_cost_model_only_candidates_clearly_above_the_threshold_push_pages_out() {
    // Threshold 2, a count's noise there sqrt(4) = 2: with the default margin of one
    // noise width candidates need 4, with two 6.
    for (margin, marginal_count) in [(1.0, 3), (2.0, 5)] {
        let mut rig = Rig::new(TierkitParams { exchange_margin: margin, ..open_ledger() }, 100, 100, 30);
        rig.sample(0..50, 3);
        rig.sample(1000..1010, 10); // far above the threshold
        rig.sample(1010..1020, 2); // at it: within a count's noise of the cold pages
        rig.sample(1020..1030, marginal_count); // above it, but within the margin
        rig.tick(0); // no access counts: no cost model
        assert_eq!(rig.policy.hot_threshold(), 2);
        assert!(rig.fast(1000..1010), "margin {margin}: clear winners displace cold pages");
        let marginal = (1010..1030).filter(|&p| rig.mem.tier_of(p) == Some(TierId::FAST)).count();
        assert!(marginal <= 1, "margin {margin}: {marginal} marginal candidates came in (only the free room's slack)");
        assert!(rig.fast(0..50), "margin {margin}: the hot fast pages stay");
    }
}

#[test]
fn the_free_headroom_follows_the_allocation_rate() {
    let mut rig = Rig::new(open_ledger(), 1000, 995, 0);
    rig.tick(0);
    assert_eq!(rig.mem.free_pages(TierId::FAST), 5, "2 pages of headroom (0.2%) are free: no demotion");
    for p in 5000..5004 {
        rig.mem.touch(p); // 4 pages allocated in the fast tier within one tick
    }
    rig.tick(0);
    // Twice the allocation: 8 pages of headroom, restored to 12 (the 2:3 watermark ratio).
    assert_eq!(rig.mem.free_pages(TierId::FAST), 12);
    for _ in 0..30 {
        rig.tick(0);
    }
    for p in 6000..6020 {
        rig.mem.touch(p); // 12 fit; the headroom never goes above 2% (20 pages)
    }
    rig.tick(0);
    assert_eq!(rig.mem.free_pages(TierId::FAST), 30);
}

#[test]
fn the_threshold_fits_the_hot_set_to_the_fast_tier() {
    // 200 pages at count 8 and 50 at 9 against 97 pages of hot capacity.
    // Eight ascending passes would look like a sweep: this test is about counts.
    let mut rig = Rig::new(TierkitParams { streams: None, ..open_ledger() }, 100, 100, 250);
    rig.sample(1000..1250, 8);
    rig.sample(1200..1250, 1);
    rig.tick(COSTED);
    assert_eq!(rig.policy.hot_threshold(), 9);
    assert!(rig.fast(1200..1250), "only the pages at 9 are promoted");
    assert!((1000..1200).all(|p| rig.mem.tier_of(p) == Some(TierId(1))));
}

#[test]
fn counts_halve_after_the_aging_sample_count() {
    let params = TierkitParams { age_samples_per_fast_page: 1, ..open_ledger() };
    let mut rig = Rig::new(params, 100, 100, 100);
    rig.sample(1000..1001, 12);
    rig.sample(1010..1098, 1);
    assert_eq!(rig.policy.count(1000), 6);
    assert_eq!(rig.policy.count(1010), 0);
}

#[test]
fn a_page_whose_expected_accesses_do_not_amortize_a_migration_stays() {
    // 10 samples stood for 1000 accesses: a count of 3 promises 300 < 318.
    let mut rig = Rig::new(open_ledger(), 100, 50, 20);
    rig.sample(0..10, 1);
    rig.tick(1000);
    rig.sample(1000..1001, 3);
    assert!(!rig.fast(1000..1001));
    rig.sample(1000..1001, 1);
    assert!(rig.fast(1000..1001), "4 x 100 = 400 accesses amortize it");
}

#[test]
fn pages_ahead_of_a_sweep_are_prefetched_in_place_of_unsampled_pages_only() {
    let mut rig = Rig::new(open_ledger(), 100, 100, 600);
    rig.sample(0..50, 4); // the hot half of the fast tier; 50..100 were never sampled
                          // A sweep over pages 1000.. at one page per millisecond, three samples a page.
    let events: Vec<Event> = (1000..1100u64)
        .flat_map(|p| std::iter::repeat_n(p, 3))
        .map(|page| Event::Sample {
            page,
            tier: TierId(1),
            word: None,
            write: false,
            time: (page - 1000) * MILLISECOND,
            stall_ns: None,
        })
        .collect();
    rig.policy.on_events(&events, &mut Ctx { mem: &rig.mem, plan: &mut rig.plan, sources: &mut rig.sources });
    assert_eq!(rig.policy.count(1090), 0, "sweep samples are not counted once the sweep is confirmed");
    rig.tick(0);
    assert!(rig.fast(0..50), "the hot set stays");
    let ahead: Vec<Page> = (1000..1600).filter(|&p| rig.mem.tier_of(p) == Some(TierId::FAST)).collect();
    // At most a quarter of the 97-page hot capacity per tick, from where the sweep was
    // confirmed, in place of never-sampled pages.
    assert!((20..=24).contains(&ahead.len()), "{ahead:?}");
    assert!((50..100).filter(|&p| rig.mem.tier_of(p) == Some(TierId(1))).count() >= ahead.len());
    assert!(ahead.iter().all(|&p| (1064..1300).contains(&p)), "{ahead:?}");
}

#[test]
fn sampling_falls_to_fit_the_cpu_budget_and_recovers_under_half_of_it() {
    let mut rig = Rig::new(open_ledger(), 100, 50, 20);
    let mut tick = |cpu_share: f64| {
        let interval = 100 * MILLISECOND;
        let t = Telemetry { interval, mechanism_cpu_ns: (cpu_share * interval as f64) as u64, ..Default::default() };
        rig.policy.on_tick(&t, &mut Ctx { mem: &rig.mem, plan: &mut rig.plan, sources: &mut rig.sources });
        rig.sources.samples.unwrap().rate
    };
    assert_eq!(tick(0.2), Sampling::new(50_000.0).rate);
    assert_eq!(tick(0.2), Sampling::new(25_000.0).rate);
    assert_eq!(tick(0.07), Sampling::new(25_000.0).rate, "between half the budget and the budget: hold");
    assert_eq!(tick(0.01), Sampling::new(50_000.0).rate);
    assert_eq!(tick(0.8), Sampling::new(6_250.0).rate, "eight times the budget: an eighth of the rate");
    for _ in 0..20 {
        tick(0.5);
    }
    assert_eq!(tick(0.5), Sampling::new(1_000.0).rate, "never below the floor");
}

/// The sampling rate after a tick in which the slow tier took 800,000 accesses at 120 ns
/// against the fast tier's 80 ns (a stall of 8 ms in the 100 ms tick, 4 misses in
/// flight) and the mechanism 2% of the tick.
fn rate_after_stalled_tick(rig: &mut Rig) -> f64 {
    let interval = 100 * MILLISECOND;
    rig.mem.advance(interval);
    let tier = |tier, accesses, latency_ns| TierStats { tier, accesses, latency_ns, ..Default::default() };
    let tiers = vec![tier(TierId::FAST, 1_000_000, 80.0), tier(TierId(1), 800_000, 120.0)];
    let t = Telemetry { now: rig.mem.now(), interval, tiers, mechanism_cpu_ns: 2_000_000, ..Default::default() };
    rig.policy.on_tick(&t, &mut Ctx { mem: &rig.mem, plan: &mut rig.plan, sources: &mut rig.sources });
    rig.run_mover();
    match rig.sources.samples.unwrap().rate {
        SampleRate::Hz(hz) => hz,
        other => panic!("{other:?}"),
    }
}

#[test]
fn until_moves_earn_sampling_costs_at_most_a_share_of_the_slow_tiers_stall() {
    // No move yet: 1/32 of the 8% stall is 0.25% of a core, an eighth of the 2% spent.
    let mut rig = Rig::new(TierkitParams::default(), 100, 50, 20);
    let hz = rate_after_stalled_tick(&mut rig);
    assert!((hz - 12_500.0).abs() < 1e-6, "{hz}");
    // Without the bound, 2% is within every budget: the rate stays at its maximum.
    let unbounded = TierkitParams { stall_share: 1.0, ..Default::default() };
    let mut rig = Rig::new(unbounded, 100, 50, 20);
    assert_eq!(rate_after_stalled_tick(&mut rig), 100_000.0);
    // Moves that earn lift the bound: a promoted page hit in the fast tier.
    let mut rig = Rig::new(TierkitParams::default(), 100, 50, 20);
    rig.sample(1000..1001, 10);
    assert!(rig.fast(1000..1001));
    rig.sample(1000..1001, 10);
    assert_eq!(rate_after_stalled_tick(&mut rig), 100_000.0, "moves earn: the ledger judges, not the bound");
}

#[test]
fn while_moves_do_not_pay_probes_wait_for_cpu_credit() {
    let mut rig = Rig::new(TierkitParams::default(), 100, 50, 20);
    // A tick in which the mechanism took `share` of the application's CPU.
    let tick = |rig: &mut Rig, share: f64| {
        let interval = 100 * MILLISECOND;
        rig.mem.advance(interval);
        let mechanism_cpu_ns = (share * interval as f64) as u64;
        let t =
            Telemetry { now: rig.mem.now(), interval, app_cpu_ns: interval, mechanism_cpu_ns, ..Default::default() };
        rig.policy.on_tick(&t, &mut Ctx { mem: &rig.mem, plan: &mut rig.plan, sources: &mut rig.sources });
        rig.run_mover();
    };
    // No move to judge: once settled, moves do not pay; 1% a tick leaves no credit.
    for _ in 0..LedgerParams::default().settle_ticks + 3 {
        tick(&mut rig, 0.01);
    }
    rig.sample(1000..1001, 10);
    tick(&mut rig, 0.0);
    assert!(!rig.fast(1000..1001), "no credit: the hot page waits although the fast tier has room");
    // Idle ticks earn 0.1% each: the debt is repaid and probing resumes.
    for _ in 0..40 {
        rig.sample(1000..1001, 10);
        tick(&mut rig, 0.0);
    }
    assert!(rig.fast(1000..1001), "credit regained: the probe is promoted");
}

#[test]
fn a_collapse_of_the_hit_ratio_halves_every_count_twice() {
    let mut rig = Rig::new(open_ledger(), 100, 50, 20);
    rig.sample(1000..1001, 40);
    fn tick(rig: &mut Rig, hit: f64) -> u32 {
        let fast = TierStats { tier: TierId::FAST, accesses: (hit * 1000.0) as u64, ..Default::default() };
        let slow = TierStats { tier: TierId(1), accesses: 1000 - (hit * 1000.0) as u64, ..Default::default() };
        let t = Telemetry { interval: 100 * MILLISECOND, tiers: vec![fast, slow], ..Default::default() };
        rig.policy.on_tick(&t, &mut Ctx { mem: &rig.mem, plan: &mut rig.plan, sources: &mut rig.sources });
        rig.policy.count(1000)
    }
    for _ in 0..10 {
        tick(&mut rig, 0.8);
    }
    assert_eq!(tick(&mut rig, 0.6), 40, "0.75 of the average: noise, not a shift");
    assert_eq!(tick(&mut rig, 0.3), 10);
    assert_eq!(tick(&mut rig, 0.3), 10, "the average restarted from the collapse: no second trigger");
}

#[test]
fn ping_pong_over_a_uniform_hot_set_widens_the_band_and_cuts_promotions() {
    let (band, adaptive) = uniform_swaps(0.3, HELD_OPEN);
    let (never, fixed) = uniform_swaps(1.0, HELD_OPEN);
    assert!(band > 0 && never == 0, "band {band} vs {never}");
    assert!(adaptive * 2 < fixed, "promotions {adaptive} with the band vs {fixed} without");
}

#[test]
fn the_ledger_alone_cuts_swaps_that_earn_nothing() {
    let (_, held_open) = uniform_swaps(1.0, HELD_OPEN);
    let (_, measured) = uniform_swaps(1.0, LedgerParams::default());
    assert!(measured * 2 < held_open, "promotions {measured} with the ledger vs {held_open} held open");
}

/// The defaults with the ledger held open: the tests of the other mechanisms see them
/// unthrottled (the ledger has tests of its own).
fn open_ledger() -> TierkitParams {
    TierkitParams { ledger: HELD_OPEN, ..Default::default() }
}

/// A ledger whose allowance never moves from its ceiling.
const HELD_OPEN: LedgerParams =
    LedgerParams { memory_ticks: 20, settle_ticks: 5, ceiling_share: 1.0, start_share: 1.0, floor_share: 1.0 };

/// 400 equally hot pages, 100 fast, sampled for 300 ticks: every swap is noise.
/// Returns the demotion band at the end and the promotions.
fn uniform_swaps(pingpong_share: f64, ledger: LedgerParams) -> (u32, usize) {
    let params = TierkitParams { pingpong_share, streams: None, ledger, ..Default::default() };
    let mut rig = Rig::new(params, 100, 100, 300);
    let mut rng = crate::dist::Rng::new(3);
    let hot = |i: u64| if i < 100 { i } else { 900 + i }; // pages 0..100 and 1000..1300
    let mut fast: Vec<bool> = (0..400).map(|i| rig.mem.tier_of(hot(i)) == Some(TierId::FAST)).collect();
    let mut arrivals = 0;
    for _ in 0..300 {
        let pages: Vec<Page> = (0..400).map(|_| hot(rng.below(400))).collect();
        rig.sample(pages.into_iter(), 1);
        rig.tick(COSTED);
        for (i, was) in fast.iter_mut().enumerate() {
            let now = rig.mem.tier_of(hot(i as u64)) == Some(TierId::FAST);
            arrivals += (now && !*was) as usize;
            *was = now;
        }
    }
    (rig.policy.demotion_band(), arrivals)
}

#[test]
fn parameters_are_checked() {
    let setup = PolicySetup { fast_pages: 10, pages: 100 };
    let check = |p: TierkitParams| TierkitPolicy::new(p, &setup).unwrap_err().param;
    let d = TierkitParams::default();
    assert_eq!(check(TierkitParams { sample_rate_hz: 0.0, ..d }), "sample_rate_hz");
    assert_eq!(check(TierkitParams { min_hot_threshold: 0, ..d }), "min_hot_threshold");
    assert_eq!(check(TierkitParams { min_hot_threshold: 256, ..d }), "min_hot_threshold");
    assert_eq!(check(TierkitParams { age_samples_per_fast_page: 0, ..d }), "age_samples_per_fast_page");
    assert_eq!(check(TierkitParams { migration_cost_accesses: -1.0, ..d }), "migration_cost_accesses");
    assert_eq!(check(TierkitParams { demoting_wmark: 0.01, ..d }), "demoting_wmark");
    assert_eq!(check(TierkitParams { scan_batch: 0, ..d }), "scan_batch");
    assert_eq!(check(TierkitParams { min_sample_rate_hz: 0.0, ..d }), "min_sample_rate_hz");
    assert_eq!(check(TierkitParams { min_sample_rate_hz: 200_000.0, ..d }), "min_sample_rate_hz");
    assert_eq!(check(TierkitParams { cpu_budget: 0.0, ..d }), "cpu_budget");
    assert_eq!(check(TierkitParams { min_headroom: 0.05, ..d }), "min_headroom");
    assert_eq!(check(TierkitParams { shift_drop: 1.0, ..d }), "shift_drop");
    assert_eq!(check(TierkitParams { pingpong_share: 0.0, ..d }), "pingpong_share");
    assert_eq!(check(TierkitParams { exchange_margin: -1.0, ..d }), "exchange_margin");
    assert_eq!(check(TierkitParams { exchange_margin: f64::NAN, ..d }), "exchange_margin");
    assert_eq!(check(TierkitParams { stall_share: 1.5, ..d }), "stall_share");
    assert_eq!(check(TierkitParams { stall_share: f64::NAN, ..d }), "stall_share");
    let no_slots = StreamParams { slots: 0, ..Default::default() };
    assert_eq!(check(TierkitParams { streams: Some(no_slots), ..d }), "streams");
    // One bit a slot in a word.
    let too_many = StreamParams { slots: 65, ..Default::default() };
    assert_eq!(check(TierkitParams { streams: Some(too_many), ..d }), "streams");
    assert_eq!(TierkitPolicy::new(d, &PolicySetup { fast_pages: 0, pages: 1 }).unwrap_err().param, "fast_pages");
}
