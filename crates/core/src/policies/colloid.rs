//! `<base>+colloid`: Colloid (SOSP'24) as a modifier over any base policy. The base keeps
//! tracking accesses and picking hot pages; Colloid decides how much of the hot set's
//! access probability belongs on the default (fast) tier by balancing the tiers' loaded
//! latencies (Colloid §3.1), and rewrites the base's plan accordingly.
//!
//! - **Latency.** Each tick, the per-tier occupancy and request rate of the telemetry are
//!   smoothed by an EWMA (§3.1) and turned into latencies by Little's law; the
//!   alternate tier aggregates every tier below the fastest.
//! - **ComputeShift** (§3.2, Algorithm 2): binary search of the equilibrium `p*` with
//!   watermarks `p_lo`/`p_hi`, reset when they close within `epsilon` while the latencies
//!   still differ by more than `delta`; `Δp = |(p_lo + p_hi)/2 - p|`.
//! - **Dynamic migration limit** (§3.2): `min(Δp·(R_D + R_A), M)` per quantum, as bytes
//!   of 64 B requests over the tick, in pages.
//! - **Page finding** (§4.1): own exact per-page counts of the base's `Sample` and
//!   `HintFault` events, cooled by halving when one reaches `cooling_threshold` (HeMem's);
//!   a page's access probability is its count over the total. In demotion mode (the
//!   default tier is the slower one) a wrapping scan bins fast-tier pages into
//!   `bins` equal count ranges and demotes hottest-bin-first pages whose probability fits
//!   the remaining `Δp`, up to the limit. In promotion mode the base's promotions are
//!   kept in order while their probabilities fit `Δp` and the limit.
//! - **Plan rewriting.** Promotions Colloid drops are reported to the base as
//!   [`MoveStatus::Busy`] at once, so its in-flight bookkeeping stays right and it retries
//!   later; results of Colloid's own demotions are not forwarded to the base.
//!
//! Deviation: Colloid on TPP (§4.3) also enables hint faults on default-tier pages; here
//! the sources are the base's, so a TPP page's probability is the one it had when its
//! hint faults promoted it.

use std::collections::HashSet;

use crate::memory::{MoveStatus, Resident, ScanCursor};
use crate::policy::{Ctx, Migration, Policy, SourceRequest};
use crate::sketches::{ExactCounter, FrequencySketch};
use crate::telemetry::Telemetry;
use crate::types::{Nanos, Page, TierId, PAGE_SIZE};
use crate::{Event, ParamError};

/// Parameters of [`ColloidPolicy`].
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ColloidParams {
    /// Watermark gap that triggers a reset. Colloid §5: ε = 0.01.
    pub epsilon: f64,
    /// Latencies within this factor are balanced. Colloid §5: δ = 0.05.
    pub delta: f64,
    /// Weight of the newest measurement in the EWMA of occupancy and rate. Colloid §3.1
    /// applies an EWMA without giving the weight; 0.5 halves the noise of one quantum
    /// while following a contention change within a few quanta.
    pub ewma_weight: f64,
    /// Static migration limit M, bytes per second. Colloid §3.2 reuses the system's
    /// limit; Linux's `numa_balancing_promote_rate_limit_MBps` default, 65536 MB/s.
    pub max_migrate_bytes_per_sec: f64,
    /// Count bins of the page finder. Colloid §4.1: 5 bins.
    pub bins: usize,
    /// A count reaching this halves every count. Colloid §4.1 bins HeMem's frequency
    /// space 0..COOLING_THRESHOLD; HeMem `PEBS_COOLING_THRESHOLD`: 10.
    pub cooling_threshold: u32,
    /// Resident pages examined per tick by the demotion page finder (not in the paper,
    /// which walks its bin lists: bounds the per-tick work like FreqTier's scan batch).
    pub scan_pages: usize,
}

impl Default for ColloidParams {
    fn default() -> Self {
        Self {
            epsilon: 0.01,
            delta: 0.05,
            ewma_weight: 0.5,
            max_migrate_bytes_per_sec: 65536.0 * 1e6,
            bins: 5,
            cooling_threshold: 10,
            scan_pages: 8192,
        }
    }
}

/// What Colloid does with the current quantum (Algorithm 1, lines 5–8).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// No measurement yet: the base runs unchanged.
    PassThrough,
    /// Let promotions worth `budget` of access probability and `pages` pages through.
    Promote { budget: f64, pages: u64 },
    /// Drop every promotion; demote hot fast pages worth `budget`, at most `pages`.
    Demote { budget: f64, pages: u64 },
}

/// Colloid over a base policy; see the module documentation.
pub struct ColloidPolicy {
    params: ColloidParams,
    base: Box<dyn Policy>,
    name: String,
    /// EWMA of (occupancy, rate) of the default and the alternate tier.
    smoothed: Option<[(f64, f64); 2]>,
    p_lo: f64,
    p_hi: f64,
    mode: Mode,
    counts: ExactCounter,
    total: u64,
    cursor: ScanCursor,
    scratch: Vec<Resident>,
    bins: Vec<Vec<Page>>,
    kept: Vec<Migration>,
    dropped: Vec<(Migration, MoveStatus)>,
    for_base: Vec<(Migration, MoveStatus)>,
    mine: HashSet<Page>,
}

/// Wraps `base` in Colloid with its paper defaults (the registry's `"<base>+colloid"`).
pub fn with_colloid(base: Box<dyn Policy>) -> Result<Box<dyn Policy>, ParamError> {
    Ok(Box::new(ColloidPolicy::new(ColloidParams::default(), base)?))
}

impl ColloidPolicy {
    /// Colloid over `base`.
    pub fn new(params: ColloidParams, base: Box<dyn Policy>) -> Result<Self, ParamError> {
        if !(params.epsilon > 0.0 && params.epsilon < 1.0) {
            return Err(ParamError::new("epsilon", params.epsilon, "0 < epsilon < 1"));
        }
        if !(params.delta > 0.0 && params.delta < 1.0) {
            return Err(ParamError::new("delta", params.delta, "0 < delta < 1"));
        }
        if !(params.ewma_weight > 0.0 && params.ewma_weight <= 1.0) {
            return Err(ParamError::new("ewma_weight", params.ewma_weight, "0 < weight <= 1"));
        }
        if !(params.max_migrate_bytes_per_sec > 0.0 && params.max_migrate_bytes_per_sec.is_finite()) {
            return Err(ParamError::new("max_migrate_bytes_per_sec", params.max_migrate_bytes_per_sec, "positive"));
        }
        if params.bins == 0 || params.bins > 64 {
            return Err(ParamError::new("bins", params.bins, "1 to 64"));
        }
        if params.cooling_threshold < 2 {
            return Err(ParamError::new("cooling_threshold", params.cooling_threshold, "at least 2"));
        }
        if params.scan_pages == 0 {
            return Err(ParamError::new("scan_pages", 0, "at least 1 page"));
        }
        Ok(Self {
            name: format!("{}+colloid", base.name()),
            params,
            base,
            smoothed: None,
            p_lo: 0.0,
            p_hi: 1.0,
            mode: Mode::PassThrough,
            counts: ExactCounter::new(),
            total: 0,
            cursor: ScanCursor::default(),
            scratch: Vec::new(),
            bins: vec![Vec::new(); params.bins],
            kept: Vec::new(),
            dropped: Vec::new(),
            for_base: Vec::new(),
            mine: HashSet::new(),
        })
    }

    /// The watermarks `(p_lo, p_hi)` of Algorithm 2.
    pub fn watermarks(&self) -> (f64, f64) {
        (self.p_lo, self.p_hi)
    }

    /// The access probability of `page` from Colloid's own counts (0 before any count).
    pub fn probability(&self, page: Page) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        self.counts.get(page) as f64 / self.total as f64
    }

    fn count(&mut self, page: Page) {
        self.total += 1;
        if self.counts.increment(page) >= self.params.cooling_threshold {
            self.counts.age();
            self.total = self.counts.iter().map(|(_, c)| c as u64).sum();
        }
    }

    /// Smoothed `(L_D, L_A, R_D, R_A)`, or `None` while a tier serves no request.
    fn measure(&mut self, telemetry: &Telemetry) -> Option<(f64, f64, f64, f64)> {
        let (fast, rest) = telemetry.tiers.split_first()?;
        let alt = rest.iter().fold((0.0, 0.0), |(o, r), t| (o + t.occupancy, r + t.request_rate));
        let now = [(fast.occupancy, fast.request_rate), alt];
        if now.iter().any(|&(o, r)| !o.is_finite() || !r.is_finite()) {
            return None;
        }
        let w = self.params.ewma_weight;
        let s = match self.smoothed {
            None => now,
            Some(old) => [0, 1].map(|i| (w * now[i].0 + (1.0 - w) * old[i].0, w * now[i].1 + (1.0 - w) * old[i].1)),
        };
        self.smoothed = Some(s);
        let [(o_d, r_d), (o_a, r_a)] = s;
        (r_d > 0.0 && r_a > 0.0).then(|| (o_d / r_d, o_a / r_a, r_d, r_a))
    }

    /// Algorithm 2: the desired shift in the default tier's access probability.
    fn compute_shift(&mut self, p: f64, l_d: f64, l_a: f64) -> f64 {
        if (l_d - l_a).abs() < self.params.delta * l_d {
            return 0.0;
        }
        if l_d < l_a {
            self.p_lo = p;
        } else {
            self.p_hi = p;
        }
        if self.p_hi < self.p_lo + self.params.epsilon {
            if l_d < l_a {
                self.p_hi = 1.0;
            } else {
                self.p_lo = 0.0;
            }
        }
        ((self.p_lo + self.p_hi) / 2.0 - p).abs()
    }

    /// Applies the mode to the plan entries from `start` on: drops promotions that do not
    /// fit, reporting them to the base as busy.
    fn filter_promotions(&mut self, start: usize, ctx: &mut Ctx<'_>) {
        if self.mode == Mode::PassThrough || !ctx.plan.as_slice()[start..].iter().any(|m| m.to == TierId::FAST) {
            return;
        }
        self.kept.clear();
        self.kept.extend_from_slice(ctx.plan.as_slice());
        ctx.plan.clear();
        self.dropped.clear();
        for (i, &m) in self.kept.iter().enumerate() {
            let keep = if i < start || m.to != TierId::FAST {
                true
            } else if let Mode::Promote { budget, pages } = self.mode {
                let p = if self.total == 0 { 0.0 } else { self.counts.get(m.page) as f64 / self.total as f64 };
                let fits = pages > 0 && p <= budget;
                if fits {
                    self.mode = Mode::Promote { budget: budget - p, pages: pages - 1 };
                }
                fits
            } else {
                false
            };
            if keep {
                ctx.plan.push(m.page, m.to);
            } else {
                self.dropped.push((m, MoveStatus::Busy));
            }
        }
        if !self.dropped.is_empty() {
            self.base.on_moved(&self.dropped);
        }
    }

    /// FindPages in demotion mode: hottest-bin-first fast pages whose probability fits.
    fn demote_hot(&mut self, ctx: &mut Ctx<'_>) {
        let Mode::Demote { mut budget, pages } = self.mode else { return };
        let Some(slow) = ctx.mem.slower_than(TierId::FAST) else { return };
        let mut limit = pages.min(ctx.mem.free_pages(slow));
        if limit == 0 || budget <= 0.0 || self.total == 0 {
            return;
        }
        self.scratch.clear();
        ctx.mem.scan(&mut self.cursor, self.params.scan_pages, &mut self.scratch);
        let (nbins, cool) = (self.params.bins as u64, self.params.cooling_threshold as u64);
        for r in &self.scratch {
            let c = self.counts.get(r.page) as u64;
            if r.tier == TierId::FAST && c > 0 && !self.mine.contains(&r.page) {
                self.bins[(c.min(cool - 1) * nbins / cool) as usize].push(r.page);
            }
        }
        for bin in self.bins.iter_mut().rev() {
            for &page in bin.iter() {
                let p = self.counts.get(page) as f64 / self.total as f64;
                if limit > 0 && p <= budget {
                    ctx.plan.push(page, slow);
                    self.mine.insert(page);
                    budget -= p;
                    limit -= 1;
                }
            }
            bin.clear();
        }
        self.mode = Mode::Demote { budget, pages: limit };
    }
}

impl Policy for ColloidPolicy {
    fn name(&self) -> &str {
        &self.name
    }

    fn sources(&self) -> SourceRequest {
        self.base.sources()
    }

    fn tick_interval(&self) -> Nanos {
        self.base.tick_interval()
    }

    fn horizon(&self) -> Nanos {
        self.base.horizon()
    }

    fn non_exclusive(&self) -> bool {
        self.base.non_exclusive()
    }

    fn on_events(&mut self, events: &[Event], ctx: &mut Ctx<'_>) {
        let start = ctx.plan.len();
        self.base.on_events(events, ctx);
        for e in events {
            if let Event::Sample { page, .. } | Event::HintFault { page, .. } = *e {
                self.count(page);
            }
        }
        self.filter_promotions(start, ctx);
    }

    fn on_tick(&mut self, telemetry: &Telemetry, ctx: &mut Ctx<'_>) {
        // A tick that covers no time measures nothing: the quantum's mode stands.
        self.mode = match (telemetry.interval > 0).then(|| self.measure(telemetry)) {
            None => self.mode,
            Some(None) => Mode::PassThrough,
            Some(Some((l_d, l_a, r_d, r_a))) => {
                let p = r_d / (r_d + r_a);
                let dp = self.compute_shift(p, l_d, l_a);
                let secs = telemetry.interval as f64 / 1e9;
                let bytes = (dp * (r_d + r_a) * 64.0).min(self.params.max_migrate_bytes_per_sec) * secs;
                let pages = (bytes / PAGE_SIZE as f64) as u64;
                if l_d < l_a {
                    Mode::Promote { budget: dp, pages }
                } else {
                    Mode::Demote { budget: dp, pages }
                }
            }
        };
        let start = ctx.plan.len();
        self.base.on_tick(telemetry, ctx);
        self.filter_promotions(start, ctx);
        self.demote_hot(ctx);
    }

    fn on_moved(&mut self, results: &[(Migration, MoveStatus)]) {
        if self.mine.is_empty() {
            return self.base.on_moved(results);
        }
        self.for_base.clear();
        for &(m, s) in results {
            if !(m.to != TierId::FAST && self.mine.remove(&m.page)) {
                self.for_base.push((m, s));
            }
        }
        if !self.for_base.is_empty() {
            self.base.on_moved(&self.for_base);
        }
    }

    fn metadata_bytes(&self) -> usize {
        let mig = std::mem::size_of::<Migration>();
        let res = std::mem::size_of::<(Migration, MoveStatus)>();
        self.base.metadata_bytes()
            + self.counts.heap_bytes()
            + self.scratch.capacity() * std::mem::size_of::<Resident>()
            + self.bins.iter().map(|b| b.capacity() * std::mem::size_of::<Page>()).sum::<usize>()
            + self.kept.capacity() * mig
            + (self.dropped.capacity() + self.for_base.capacity()) * res
            + self.mine.capacity() * (std::mem::size_of::<Page>() + 1)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::{InMemory, Memory, Mover, Plan, TierStats};

    type Seen = Arc<Mutex<Vec<(Migration, MoveStatus)>>>;

    /// A base that promotes every sampled slow page and records the results it is told.
    struct Eager(Seen);

    impl Policy for Eager {
        fn name(&self) -> &str {
            "eager"
        }
        fn sources(&self) -> SourceRequest {
            SourceRequest::default()
        }
        fn on_events(&mut self, events: &[Event], ctx: &mut Ctx<'_>) {
            for e in events {
                if let Event::Sample { page, tier, .. } = *e {
                    if tier != TierId::FAST {
                        ctx.promote(page);
                    }
                }
            }
        }
        fn on_tick(&mut self, _: &Telemetry, _: &mut Ctx<'_>) {}
        fn on_moved(&mut self, results: &[(Migration, MoveStatus)]) {
            self.0.lock().unwrap().extend_from_slice(results);
        }
        fn metadata_bytes(&self) -> usize {
            0
        }
    }

    fn sample(page: Page, tier: TierId) -> Event {
        Event::Sample { page, tier, word: None, write: false, time: 0, stall_ns: None }
    }

    /// One quantum of 10 ms: a default tier at `l_d` ns and an alternate tier at `l_a` ns,
    /// `fast_share` of 1e9 requests/s on the default tier.
    fn telemetry(l_d: f64, l_a: f64, fast_share: f64) -> Telemetry {
        let tier = |i, lat: f64, rate: f64| TierStats {
            tier: TierId(i),
            request_rate: rate,
            occupancy: lat * rate / 1e9,
            ..Default::default()
        };
        Telemetry {
            now: 0,
            interval: 10_000_000,
            tiers: vec![tier(0, l_d, 1e9 * fast_share), tier(1, l_a, 1e9 * (1.0 - fast_share))],
            ..Default::default()
        }
    }

    fn colloid(seen: &Seen) -> ColloidPolicy {
        ColloidPolicy::new(ColloidParams::default(), Box::new(Eager(seen.clone()))).unwrap()
    }

    /// Events, then a tick, then the mover; the results go back to the policy.
    fn quantum(policy: &mut ColloidPolicy, mem: &mut InMemory, events: &[Event], t: &Telemetry) {
        let (mut plan, mut sources) = (Plan::default(), policy.sources());
        policy.on_events(events, &mut Ctx { mem: &*mem, plan: &mut plan, sources: &mut sources });
        policy.on_tick(t, &mut Ctx { mem: &*mem, plan: &mut plan, sources: &mut sources });
        let mut results = Vec::new();
        Mover::default().execute(&mut plan, mem, &mut results);
        policy.on_moved(&results);
    }

    /// Fast pages 0..50 (hot: 0..10) with 10 free, slow pages 100..200 (hot: 100..110).
    fn setup() -> (InMemory, Vec<Event>) {
        let mut mem = InMemory::new(&[60, 1000]).unwrap();
        (0..50).chain(1000..1010).chain(100..200).for_each(|p| _ = mem.touch(p));
        (1000..1010).for_each(|p| _ = mem.free(p));
        let mut events = Vec::new();
        for round in 0..4 {
            events.extend((0..10).map(|p| sample(p, TierId::FAST)));
            events.extend((100..110).map(|p| sample(p, TierId(1))));
            events.push(sample(20 + round, TierId::FAST));
        }
        (mem, events)
    }

    #[test]
    fn compute_shift_binary_searches_and_resets_the_watermarks() {
        let seen = Seen::default();
        let mut c = colloid(&seen);
        // Balanced within delta: no shift, watermarks untouched.
        assert_eq!(c.compute_shift(0.5, 100.0, 103.0), 0.0);
        assert_eq!(c.watermarks(), (0.0, 1.0));
        // Default tier slower at p = 0.8: p_hi = 0.8, aim for 0.4.
        assert!((c.compute_shift(0.8, 300.0, 120.0) - 0.4).abs() < 1e-12);
        // Now faster at p = 0.4: p_lo = 0.4, aim for 0.6.
        assert!((c.compute_shift(0.4, 90.0, 120.0) - 0.2).abs() < 1e-12);
        assert_eq!(c.watermarks(), (0.4, 0.8));
        // The watermarks close in on an equilibrium the contention has moved away from:
        // when they meet while the default tier is still slower, p_lo resets to 0.
        c.compute_shift(0.405, 300.0, 120.0);
        assert_eq!(c.watermarks(), (0.0, 0.405));
        // And when they meet while it is faster, p_hi resets to 1.
        c.p_lo = 0.4;
        c.compute_shift(0.401, 90.0, 120.0);
        assert_eq!(c.watermarks(), (0.401, 1.0));
    }

    #[test]
    fn a_slower_default_tier_loses_its_hottest_pages_and_gets_no_promotions() {
        let seen = Seen::default();
        let mut c = colloid(&seen);
        let (mut mem, events) = setup();
        // Contention: 300 ns on the default tier, 150 on the alternate, p = 0.6, so
        // p_hi = 0.6 and Δp = 0.3; the next quantum brings the samples.
        quantum(&mut c, &mut mem, &[], &telemetry(300.0, 150.0, 0.6));
        assert_eq!(c.watermarks(), (0.0, 0.6));
        quantum(&mut c, &mut mem, &events, &telemetry(300.0, 150.0, 0.6));
        // Demotion mode: hot fast pages (4 of the 84 samples each) leave hottest bin
        // first until 0.3 of the probability moved: six of them (24/84), then one page
        // of the coldest bin (1/84) fills the rest.
        let demoted: Vec<Page> = (0..50).filter(|&p| mem.tier_of(p) == Some(TierId(1))).collect();
        assert_eq!(demoted, [0, 1, 2, 3, 4, 5, 20]);
        let moved: f64 = demoted.iter().map(|&p| c.probability(p)).sum();
        assert!(moved <= 0.3 && moved > 0.3 - c.probability(20), "{moved}");
        // The promotions the base asked for never ran; it heard they were busy, and it
        // never heard of Colloid's own demotions.
        assert!((100..110).all(|p| mem.tier_of(p) == Some(TierId(1))));
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 40);
        assert!(seen.iter().all(|&(m, s)| m.to == TierId::FAST && s == MoveStatus::Busy));
    }

    #[test]
    fn a_faster_default_tier_lets_the_base_promote_within_the_shift() {
        let seen = Seen::default();
        let mut c = colloid(&seen);
        let (mut mem, events) = setup();
        // First quantum measures: 90 ns vs 150 ns with p = 0.5, so p_lo = 0.5, Δp = 0.25.
        quantum(&mut c, &mut mem, &[], &telemetry(90.0, 150.0, 0.5));
        quantum(&mut c, &mut mem, &events, &telemetry(90.0, 150.0, 0.5));
        // The base's promotions pass until their probabilities (4/84 each) reach Δp.
        let promoted = (100..110).filter(|&p| mem.tier_of(p) == Some(TierId::FAST)).count();
        assert_eq!(promoted, 5, "0.25 of probability is 5 pages of 4/84");
        assert!((0..50).all(|p| mem.tier_of(p) == Some(TierId::FAST)), "nothing demoted");
        assert_eq!(seen.lock().unwrap().iter().filter(|(_, s)| *s == MoveStatus::Busy).count(), 35);
        assert_eq!(c.name(), "eager+colloid");
    }

    #[test]
    fn without_measurements_the_base_runs_unchanged() {
        let seen = Seen::default();
        let mut c = colloid(&seen);
        let (mut mem, events) = setup();
        quantum(&mut c, &mut mem, &events, &Telemetry::default());
        assert!((100..110).all(|p| mem.tier_of(p) == Some(TierId::FAST)));
        assert!(seen.lock().unwrap().iter().all(|&(_, s)| s != MoveStatus::Busy));
    }

    #[test]
    fn parameters_are_checked() {
        let d = ColloidParams::default();
        let bad = |p: ColloidParams| ColloidPolicy::new(p, Box::new(Eager(Seen::default()))).err().unwrap().param;
        assert_eq!(bad(ColloidParams { epsilon: 0.0, ..d }), "epsilon");
        assert_eq!(bad(ColloidParams { delta: 1.0, ..d }), "delta");
        assert_eq!(bad(ColloidParams { ewma_weight: f64::NAN, ..d }), "ewma_weight");
        assert_eq!(bad(ColloidParams { max_migrate_bytes_per_sec: 0.0, ..d }), "max_migrate_bytes_per_sec");
        assert_eq!(bad(ColloidParams { bins: 0, ..d }), "bins");
        assert_eq!(bad(ColloidParams { cooling_threshold: 1, ..d }), "cooling_threshold");
        assert_eq!(bad(ColloidParams { scan_pages: 0, ..d }), "scan_pages");
    }
}
