//! `hybridtier`: HybridTier (HybridTier §3–4): a long-term frequency tracker and a
//! short-term momentum tracker, both counting Bloom filters.
//!
//! - **Trackers** (§3.1, §4.2): a blocked 4-bit frequency filter sized for the fast
//!   tier's pages at p = 10^-3, and a momentum filter sized the same way for 128× fewer
//!   pages (128× less memory). Frequency counts are coalesced per page and applied once
//!   per batch of `batch_samples` (or at the next tick); they are halved after 160
//!   samples per fast-tier page. Momentum is counted per sample and halved every time
//!   the filter has taken as many samples as the pages it is sized for, so it never
//!   holds more pages than its design load (§4.2: it can be small *because* it cools
//!   often) — on a 16 GB fast tier that is a third of a second at 100 kHz ("within
//!   seconds", §3.1).
//! - **Table 1 policy** (§3.1, §4.3): a sampled slow-tier page is promoted when its
//!   frequency reaches the frequency threshold *or* its momentum reaches
//!   `momentum_threshold`. The frequency threshold is capacity-aware (§3.1, like
//!   MEMTIS): after each batch, the lowest count whose hot set fits the fast tier, over
//!   the distribution of counts the filter reports for sampled pages — one bin per
//!   4-bit count (log2 bins would leave only the thresholds 1, 2, 4 and 8, and at 1:16
//!   the hot set lies inside the top one), a [`HotnessHistogram`] for 16-bit counters.
//!   When free fast pages fall below `promoting_wmark`, a wrapping scan demotes fast
//!   pages with low frequency *and* low momentum until `demoting_wmark` is in sight;
//!   high-frequency, low-momentum pages are marked instead (second chance) and
//!   revisited after `revisit`: a marked page not sampled since is demoted then (a
//!   sample count kept per marked page: comparing filter counts, as the artifact does,
//!   misses accesses to saturated counters and is confused by cooling). A tick scans
//!   at most one pass over the resident pages, and after a pass that found nothing to
//!   demote none at all until a sample, a move or the fast tier's free pages change
//!   what it would find (on a fast tier of equally hot pages every tick would otherwise
//!   rescan the whole footprint in vain). With
//!   `momentum: false` the policy is the frequency-only variant of §6.4.1 (promote and
//!   demote on frequency alone, no second chance).
//! - **Huge pages** (§4.4): with `huge_pages`, both filters count per 2 MiB page
//!   (`page >> 9`) in 16-bit counters and are sized for the fast tier's huge pages; the
//!   threshold's histogram weighs each huge page as 512 base pages. Platforms here migrate base
//!   pages, so decisions stay per base page: a sampled base page is promoted when its
//!   huge page is hot, and the demotion scan judges each base page by its huge page's
//!   counts. Moving whole huge pages is out of scope.
//! - **Sampling suspension** (authors' artifact; the paper is silent): every
//!   `hit_ratio_window` the fast-tier hit ratio of the window is compared with the
//!   previous one. A change within `hit_ratio_tolerance` suspends sampling; while
//!   suspended, a window whose hit ratio falls more than `hit_ratio_tolerance` below the
//!   ratio at suspension resumes it.

use std::collections::VecDeque;

use super::{PolicySetup, ScanPass};
use crate::memory::{MoveStatus, Resident, ScanCursor};
use crate::policy::{Ctx, Migration, Policy, Sampling, SourceRequest};
use crate::sketches::{
    BlockedCountingBloomFilter, Coalescer, CounterBits, FrequencySketch, HotnessHistogram, PageTable,
};
use crate::telemetry::Telemetry;
use crate::types::{Nanos, Page, TierId, HUGE_PAGE_PAGES, SECOND};
use crate::{Event, ParamError};

/// Parameters of [`HybridTierPolicy`].
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct HybridTierParams {
    /// PEBS sampling rate. The authors' artifact samples at 100 kHz (its highest level,
    /// as FreqTier §V-B-2).
    pub sample_rate_hz: f64,
    /// HybridTier §4.3: 100,000 samples per batch.
    pub batch_samples: u64,
    /// HybridTier §4.2: filters sized at p = 0.001.
    pub filter_error_rate: f64,
    /// HybridTier §4.2: k = 4 hash functions.
    pub hashes: u32,
    /// Track momentum (false: the frequency-only variant of HybridTier §6.4.1, Fig. 15).
    pub momentum: bool,
    /// HybridTier §4.2: the momentum filter takes 128× less memory than the frequency
    /// filter (it is sized for 128× fewer pages).
    pub momentum_size_divisor: u64,
    /// HybridTier §6.4.3, §7: momentum threshold 3.
    pub momentum_threshold: u32,
    /// The frequency threshold before the first batch is counted: 5, the artifact's
    /// `initial_hot_thresh` (FreqTier §V-C-a's initial threshold).
    pub initial_frequency_threshold: u32,
    /// The lowest frequency threshold. §3.1 sets it from the hotness distribution and
    /// the fast tier's capacity; 2 as the artifact's `find_hot_thresh` floor (one
    /// sample shows no reuse).
    pub min_frequency_threshold: u32,
    /// Frequency cooling: halve after this many samples per fast-tier page. The paper
    /// gives a long cooling period ("minutes to hours", §3.1); 160 is the artifact's
    /// `SAMPLE_SIZE` (16 per 4-bit range, times 10, after TinyLFU).
    pub cooling_samples_per_fast_page: u64,
    /// HybridTier §4.3: marked pages are revisited after 1 minute.
    pub revisit: Nanos,
    /// Most pages marked for a second chance at once (the artifact's 10k limit).
    pub second_chance_max: usize,
    /// Demote when free fast pages fall below this fraction of the fast tier
    /// (HybridTier §4.3 PROMO_WMARK; the artifact's 1.25%).
    pub promoting_wmark: f64,
    /// Demote until free fast pages reach this fraction (§4.3 DEMOTE_WMARK; 5% in the
    /// artifact).
    pub demoting_wmark: f64,
    /// Pages examined per step of the demotion scan (the artifact reads pagemap 1024
    /// pages at a time).
    pub scan_batch: usize,
    /// HybridTier §4.4: count per 2 MiB huge page in 16-bit counters.
    pub huge_pages: bool,
    /// How often the hit ratio is judged (the artifact's `perf stat -I 60000`).
    pub hit_ratio_window: Nanos,
    /// Hit-ratio change that counts as stable, and drop that resumes sampling (the
    /// artifact's slope threshold, 0.01 per minute).
    pub hit_ratio_tolerance: f64,
}

impl Default for HybridTierParams {
    fn default() -> Self {
        Self {
            sample_rate_hz: 100_000.0,
            batch_samples: 100_000,
            filter_error_rate: 1e-3,
            hashes: 4,
            momentum: true,
            momentum_size_divisor: 128,
            momentum_threshold: 3,
            initial_frequency_threshold: 5,
            min_frequency_threshold: 2,
            cooling_samples_per_fast_page: 160,
            revisit: 60 * SECOND,
            second_chance_max: 10_000,
            promoting_wmark: 0.0125,
            demoting_wmark: 0.05,
            scan_batch: 1024,
            huge_pages: false,
            hit_ratio_window: 60 * SECOND,
            hit_ratio_tolerance: 0.01,
        }
    }
}

/// Pages per frequency count, for the capacity-aware threshold.
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)] // one per policy: boxing would save nothing
enum Distribution {
    /// One bin per 4-bit count (index 0 unused), exact under halving, as the artifact's
    /// `frequency_dist`: log2 bins would offer only the thresholds 1, 2, 4 and 8.
    PerCount([u64; 16]),
    /// Log2 bins for the 16-bit counters of huge-page mode, as MEMTIS.
    Log2(HotnessHistogram),
}

impl Distribution {
    /// `weight` pages went from count `old` to `new`.
    fn record(&mut self, old: u32, new: u32, weight: u64) {
        match self {
            Self::PerCount(d) => {
                d[old as usize] = d[old as usize].saturating_sub(weight);
                d[new as usize] += weight;
            }
            Self::Log2(h) if old == 0 => h.add(new as u64, weight),
            Self::Log2(h) => h.moved(old as u64, new as u64, weight),
        }
    }

    /// Every count was halved.
    fn cool(&mut self) {
        match self {
            Self::PerCount(d) => {
                for c in 1..16 {
                    d[c] = d.get(2 * c).copied().unwrap_or(0) + d.get(2 * c + 1).copied().unwrap_or(0);
                }
            }
            Self::Log2(h) => h.cool(),
        }
    }

    /// HybridTier §3.1: the lowest non-empty count (bin) of the largest hot set that
    /// fits `capacity`. When the hottest non-empty bin alone overflows it, that bin's
    /// lower bound (the hot set overfills, as the artifact's `find_hot_thresh` allows)
    /// rather than a threshold above every count, which would make every page cold.
    fn threshold(&self, capacity: u64) -> u64 {
        match self {
            Self::PerCount(d) => {
                let fits = |c: usize| d[c..].iter().sum::<u64>() <= capacity;
                let t = (1..16).find(|&c| d[c] > 0 && fits(c)).or_else(|| (1..16).rev().find(|&c| d[c] > 0));
                t.unwrap_or(15) as u64
            }
            Self::Log2(h) => match h.threshold(capacity).min_count {
                u64::MAX => (1..=64).rev().find(|&b| h.pages_in(b) > 0).map_or(u64::MAX, |b| 1 << (b - 1)),
                c => c,
            },
        }
    }
}

/// The frequency filter with its count distribution and the per-batch bookkeeping that
/// rides on the coalesced updates: pages reaching the threshold, samples of marked
/// pages.
#[derive(Clone, Debug)]
struct Frequency {
    filter: BlockedCountingBloomFilter,
    distribution: Distribution,
    /// `page >> shift` is the tracked unit (9 for huge pages).
    shift: u32,
    threshold: u32,
    /// Pages of the batch at or above the threshold.
    hot: Vec<Page>,
    /// Pages marked for a second chance, with their samples since marking.
    marks: PageTable,
}

impl FrequencySketch for Frequency {
    fn prefetch(&self, page: Page) {
        self.filter.prefetch(page >> self.shift);
    }

    fn get(&self, page: Page) -> u32 {
        self.filter.get(page >> self.shift)
    }

    fn increase(&mut self, page: Page, amount: u32) -> u32 {
        let key = page >> self.shift;
        let old = self.filter.get(key);
        let new = self.filter.increase(key, amount);
        if old != new {
            self.distribution.record(old, new, 1 << self.shift);
        }
        if self.marks.get(page).is_some() {
            *self.marks.entry(page, 0) += amount;
        }
        if new >= self.threshold {
            self.hot.push(page);
        }
        new
    }

    fn age(&mut self) {
        self.filter.age();
        self.distribution.cool();
    }

    fn max_count(&self) -> u32 {
        self.filter.max_count()
    }

    fn heap_bytes(&self) -> usize {
        self.filter.heap_bytes() + self.hot.capacity() * std::mem::size_of::<Page>() + self.marks.heap_bytes()
    }
}

/// The momentum filter, cooled every `window` samples.
#[derive(Clone, Debug)]
struct Momentum {
    filter: BlockedCountingBloomFilter,
    window: u64,
    since_cooling: u64,
    /// Pages whose momentum reached the threshold since the last batch.
    hot: Vec<Page>,
}

/// HybridTier; see the module documentation.
#[derive(Clone, Debug)]
pub struct HybridTierPolicy {
    params: HybridTierParams,
    frequency: Frequency,
    momentum: Option<Momentum>,
    batch: Coalescer,
    /// Base pages the hot set may fill (capacity less the demotion watermark).
    hot_capacity: u64,
    cooling_every: u64,
    since_cooling: u64,
    /// Marked pages in marking order, with the time of marking.
    second_chance: VecDeque<(Page, Nanos)>,
    cursor: ScanCursor,
    scratch: Vec<Resident>,
    /// Samples applied so far.
    sampled: u64,
    /// Pages moved so far (as the platform reported).
    moved: u64,
    /// What a pass that found nothing to demote saw: `(sampled, moved, free fast
    /// pages)`. While all three stay the same, a pass would find the same: none is made.
    fruitless: Option<(u64, u64, u64)>,
    /// The hit ratio at suspension, while sampling is suspended.
    suspended_at: Option<f64>,
    window_start: Nanos,
    window_fast: u64,
    window_total: u64,
    last_hit_ratio: Option<f64>,
}

impl HybridTierPolicy {
    /// HybridTier for `setup` (both filters are sized for its fast tier).
    pub fn new(params: HybridTierParams, setup: &PolicySetup) -> Result<Self, ParamError> {
        let p = &params;
        let bits = if p.huge_pages { CounterBits::Sixteen } else { CounterBits::Four };
        if !(p.sample_rate_hz.is_finite() && p.sample_rate_hz > 0.0) {
            return Err(ParamError::new("sample_rate_hz", p.sample_rate_hz, "a rate above 0 Hz"));
        }
        if p.batch_samples == 0 {
            return Err(ParamError::new("batch_samples", 0, "at least 1 sample"));
        }
        if p.momentum_size_divisor == 0 {
            return Err(ParamError::new("momentum_size_divisor", 0, "at least 1"));
        }
        if p.momentum_threshold == 0 || p.momentum_threshold > bits.max() {
            return Err(ParamError::new("momentum_threshold", p.momentum_threshold, "1 to the counter maximum"));
        }
        if p.min_frequency_threshold == 0 || p.min_frequency_threshold > bits.max() {
            return Err(ParamError::new(
                "min_frequency_threshold",
                p.min_frequency_threshold,
                "1 to the counter maximum",
            ));
        }
        if !(p.min_frequency_threshold..=bits.max()).contains(&p.initial_frequency_threshold) {
            return Err(ParamError::new(
                "initial_frequency_threshold",
                p.initial_frequency_threshold,
                "min_frequency_threshold to the counter maximum",
            ));
        }
        if p.cooling_samples_per_fast_page == 0 {
            return Err(ParamError::new("cooling_samples_per_fast_page", 0, "at least 1 sample"));
        }
        super::check_demotion_scan(p.promoting_wmark, p.demoting_wmark, p.scan_batch)?;
        if p.hit_ratio_window == 0 {
            return Err(ParamError::new("hit_ratio_window", 0, "a duration above 0 ns"));
        }
        if !(0.0..=1.0).contains(&p.hit_ratio_tolerance) {
            return Err(ParamError::new("hit_ratio_tolerance", p.hit_ratio_tolerance, "a hit-ratio change in [0, 1]"));
        }
        let shift = if p.huge_pages { HUGE_PAGE_PAGES.trailing_zeros() } else { 0 };
        let fast_units = match setup.fast_pages >> shift {
            0 if setup.fast_pages > 0 => 1,
            n => n,
        };
        let filter = |n| BlockedCountingBloomFilter::with_error_rate(n, p.filter_error_rate, p.hashes, bits);
        let momentum_units = (fast_units / p.momentum_size_divisor).max(1);
        let momentum = match p.momentum {
            true => Some(Momentum {
                filter: filter(momentum_units)?.with_seed(0x6d6f_6d65_6e74_756d),
                window: momentum_units,
                since_cooling: 0,
                hot: Vec::new(),
            }),
            false => None,
        };
        let fast = setup.fast_pages;
        Ok(Self {
            params,
            frequency: Frequency {
                filter: filter(fast_units)?,
                distribution: match p.huge_pages {
                    true => Distribution::Log2(HotnessHistogram::new()),
                    false => Distribution::PerCount([0; 16]),
                },
                shift,
                threshold: p.initial_frequency_threshold,
                hot: Vec::new(),
                marks: PageTable::new(),
            },
            momentum,
            batch: Coalescer::default(),
            hot_capacity: fast - (fast as f64 * p.demoting_wmark).ceil() as u64,
            cooling_every: fast.saturating_mul(p.cooling_samples_per_fast_page),
            since_cooling: 0,
            second_chance: VecDeque::new(),
            cursor: ScanCursor::default(),
            scratch: Vec::new(),
            sampled: 0,
            moved: 0,
            fruitless: None,
            suspended_at: None,
            window_start: 0,
            window_fast: 0,
            window_total: 0,
            last_hit_ratio: None,
        })
    }

    /// The frequency threshold now in force.
    pub fn frequency_threshold(&self) -> u32 {
        self.frequency.threshold
    }

    /// The frequency count of `page` (of its huge page in huge-page mode).
    pub fn frequency(&self, page: Page) -> u32 {
        self.frequency.get(page)
    }

    /// The momentum of `page` (0 without a momentum tracker).
    pub fn momentum(&self, page: Page) -> u32 {
        self.momentum.as_ref().map_or(0, |m| m.filter.get(page >> self.frequency.shift))
    }

    /// Pages waiting for their second-chance revisit.
    pub fn marked(&self) -> usize {
        self.second_chance.len()
    }

    /// Whether sampling is suspended.
    pub fn suspended(&self) -> bool {
        self.suspended_at.is_some()
    }

    fn sampling(&self) -> Sampling {
        Sampling::new(if self.suspended() { 0.0 } else { self.params.sample_rate_hz })
    }

    fn high_momentum(&self, page: Page) -> bool {
        self.momentum.is_some() && self.momentum(page) >= self.params.momentum_threshold
    }

    /// Applies the pending batch: frequency counts, promotions (Table 1), cooling and
    /// the capacity-aware threshold.
    fn process_batch(&mut self, ctx: &mut Ctx<'_>) {
        let samples = self.batch.samples();
        if samples == 0 {
            return;
        }
        self.sampled += samples;
        self.batch.flush(&mut self.frequency);
        let momentum_hot = self.momentum.as_ref().map_or(&[][..], |m| &m.hot[..]);
        for &page in self.frequency.hot.iter().chain(momentum_hot) {
            if ctx.mem.tier_of(page).is_some_and(|t| t != TierId::FAST) {
                ctx.promote(page);
            }
        }
        self.frequency.hot.clear();
        if let Some(m) = self.momentum.as_mut() {
            m.hot.clear();
        }
        self.since_cooling += samples;
        // A 16-bit counter empties after 16 halvings: more would change nothing.
        for _ in 0..(self.since_cooling / self.cooling_every).min(16) {
            self.frequency.age();
        }
        self.since_cooling %= self.cooling_every;
        let max = self.frequency.max_count() as u64;
        let t = self.frequency.distribution.threshold(self.hot_capacity);
        self.frequency.threshold = t.clamp(self.params.min_frequency_threshold as u64, max) as u32;
    }

    /// Demotion between the watermarks: second-chance pages due for their revisit
    /// first, then one pass of the wrapping scan at most, unless the last pass found
    /// nothing and nothing has changed since.
    fn demote_cold(&mut self, now: Nanos, ctx: &mut Ctx<'_>) {
        let cap = ctx.mem.tiers()[0].capacity_pages as f64;
        let queued = ctx.plan.as_slice().iter().filter(|m| m.to == TierId::FAST).count();
        let free = ctx.mem.free_pages(TierId::FAST) as f64 - queued as f64;
        if free >= self.params.promoting_wmark * cap {
            return;
        }
        let mut needed = (self.params.demoting_wmark * cap - free).ceil() as usize;
        while needed > 0 {
            match self.second_chance.front() {
                Some(&(page, marked)) if marked.saturating_add(self.params.revisit) <= now => {
                    self.second_chance.pop_front();
                    let idle = self.frequency.marks.remove(page) == Some(0);
                    if idle && ctx.mem.tier_of(page) == Some(TierId::FAST) {
                        ctx.demote(page);
                        needed -= 1;
                    }
                }
                _ => break,
            }
        }
        let state = (self.sampled, self.moved, ctx.mem.free_pages(TierId::FAST));
        if needed == 0 || self.fruitless == Some(state) {
            return;
        }
        let wanted = needed;
        let mut pass = ScanPass::new(&self.cursor);
        while needed > 0 && pass.next(ctx.mem, &mut self.cursor, self.params.scan_batch, &mut self.scratch) {
            for (i, r) in self.scratch.iter().enumerate() {
                if let Some(ahead) = self.scratch.get(i + crate::prefetch::SCAN_AHEAD) {
                    self.frequency.prefetch(ahead.page);
                    if let Some(m) = &self.momentum {
                        m.filter.prefetch(ahead.page >> self.frequency.shift);
                    }
                }
                if needed == 0 || r.tier != TierId::FAST || self.high_momentum(r.page) {
                    continue;
                }
                if self.frequency.get(r.page) < self.frequency.threshold {
                    ctx.demote(r.page);
                    needed -= 1;
                } else if self.momentum.is_some()
                    && self.second_chance.len() < self.params.second_chance_max
                    && self.frequency.marks.get(r.page).is_none()
                {
                    self.frequency.marks.entry(r.page, 0);
                    self.second_chance.push_back((r.page, now));
                }
            }
        }
        self.fruitless = (needed == wanted).then_some(state);
    }

    /// Suspends or resumes sampling at the end of a hit-ratio window.
    fn end_window(&mut self, now: Nanos) {
        let tolerance = self.params.hit_ratio_tolerance;
        if let Some(hit_ratio) = (self.window_total > 0).then(|| self.window_fast as f64 / self.window_total as f64) {
            match self.suspended_at {
                Some(at) if hit_ratio < at - tolerance => self.suspended_at = None,
                None if self.last_hit_ratio.is_some_and(|last| (hit_ratio - last).abs() <= tolerance) => {
                    self.suspended_at = Some(hit_ratio)
                }
                _ => {}
            }
            self.last_hit_ratio = Some(hit_ratio);
        }
        self.window_start = now;
        (self.window_fast, self.window_total) = (0, 0);
    }
}

impl Policy for HybridTierPolicy {
    fn name(&self) -> &str {
        "hybridtier"
    }

    fn sources(&self) -> SourceRequest {
        SourceRequest { samples: Some(self.sampling()), ..Default::default() }
    }

    fn on_events(&mut self, events: &[Event], ctx: &mut Ctx<'_>) {
        let shift = self.frequency.shift;
        let threshold = self.params.momentum_threshold;
        for e in events {
            if let Event::Sample { page, .. } = *e {
                self.batch.add(page);
                if let Some(m) = self.momentum.as_mut() {
                    if m.filter.increment(page >> shift) == threshold {
                        m.hot.push(page);
                    }
                    m.since_cooling += 1;
                    if m.since_cooling == m.window {
                        m.filter.age();
                        m.since_cooling = 0;
                    }
                }
            }
        }
        if self.batch.samples() >= self.params.batch_samples {
            self.process_batch(ctx);
        }
    }

    fn on_tick(&mut self, telemetry: &Telemetry, ctx: &mut Ctx<'_>) {
        self.process_batch(ctx);
        self.demote_cold(telemetry.now, ctx);
        self.window_fast += telemetry.tiers.first().map_or(0, |t| t.accesses);
        self.window_total += telemetry.tiers.iter().map(|t| t.accesses).sum::<u64>();
        if telemetry.now >= self.window_start.saturating_add(self.params.hit_ratio_window) {
            self.end_window(telemetry.now);
        }
        ctx.sources.samples = Some(self.sampling());
    }

    fn on_moved(&mut self, results: &[(Migration, MoveStatus)]) {
        self.moved += results.iter().filter(|(_, status)| *status == MoveStatus::Moved).count() as u64;
    }

    fn metadata_bytes(&self) -> usize {
        let momentum = self
            .momentum
            .as_ref()
            .map_or(0, |m| m.filter.heap_bytes() + m.hot.capacity() * std::mem::size_of::<Page>());
        self.frequency.heap_bytes()
            + momentum
            + self.batch.heap_bytes()
            + self.second_chance.capacity() * std::mem::size_of::<(Page, Nanos)>()
            + self.scratch.capacity() * std::mem::size_of::<Resident>()
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
    fn new_rig(params: HybridTierParams, fast: u64, slow: u64) -> Rig<HybridTierPolicy> {
        Rig::new(
            HybridTierPolicy::new(params, &PolicySetup { fast_pages: fast, pages: fast + slow }).unwrap(),
            fast,
            slow,
        )
    }

    /// Small fast tiers need a momentum filter as large as the frequency filter: at
    /// 1/128 of 100 pages it would hold one page and cool after every sample.
    fn params() -> HybridTierParams {
        HybridTierParams { momentum_size_divisor: 1, ..Default::default() }
    }

    #[test]
    fn high_momentum_promotes_a_page_whose_frequency_is_still_low() {
        // Three samples in a short window: momentum 3, frequency 3 below the threshold 5.
        let mut rig = new_rig(params(), 100, 1);
        rig.sample([1000].into_iter(), 3);
        assert_eq!((rig.policy.momentum(1000), rig.policy.frequency(1000)), (3, 0), "frequency waits for the batch");
        rig.tick(0, 0);
        assert!(rig.fast(1000));
        // 5% of the fast tier free after the promotion: 6 cold pages went, in address order.
        assert!((0..6).all(|p| !rig.fast(p)) && rig.fast(6));
        // The frequency-only variant waits for the frequency threshold.
        let mut rig = new_rig(HybridTierParams { momentum: false, ..params() }, 100, 1);
        rig.sample([1000].into_iter(), 3);
        rig.tick(0, 0);
        assert!(!rig.fast(1000));
        assert_eq!(rig.policy.momentum(1000), 0);
    }

    #[test]
    fn momentum_cools_every_window_of_samples() {
        // The momentum filter holds 100 pages: it halves every 100 samples.
        let mut rig = new_rig(params(), 100, 200);
        rig.sample([1000].into_iter(), 8);
        rig.sample(1100..1191, 1);
        assert_eq!(rig.policy.momentum(1000), 8);
        rig.sample([1001].into_iter(), 1);
        assert_eq!(rig.policy.momentum(1000), 4);
    }

    #[test]
    fn frequent_pages_without_momentum_get_a_second_chance() {
        let mut rig = new_rig(params(), 100, 0);
        // Pages 0..10 are frequent; 250 samples elsewhere cool their momentum to 1.
        rig.sample(0..10, 6);
        rig.sample(5000..5250, 1);
        assert!((0..10).all(|p| rig.policy.momentum(p) < 3));
        rig.tick(0, 0);
        assert!(rig.policy.frequency_threshold() <= 6);
        // Full fast tier: the scan marks the frequent pages and demotes 5 cold ones.
        assert_eq!(rig.policy.marked(), 10);
        assert!((0..10).all(|p| rig.fast(p)));
        assert!((10..15).all(|p| !rig.fast(p)) && rig.fast(15));
        // Page 3 is sampled again; a minute later, under pressure, the idle marked pages
        // are demoted in marking order and page 3 stays.
        rig.sample([3].into_iter(), 1);
        for p in 2000..2005 {
            rig.mem.touch(p);
        }
        rig.tick_after(rig.policy.params.revisit, 0, 0);
        assert!(rig.fast(3) && rig.fast(6));
        assert!([0, 1, 2, 4, 5].iter().all(|&p| !rig.fast(p)));
        assert_eq!(rig.policy.marked(), 4, "pages 6..10 wait for more pressure");
    }

    /// A tick 100 ms on whose scans are counted: the units they returned.
    fn metered_tick(rig: &mut Rig<HybridTierPolicy>) -> u64 {
        rig.mem.advance(100 * MILLISECOND);
        let t = Telemetry { now: rig.mem.now(), ..Default::default() };
        let meter = ScanMeter::new(&rig.mem, 10 * rig.mem.resident() as u64);
        rig.policy.on_tick(&t, &mut Ctx { mem: &meter, plan: &mut rig.plan, sources: &mut rig.sources });
        meter.units()
    }

    #[test]
    fn a_tick_scans_one_pass_at_most_and_none_again_until_something_changes() {
        // Every fast page is equally frequent: the threshold is their count, nothing is
        // demotable. The cursor rests past page 99, the highest, which is then freed.
        let mut rig = new_rig(params(), 100, 0);
        rig.sample(0..100, 6);
        rig.mem.free(99);
        rig.policy.cursor = ScanCursor { next: 100, passes: 0 };
        assert_eq!(metered_tick(&mut rig), 99, "one pass over the 99 resident pages");
        assert!(rig.plan.is_empty());
        assert_eq!(rig.policy.marked(), 99);
        assert_eq!(metered_tick(&mut rig), 0, "nothing changed: no pass");
        // A new page takes the free fast page: the next pass finds it cold.
        rig.mem.touch(500);
        assert_eq!(metered_tick(&mut rig), 100);
        assert_eq!(rig.plan.as_slice(), [Migration { page: 500, to: TierId(1) }]);
        // New samples change what a pass would find, too.
        rig.plan.clear();
        rig.sample([500].into_iter(), 1);
        assert!(metered_tick(&mut rig) <= 100);
    }

    #[test]
    fn the_frequency_only_variant_never_marks() {
        let mut rig = new_rig(HybridTierParams { momentum: false, ..params() }, 100, 0);
        rig.sample(0..10, 6);
        rig.sample(5000..5250, 1);
        rig.tick(0, 0);
        assert_eq!(rig.policy.marked(), 0);
        assert!((0..10).all(|p| rig.fast(p)) && (10..15).all(|p| !rig.fast(p)));
    }

    #[test]
    fn the_frequency_threshold_fits_the_hot_set_to_the_fast_tier() {
        // 100 fast pages, 95 below the demotion watermark.
        let cases: [(&[(u64, usize)], u32); 3] = [
            (&[(200, 4), (50, 9)], 9), // 250 pages at >= 4 overflow; the 50 at 9 fit
            (&[(20, 4)], 4),           // everything fits
            (&[(200, 9)], 9),          // the hottest count alone overflows: overfill
        ];
        for (groups, expected) in cases {
            let mut rig = new_rig(params(), 100, 0);
            let mut first = 5000;
            for &(pages, times) in groups {
                rig.sample(first..first + pages, times);
                first += pages;
            }
            rig.tick(0, 0);
            assert_eq!(rig.policy.frequency_threshold(), expected, "{groups:?}");
        }
    }

    #[test]
    fn huge_page_mode_counts_per_2mib_page_in_16_bit_counters() {
        let mut rig = new_rig(HybridTierParams { huge_pages: true, ..params() }, 2048, 0);
        rig.sample([512].into_iter(), 20);
        rig.tick(0, 0);
        assert_eq!((rig.policy.frequency(513), rig.policy.frequency(1023)), (20, 20));
        assert_eq!(rig.policy.frequency(1024), 0);
    }

    #[test]
    fn sampling_is_suspended_while_the_hit_ratio_is_stable_and_resumed_when_it_drops() {
        let params = HybridTierParams { hit_ratio_window: SECOND, ..params() };
        let mut rig = new_rig(params, 100, 0);
        for p in 50..100 {
            rig.mem.free(p); // no demotion pressure
        }
        let mut window = |hit: u64| {
            for _ in 0..10 {
                rig.tick_after(100 * MILLISECOND, hit, 1000 - hit);
            }
            (rig.policy.suspended(), rig.sources.samples.unwrap().rate)
        };
        assert_eq!(window(800), (false, SampleRate::Hz(100_000.0)));
        assert_eq!(window(805), (true, SampleRate::Hz(0.0)), "stable within 1%");
        assert_eq!(window(795), (true, SampleRate::Hz(0.0)), "within 1% of the ratio at suspension");
        assert_eq!(window(780), (false, SampleRate::Hz(100_000.0)), "dropped by 2%");
    }

    #[test]
    fn parameters_are_checked() {
        let setup = PolicySetup { fast_pages: 10, pages: 100 };
        let check = |p: HybridTierParams| HybridTierPolicy::new(p, &setup).unwrap_err().param;
        let d = HybridTierParams::default();
        assert_eq!(check(HybridTierParams { sample_rate_hz: 0.0, ..d }), "sample_rate_hz");
        assert_eq!(check(HybridTierParams { batch_samples: 0, ..d }), "batch_samples");
        assert_eq!(check(HybridTierParams { momentum_size_divisor: 0, ..d }), "momentum_size_divisor");
        assert_eq!(check(HybridTierParams { momentum_threshold: 16, ..d }), "momentum_threshold");
        assert_eq!(check(HybridTierParams { min_frequency_threshold: 0, ..d }), "min_frequency_threshold");
        assert_eq!(check(HybridTierParams { initial_frequency_threshold: 1, ..d }), "initial_frequency_threshold");
        assert_eq!(check(HybridTierParams { cooling_samples_per_fast_page: 0, ..d }), "cooling_samples_per_fast_page");
        assert_eq!(check(HybridTierParams { promoting_wmark: 0.5, ..d }), "demoting_wmark");
        assert_eq!(check(HybridTierParams { scan_batch: 0, ..d }), "scan_batch");
        assert_eq!(check(HybridTierParams { hit_ratio_window: 0, ..d }), "hit_ratio_window");
        assert_eq!(check(HybridTierParams { hit_ratio_tolerance: 2.0, ..d }), "hit_ratio_tolerance");
        assert_eq!(check(HybridTierParams { filter_error_rate: 0.0, ..d }), "p");
        // 16-bit counters in huge-page mode admit larger thresholds.
        assert!(
            HybridTierPolicy::new(HybridTierParams { huge_pages: true, momentum_threshold: 100, ..d }, &setup).is_ok()
        );
        assert_eq!(HybridTierPolicy::new(d, &PolicySetup { fast_pages: 0, pages: 1 }).unwrap_err().param, "n");
        let p = HybridTierPolicy::new(d, &PolicySetup { fast_pages: 1 << 20, pages: 1 << 24 }).unwrap();
        let (frequency, momentum) = (p.frequency.filter.heap_bytes(), p.momentum.as_ref().unwrap().filter.heap_bytes());
        assert!((frequency / momentum).abs_diff(128) <= 2, "{frequency} / {momentum}");
    }
}
