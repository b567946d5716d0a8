//! `freqtier`: FreqTier (FreqTier §IV–V): frequency-based tiering with a blocked 4-bit
//! counting Bloom filter sized for the fast tier.
//!
//! - **Counting** (§IV-B, §V-A, §V-C-b/c): samples are coalesced per page
//!   ([`Coalescer`]) and applied to the filter once per batch of `batch_samples`, or at
//!   the next tick when the batch is not full yet (the platform delivers events in
//!   smaller batches than the paper's 100k).
//! - **Promotion** (Algorithm 1): after a batch is counted, every page of it whose count
//!   is at least the hot threshold and that lives on a slow tier is promoted.
//! - **Demotion** (Algorithm 2, §V-B-1): when the fast tier's free pages fall below
//!   `promoting_wmark`, a wrapping scan of resident pages resumes from its saved cursor
//!   and demotes fast pages whose count is below the threshold until `demoting_wmark`
//!   free pages are in sight (queued promotions count as already taken).
//! - **Dynamic hot threshold** (§V-C-a): FreqTier's own rule over the distribution of
//!   counts the filter reports for sampled pages (16 bins, one per 4-bit count, kept
//!   exact under halving): after each batch, raise the threshold by one when the hot
//!   set (pages with count ≥ threshold) exceeds the fast tier, lower it by one when the
//!   hot set one step lower would still fit.
//! - **Aging**: every counter is halved after a fixed number of samples per fast-tier
//!   page (see [`FreqTierParams::age_samples_per_fast_page`]).
//! - **Dynamic tiering intensity** (§V-B-2): sampling starts at the highest of three
//!   rates. At the end of every `window` the fast-tier hit ratio of the window is
//!   compared with the previous window's: stable (within `stable_tolerance`) steps the
//!   rate down one level, unstable steps it up. Stable at the lowest level, a window
//!   with no promotion (promotion plateau) or a full demotion pass that finds no cold
//!   page (empty demotion scan) enters monitoring mode: sampling is suspended and only
//!   the hit ratio is watched (from [`Telemetry::fast_hit_ratio`]'s counters, as
//!   FreqTier uses `perf stat`); an unstable window there returns to promoting at the
//!   highest rate.

use super::{PolicySetup, ScanPass};
use crate::memory::{MoveStatus, Resident, ScanCursor};
use crate::policy::{Ctx, Migration, Policy, Sampling, SourceRequest};
use crate::sketches::{BlockedCountingBloomFilter, Coalescer, CounterBits, FrequencySketch};
use crate::telemetry::Telemetry;
use crate::types::{Nanos, Page, TierId, SECOND};
use crate::{Event, ParamError};

/// Parameters of [`FreqTierPolicy`].
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct FreqTierParams {
    /// FreqTier §V-C-a: initial hot threshold 5.
    pub initial_hot_threshold: u32,
    /// The lowest the dynamic threshold goes. FreqTier is silent; 2 as the authors'
    /// HybridTier artifact (`find_hot_thresh`): a page sampled once shows no reuse.
    pub min_hot_threshold: u32,
    /// FreqTier §V-B-2: sampling levels 100 kHz, 10 kHz and 1 kHz, highest first.
    pub sample_rates_hz: [f64; 3],
    /// FreqTier §IV-C: samples are processed (and promotions issued) in batches of 100k.
    pub batch_samples: u64,
    /// FreqTier §V-A: filter sized for the fast tier's pages at a 10^-3 error rate.
    pub filter_error_rate: f64,
    /// Hash functions per page (k = 4, the sizing HybridTier §4.2 uses with the same
    /// error rate).
    pub hashes: u32,
    /// FreqTier §V-A halves every counter periodically, "similar to \[16\]" (TinyLFU),
    /// which halves after a sample of W additions. The paper gives no period; W = 160
    /// samples per fast-tier page (16 per 4-bit counter range, times 10) is the
    /// authors' own choice in their HybridTier artifact (`SAMPLE_SIZE`). A sample count
    /// rather than a time keeps the counted window the same at every sampling rate.
    pub age_samples_per_fast_page: u64,
    /// FreqTier §V-B-2: the hit ratio is recorded, and promotions counted, per minute.
    pub window: Nanos,
    /// FreqTier §V-B-2: the hit ratio is stable when it varies within 0.5% (absolute,
    /// between consecutive windows).
    pub stable_tolerance: f64,
    /// FreqTier §V-B: demote when free fast pages fall below PROMOTING_WMARK (a
    /// fraction of the fast tier; 2% as MEMTIS and [`super::ThresholdParams`]).
    pub promoting_wmark: f64,
    /// FreqTier §V-B: demote until free fast pages exceed DEMOTING_WMARK (3%).
    pub demoting_wmark: f64,
    /// Pages examined per step of the demotion scan (§V-B-1 reads pagemap in batches;
    /// 1024 as the authors' artifact).
    pub scan_batch: usize,
}

impl Default for FreqTierParams {
    fn default() -> Self {
        Self {
            initial_hot_threshold: 5,
            min_hot_threshold: 2,
            sample_rates_hz: [100_000.0, 10_000.0, 1_000.0],
            batch_samples: 100_000,
            filter_error_rate: 1e-3,
            hashes: 4,
            age_samples_per_fast_page: 160,
            window: 60 * SECOND,
            stable_tolerance: 0.005,
            promoting_wmark: 0.02,
            demoting_wmark: 0.03,
            scan_batch: 1024,
        }
    }
}

/// FreqTier's state (§V-B, Fig. 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FreqTierMode {
    /// Sampling at `sample_rates_hz[level]`, promoting and demoting.
    Promoting {
        /// Index into the sampling levels (0 is the highest rate).
        level: usize,
    },
    /// Sampling suspended; only the hit ratio is watched.
    Monitoring,
}

/// Highest 4-bit count.
const MAX_COUNT: usize = 15;

/// The filter, the distribution of the counts it reports for sampled pages, and the
/// pages of the batch being applied that reached the hot threshold.
#[derive(Clone, Debug)]
struct Counts {
    filter: BlockedCountingBloomFilter,
    /// `dist[c]`: sampled pages whose estimate is `c` (index 0 unused).
    dist: [u64; MAX_COUNT + 1],
    threshold: u32,
    hot: Vec<Page>,
}

impl Counts {
    /// Pages with count ≥ `t`.
    fn hot_pages(&self, t: u32) -> u64 {
        self.dist[t as usize..].iter().sum()
    }
}

impl FrequencySketch for Counts {
    fn prefetch(&self, page: Page) {
        self.filter.prefetch(page);
    }

    fn get(&self, page: Page) -> u32 {
        self.filter.get(page)
    }

    fn increase(&mut self, page: Page, amount: u32) -> u32 {
        let old = self.filter.get(page);
        let new = self.filter.increase(page, amount);
        if old != new {
            if old > 0 {
                self.dist[old as usize] = self.dist[old as usize].saturating_sub(1);
            }
            self.dist[new as usize] += 1;
        }
        if new >= self.threshold {
            self.hot.push(page);
        }
        new
    }

    fn age(&mut self) {
        self.filter.age();
        // Halving maps counts 2c and 2c+1 to c; pages at 1 fall to 0 and leave.
        for c in 1..=MAX_COUNT {
            self.dist[c] = self.dist.get(2 * c).copied().unwrap_or(0) + self.dist.get(2 * c + 1).copied().unwrap_or(0);
        }
    }

    fn max_count(&self) -> u32 {
        self.filter.max_count()
    }

    fn heap_bytes(&self) -> usize {
        self.filter.heap_bytes() + self.hot.capacity() * std::mem::size_of::<Page>()
    }
}

/// FreqTier; see the module documentation.
#[derive(Clone, Debug)]
pub struct FreqTierPolicy {
    params: FreqTierParams,
    counts: Counts,
    batch: Coalescer,
    /// Fast-tier pages the hot set may fill (capacity less the demotion watermark).
    hot_capacity: u64,
    /// Samples between agings, and samples counted since the last.
    age_every: u64,
    since_age: u64,
    mode: FreqTierMode,
    cursor: ScanCursor,
    scratch: Vec<Resident>,
    window_start: Nanos,
    window_fast: u64,
    window_total: u64,
    window_promotions: u64,
    last_hit_ratio: Option<f64>,
}

impl FreqTierPolicy {
    /// FreqTier for `setup` (the filter is sized for its fast tier).
    pub fn new(params: FreqTierParams, setup: &PolicySetup) -> Result<Self, ParamError> {
        let p = &params;
        if p.min_hot_threshold == 0 || p.min_hot_threshold > MAX_COUNT as u32 {
            return Err(ParamError::new("min_hot_threshold", p.min_hot_threshold, "1 to 15 (4-bit counters)"));
        }
        if !(p.min_hot_threshold..=MAX_COUNT as u32).contains(&p.initial_hot_threshold) {
            return Err(ParamError::new(
                "initial_hot_threshold",
                p.initial_hot_threshold,
                "min_hot_threshold to 15 (4-bit counters)",
            ));
        }
        if p.sample_rates_hz.iter().any(|r| !(r.is_finite() && *r > 0.0)) {
            return Err(ParamError::new("sample_rates_hz", format!("{:?}", p.sample_rates_hz), "rates above 0 Hz"));
        }
        if p.batch_samples == 0 {
            return Err(ParamError::new("batch_samples", 0, "at least 1 sample"));
        }
        if p.age_samples_per_fast_page == 0 {
            return Err(ParamError::new("age_samples_per_fast_page", 0, "at least 1 sample"));
        }
        if p.window == 0 {
            return Err(ParamError::new("window", 0, "a duration above 0 ns"));
        }
        if !(p.stable_tolerance >= 0.0 && p.stable_tolerance <= 1.0) {
            return Err(ParamError::new("stable_tolerance", p.stable_tolerance, "a hit-ratio difference in [0, 1]"));
        }
        super::check_demotion_scan(p.promoting_wmark, p.demoting_wmark, p.scan_batch)?;
        let filter = BlockedCountingBloomFilter::with_error_rate(
            setup.fast_pages,
            p.filter_error_rate,
            p.hashes,
            CounterBits::Four,
        )?;
        let fast = setup.fast_pages;
        Ok(Self {
            params,
            counts: Counts { filter, dist: [0; MAX_COUNT + 1], threshold: p.initial_hot_threshold, hot: Vec::new() },
            batch: Coalescer::default(),
            hot_capacity: fast - (fast as f64 * p.demoting_wmark).ceil() as u64,
            age_every: fast.saturating_mul(p.age_samples_per_fast_page),
            since_age: 0,
            mode: FreqTierMode::Promoting { level: 0 },
            cursor: ScanCursor::default(),
            scratch: Vec::new(),
            window_start: 0,
            window_fast: 0,
            window_total: 0,
            window_promotions: 0,
            last_hit_ratio: None,
        })
    }

    /// The current state.
    pub fn mode(&self) -> FreqTierMode {
        self.mode
    }

    /// The current hot threshold.
    pub fn hot_threshold(&self) -> u32 {
        self.counts.threshold
    }

    /// The filter's count for `page`.
    pub fn count(&self, page: Page) -> u32 {
        self.counts.get(page)
    }

    /// The sampling rate now requested (0 in monitoring mode).
    pub fn sample_rate_hz(&self) -> f64 {
        match self.mode {
            FreqTierMode::Promoting { level } => self.params.sample_rates_hz[level],
            FreqTierMode::Monitoring => 0.0,
        }
    }

    fn sampling(&self) -> Sampling {
        Sampling::new(self.sample_rate_hz())
    }

    /// Applies the pending batch: counts, promotions (Algorithm 1), aging, threshold.
    fn process_batch(&mut self, ctx: &mut Ctx<'_>) {
        let samples = self.batch.samples();
        if samples == 0 {
            return;
        }
        self.batch.flush(&mut self.counts);
        for &page in &self.counts.hot {
            if ctx.mem.tier_of(page).is_some_and(|t| t != TierId::FAST) {
                ctx.promote(page);
            }
        }
        self.counts.hot.clear();
        self.since_age += samples;
        // Four halvings empty a 4-bit counter: more would change nothing.
        for _ in 0..(self.since_age / self.age_every).min(4) {
            self.counts.age();
        }
        self.since_age %= self.age_every;
        self.adjust_threshold();
    }

    /// §V-C-a: one step towards the threshold whose hot set just fits the fast tier.
    fn adjust_threshold(&mut self) {
        let t = self.counts.threshold;
        if self.counts.hot_pages(t) > self.hot_capacity && t < MAX_COUNT as u32 {
            self.counts.threshold = t + 1;
        } else if t > self.params.min_hot_threshold && self.counts.hot_pages(t - 1) <= self.hot_capacity {
            self.counts.threshold = t - 1;
        }
    }

    /// Algorithm 2 between the watermarks. Returns false when demotion was needed and a
    /// full pass over resident pages found no cold page (an empty demotion scan).
    fn demote_cold(&mut self, ctx: &mut Ctx<'_>) -> bool {
        let cap = ctx.mem.tiers()[0].capacity_pages as f64;
        let queued = ctx.plan.as_slice().iter().filter(|m| m.to == TierId::FAST).count();
        let free = ctx.mem.free_pages(TierId::FAST) as f64 - queued as f64;
        if free >= self.params.promoting_wmark * cap {
            return true;
        }
        let mut needed = (self.params.demoting_wmark * cap - free).ceil() as usize;
        let wanted = needed;
        let mut pass = ScanPass::new(&self.cursor);
        while needed > 0 && pass.next(ctx.mem, &mut self.cursor, self.params.scan_batch, &mut self.scratch) {
            for r in &self.scratch {
                if needed > 0 && r.tier == TierId::FAST && self.counts.get(r.page) < self.counts.threshold {
                    ctx.demote(r.page);
                    needed -= 1;
                }
            }
        }
        needed == 0 || needed < wanted
    }

    /// §V-B-2 at the end of a window.
    fn end_window(&mut self, now: Nanos) {
        let hit_ratio = (self.window_total > 0).then(|| self.window_fast as f64 / self.window_total as f64);
        let stable = match (self.last_hit_ratio, hit_ratio) {
            (Some(a), Some(b)) => Some((a - b).abs() <= self.params.stable_tolerance),
            _ => None,
        };
        let lowest = self.params.sample_rates_hz.len() - 1;
        self.mode = match (self.mode, stable) {
            (FreqTierMode::Promoting { .. }, _) if self.window_promotions == 0 => FreqTierMode::Monitoring,
            (FreqTierMode::Promoting { level }, Some(true)) if level == lowest => FreqTierMode::Monitoring,
            (FreqTierMode::Promoting { level }, Some(true)) => FreqTierMode::Promoting { level: level + 1 },
            (FreqTierMode::Promoting { level }, Some(false)) => {
                FreqTierMode::Promoting { level: level.saturating_sub(1) }
            }
            (FreqTierMode::Monitoring, Some(false)) => FreqTierMode::Promoting { level: 0 },
            (mode, _) => mode,
        };
        if hit_ratio.is_some() {
            self.last_hit_ratio = hit_ratio;
        }
        self.window_start = now;
        (self.window_fast, self.window_total, self.window_promotions) = (0, 0, 0);
    }
}

impl Policy for FreqTierPolicy {
    fn name(&self) -> &str {
        "freqtier"
    }

    fn sources(&self) -> SourceRequest {
        SourceRequest { samples: Some(self.sampling()), ..Default::default() }
    }

    fn on_events(&mut self, events: &[Event], ctx: &mut Ctx<'_>) {
        for e in events {
            if let Event::Sample { page, .. } = *e {
                self.batch.add(page);
            }
        }
        if self.batch.samples() >= self.params.batch_samples {
            self.process_batch(ctx);
        }
    }

    fn on_tick(&mut self, telemetry: &Telemetry, ctx: &mut Ctx<'_>) {
        self.process_batch(ctx);
        self.window_fast += telemetry.tiers.first().map_or(0, |t| t.accesses);
        self.window_total += telemetry.tiers.iter().map(|t| t.accesses).sum::<u64>();
        if matches!(self.mode, FreqTierMode::Promoting { .. }) && !self.demote_cold(ctx) {
            self.mode = FreqTierMode::Monitoring;
        }
        if telemetry.now >= self.window_start.saturating_add(self.params.window) {
            self.end_window(telemetry.now);
        }
        ctx.sources.samples = Some(self.sampling());
    }

    fn on_moved(&mut self, results: &[(Migration, MoveStatus)]) {
        self.window_promotions +=
            results.iter().filter(|(m, s)| m.to == TierId::FAST && *s == MoveStatus::Moved).count() as u64;
    }

    fn metadata_bytes(&self) -> usize {
        self.counts.heap_bytes() + self.batch.heap_bytes() + self.scratch.capacity() * std::mem::size_of::<Resident>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policies::rig::Rig;
    use crate::types::MILLISECOND;
    use crate::{Memory, SampleRate, ScanMeter};

    /// `fast` fast pages, all taken by pages `0..fast`; `slow` pages from 1000 on the
    /// slow tier; 100 ms per tick.
    fn new_rig(params: FreqTierParams, fast: u64, slow: u64) -> Rig<FreqTierPolicy> {
        Rig::new(
            FreqTierPolicy::new(params, &PolicySetup { fast_pages: fast, pages: fast + slow }).unwrap(),
            fast,
            slow,
        )
    }

    #[test]
    fn a_counted_batch_promotes_hot_slow_pages_and_the_scan_demotes_cold_ones_from_its_cursor() {
        let mut rig = new_rig(FreqTierParams::default(), 100, 15);
        rig.sample(1000..1010, 6);
        // Nothing is counted before the batch is processed (at 100k samples or a tick).
        assert_eq!(rig.policy.count(1000), 0);
        rig.tick(0, 0);
        assert!((1000..1010).all(|p| rig.mem.tier_of(p) == Some(TierId::FAST)));
        // 10 promotions and 3% of the fast tier free: the scan demoted 13 cold pages in
        // address order, and the next round resumes where it stopped.
        assert!((0..13).all(|p| rig.mem.tier_of(p) == Some(TierId(1))));
        assert_eq!(rig.mem.free_pages(TierId::FAST), 3);
        rig.sample(1010..1015, 6);
        rig.tick(0, 0);
        assert!((13..18).all(|p| rig.mem.tier_of(p) == Some(TierId(1))));
        assert_eq!(rig.mem.tier_of(18), Some(TierId::FAST));
        assert!((1010..1015).all(|p| rig.mem.tier_of(p) == Some(TierId::FAST)));
        assert!(rig.policy.metadata_bytes() >= 100 * 20 / 2, "a filter of ~20 4-bit counters per fast page");
    }

    #[test]
    fn full_batches_are_counted_at_once_and_coalesced() {
        let mut rig = new_rig(FreqTierParams { batch_samples: 4, ..Default::default() }, 100, 1);
        rig.sample([1000].into_iter(), 3);
        assert_eq!(rig.policy.count(1000), 0);
        rig.sample([1000].into_iter(), 1);
        assert_eq!(rig.policy.count(1000), 4);
    }

    #[test]
    fn the_hot_threshold_follows_the_hot_set_against_the_fast_tier() {
        // 200 pages at count 8 overflow 100 fast pages: the threshold steps up per batch.
        let mut rig = new_rig(FreqTierParams::default(), 100, 200);
        rig.sample(1000..1200, 8);
        rig.tick(0, 0);
        assert_eq!(rig.policy.hot_threshold(), 6);
        rig.tick(0, 0); // no batch, no step
        assert_eq!(rig.policy.hot_threshold(), 6);
        for _ in 0..5 {
            rig.sample(1000..1001, 1);
            rig.tick(0, 0);
        }
        assert_eq!(rig.policy.hot_threshold(), 9, "above the 200 pages at 8");
        // 10 hot pages fill nothing: the threshold steps down to its floor.
        let mut rig = new_rig(FreqTierParams::default(), 100, 10);
        for (round, expected) in [4, 3, 2, 2].into_iter().enumerate() {
            rig.sample(1000..1010, 1 + round);
            rig.tick(0, 0);
            assert_eq!(rig.policy.hot_threshold(), expected);
        }
    }

    #[test]
    fn counters_halve_after_the_aging_sample_count() {
        // 1 sample per fast page: halve every 100 samples.
        let params = FreqTierParams { age_samples_per_fast_page: 1, ..Default::default() };
        let mut rig = new_rig(params, 100, 100);
        rig.sample(1000..1001, 12);
        rig.sample(1010..1098, 1);
        rig.tick(0, 0);
        assert_eq!(rig.policy.count(1000), 6);
        assert_eq!(rig.policy.count(1010), 0);
    }

    #[test]
    fn sampling_steps_down_while_the_hit_ratio_is_stable_and_monitoring_wakes_on_a_change() {
        // Fast tier half empty: no demotion, no empty scan. Windows of 1 s = 10 ticks.
        let mut rig = new_rig(FreqTierParams { window: SECOND, ..Default::default() }, 100, 0);
        for p in 50..100 {
            rig.mem.free(p);
        }
        let promoted = [(Migration { page: 1, to: TierId::FAST }, MoveStatus::Moved)];
        let window = |rig: &mut Rig<FreqTierPolicy>, hit: u64, promotions: bool| {
            for _ in 0..10 {
                if promotions {
                    rig.policy.on_moved(&promoted);
                }
                rig.tick(hit, 100 - hit);
            }
            (rig.policy.mode(), rig.rate())
        };
        use FreqTierMode::*;
        let hz = SampleRate::Hz;
        assert_eq!(window(&mut rig, 90, true), (Promoting { level: 0 }, hz(100_000.0)), "first window");
        assert_eq!(window(&mut rig, 90, true), (Promoting { level: 1 }, hz(10_000.0)), "stable");
        assert_eq!(window(&mut rig, 70, true), (Promoting { level: 0 }, hz(100_000.0)), "unstable");
        assert_eq!(window(&mut rig, 70, true), (Promoting { level: 1 }, hz(10_000.0)));
        assert_eq!(window(&mut rig, 70, true), (Promoting { level: 2 }, hz(1_000.0)));
        assert_eq!(window(&mut rig, 70, true), (Monitoring, hz(0.0)), "stable at the lowest level");
        assert_eq!(window(&mut rig, 70, false), (Monitoring, hz(0.0)), "monitoring watches the hit ratio");
        assert_eq!(window(&mut rig, 40, false), (Promoting { level: 0 }, hz(100_000.0)), "unstable: wake");
        assert_eq!(window(&mut rig, 10, false), (Monitoring, hz(0.0)), "promotion plateau");
    }

    #[test]
    fn an_empty_demotion_scan_enters_monitoring() {
        // Every fast page is hot and the fast tier is full: no cold page to demote.
        let mut rig = new_rig(FreqTierParams::default(), 100, 0);
        rig.sample(0..100, 10);
        rig.tick(100, 0);
        assert_eq!(rig.policy.mode(), FreqTierMode::Monitoring);
        assert_eq!(rig.rate(), SampleRate::Hz(0.0));
        assert_eq!(rig.policy.sample_rate_hz(), 0.0);
    }

    #[test]
    fn an_empty_demotion_scan_is_one_pass_even_when_the_page_it_started_after_was_freed() {
        // The cursor rests past page 99, the highest, which is then freed: every call of
        // the scan wraps and stops short of where the pass began.
        let mut rig = new_rig(FreqTierParams::default(), 100, 0);
        rig.sample(0..100, 10);
        rig.mem.free(99);
        rig.policy.cursor = ScanCursor { next: 100, passes: 0 };
        rig.mem.advance(100 * MILLISECOND);
        let t = Telemetry { now: rig.mem.now(), ..Default::default() };
        let meter = ScanMeter::new(&rig.mem, 10 * 99);
        rig.policy.on_tick(&t, &mut Ctx { mem: &meter, plan: &mut rig.plan, sources: &mut rig.sources });
        assert_eq!(meter.units(), 99, "one pass over the 99 resident pages");
        assert!(rig.plan.is_empty());
        assert_eq!(rig.policy.mode(), FreqTierMode::Monitoring);
    }

    #[test]
    fn parameters_are_checked() {
        let setup = PolicySetup { fast_pages: 10, pages: 100 };
        let check = |p: FreqTierParams| FreqTierPolicy::new(p, &setup).unwrap_err().param;
        let d = FreqTierParams::default();
        assert_eq!(check(FreqTierParams { initial_hot_threshold: 16, ..d }), "initial_hot_threshold");
        assert_eq!(check(FreqTierParams { initial_hot_threshold: 1, ..d }), "initial_hot_threshold");
        assert_eq!(check(FreqTierParams { min_hot_threshold: 0, ..d }), "min_hot_threshold");
        assert_eq!(check(FreqTierParams { sample_rates_hz: [1e5, f64::NAN, 1e3], ..d }), "sample_rates_hz");
        assert_eq!(check(FreqTierParams { batch_samples: 0, ..d }), "batch_samples");
        assert_eq!(check(FreqTierParams { age_samples_per_fast_page: 0, ..d }), "age_samples_per_fast_page");
        assert_eq!(check(FreqTierParams { window: 0, ..d }), "window");
        assert_eq!(check(FreqTierParams { stable_tolerance: -0.1, ..d }), "stable_tolerance");
        assert_eq!(check(FreqTierParams { demoting_wmark: 0.01, ..d }), "demoting_wmark");
        assert_eq!(check(FreqTierParams { scan_batch: 0, ..d }), "scan_batch");
        assert_eq!(check(FreqTierParams { filter_error_rate: 1.0, ..d }), "p");
        assert_eq!(check(FreqTierParams { hashes: 0, ..d }), "k");
        assert_eq!(FreqTierPolicy::new(d, &PolicySetup { fast_pages: 0, pages: 1 }).unwrap_err().param, "n");
    }
}
