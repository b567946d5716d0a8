//! DAMON regions as [`Event::Sample`]s, for policies that ask for samples.
//!
//! After each aggregation interval every region DAMON found accessed `a > 0` times (out
//! of `aggr/sample` checks) stands for `a` samples on each of its resident units (base
//! pages; a transparent huge page counts as one unit), on the tier the unit is on, timed
//! now. A poll may make about [`sample_budget`] samples. When the accessed regions'
//! resident units times their counts (`W`; counted up to four budgets, beyond that the
//! regions' pages times their counts stand for it) exceed the budget `B`, the units take
//! turns: with the stride `M`, the smallest integer with `W / M <= B`, a poll visits the units whose
//! page number is `phase mod M` (the phase counts the polls), and each visited unit gets
//! its region's `a` samples. So every unit is visited once every `M` polls, and its count
//! follows its regions' counts exactly: DAMON cannot tell the pages of a region apart,
//! and samples drawn at random would make some look hotter than their neighbours (a
//! policy then exchanges pages on that noise: in the test guest a tiered 1 GiB target
//! with scattered hot pages kept ~3,000 pages a second moving each way with random
//! draws, ~1,000 with turns, the rest following DAMON's own counts from one aggregation
//! to the next). The cost is proportional to the budget (at most four budgets of units
//! counted, `W / M` visited), not to the target's size; `M = 1` when everything fits.
//!
//! The samples come in random order, as address sampling delivers them: in address order
//! they would read as an ascending sweep to a policy that watches for sequential streams
//! (tierkit's prefetcher leaves the samples at a sweep's head uncounted).
//!
//! The budget follows the policy's requested rate, which bounds tierkit's own cost of
//! making and counting samples, but not below [`DAMON_MIN_SAMPLE_HZ`]: a policy that
//! steps its rate down under its CPU budget (tierkit, to 1 kHz) would otherwise starve
//! itself of DAMON's information, whose cost (the kdamond's) does not depend on the rate.
//! The budget is that rate times the time since the previous poll (at most a second),
//! capped at [`MAX_DAMON_SAMPLES`]; policies that ask for one sample every `n` accesses
//! get the cap.

use tierkit_core::{
    Event, Memory, Nanos, Page, Resident, SampleRate, ScanCursor, SourceRequest, TierId, HUGE_PAGE_PAGES, PAGE_SIZE,
    SECOND,
};

use crate::source::damon::Region;

/// Most samples the DAMON adapter produces per poll.
pub const MAX_DAMON_SAMPLES: usize = 2_000_000;

/// The lowest rate, in samples per second, the DAMON adapter synthesizes at when the
/// policy asks for samples: 2,000 samples per 100 ms aggregation interval, several for
/// each of the few hundred regions DAMON reports. (tierkit asks for up to 100 kHz and
/// steps down under its CPU budget; at 100 kHz under the test guest's emulation the
/// adapter and policy took 60-75% of a core.)
pub const DAMON_MIN_SAMPLE_HZ: f64 = 20_000.0;

/// Samples the DAMON adapter may produce for a poll `elapsed` ns after the previous
/// one: the requested rate, at least [`DAMON_MIN_SAMPLE_HZ`], times `elapsed` (a
/// period-based rate, one sample every `n` accesses, has no time budget: the cap), at
/// most [`MAX_DAMON_SAMPLES`]; 0 when the policy asks for no samples.
pub fn sample_budget(request: &SourceRequest, elapsed: Nanos) -> usize {
    match request.samples.map(|s| s.rate) {
        None | Some(SampleRate::Period(0)) => 0,
        Some(SampleRate::Period(_)) => MAX_DAMON_SAMPLES,
        Some(SampleRate::Hz(hz)) if hz > 0.0 => {
            let hz = hz.max(DAMON_MIN_SAMPLE_HZ);
            (hz * elapsed as f64 / SECOND as f64).ceil().min(MAX_DAMON_SAMPLES as f64) as usize
        }
        Some(SampleRate::Hz(_)) => 0,
    }
}

/// A xorshift64* generator: cheap, and good enough to pick sample positions.
#[derive(Clone, Debug)]
pub struct SampleRng(u64);

impl SampleRng {
    /// A generator from `seed` (any value; 0 is replaced).
    pub fn new(seed: u64) -> Self {
        Self(if seed == 0 { 0x9E37_79B9_7F4A_7C15 } else { seed })
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }

    /// Puts `items` in a random order (Fisher-Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i as u64 + 1) as usize);
        }
    }
}

/// Calls `f` on the resident units (pages, huge-page heads) of `mem` in pages
/// `first..end`, in order, until it returns false.
fn for_each_resident(
    mem: &dyn Memory,
    first: Page,
    end: Page,
    scratch: &mut Vec<Resident>,
    mut f: impl FnMut(Page) -> bool,
) {
    let mut cursor = ScanCursor { next: first, passes: 0 };
    loop {
        scratch.clear();
        if mem.scan(&mut cursor, 1024, scratch) == 0 {
            return;
        }
        for r in scratch.iter() {
            if r.page < first || r.page >= end || !f(r.page) {
                return; // past the region, wrapped around to the lowest page, or done
            }
        }
        if cursor.passes > 0 {
            return;
        }
    }
}

/// The resident unit holding `page`: its huge page's head, or the page itself;
/// `None` when it is not resident.
fn unit_of(mem: &dyn Memory, page: Page, scratch: &mut Vec<Resident>) -> Option<(Page, bool)> {
    let head = page - page % HUGE_PAGE_PAGES;
    scratch.clear();
    mem.scan(&mut ScanCursor { next: head, passes: 0 }, 1, scratch);
    match scratch.first() {
        Some(r) if r.huge && r.page == head => Some((head, true)),
        _ => mem.tier_of(page).map(|_| (page, false)),
    }
}

fn page_range(r: &Region) -> (Page, Page) {
    (r.start / PAGE_SIZE, r.end / PAGE_SIZE)
}

/// How far, in multiples of the budget, the resident units of the accessed regions are
/// counted to size the stride; beyond it the stride follows the regions' pages.
const RESIDENT_WALK: u64 = 4;

/// The samples the `accessed` regions want by their resident units (each unit its
/// region's count), when that is at most `limit`; `None` beyond it (the walk stops
/// there: its cost stays proportional to the budget).
fn resident_wanted(accessed: &[&Region], mem: &dyn Memory, limit: u64, scratch: &mut Vec<Resident>) -> Option<u64> {
    let mut wanted = 0u64;
    for r in accessed {
        let (first, end) = page_range(r);
        for_each_resident(mem, first, end, scratch, |_| {
            wanted += u64::from(r.nr_accesses);
            wanted <= limit
        });
        if wanted > limit {
            return None;
        }
    }
    Some(wanted)
}

/// The stride of a poll: the smallest `M` with `wanted / M <= budget`.
fn stride(wanted: u64, budget: usize) -> u64 {
    wanted.div_ceil(budget.max(1) as u64).max(1)
}

/// Turns DAMON `regions` into about `budget` [`Event::Sample`]s on their resident units
/// (see the [module documentation](self)), visiting the units of turn `phase`, timed
/// `mem.now()`, labelled by `tier_of`, in an order shuffled with `rng`. Returns the
/// number appended.
pub fn regions_to_samples(
    regions: &[Region],
    budget: usize,
    mem: &dyn Memory,
    tier_of: &dyn Fn(Page) -> Option<TierId>,
    phase: u64,
    rng: &mut SampleRng,
    out: &mut Vec<Event>,
) -> usize {
    let accessed: Vec<&Region> =
        regions.iter().filter(|r| r.nr_accesses > 0 && r.end / PAGE_SIZE > r.start / PAGE_SIZE).collect();
    let by_pages: u64 =
        accessed.iter().map(|r| (r.end / PAGE_SIZE - r.start / PAGE_SIZE) * u64::from(r.nr_accesses)).sum();
    if by_pages == 0 || budget == 0 {
        return 0;
    }
    let mut scratch = Vec::new();
    let wanted = resident_wanted(&accessed, mem, RESIDENT_WALK * budget as u64, &mut scratch).unwrap_or(by_pages);
    let (time, before) = (mem.now(), out.len());
    let mut emit = |unit: Page, count: u32| {
        if let Some(tier) = tier_of(unit) {
            let sample = Event::Sample { page: unit, tier, word: None, write: false, time, stall_ns: None };
            out.extend(std::iter::repeat_n(sample, count as usize));
        }
    };
    let m = stride(wanted, budget);
    let turn = phase % m;
    for r in accessed {
        let (first, end) = page_range(r);
        if m == 1 {
            for_each_resident(mem, first, end, &mut scratch, |unit| {
                emit(unit, r.nr_accesses);
                true
            });
            continue;
        }
        let mut page = first + (turn + m - first % m) % m;
        while page < end {
            // A unit takes its turn by its own page number: a huge page by its head.
            if let Some((unit, _)) = unit_of(mem, page, &mut scratch).filter(|&(unit, _)| unit == page) {
                emit(unit, r.nr_accesses);
            }
            page += m;
        }
    }
    rng.shuffle(&mut out[before..]);
    out.len() - before
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use tierkit_core::policies::{build, PolicySetup};
    use tierkit_core::{Ctx, InMemory, Mover, Plan, Sampling, MILLISECOND};

    fn region(first: Page, pages: u64, nr_accesses: u32) -> Region {
        Region { start: first * PAGE_SIZE, end: (first + pages) * PAGE_SIZE, nr_accesses }
    }

    fn counts(events: &[Event]) -> BTreeMap<Page, usize> {
        let mut m = BTreeMap::new();
        for e in events {
            if let Event::Sample { page, .. } = *e {
                *m.entry(page).or_default() += 1;
            }
        }
        m
    }

    #[test]
    fn within_the_budget_each_resident_unit_gets_its_regions_count() {
        let mut mem = InMemory::new(&[4, 100]).unwrap();
        for page in [10, 11, 13, 20, 21, 30] {
            mem.touch(page);
        }
        // 10..14 accessed 3 times (12 not resident), 20..22 once, 30 never.
        let regions = [region(10, 4, 3), region(20, 2, 1), region(30, 4, 0)];
        let tier_of = |p: Page| mem.tier_of(p);
        let mut out = Vec::new();
        let n = regions_to_samples(&regions, 1000, &mem, &tier_of, 0, &mut SampleRng::new(1), &mut out);
        assert_eq!(n, 11);
        assert_eq!(counts(&out).into_iter().collect::<Vec<_>>(), [(10, 3), (11, 3), (13, 3), (20, 1), (21, 1)]);
        // Labels come from `tier_of`: 10, 11, 13, 20 filled the fast tier first.
        assert!(out.iter().any(|e| matches!(e, Event::Sample { page: 21, tier: TierId(1), .. })));
        let order: Vec<Page> =
            out.iter().filter_map(|e| if let Event::Sample { page, .. } = e { Some(*page) } else { None }).collect();
        assert!(order.windows(2).any(|w| w[0] > w[1]), "not in address order: {order:?}");
    }

    #[test]
    fn over_the_budget_units_take_turns_and_get_their_regions_counts() {
        let mut mem = InMemory::new(&[100_000, 100_000]).unwrap();
        // 1,000 hot pages (20 checks), 10,000 lukewarm ones (2 checks), and a lukewarm region
        // with only every other page resident.
        for page in (0..11_000).chain((20_000..30_000).step_by(2)) {
            mem.touch(page);
        }
        let regions = [region(0, 1000, 20), region(1000, 10_000, 2), region(20_000, 10_000, 2)];
        let tier_of = |p: Page| mem.tier_of(p);
        // Wanted by units: 20,000 + 20,000 + 10,000, more than four budgets of 10,000, so
        // the stride follows the pages: 20,000 + 20,000 + 20,000 = 60,000, stride 6.
        let mut total = BTreeMap::new();
        for phase in 0..6 {
            let mut out = Vec::new();
            let n = regions_to_samples(&regions, 10_000, &mem, &tier_of, phase, &mut SampleRng::new(7), &mut out);
            // At most the budget, give or take one turn per region (20 + 2 + 2 samples); the
            // sparse region's resident pages are all even, so odd turns make fewer.
            assert!((6_000..=10_024).contains(&n), "phase {phase}: {n}");
            for (page, k) in counts(&out) {
                assert_eq!(page % 6, phase, "only the units of this turn");
                *total.entry(page).or_insert(0) += k;
            }
        }
        // Over a whole cycle every resident page got exactly its region's count.
        let want: BTreeMap<Page, usize> =
            (0..11_000).chain((20_000..30_000).step_by(2)).map(|p| (p, if p < 1000 { 20 } else { 2 })).collect();
        assert_eq!(total, want);
        let mut out = Vec::new();
        assert_eq!(regions_to_samples(&regions, 0, &mem, &tier_of, 0, &mut SampleRng::new(7), &mut out), 0);
    }

    #[test]
    fn a_huge_page_is_one_unit_visited_once_a_cycle() {
        let mut mem = InMemory::new(&[100_000, 100_000]).unwrap();
        mem.place(0, TierId(1), true); // a huge page over pages 0..512
        for page in 512..1024 {
            mem.touch(page);
        }
        let regions = [region(0, 1024, 10)];
        let tier_of = |p: Page| mem.tier_of(p);
        // 5,130 wanted by units (513 of them), a budget of 2,000: stride 3 (the head, page
        // 0, has its turn at phase 0 of each cycle).
        let mut total = BTreeMap::new();
        for phase in 0..3 {
            let mut out = Vec::new();
            regions_to_samples(&regions, 2000, &mem, &tier_of, phase, &mut SampleRng::new(3), &mut out);
            for (page, k) in counts(&out) {
                *total.entry(page).or_insert(0) += k;
            }
        }
        assert_eq!(total.get(&0), Some(&10), "the huge page: one unit, its region's count once");
        assert!(total.keys().all(|&p| p == 0 || p >= 512), "samples name the huge page's head");
        assert_eq!(total.len(), 1 + 512);
        assert!(total.values().all(|&k| k == 10));
    }

    #[test]
    fn the_budget_has_a_floor_the_policys_cpu_steps_do_not_lower() {
        let at = |rate| SourceRequest {
            samples: Some(Sampling { rate, slow_tiers_only: false, words: false }),
            ..Default::default()
        };
        assert_eq!(sample_budget(&at(SampleRate::Hz(100_000.0)), 100 * MILLISECOND), 10_000);
        assert_eq!(sample_budget(&at(SampleRate::Hz(50_000.0)), 100 * MILLISECOND), 5_000);
        assert_eq!(sample_budget(&at(SampleRate::Hz(1_000.0)), 100 * MILLISECOND), 2_000, "the floor");
        assert_eq!(sample_budget(&at(SampleRate::Hz(400_000.0)), 100 * MILLISECOND), 40_000);
        assert_eq!(sample_budget(&at(SampleRate::Hz(1e12)), SECOND), MAX_DAMON_SAMPLES);
        assert_eq!(sample_budget(&at(SampleRate::Hz(0.0)), SECOND), 0);
        assert_eq!(sample_budget(&at(SampleRate::Period(7)), 1), MAX_DAMON_SAMPLES);
        assert_eq!(sample_budget(&at(SampleRate::Period(0)), SECOND), 0);
        assert_eq!(sample_budget(&SourceRequest::default(), SECOND), 0);
    }

    /// Feeds the tierkit policy 2 s of DAMON polls over `pages` slow pages in 64-page
    /// regions: one in 32 accessed 20 times, the others `lukewarm` times. Returns the hot
    /// pages that ended on the fast tier (1,024 pages), and how many there are.
    fn tierkit_on_damon(pages: u64, lukewarm: u32) -> (usize, usize) {
        let fast = 1024u64;
        let mut mem = InMemory::new(&[fast, 4 * pages]).unwrap();
        for page in 0..pages {
            mem.place(page, TierId(1), false);
        }
        let mut policy = build("tierkit", &PolicySetup { fast_pages: fast, pages }).unwrap().unwrap();
        let regions: Vec<Region> =
            (0..pages / 64).map(|c| region(c * 64, 64, if c % 32 == 5 { 20 } else { lukewarm })).collect();
        let hot: Vec<Page> =
            regions.iter().filter(|r| r.nr_accesses == 20).flat_map(|r| page_range(r).0..page_range(r).1).collect();
        let (mut plan, mut sources, mut mover) = (Plan::default(), policy.sources(), Mover::default());
        let (mut rng, mut results) = (SampleRng::new(11), Vec::new());
        for phase in 0..20 {
            let budget = sample_budget(&policy.sources(), 100 * MILLISECOND);
            let mut events = Vec::new();
            let tier_of = |p: Page| mem.tier_of(p);
            regions_to_samples(&regions, budget, &mem, &tier_of, phase, &mut rng, &mut events);
            policy.on_events(&events, &mut Ctx { mem: &mem, plan: &mut plan, sources: &mut sources });
            let telemetry =
                tierkit_core::Telemetry { now: mem.now(), interval: 100 * MILLISECOND, ..Default::default() };
            policy.on_tick(&telemetry, &mut Ctx { mem: &mem, plan: &mut plan, sources: &mut sources });
            results.clear();
            mover.execute(&mut plan, &mut mem, &mut results);
            policy.on_moved(&results);
            mem.advance(100 * MILLISECOND);
        }
        (hot.iter().filter(|&&p| mem.tier_of(p) == Some(TierId::FAST)).count(), hot.len())
    }

    /// The tierkit policy promotes clustered hot pages from DAMON samples within 2 s,
    /// whether every unit gets its samples each poll (4,096 pages) or units take turns
    /// (8,192).
    #[test]
    fn the_tierkit_policy_promotes_hot_clusters_from_damon_samples() {
        for (pages, lukewarm) in [(4096, 1), (8192, 2)] {
            let (on_fast, hot) = tierkit_on_damon(pages, lukewarm);
            assert!(on_fast * 10 >= hot * 9, "{pages} pages: {on_fast} of {hot} hot pages on the fast tier");
        }
    }

    /// Pages DAMON cannot tell apart (every region drawn from the same access
    /// distribution, boundaries shifting every poll) with half of them on the fast tier:
    /// nothing is worth moving. The tierkit policy, told no access cost per sample, lets
    /// only pages clearly above its threshold push others out: over the last 150 s of 300
    /// it moved ~400 pages a second here at its default margin of one noise width (~140
    /// at two), ~1,400 without that rule.
    #[test]
    fn tierkit_rarely_exchanges_pages_damon_cannot_tell_apart() {
        let (pages, fast) = (65_536u64, 34_000u64);
        let mut mem = InMemory::new(&[fast, 4 * pages]).unwrap();
        for page in 0..pages {
            mem.place(page, if page < pages / 2 { TierId(0) } else { TierId(1) }, false);
        }
        let mut policy = build("tierkit", &PolicySetup { fast_pages: fast, pages }).unwrap().unwrap();
        let (mut plan, mut sources, mut mover) = (Plan::default(), policy.sources(), Mover::default());
        let (mut rng, mut noise, mut results) = (SampleRng::new(11), SampleRng::new(5), Vec::new());
        let mut moved = 0u64;
        for phase in 0..1200u64 {
            // Regions of 400-900 pages, each accessed in Binomial(20, 0.3) of DAMON's checks.
            let mut regions = Vec::new();
            let mut start = 0;
            while start < pages {
                let end = (start + 400 + noise.below(500)).min(pages);
                let hits = (0..20).filter(|_| noise.below(10) < 3).count() as u32;
                regions.push(region(start, end - start, hits));
                start = end;
            }
            let budget = sample_budget(&policy.sources(), 250 * MILLISECOND);
            let mut events = Vec::new();
            let tier_of = |p: Page| mem.tier_of(p);
            regions_to_samples(&regions, budget, &mem, &tier_of, phase, &mut rng, &mut events);
            policy.on_events(&events, &mut Ctx { mem: &mem, plan: &mut plan, sources: &mut sources });
            for _ in 0..2 {
                let telemetry =
                    tierkit_core::Telemetry { now: mem.now(), interval: 125 * MILLISECOND, ..Default::default() };
                policy.on_tick(&telemetry, &mut Ctx { mem: &mem, plan: &mut plan, sources: &mut sources });
                results.clear();
                mover.execute(&mut plan, &mut mem, &mut results);
                policy.on_moved(&results);
                if phase >= 600 {
                    moved += results.iter().filter(|(_, s)| *s == tierkit_core::MoveStatus::Moved).count() as u64;
                }
                mem.advance(125 * MILLISECOND);
            }
        }
        let per_s = moved as f64 / 150.0;
        assert!(per_s < 700.0, "{per_s:.0} pages/s exchanged on noise");
    }
}
