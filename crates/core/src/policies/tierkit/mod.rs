//! `tierkit`: tierkit's own policy, combining what worked best in the others.
//!
//! - **Counting** (MEMTIS / HeMem): an exact count per sampled page in a [`PageTable`],
//!   saturating at 255, with an exact distribution of counts (one bin per value), so
//!   the hot threshold is as fine as FreqTier's (§V-C-a) but not squeezed into 4 bits:
//!   on small hot sets FreqTier's saturated 4-bit counters make every sampled page look
//!   alike.
//! - **Capacity-aware threshold** (FreqTier §V-C-a, HybridTier §3.1): after every tick
//!   the threshold becomes the smallest count whose hot set fits the fast tier less its
//!   demotion watermark (never below `min_hot_threshold`).
//! - **Aging** (FreqTier §V-A, TinyLFU): every count halves after
//!   `age_samples_per_fast_page` samples per fast-tier page.
//! - **Promotion with a cost-benefit gate** (M5 §7.2): a sampled slow-tier page is worth
//!   promoting when it is hot and its expected accesses until the next aging (its count
//!   times the real accesses each sample stands for, measured from [`Telemetry`])
//!   exceed the accesses that amortize one migration. It is promoted at once while the
//!   fast tier has room beyond the watermark; otherwise it waits for the tick.
//! - **Demotion** (FreqTier Algorithm 2): at each tick a wrapping scan of resident pages
//!   resumes from its cursor and demotes fast pages below the threshold until the
//!   watermark plus the waiting candidates fit; the hottest candidates then take the
//!   room (the mover runs demotions first).
//! - **Sweep prefetch** (tierkit's own; Linux readahead's idea applied to tiering):
//!   samples that ascend through a long run of pages are a sweep ([`super::streams`]).
//!   Its pages are hot for a burst and never again, so no frequency or recency policy
//!   catches them in time; tierkit promotes the pages just ahead of the sweep (its
//!   speed times two ticks) when the sweep samples each page as often as a page at the
//!   hot threshold and that repays a migration, and sweep samples are not counted (the
//!   sweep, not the page, is hot). Prefetched pages only displace pages with no count
//!   since the last aging, at most a quarter of the fast tier per tick.
//! - **Headroom sized to allocations**: instead of FreqTier's fixed 2%/3% free
//!   watermarks, the fast tier keeps twice the largest recent per-tick allocation free
//!   (0.2% to 2%), so that DRAM no allocation needs holds hot pages.
//! - **Shift detection**: a tick whose hit ratio falls below 0.7 of its running average
//!   halves every count twice, so a new hot set overtakes the stale one at once (what
//!   HybridTier's momentum sketch is for).
//! - **Adaptive demotion hysteresis**: when more than 30% of recent promotions are
//!   demoted again within 5 s (TPP's ping-pong counter), counts near the threshold are
//!   noise (a uniform hot set); the band a fast page must fall below the threshold widens
//!   by one count (to 4), and sampling halves every two steps; it narrows again when
//!   ping-pong subsides. A demotion scan that found nothing is not repeated for 1 s
//!   unless the bar rises or counts age. Without a cost model (a source that cannot say
//!   how many accesses a sample stands for: DAMON's regions live) only pages clearly
//!   above the threshold (by `sqrt(2t)`) push fast pages out; the others wait for free
//!   room.
//! - **Do no harm: a benefit ledger** ([`super::Ledger`]): the policy measures what its
//!   moves earn — samples that find recently promoted pages in the fast tier against
//!   samples that find recently demoted pages in the slow tier, less M5's cost per move —
//!   and promotes at most as many pages per tick as that balance allows: the allowance
//!   halves while the balance is negative, down to a trickle that keeps measuring, and
//!   doubles back while it is positive. Sweep prefetches count as promotions. While
//!   moves do not pay (a balance at or below zero: harm, or no move at all), sampling
//!   only probes (`min_sample_rate_hz`): samples that buy no gain are pure cost. Probes
//!   (the trickle of promotions, their demotion scans, sweep prefetches) then spend at
//!   most `probe_cpu_share` of the application's CPU, measured: a scan of the whole
//!   footprint to make room for a dozen probes would otherwise cost more than the half
//!   point of throughput a policy may lose. No workload-specific threshold decides this; the
//!   program's own response to the moves does.
//! - **Sampling under a CPU budget**: 100 kHz (FreqTier §V-B-2's highest level) while
//!   the mechanism's CPU stays under `cpu_budget` (and under `app_cpu_share` of the
//!   application's own CPU where the platform reports it, and, until moves have earned
//!   something, under `stall_share` of the application's measured stall on the slow
//!   tier: what finding out costs stays a small part of what placement could gain);
//!   over it the rate falls to fit, down to 1 kHz. FreqTier's stepping down on a stable hit ratio is what starves it on
//!   xgboost and gap-pr (the hit ratio looks stable before the hot set is in).
//!
//! What was weighed and left out (the measurements behind each rule are in
//! docs/POLICIES.md, "tierkit's rules and the evidence for them"):
//! - **Latency balancing** (Colloid) is a wrapper, `tierkit+colloid`
//!   ([`super::with_colloid`]), not the default: its migration limit helps under
//!   contention and costs without it.
//! - **A momentum sketch** (HybridTier): shift detection does its job without a second
//!   table.
//! - **Word-level (sparse-page) information**: samples are memory-level misses and a
//!   page's exact count already measures what promoting it saves, dense or sparse; M5
//!   needs densities because its device tracker ranks pages it cannot count exactly.

mod control;
mod params;
#[cfg(test)]
mod tests;

pub use params::TierkitParams;

use super::streams::StreamDetector;
use super::{Ledger, PolicySetup, ScanPass};
use crate::memory::{MoveStatus, Resident, ScanCursor};
use crate::policy::{Ctx, Migration, Policy, Sampling, SourceRequest};
use crate::sketches::PageTable;
use crate::telemetry::Telemetry;
use crate::types::{Page, TierId};
use crate::{Event, ParamError};

/// The most pages ahead of sweeps brought in per tick, as a share of the hot capacity.
const PREFETCH_SHARE: f64 = 0.25;

/// A page demoted within this many ticks (5 s) of its promotion ping-ponged.
const PINGPONG_TICKS: u32 = 50;

/// Ticks after a fruitless full demotion scan before the next one (1 s).
const RESCAN_TICKS: u32 = 10;

/// Ticks of probe credit the bucket holds at most (10 s): enough for a demotion scan of
/// the whole footprint now and then.
const PROBE_CREDIT_TICKS: f64 = 100.0;

/// The widest demotion band, in counts.
const MAX_BAND: u32 = 4;

/// Highest count kept; the distribution has one bin per value.
const MAX_COUNT: u32 = 255;

/// tierkit's policy; see the module documentation.
#[derive(Clone, Debug)]
pub struct TierkitPolicy {
    params: TierkitParams,
    counts: PageTable,
    /// `dist[c]`: counted pages whose count is `c` (index 0 unused).
    dist: Vec<u64>,
    threshold: u32,
    /// Fast-tier pages the hot set may fill.
    hot_capacity: u64,
    age_every: u64,
    since_age: u64,
    /// Samples since the last tick, and real accesses per sample (0 until measured).
    tick_samples: u64,
    accesses_per_sample: f64,
    /// Hot slow pages waiting for room.
    candidates: Vec<Page>,
    /// Promotions minus demotions queued and not yet reported.
    inflight: i64,
    /// Fast pages kept free (promotion reserve) and the level demotion restores.
    headroom: i64,
    demote_to: i64,
    /// Free fast pages at the last tick, pages moved into the fast tier since (net), and
    /// the decaying peak of pages allocated per tick.
    prev_free: Option<u64>,
    net_in: i64,
    alloc_peak: f64,
    /// Running average of the fast-tier hit ratio (None before the first tick).
    hit_average: Option<f64>,
    /// Ticks so far; the tick each promoted page last arrived on; this window's
    /// promotions and ping-pongs; the demotion band.
    ticks: u32,
    promoted_at: PageTable,
    window_promoted: u64,
    window_pingpong: u64,
    band: u32,
    cursor: ScanCursor,
    scratch: Vec<Resident>,
    /// Agings so far, and the demotion bar, aging and tick at which the last full scan
    /// pass found under a tenth of what it needed: until a count can have fallen below a bar that high (or sweeps
    /// have moved on, `RESCAN_TICKS` later), scanning again only costs page-table reads.
    aged: u64,
    futile: Option<(u32, u64, u32)>,
    /// The sampling rate now requested.
    rate_hz: f64,
    streams: Option<StreamDetector>,
    /// Pages ahead of sweeps waiting for room.
    prefetch: Vec<Page>,
    ledger: Ledger,
    /// While moves do not pay: the mechanism CPU probes may still spend, ns, and whether
    /// they may run this tick.
    probe_credit: f64,
    probing: bool,
}

impl TierkitPolicy {
    /// The policy for `setup`.
    pub fn new(params: TierkitParams, setup: &PolicySetup) -> Result<Self, ParamError> {
        params.check(setup)?;
        let p = &params;
        let fast = setup.fast_pages;
        let hot_capacity = fast - (fast as f64 * p.demoting_wmark).ceil() as u64;
        Ok(Self {
            params,
            counts: PageTable::new(),
            dist: vec![0; MAX_COUNT as usize + 1],
            threshold: p.min_hot_threshold,
            hot_capacity,
            age_every: fast.saturating_mul(p.age_samples_per_fast_page),
            since_age: 0,
            tick_samples: 0,
            accesses_per_sample: 0.0,
            candidates: Vec::new(),
            inflight: 0,
            headroom: (fast as f64 * p.promoting_wmark).ceil() as i64,
            demote_to: (fast as f64 * p.demoting_wmark).ceil() as i64,
            prev_free: None,
            net_in: 0,
            alloc_peak: 0.0,
            hit_average: None,
            ticks: 0,
            promoted_at: PageTable::new(),
            window_promoted: 0,
            window_pingpong: 0,
            band: 0,
            cursor: ScanCursor::default(),
            scratch: Vec::new(),
            aged: 0,
            futile: None,
            rate_hz: p.sample_rate_hz,
            streams: p.streams.map(StreamDetector::new),
            prefetch: Vec::new(),
            ledger: Ledger::new(p.ledger, hot_capacity),
            probe_credit: 0.0,
            probing: true,
        })
    }

    /// The current hot threshold.
    pub fn hot_threshold(&self) -> u32 {
        self.threshold
    }

    /// How far below the hot threshold a fast page must fall to be demoted (0 to 4).
    pub fn demotion_band(&self) -> u32 {
        self.band
    }

    /// The count of `page`.
    pub fn count(&self, page: Page) -> u32 {
        self.counts.get(page).unwrap_or(0)
    }

    /// Counts one sample of `page`; returns its new count.
    fn bump(&mut self, page: Page) -> u32 {
        let c = self.counts.entry(page, 0);
        let old = *c;
        if old < MAX_COUNT {
            *c = old + 1;
            if old > 0 {
                self.dist[old as usize] -= 1;
            }
            self.dist[old as usize + 1] += 1;
        }
        old.saturating_add(1).min(MAX_COUNT)
    }

    /// Halves every count; the distribution follows exactly.
    fn age(&mut self) {
        self.aged += 1;
        self.counts.for_each_value(|c| *c /= 2);
        let n = self.dist.len();
        for c in 1..n {
            self.dist[c] = self.dist.get(2 * c).copied().unwrap_or(0) + self.dist.get(2 * c + 1).copied().unwrap_or(0);
        }
    }

    /// The smallest threshold whose hot set fits the fast tier.
    fn fit_threshold(&mut self) {
        let mut hot = 0;
        let mut t = MAX_COUNT + 1;
        while t > self.params.min_hot_threshold && hot + self.dist[t as usize - 1] <= self.hot_capacity {
            hot += self.dist[t as usize - 1];
            t -= 1;
        }
        self.threshold = t.min(MAX_COUNT);
    }

    /// Keeps the waiting candidates that are still slow and hot, once each, hottest
    /// first.
    fn compact_candidates(&mut self, ctx: &Ctx<'_>) {
        let mut cands = std::mem::take(&mut self.candidates);
        cands.sort_unstable();
        cands.dedup();
        cands.retain(|&p| {
            self.counts.get(p).unwrap_or(0) >= self.threshold && ctx.mem.tier_of(p).is_some_and(|t| t != TierId::FAST)
        });
        cands.sort_by_key(|&p| (std::cmp::Reverse(self.counts.get(p).unwrap_or(0)), p));
        cands.truncate(self.hot_capacity as usize);
        self.candidates = cands;
    }

    /// M5 §7.2: a page of count `c` is expected to see enough accesses to amortize
    /// its migration.
    fn worth_moving(&self, c: u32) -> bool {
        self.accesses_per_sample == 0.0 || c as f64 * self.accesses_per_sample >= self.params.migration_cost_accesses
    }

    /// How many of the waiting `cands` (hottest first) may displace fast pages; the rest
    /// only take free room. With a cost model (the source says how many accesses a sample
    /// stands for) all of them. Without one (DAMON's regions, page faults) a count is weak
    /// evidence and nothing says an exchange pays: only candidates clearly above the
    /// threshold `t`, by [`TierkitParams::exchange_margin`] times the noise of a count
    /// there (`sqrt(2t)`: counts of equally warm pages differ by about that much), push
    /// pages out; hot pages, far above `t`, still displace at once.
    fn displacing(&self, cands: &[Page]) -> usize {
        if self.accesses_per_sample > 0.0 {
            return cands.len();
        }
        let t = f64::from(self.threshold);
        let clear = (t + self.params.exchange_margin * (2.0 * t).sqrt()).ceil() as u32;
        cands.partition_point(|&p| self.counts.get(p).unwrap_or(0) >= clear)
    }

    /// Free fast pages, less queued promotions.
    fn room(&self, ctx: &Ctx<'_>) -> i64 {
        ctx.mem.free_pages(TierId::FAST) as i64 - self.inflight
    }

    /// A fast page the scan may demote: counted below `below` and not about to be swept.
    fn demotable(&self, page: Page, below: u32) -> bool {
        self.counts.get(page).unwrap_or(0) < below
            && !self.streams.as_ref().is_some_and(|d| d.in_window(page, self.params.streams.map_or(0, |s| s.max_gap)))
    }

    /// Demotes fast pages counted below `below` until `wanted` pages are free (at most
    /// one pass).
    fn demote_cold(&mut self, wanted: i64, below: u32, ctx: &mut Ctx<'_>) {
        let mut needed = wanted - self.room(ctx);
        let asked = needed;
        if self
            .futile
            .is_some_and(|(b, epoch, tick)| below <= b && epoch == self.aged && self.ticks - tick < RESCAN_TICKS)
        {
            return; // a whole pass found too little at this bar, and no count has fallen since
        }
        let mut pass = ScanPass::new(&self.cursor);
        while needed > 0 && pass.next(ctx.mem, &mut self.cursor, self.params.scan_batch, &mut self.scratch) {
            for r in &self.scratch {
                if needed > 0 && r.tier == TierId::FAST && self.demotable(r.page, below) {
                    let recent = self.promoted_at.get(r.page).is_some_and(|t| self.ticks - t <= PINGPONG_TICKS);
                    self.window_pingpong += recent as u64;
                    ctx.demote(r.page);
                    self.inflight -= 1;
                    needed -= 1;
                }
            }
        }
        // A whole pass that found too little is futile (none is when it found enough).
        self.futile = (needed * 10 > asked * 9).then_some((below, self.aged, self.ticks));
    }
}

impl Policy for TierkitPolicy {
    fn name(&self) -> &str {
        "tierkit"
    }

    fn sources(&self) -> SourceRequest {
        SourceRequest { samples: Some(Sampling::new(self.rate_hz)), ..Default::default() }
    }

    fn on_events(&mut self, events: &[Event], ctx: &mut Ctx<'_>) {
        let reserve = self.headroom;
        for (i, e) in events.iter().enumerate() {
            // Start loading the count and the ledger's mark of a sample a few ahead: the
            // tables outgrow the caches on large footprints.
            if let Some(Event::Sample { page, .. }) = events.get(i + crate::prefetch::AHEAD) {
                self.counts.prefetch(*page);
                self.ledger.prefetch(*page);
            }
            let Event::Sample { page, tier, time, .. } = *e else { continue };
            self.ledger.sample(page, tier == TierId::FAST);
            self.tick_samples += 1;
            self.since_age += 1;
            let (threshold, aps, cost) =
                (self.threshold as f64, self.accesses_per_sample, self.params.migration_cost_accesses);
            if let Some(d) = &mut self.streams {
                let seen = d.observe(page, time);
                if let Some((ahead, density)) = seen.prefetch {
                    // A swept page is worth a place when the sweep samples it as often as
                    // a page at the hot threshold, and its accesses repay the migration.
                    if density >= threshold && (aps == 0.0 || density * aps >= cost) {
                        self.prefetch.extend(ahead.filter(|&p| ctx.mem.tier_of(p).is_some_and(|t| t != TierId::FAST)));
                    }
                }
                if seen.in_sweep {
                    // The sweep, not the page, is hot: pages at a sweep's head are prefetched,
                    // not counted. Samples behind the head count: random accesses to a swept
                    // array (BC's per-vertex arrays) are real heat.
                    continue;
                }
            }
            let c = self.bump(page);
            if tier == TierId::FAST || c < self.threshold || !self.worth_moving(c) {
                continue;
            }
            if self.room(ctx) > reserve && self.may_promote() > 0 {
                ctx.promote(page);
                self.ledger.queued_promotion();
                self.inflight += 1;
            } else {
                if self.candidates.len() >= 2 * self.hot_capacity as usize {
                    self.fit_threshold();
                    self.compact_candidates(ctx);
                }
                self.candidates.push(page);
            }
        }
        if self.since_age >= self.age_every {
            self.since_age = 0;
            self.age();
        }
    }

    fn on_tick(&mut self, telemetry: &Telemetry, ctx: &mut Ctx<'_>) {
        let accesses: u64 = telemetry.tiers.iter().map(|t| t.accesses).sum();
        if self.tick_samples > 0 {
            self.accesses_per_sample = accesses as f64 / self.tick_samples as f64;
        }
        self.tick_samples = 0;
        self.book(telemetry);
        self.budget_probes(telemetry);
        self.control_sampling(telemetry, ctx);
        self.size_headroom(ctx);
        self.watch_for_shift(telemetry);
        self.adapt_band();
        self.fit_threshold();
        self.compact_candidates(ctx);
        let prefetch = std::mem::take(&mut self.prefetch);
        let cands = std::mem::take(&mut self.candidates);
        let reserve = self.headroom;
        let displacing = self.displacing(&cands).min(self.may_promote() as usize);
        if self.probing && (self.room(ctx) < reserve || displacing > 0) {
            let wanted = self.demote_to + displacing as i64;
            self.demote_cold(wanted, self.threshold.saturating_sub(self.band).max(1), ctx);
        }
        for &p in &cands {
            if self.room(ctx) <= reserve || self.may_promote() == 0 {
                break;
            }
            ctx.promote(p);
            self.ledger.queued_promotion();
            self.inflight += 1;
        }
        // Pages ahead of sweeps only displace pages not sampled since the last aging
        // (among them the pages the sweeps have passed): a sweep never evicts the hot set.
        let most = ((self.hot_capacity as f64 * PREFETCH_SHARE) as usize).min(self.may_promote() as usize);
        let ahead: Vec<Page> = prefetch
            .into_iter()
            .filter(|&p| ctx.mem.tier_of(p).is_some_and(|t| t != TierId::FAST))
            .take(most)
            .collect();
        if !ahead.is_empty() {
            self.demote_cold(reserve + ahead.len() as i64, 1, ctx);
            let fit = (self.room(ctx) - reserve).clamp(0, ahead.len() as i64) as usize;
            for &p in &ahead[..fit] {
                ctx.promote(p);
                self.ledger.queued_promotion();
            }
            self.inflight += fit as i64;
        }
        self.candidates = cands;
        self.candidates.clear();
    }

    fn on_moved(&mut self, results: &[(Migration, MoveStatus)]) {
        for (m, status) in results {
            let into_fast = if m.to == TierId::FAST { 1 } else { -1 };
            self.inflight -= into_fast;
            if *status == MoveStatus::Moved {
                self.ledger.moved(m.page, into_fast > 0);
                self.net_in += into_fast;
                if into_fast > 0 {
                    *self.promoted_at.entry(m.page, 0) = self.ticks;
                    self.window_promoted += 1;
                }
            }
        }
    }

    fn metadata_bytes(&self) -> usize {
        self.streams.as_ref().map_or(0, |d| d.heap_bytes())
            + self.prefetch.capacity() * std::mem::size_of::<Page>()
            + self.counts.heap_bytes()
            + self.promoted_at.heap_bytes()
            + self.ledger.heap_bytes()
            + self.dist.capacity() * std::mem::size_of::<u64>()
            + self.candidates.capacity() * std::mem::size_of::<Page>()
            + self.scratch.capacity() * std::mem::size_of::<Resident>()
    }
}
