//! `memtis`: MEMTIS (Lee et al., "MEMTIS: Efficient Memory Tiering with Dynamic Page
//! Classification and Page Size Determination", SOSP'23), as Colloid §4.2 and
//! HybridTier §2.3 describe it and its source (`linux/mm/htmm_*.c`) implements it.
//!
//! - **Sampling (ksampled).** PEBS samples memory accesses with a period taken from a
//!   ladder of 30 periods (199 to 19997 events). Every `quota_period` ksampled compares
//!   its CPU use with a soft quota (3%) and steps one period longer when above it, one
//!   shorter when below (Colloid §4.2: "a dynamic sampling rate for PEBS to reduce CPU
//!   overhead"). Its CPU use is measured as samples × `sample_cost_ns`: the policy knows
//!   its own samples exactly, while [`Telemetry::mechanism_cpu_ns`] also counts
//!   migration, which MEMTIS's quota does not. As for `hemem`, the period is requested
//!   as such until the first tick and then as the rate it amounts to at the measured
//!   miss rate, which keeps its meaning where accesses stand for many misses.
//! - **Counts.** Every sampled page has an exact access count ([`ExactCounter`]: 16 B
//!   per page, HybridTier §2.3.3/§3.2), and a log2 [`HotnessHistogram`] of the counts is
//!   kept current as they change (HybridTier §2.3.1).
//! - **Thresholds** (Colloid §4.2: "a dynamic threshold based on the measured access
//!   distribution"). Every 100,000 samples the hot threshold becomes the histogram bin
//!   whose hot set fits the fast tier less its 3% watermark, if that is higher than the
//!   current one; it is lowered only by cooling, one bin at a time. Pages one bin below
//!   are warm when the hot set fills less than 75% of the fast tier.
//! - **Cooling.** Every 2,000,000 samples every count is halved ([`HotnessHistogram::cool`]
//!   keeps the histogram exact). This is the lag HybridTier §2.3.2 and Table 3 measure:
//!   a page that turned cold keeps its count until coolings wear it down.
//! - **Migration (kmigraterd).** A sampled slow-tier page at or above the hot threshold
//!   joins the promotion list (the slow node's active LRU list). Every 500 ms the
//!   demotion side demotes cold fast pages (below the warm threshold) when free fast
//!   pages fall below 2%, or to make room for the promotion list, until 3% plus that room
//!   is free; if it cannot find enough, warm pages lose their protection. The promotion
//!   side promotes listed pages that are still hot while more than 3% stays free.
//!
//! Out of scope: MEMTIS's page size determination (splitting huge pages by skewness and
//! coalescing them), and its watermarks' absolute bounds (50 MB to 1.5 GB), which would
//! swamp the simulator's small footprints; the 2%/3% watermarks are rounded up to pages.
//! MEMTIS picks demotion victims from the fast node's inactive LRU list; tierkit has no
//! LRU lists, so a wrapping scan of resident pages (one pass at most per round) applies
//! the same cold/warm test (as FreqTier §V-B-1 scans). MEMTIS's active list is a flag
//! in each page; here it is a list with a page set, holding at most a fast tier's worth
//! of pages, and a page that turns hot while it is full, or because the threshold fell,
//! joins it at a later sample (MEMTIS re-sorts its LRU lists when the threshold moves).

use super::PolicySetup;
use crate::memory::{MoveStatus, Resident, ScanCursor};
use crate::policy::{Ctx, Migration, Policy, Sampling, SourceRequest};
use crate::sketches::{ExactCounter, FrequencySketch, HotnessHistogram, PageTable};
use crate::telemetry::Telemetry;
use crate::types::{Nanos, Page, TierId, HUGE_PAGE_PAGES, MILLISECOND, SECOND};
use crate::{Event, Memory, ParamError};

/// MEMTIS `pebs_period_list` (`include/linux/htmm.h`): sampling periods in memory events.
pub const MEMTIS_PERIODS: [u64; 30] = [
    199, 293, 401, 499, 599, 701, 797, 907, 997, 1201, 1399, 1601, 1801, 1999, 2503, 3001, 3499, 4001, 4507, 4999,
    6007, 7001, 7993, 9001, 10007, 12007, 13999, 16001, 17989, 19997,
];

/// Parameters of [`MemtisPolicy`]; defaults are MEMTIS's (`mm/mempolicy.c` sysfs
/// defaults, `mm/htmm_*.c`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct MemtisParams {
    /// The period ladder, shortest first; ksampled starts at the shortest. MEMTIS
    /// `pebs_period_list`: 199 to 19997 events. Not settable by name.
    #[serde(skip)]
    #[schemars(skip)]
    pub sample_periods: &'static [u64],
    /// ksampled's soft CPU quota, a fraction of `quota_cores`. MEMTIS
    /// `ksampled_soft_cpu_quota`: 3%.
    pub cpu_quota: f64,
    /// No step while CPU use is within this of the quota. MEMTIS: ±0.5%.
    pub quota_band: f64,
    /// Cores the quota is a fraction of. MEMTIS divides ksampled's run time by wall
    /// time: one core (the sampling thread's own).
    pub quota_cores: f64,
    /// CPU per sample, ns: drain, page lookup, count and histogram update. 200 ns, the
    /// simulator's `mechanisms.sample_ns` (the order MEMTIS's 3% quota assumes).
    pub sample_cost_ns: f64,
    /// How often ksampled checks its CPU use. MEMTIS `cpucap_period`: 15 s.
    pub quota_period: Nanos,
    /// Samples between coolings. MEMTIS `htmm_cooling_period`: 2,000,000.
    pub cooling_samples: u64,
    /// Samples between threshold adaptations. MEMTIS `htmm_adaptation_period`: 100,000.
    pub adaptation_samples: u64,
    /// The lowest hot bin (bin 1: counts 1 and up). MEMTIS `htmm_thres_hot`: 1.
    pub min_hot_bin: usize,
    /// Pages one bin below the hot threshold are warm while the hot set fills less than
    /// this fraction of the fast tier. MEMTIS `__adjust_active_threshold`: 75%.
    pub warm_fill: f64,
    /// kmigraterd's promotion period. MEMTIS `htmm_promotion_period_in_ms`: 500 ms
    /// (Colloid §4.2: "a quantum of 500ms").
    pub promotion_period: Nanos,
    /// kmigraterd's demotion period. MEMTIS `htmm_demotion_period_in_ms`: 500 ms.
    pub demotion_period: Nanos,
    /// Demote when free fast pages fall below this fraction of the fast tier. MEMTIS
    /// `get_memcg_demotion_watermark`: 2%.
    pub demotion_wmark: f64,
    /// Demote until, and promote while, free fast pages exceed this fraction. MEMTIS
    /// `get_memcg_promotion_watermark`: 3%.
    pub promotion_wmark: f64,
    /// Pages examined per step of the demotion scan (tierkit's, as `threshold`).
    pub scan_batch: usize,
    /// How often the sampling rate follows the measured miss rate (tierkit's: MEMTIS
    /// programs a period and needs no such step).
    pub tick: Nanos,
}

impl Default for MemtisParams {
    fn default() -> Self {
        Self {
            sample_periods: &MEMTIS_PERIODS,
            cpu_quota: 0.03,
            quota_band: 0.005,
            quota_cores: 1.0,
            sample_cost_ns: 200.0,
            quota_period: 15 * SECOND,
            cooling_samples: 2_000_000,
            adaptation_samples: 100_000,
            min_hot_bin: 1,
            warm_fill: 0.75,
            promotion_period: 500 * MILLISECOND,
            demotion_period: 500 * MILLISECOND,
            demotion_wmark: 0.02,
            promotion_wmark: 0.03,
            scan_batch: 4096,
            tick: 10 * MILLISECOND,
        }
    }
}

/// MEMTIS tiering; see the module documentation.
#[derive(Clone, Debug)]
pub struct MemtisPolicy {
    params: MemtisParams,
    counts: ExactCounter,
    histogram: HotnessHistogram,
    /// Pages in bins at or above it are hot (MEMTIS `active_threshold`).
    hot_bin: usize,
    /// Fast pages in bins at or above it are not demoted (MEMTIS `warm_threshold`).
    warm_bin: usize,
    /// Position on the period ladder.
    level: usize,
    to_cooling: u64,
    to_adaptation: u64,
    /// Samples since `quota_since`.
    quota_samples: u64,
    quota_since: Nanos,
    /// Hot slow-tier pages waiting for promotion, oldest first, and their set.
    candidates: Vec<Page>,
    listed: PageTable,
    cursor: ScanCursor,
    scratch: Vec<Resident>,
    last_promotion: Nanos,
    last_demotion: Nanos,
    /// Promotions minus demotions queued and not yet executed.
    inflight: i64,
}

fn fraction(name: &'static str, value: f64) -> Result<f64, ParamError> {
    if (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(ParamError::new(name, value, "a fraction in [0, 1]"))
    }
}

impl MemtisPolicy {
    /// A MEMTIS policy; its counter map is sized for `setup.pages`.
    pub fn new(params: MemtisParams, setup: &PolicySetup) -> Result<Self, ParamError> {
        let p = &params;
        if p.sample_periods.is_empty() || p.sample_periods.contains(&0) {
            return Err(ParamError::new("sample_periods", format!("{:?}", p.sample_periods), "periods of 1+ events"));
        }
        fraction("cpu_quota", p.cpu_quota)?;
        fraction("quota_band", p.quota_band)?;
        fraction("warm_fill", p.warm_fill)?;
        fraction("demotion_wmark", p.demotion_wmark)?;
        if !(p.demotion_wmark..=1.0).contains(&p.promotion_wmark) {
            return Err(ParamError::new("promotion_wmark", p.promotion_wmark, "a fraction >= demotion_wmark"));
        }
        let top_bin = HotnessHistogram::bin_of(u64::MAX);
        let positive = [
            ("quota_cores", p.quota_cores.to_string(), p.quota_cores > 0.0),
            ("sample_cost_ns", p.sample_cost_ns.to_string(), p.sample_cost_ns >= 0.0),
            ("quota_period", p.quota_period.to_string(), p.quota_period > 0),
            ("cooling_samples", p.cooling_samples.to_string(), p.cooling_samples > 0),
            ("adaptation_samples", p.adaptation_samples.to_string(), p.adaptation_samples > 0),
            ("min_hot_bin", p.min_hot_bin.to_string(), (1..=top_bin).contains(&p.min_hot_bin)),
            ("promotion_period", p.promotion_period.to_string(), p.promotion_period > 0),
            ("demotion_period", p.demotion_period.to_string(), p.demotion_period > 0),
            ("scan_batch", p.scan_batch.to_string(), p.scan_batch > 0),
            ("tick", p.tick.to_string(), p.tick > 0),
        ];
        if let Some((name, value, _)) = positive.into_iter().find(|(_, _, ok)| !ok) {
            return Err(ParamError::new(name, value, "a positive value (min_hot_bin: a bin from 1 to 64)"));
        }
        Ok(Self {
            params,
            counts: ExactCounter::with_capacity(usize::try_from(setup.pages).unwrap_or(usize::MAX)),
            histogram: HotnessHistogram::new(),
            hot_bin: p.min_hot_bin,
            warm_bin: p.min_hot_bin,
            level: 0,
            to_cooling: p.cooling_samples,
            to_adaptation: p.adaptation_samples,
            quota_samples: 0,
            quota_since: 0,
            candidates: Vec::new(),
            listed: PageTable::new(),
            cursor: ScanCursor::default(),
            scratch: Vec::new(),
            last_promotion: 0,
            last_demotion: 0,
            inflight: 0,
        })
    }

    /// The current sampling period, in memory events per sample.
    pub fn sample_period(&self) -> u64 {
        self.params.sample_periods[self.level]
    }

    /// The hot and warm thresholds as histogram bins: a count `c` is hot when
    /// `HotnessHistogram::bin_of(c) >= hot`.
    pub fn thresholds(&self) -> (usize, usize) {
        (self.hot_bin, self.warm_bin)
    }

    fn bin(&self, page: Page) -> usize {
        HotnessHistogram::bin_of(self.counts.get(page) as u64)
    }

    fn wmark(fraction: f64, capacity: u64) -> i64 {
        (fraction * capacity as f64).ceil() as i64
    }

    /// Fast pages the hot set may take: the fast tier less the promotion watermark
    /// (MEMTIS `max_nr_pages`).
    fn room(&self, capacity: u64) -> u64 {
        capacity.saturating_sub(Self::wmark(self.params.promotion_wmark, capacity) as u64)
    }

    /// The lowest bin whose hot set fits `room`, and that set's size. When even the
    /// hottest bin overflows, the bin above it.
    fn capacity_threshold(&self, room: u64) -> (usize, u64) {
        let t = self.histogram.threshold(room);
        let bin = if t.hot_pages > 0 {
            t.bin
        } else {
            let top = HotnessHistogram::bin_of(u64::MAX);
            (1..=top).rev().find(|&b| self.histogram.pages_in(b) > 0).map_or(self.params.min_hot_bin, |b| b + 1)
        };
        (bin.max(self.params.min_hot_bin), t.hot_pages)
    }

    /// MEMTIS `__adjust_active_threshold`: the hot threshold rises to the capacity
    /// threshold, and falls (one bin) only after a cooling; the warm bin follows.
    fn adapt(&mut self, capacity: u64, cooled: bool) {
        let room = self.room(capacity);
        let (bin, hot_pages) = self.capacity_threshold(room);
        if cooled {
            if bin < self.hot_bin && self.hot_bin > self.params.min_hot_bin {
                self.hot_bin -= 1;
            }
        } else if bin > self.hot_bin {
            self.hot_bin = bin;
        }
        let need_warm = (hot_pages as f64) < self.params.warm_fill * room as f64;
        // A page never sampled (bin 0) is never warm.
        self.warm_bin = if need_warm { (self.hot_bin - 1).max(1) } else { self.hot_bin };
    }

    fn on_sample(&mut self, page: Page, tier: TierId, capacity: u64) {
        let tracked = self.counts.len();
        let count = self.counts.increment(page) as u64;
        if self.counts.len() > tracked {
            self.histogram.add(count, 1);
        } else {
            self.histogram.moved(count - 1, count, 1);
        }
        let listable = (self.candidates.len() as u64) < capacity;
        if tier != TierId::FAST
            && HotnessHistogram::bin_of(count) >= self.hot_bin
            && listable
            && self.listed.get(page).is_none()
        {
            self.listed.entry(page, 0);
            self.candidates.push(page);
        }
        self.quota_samples += 1;
        self.to_cooling -= 1;
        self.to_adaptation -= 1;
        if self.to_cooling == 0 {
            self.to_cooling = self.params.cooling_samples;
            self.counts.age();
            self.histogram.cool();
            self.adapt(capacity, true);
        } else if self.to_adaptation == 0 {
            self.adapt(capacity, false);
        }
        if self.to_adaptation == 0 {
            self.to_adaptation = self.params.adaptation_samples;
        }
    }

    /// ksampled's quota check: one step along the ladder per `quota_period`.
    fn check_quota(&mut self, now: Nanos) {
        let elapsed = now.saturating_sub(self.quota_since);
        if elapsed < self.params.quota_period {
            return;
        }
        let p = &self.params;
        let cpu = self.quota_samples as f64 * p.sample_cost_ns / (elapsed as f64 * p.quota_cores);
        if cpu > p.cpu_quota + p.quota_band && self.level + 1 < p.sample_periods.len() {
            self.level += 1;
        } else if cpu < p.cpu_quota - p.quota_band && self.level > 0 {
            self.level -= 1;
        }
        (self.quota_samples, self.quota_since) = (0, now);
    }

    /// Drops listed pages that are no longer slow and hot.
    fn refresh_candidates(&mut self, mem: &dyn Memory) {
        let (counts, listed, hot) = (&self.counts, &mut self.listed, self.hot_bin);
        self.candidates.retain(|&p| {
            let keep = mem.tier_of(p).is_some_and(|t| t != TierId::FAST)
                && HotnessHistogram::bin_of(counts.get(p) as u64) >= hot;
            if !keep {
                listed.remove(p);
            }
            keep
        });
    }

    /// The demotion kmigraterd (MEMTIS `need_toptier_demotion`, `demote_node`).
    fn demote(&mut self, ctx: &mut Ctx<'_>, capacity: u64) {
        let Some(slow) = ctx.mem.slower_than(TierId::FAST) else { return };
        let free = ctx.mem.free_pages(TierId::FAST) as i64 - self.inflight;
        let (low, high) =
            (Self::wmark(self.params.demotion_wmark, capacity), Self::wmark(self.params.promotion_wmark, capacity));
        let pending = self.candidates.len() as i64;
        let need = if pending > 0 || free < low { pending + high - free } else { 0 };
        if need <= 0 {
            return;
        }
        let demoted = self.demote_cold(ctx, slow, need as usize) as i64;
        if demoted < pending.min(need) {
            self.warm_bin = self.hot_bin; // promotions starve: warm pages go too
        }
    }

    /// Demotes up to `need` fast pages below the warm threshold, resuming the wrapping
    /// scan for at most one pass over the resident pages; returns how many.
    fn demote_cold(&mut self, ctx: &mut Ctx<'_>, slow: TierId, need: usize) -> usize {
        let mem = ctx.mem;
        let mut left: u64 = mem.tiers().iter().map(|t| t.capacity_pages.saturating_sub(mem.free_pages(t.id))).sum();
        let mut demoted = 0;
        while demoted < need && left > 0 {
            self.scratch.clear();
            let max = usize::try_from(left).unwrap_or(usize::MAX).min(self.params.scan_batch);
            if mem.scan(&mut self.cursor, max, &mut self.scratch) == 0 {
                break;
            }
            for (i, r) in self.scratch.iter().enumerate() {
                // The counts of fast pages a few ahead are on their way: the table is
                // read at random as the scan walks addresses.
                if let Some(ahead) =
                    self.scratch.get(i + crate::prefetch::SCAN_AHEAD).filter(|a| a.tier == TierId::FAST)
                {
                    self.counts.prefetch(ahead.page);
                }
                left = left.saturating_sub(if r.huge { HUGE_PAGE_PAGES } else { 1 });
                if demoted < need && r.tier == TierId::FAST && self.bin(r.page) < self.warm_bin {
                    ctx.plan.push(r.page, slow);
                    demoted += 1;
                }
            }
        }
        self.inflight -= demoted as i64;
        demoted
    }

    /// The promotion kmigraterd (MEMTIS `promotion_available`, `promote_node`).
    fn promote(&mut self, ctx: &mut Ctx<'_>, capacity: u64) {
        let high = Self::wmark(self.params.promotion_wmark, capacity);
        let room = ctx.mem.free_pages(TierId::FAST) as i64 - self.inflight - high;
        let n = usize::try_from(room).unwrap_or(0).min(self.candidates.len());
        for page in self.candidates.drain(..n) {
            self.listed.remove(page);
            ctx.promote(page);
        }
        self.inflight += n as i64;
    }
}

impl Policy for MemtisPolicy {
    fn name(&self) -> &str {
        "memtis"
    }

    fn sources(&self) -> SourceRequest {
        SourceRequest { samples: Some(Sampling::every(self.sample_period())), allocations: true, ..Default::default() }
    }

    fn tick_interval(&self) -> Nanos {
        self.params.tick
    }

    fn on_events(&mut self, events: &[Event], ctx: &mut Ctx<'_>) {
        let capacity = ctx.mem.tiers().first().map_or(0, |t| t.capacity_pages);
        for (i, e) in events.iter().enumerate() {
            if let Some(Event::Sample { page, .. }) = events.get(i + crate::prefetch::AHEAD) {
                self.counts.prefetch(*page);
            }
            match *e {
                Event::Sample { page, tier, .. } => self.on_sample(page, tier, capacity),
                Event::Free { page } => {
                    if let Some(count) = self.counts.remove(page) {
                        self.histogram.remove(count as u64, 1);
                    }
                }
                _ => {}
            }
        }
    }

    fn on_tick(&mut self, telemetry: &Telemetry, ctx: &mut Ctx<'_>) {
        let now = telemetry.now;
        self.check_quota(now);
        let rate: f64 = telemetry.tiers.iter().map(|t| t.request_rate).sum();
        if rate > 0.0 {
            ctx.sources.samples = Some(Sampling::new(rate / self.sample_period() as f64));
        }
        let demote = now >= self.last_demotion + self.params.demotion_period;
        let promote = now >= self.last_promotion + self.params.promotion_period;
        if !(demote || promote) {
            return;
        }
        let capacity = ctx.mem.tiers().first().map_or(0, |t| t.capacity_pages);
        self.refresh_candidates(ctx.mem);
        if demote {
            self.last_demotion = now;
            self.demote(ctx, capacity);
        }
        if promote {
            self.last_promotion = now;
            self.promote(ctx, capacity);
        }
    }

    fn on_moved(&mut self, results: &[(Migration, MoveStatus)]) {
        for (m, _) in results {
            self.inflight += if m.to == TierId::FAST { -1 } else { 1 };
        }
    }

    fn metadata_bytes(&self) -> usize {
        self.counts.heap_bytes()
            + self.listed.heap_bytes()
            + self.candidates.capacity() * std::mem::size_of::<Page>()
            + self.scratch.capacity() * std::mem::size_of::<Resident>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::Rng;
    use crate::{InMemory, Mover, Plan, SampleRate, TierStats};

    fn sample(page: Page, tier: TierId) -> Event {
        Event::Sample { page, tier, word: None, write: false, time: 0, stall_ns: None }
    }

    fn policy(params: MemtisParams, pages: u64) -> MemtisPolicy {
        MemtisPolicy::new(params, &PolicySetup { fast_pages: 0, pages }).unwrap()
    }

    fn feed(policy: &mut MemtisPolicy, mem: &InMemory, events: &[Event]) {
        let (mut plan, mut sources) = (Plan::default(), policy.sources());
        policy.on_events(events, &mut Ctx { mem, plan: &mut plan, sources: &mut sources });
        assert!(plan.is_empty(), "MEMTIS migrates only from kmigraterd");
    }

    /// A tick at `now` with a total miss rate of `rate`; the plan is executed. Returns
    /// the source request after the tick.
    fn tick(policy: &mut MemtisPolicy, mem: &mut InMemory, now: Nanos, rate: f64) -> SourceRequest {
        let (mut plan, mut sources) = (Plan::default(), policy.sources());
        let t = Telemetry {
            now,
            tiers: vec![TierStats { request_rate: rate, ..Default::default() }],
            ..Default::default()
        };
        policy.on_tick(&t, &mut Ctx { mem: &*mem, plan: &mut plan, sources: &mut sources });
        let mut results = Vec::new();
        Mover::default().execute(&mut plan, mem, &mut results);
        policy.on_moved(&results);
        sources
    }

    /// `n` samples of each page in `pages`, interleaved.
    fn rounds(pages: impl Iterator<Item = Page> + Clone, n: usize, tier: TierId) -> Vec<Event> {
        (0..n).flat_map(|_| pages.clone().map(move |p| sample(p, tier))).collect()
    }

    #[test]
    fn the_histogram_stays_exact_through_coolings() {
        let params = MemtisParams { cooling_samples: 1000, adaptation_samples: 300, ..Default::default() };
        let mut p = policy(params, 100);
        let mem = InMemory::new(&[10, 100]).unwrap();
        let mut rng = Rng::new(5);
        let events: Vec<Event> = (0..10_500).map(|_| sample(rng.below(100).min(rng.below(100)), TierId(1))).collect();
        feed(&mut p, &mem, &events);
        let mut rebuilt = HotnessHistogram::new();
        p.counts.iter().for_each(|(_, c)| rebuilt.add(c as u64, 1));
        assert_eq!(p.histogram, rebuilt);
        assert!(p.histogram.pages_in(0) > 0, "pages cooled to 0 stay counted");
        let before = p.histogram.total();
        feed(&mut p, &mem, &[Event::Free { page: 0 }]);
        assert_eq!(p.histogram.total(), before - 1);
    }

    #[test]
    fn the_hot_threshold_fits_the_fast_tier_and_rises_until_cooling_lowers_it() {
        // Adaptation every 2080 samples, cooling at the fourth.
        let params = MemtisParams { adaptation_samples: 2080, cooling_samples: 4 * 2080, ..Default::default() };
        let mut p = policy(params, 300);
        let mem = InMemory::new(&[100, 3000]).unwrap();
        // 20 pages x 64 samples (bin 7), 50 x 8 (bin 4), 200 x 2 (bin 2).
        let mut events = rounds(0..20, 64, TierId(1));
        events.extend(rounds(20..70, 8, TierId(1)));
        events.extend(rounds(70..270, 2, TierId(1)));
        feed(&mut p, &mem, &events);
        // 97 pages fit (3% watermark): bins 7 and 4 (70 pages), not bin 2. 70 pages fill
        // less than 75% of them: bin 3 is warm.
        assert_eq!(p.thresholds(), (4, 3));
        // 30 more pages in bin 7: bins 7 and 4 no longer fit, the threshold rises.
        let mut events = rounds(300..330, 64, TierId(1));
        events.extend(rounds(330..410, 2, TierId(1)));
        feed(&mut p, &mem, &events);
        assert_eq!(p.thresholds(), (7, 6));
        // They go: bins 7 and 4 would fit again, but only cooling lowers the threshold.
        let frees: Vec<Event> = (300..330).map(|page| Event::Free { page }).collect();
        feed(&mut p, &mem, &frees);
        feed(&mut p, &mem, &rounds(1000..2040, 2, TierId(1)));
        assert_eq!(p.thresholds(), (7, 6));
        // Cooling: every bin moves one down, and so does the threshold, by one bin.
        feed(&mut p, &mem, &rounds(2040..3080, 2, TierId(1)));
        assert_eq!(p.histogram.pages_in(6), 20);
        assert_eq!(p.thresholds(), (6, 5));
    }

    #[test]
    fn kmigraterd_promotes_hot_slow_pages_over_cold_fast_ones() {
        let mut mem = InMemory::new(&[100, 1000]).unwrap();
        for page in 0..300 {
            mem.touch(page); // 0..100 fast (free: 0 < 2%), the rest slow
        }
        let mut p = policy(MemtisParams::default(), 300);
        // Fast pages 0..50 are sampled (hot: the threshold is still bin 1), 50..100 not;
        // slow pages 200..210 are sampled and listed for promotion.
        feed(&mut p, &mem, &rounds(0..50, 2, TierId::FAST));
        feed(&mut p, &mem, &rounds(200..210, 3, TierId(1)));
        assert_eq!(p.candidates.len(), 10);
        tick(&mut p, &mut mem, 10 * MILLISECOND, 1e9);
        assert_eq!(mem.free_pages(TierId::FAST), 0, "kmigraterd waits 500 ms");
        tick(&mut p, &mut mem, 500 * MILLISECOND, 1e9);
        // Demotion made room for 10 promotions plus the 3% watermark: 13 cold pages, the
        // first unsampled ones in address order.
        assert!((200..210).all(|q| mem.tier_of(q) == Some(TierId::FAST)));
        assert!((50..63).all(|q| mem.tier_of(q) == Some(TierId(1))));
        assert!((0..50).chain(63..100).all(|q| mem.tier_of(q) == Some(TierId::FAST)));
        assert_eq!(mem.free_pages(TierId::FAST), 3);
        assert!(p.candidates.is_empty() && p.listed.is_empty());
        assert_eq!(p.inflight, 0);
    }

    #[test]
    fn warm_pages_are_demoted_only_when_promotions_starve() {
        let params = MemtisParams { adaptation_samples: 256, ..Default::default() };
        let mut mem = InMemory::new(&[20, 100]).unwrap();
        for page in 0..60 {
            mem.touch(page); // 0..20 fast, full
        }
        let mut p = policy(params, 60);
        // Fast pages 0..4 have 16 samples (bin 5), 4..20 have 8 (bin 4); slow pages
        // 30..34 have 16. At the adaptation (256 samples) bin 5 (8 pages) fits the 19
        // pages of room, bins 5 and 4 do not; 8 pages fill less than 75%: bin 4 is warm.
        let mut events = rounds(0..4, 16, TierId::FAST);
        events.extend(rounds(4..20, 8, TierId::FAST));
        events.extend(rounds(30..34, 16, TierId(1)));
        feed(&mut p, &mem, &events);
        assert_eq!(p.thresholds(), (5, 4));
        // No fast page is cold: nothing is demoted, nothing promoted, and warm pages lose
        // their protection...
        tick(&mut p, &mut mem, 500 * MILLISECOND, 1e9);
        assert_eq!((mem.free_pages(TierId::FAST), p.thresholds()), (0, (5, 5)));
        // ...so the next round demotes 4 + 1 (watermark) of them for the hot slow pages.
        tick(&mut p, &mut mem, SECOND, 1e9);
        assert_eq!(mem.free_pages(TierId::FAST), 1);
        assert!((30..34).all(|q| mem.tier_of(q) == Some(TierId::FAST)));
        assert!((4..9).all(|q| mem.tier_of(q) == Some(TierId(1))));
        assert!((0..4).all(|q| mem.tier_of(q) == Some(TierId::FAST)), "hot pages stay");
    }

    #[test]
    fn the_period_ladder_holds_ksampled_under_its_cpu_quota() {
        let params = MemtisParams { quota_period: SECOND, ..Default::default() };
        let mut p = policy(params, 10);
        let mut mem = InMemory::new(&[10, 100]).unwrap();
        assert_eq!(p.sources().samples.unwrap().rate, SampleRate::Period(199));
        // 200k samples x 200 ns in 1 s: 4% of a core, above 3% + 0.5%: one step longer.
        feed(&mut p, &mem, &rounds(0..10, 20_000, TierId::FAST));
        let hz = |s: SourceRequest| match s.samples.unwrap().rate {
            SampleRate::Hz(hz) => hz,
            r => panic!("{r:?}"),
        };
        assert_eq!(hz(tick(&mut p, &mut mem, SECOND / 2, 1e9)), 1e9 / 199.0, "checked once per quota period");
        assert_eq!(hz(tick(&mut p, &mut mem, SECOND, 1e9)), 1e9 / 293.0);
        // 140k samples: 2.8%, within the band: no step. Then 10k: 0.2%: one step back.
        feed(&mut p, &mem, &rounds(0..10, 14_000, TierId::FAST));
        assert_eq!(hz(tick(&mut p, &mut mem, 2 * SECOND, 2e9)), 2e9 / 293.0);
        feed(&mut p, &mem, &rounds(0..10, 1000, TierId::FAST));
        assert_eq!(hz(tick(&mut p, &mut mem, 3 * SECOND, 1e9)), 1e9 / 199.0);
    }

    #[test]
    fn parameters_are_checked() {
        let s = PolicySetup { fast_pages: 1, pages: 2 };
        let bad = |p: MemtisParams| MemtisPolicy::new(p, &s).unwrap_err().param;
        let d = MemtisParams::default();
        assert_eq!(bad(MemtisParams { sample_periods: &[], ..d }), "sample_periods");
        assert_eq!(bad(MemtisParams { sample_periods: &[0], ..d }), "sample_periods");
        assert_eq!(bad(MemtisParams { cpu_quota: 2.0, ..d }), "cpu_quota");
        assert_eq!(bad(MemtisParams { promotion_wmark: 0.01, ..d }), "promotion_wmark");
        assert_eq!(bad(MemtisParams { cooling_samples: 0, ..d }), "cooling_samples");
        assert_eq!(bad(MemtisParams { min_hot_bin: 0, ..d }), "min_hot_bin");
        assert_eq!(bad(MemtisParams { quota_cores: 0.0, ..d }), "quota_cores");
    }
}
