//! `threshold`: the example policy. Small enough to read in one sitting, complete
//! enough to show every part of the contract: a sketch, sources, events, ticks, a
//! watermark-driven wrapping demotion scan and honest metadata accounting. It is a
//! stripped-down FreqTier (FreqTier §IV–V) with a fixed threshold.

use super::ScanPass;
use crate::memory::{Resident, ScanCursor};
use crate::policy::{Ctx, Policy, Sampling, SourceRequest};
use crate::sketches::{BlockedCountingBloomFilter, CounterBits, FrequencySketch};
use crate::telemetry::Telemetry;
use crate::types::{Nanos, TierId, SECOND};
use crate::{Event, ParamError};

/// Parameters of [`ThresholdPolicy`].
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ThresholdParams {
    /// Samples a page needs to be hot. FreqTier §V-C-a: initial hot threshold 5.
    pub hot_threshold: u32,
    /// Sampling rate. FreqTier §V-B-2: the middle of its 100k/10k/1k Hz levels.
    pub sample_rate_hz: f64,
    /// Start demoting when the fast tier's free pages fall below this fraction of its
    /// capacity (FreqTier §V-B: PROMOTING_WMARK, after Linux's watermarks; 2% as MEMTIS).
    pub promoting_wmark: f64,
    /// Demote until free pages reach this fraction (DEMOTING_WMARK; 3% as MEMTIS).
    pub demoting_wmark: f64,
    /// Halve every counter this often (FreqTier §V-A aging).
    pub age_period: Nanos,
    /// Pages examined per step of the demotion scan.
    pub scan_batch: usize,
    /// Filter error rate (FreqTier §V-A: 10^-3 for the fast tier's pages).
    pub filter_error_rate: f64,
}

impl Default for ThresholdParams {
    fn default() -> Self {
        Self {
            hot_threshold: 5,
            sample_rate_hz: 10_000.0,
            promoting_wmark: 0.02,
            demoting_wmark: 0.03,
            age_period: SECOND,
            scan_batch: 4096,
            filter_error_rate: 1e-3,
        }
    }
}

/// Counts samples in a blocked 4-bit counting Bloom filter; promotes a slow-tier page
/// the moment its count reaches the hot threshold; when the fast tier runs short of free
/// pages, resumes a wrapping scan of resident pages and demotes fast-tier pages below
/// the threshold until the high watermark is met; ages the filter periodically.
#[derive(Clone, Debug)]
pub struct ThresholdPolicy {
    params: ThresholdParams,
    counts: BlockedCountingBloomFilter,
    cursor: ScanCursor,
    scratch: Vec<Resident>,
    last_age: Nanos,
}

impl ThresholdPolicy {
    /// A policy for a fast tier of `fast_pages` pages (the filter is sized for them).
    pub fn new(params: ThresholdParams, fast_pages: u64) -> Result<Self, ParamError> {
        if params.hot_threshold == 0 || params.hot_threshold > CounterBits::Four.max() {
            return Err(ParamError::new("hot_threshold", params.hot_threshold, "1 to 15 (4-bit counters)"));
        }
        super::check_demotion_scan(params.promoting_wmark, params.demoting_wmark, params.scan_batch)?;
        let counts =
            BlockedCountingBloomFilter::with_error_rate(fast_pages, params.filter_error_rate, 4, CounterBits::Four)?;
        Ok(Self { params, counts, cursor: ScanCursor::default(), scratch: Vec::new(), last_age: 0 })
    }

    /// The estimated sample count of `page`.
    pub fn count(&self, page: crate::Page) -> u32 {
        self.counts.get(page)
    }

    fn demote_cold(&mut self, ctx: &mut Ctx<'_>) {
        let cap = ctx.mem.tiers()[0].capacity_pages as f64;
        let free = ctx.mem.free_pages(TierId::FAST) as f64;
        if free >= self.params.promoting_wmark * cap {
            return;
        }
        let mut needed = (self.params.demoting_wmark * cap - free).ceil() as usize;
        // At most one full pass over the resident pages per tick.
        let mut pass = ScanPass::new(&self.cursor);
        while needed > 0 && pass.next(ctx.mem, &mut self.cursor, self.params.scan_batch, &mut self.scratch) {
            for r in &self.scratch {
                if r.tier == TierId::FAST && self.counts.get(r.page) < self.params.hot_threshold && needed > 0 {
                    ctx.demote(r.page);
                    needed -= 1;
                }
            }
        }
    }
}

impl Policy for ThresholdPolicy {
    fn name(&self) -> &str {
        "threshold"
    }

    fn sources(&self) -> SourceRequest {
        SourceRequest { samples: Some(Sampling::new(self.params.sample_rate_hz)), ..Default::default() }
    }

    fn on_events(&mut self, events: &[Event], ctx: &mut Ctx<'_>) {
        for e in events {
            if let Event::Sample { page, tier, .. } = *e {
                let count = self.counts.increment(page);
                // Promote on the crossing only, so a page is queued once per heating.
                if tier != TierId::FAST && count == self.params.hot_threshold {
                    ctx.promote(page);
                }
            }
        }
    }

    fn on_tick(&mut self, telemetry: &Telemetry, ctx: &mut Ctx<'_>) {
        if telemetry.now >= self.last_age + self.params.age_period {
            self.counts.age();
            self.last_age = telemetry.now;
        }
        self.demote_cold(ctx);
    }

    fn metadata_bytes(&self) -> usize {
        self.counts.heap_bytes() + self.scratch.capacity() * std::mem::size_of::<Resident>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{InMemory, Memory, Mover, Plan, ScanMeter};

    fn sample(page: u64, tier: TierId) -> Event {
        Event::Sample { page, tier, word: None, write: false, time: 0, stall_ns: None }
    }

    fn step(policy: &mut ThresholdPolicy, mem: &mut InMemory, events: &[Event]) {
        let mut plan = Plan::default();
        let mut sources = policy.sources();
        policy.on_events(events, &mut Ctx { mem: &*mem, plan: &mut plan, sources: &mut sources });
        let t = Telemetry { now: mem.now(), ..Default::default() };
        policy.on_tick(&t, &mut Ctx { mem: &*mem, plan: &mut plan, sources: &mut sources });
        Mover::default().execute(&mut plan, mem, &mut Vec::new());
    }

    #[test]
    fn hot_slow_pages_are_promoted_and_cold_fast_pages_make_room() {
        // 100 fast pages, all taken by cold pages 0..100; hot pages 1000..1010 start slow.
        let mut mem = InMemory::new(&[100, 1000]).unwrap();
        for p in 0..100 {
            mem.touch(p);
        }
        for p in 1000..1010 {
            mem.touch(p);
        }
        let mut policy = ThresholdPolicy::new(ThresholdParams::default(), 100).unwrap();
        // The tick frees room below the watermark (3 pages: 3% of 100); then samples
        // heat the hot pages, a few per round, as a sampler would deliver them.
        for _ in 0..6 {
            let events: Vec<Event> = (1000..1010).map(|p| sample(p, mem.tier_of(p).unwrap())).collect();
            step(&mut policy, &mut mem, &events);
            mem.advance(10_000_000);
        }
        let promoted = (1000..1010).filter(|&p| mem.tier_of(p) == Some(TierId::FAST)).count();
        assert!(promoted >= 3, "only {promoted} hot pages reached the fast tier");
        // Demotions picked cold pages in address order from the cursor.
        assert_eq!(mem.tier_of(0), Some(TierId(1)));
        assert!(policy.metadata_bytes() >= 100 * 20 / 2, "filter of ~20 counters per page");
    }

    #[test]
    fn a_tick_scans_one_pass_over_huge_pages_too() {
        // Two hot huge pages fill the fast tier: nothing to demote. One pass is two
        // units, however many base pages they hold.
        let mut mem = InMemory::new(&[1024, 1000]).unwrap();
        mem.place(0, TierId::FAST, true);
        mem.place(512, TierId::FAST, true);
        let mut policy = ThresholdPolicy::new(ThresholdParams::default(), 1024).unwrap();
        let (mut plan, mut sources) = (Plan::default(), policy.sources());
        let events: Vec<Event> = (0..5).flat_map(|_| [sample(0, TierId::FAST), sample(512, TierId::FAST)]).collect();
        policy.on_events(&events, &mut Ctx { mem: &mem, plan: &mut plan, sources: &mut sources });
        let meter = ScanMeter::new(&mem, 10_000);
        let t = Telemetry { now: mem.now(), ..Default::default() };
        policy.on_tick(&t, &mut Ctx { mem: &meter, plan: &mut plan, sources: &mut sources });
        assert_eq!(meter.units(), 2);
        assert!(plan.is_empty());
    }

    #[test]
    fn parameters_are_checked() {
        let bad = ThresholdParams { hot_threshold: 16, ..Default::default() };
        assert_eq!(ThresholdPolicy::new(bad, 10).unwrap_err().param, "hot_threshold");
        let bad = ThresholdParams { demoting_wmark: 0.01, ..Default::default() };
        assert_eq!(ThresholdPolicy::new(bad, 10).unwrap_err().param, "demoting_wmark");
        assert_eq!(ThresholdPolicy::new(ThresholdParams::default(), 0).unwrap_err().param, "n");
    }
}
