//! `arms`: ARMS (Yadalam, Kanellis, Swift, Venkataraman, "ARMS: Adaptive and Robust
//! Memory Tiering System", arXiv 2508.04417, 2025): tiering without hotness thresholds.
//! The paper (abstract, §1) names three parts; the rules and constants below are those of
//! the authors' implementation (`arms_kernel.h`, `arms_kernel.cpp` in the artifact
//! repository SujayYadalam94/tiering_solutions), which the `Params` docs cite.
//!
//! - **Scores.** PEBS samples are counted per page over each policy interval (500 ms).
//!   At every interval each page's count, in units of the high-fidelity sampling period,
//!   feeds two exponentially weighted moving averages: a short-term one (1 s window,
//!   α = 2/(1 s / 500 ms + 1) = 2/3) and a long-term one (10 s window, α = 2/21). A
//!   page's score is a biased sum of the two: 0.4 × short + 0.6 × long (history bias).
//! - **Hot set, no threshold.** Pages are ranked by score; the hot set is the top of the
//!   ranking that fits the fast tier. A page's hot age counts the consecutive intervals
//!   it has spent in the hot set with a non-zero score; it may be promoted once its hot
//!   age exceeds 1 while its score is not falling, and loses that until it re-enters.
//!   Pages with no score are never hot; they are the first demotion victims.
//! - **Hot-change detector.** Every second a Page-Hinkley (CUSUM) test watches the
//!   slow tier's bandwidth against its moving average and deviation. A rise (while the
//!   slow tier carries more than 0.3 GB/s) switches the score to the recency bias
//!   (0.731 × short + 0.269 × long) and halves the sampling period; after 20 seconds
//!   without a further rise it switches back.
//! - **Cost/benefit.** The benefit of promoting a page is its expected accesses over as
//!   many intervals as its hot age: score × hot age × the high-fidelity sampling period
//!   × the latency gap between the tiers (measured loaded latencies, when the platform
//!   reports them). A promotion into free fast memory must beat 1.5 × the cost of one
//!   migration; an exchange (demote the coldest fast page, promote the hottest slow one)
//!   must have every average of the hot page at or above every average of the cold one,
//!   and its score difference must buy 1.5 × the cost of two migrations. The first
//!   candidate that fails ends the interval's migrations.
//! - **Scheduler.** Migrations are batched per interval, demotions first, and bounded so
//!   that the interval's moves take no longer than the interval at the measured cost per
//!   move: at most interval / (promotion cost + demotion cost) exchanges. The cost per
//!   move is an EWMA (20 intervals) of the measured one; it rises with contention
//!   (bandwidth), and decays by 1.5x per idle interval down to its floor.
//!
//! Differences from the artifact: it ranks every page of the process (found by a
//! pagemap scan); here only sampled pages have records, and fast pages without one are
//! found by a wrapping scan of resident pages. The measured cost is the platform's
//! reported mechanism CPU, less the samples' share, per page moved (one figure for both
//! directions); the artifact times each `move_pages` call per direction. The latency gap
//! is the measured one where the artifact reads it off bandwidth/latency curves. Writes
//! count as reads (the artifact weighs NVM writes by 1 on its CXL-like machine). Huge
//! pages are out of scope.

use super::score_table::{Order, ScoreTable, Scored};
use super::PolicySetup;
use crate::memory::{MoveStatus, Resident, ScanCursor};
use crate::policy::{Ctx, Migration, Policy, Sampling, SourceRequest};
use crate::telemetry::Telemetry;
use crate::types::{Nanos, Page, TierId, MILLISECOND, SECOND};
use crate::{Event, ParamError};

/// Parameters of [`ArmsPolicy`]. The paper states no constants; the defaults are its
/// artifact's (`arms_kernel.h`), except where a doc says tierkit chose the value.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ArmsParams {
    /// PEBS period under history bias, events. Artifact `DEFAULT_SAMPLE_PERIOD`: 10007.
    pub sample_period: u64,
    /// PEBS period after a hot change, events; scores count samples in its units.
    /// Artifact `HF_SAMPLE_PERIOD`: 5003.
    pub hf_sample_period: u64,
    /// Policy interval: scores, hot set and migrations. Artifact
    /// `PEBS_KSWAPD_INTERVAL_BIG`: 500 ms.
    pub interval: Nanos,
    /// Short-term EWMA window (α = 2/(window/interval + 1)). Artifact
    /// `SHORT_TERM_WND_PERIOD_MS`: 1 s.
    pub short_window: Nanos,
    /// Long-term EWMA window. Artifact `LONG_TERM_WND_PERIOD_MS`: 10 s.
    pub long_window: Nanos,
    /// Weight of the short-term average in the score under history bias (the long-term
    /// one gets the rest). Artifact `HIST_BIAS`: {0.4, 0.6}.
    pub history_bias: f64,
    /// Weight of the short-term average under recency bias. Artifact `RECN_BIAS`:
    /// {0.731, 0.269}.
    pub recency_bias: f64,
    /// A migration must buy this multiple of its cost. Artifact `CB_MULTIPLIER`: 1.5.
    pub cb_multiplier: f64,
    /// Intervals the measured cost per move is averaged over (α = 2/(n + 1)). Artifact
    /// `MIGRATION_WINDOW_SIZE`: 20.
    pub cost_window: u32,
    /// Divisor of the cost per move after an interval without migrations. Artifact
    /// `MIGRATION_COST_DECAY_RATE`: 1.5.
    pub cost_decay: f64,
    /// Floor (and start) of the cost per move, ns. The artifact's floor is the copy time
    /// of a 2 MiB page plus 500 µs of metadata work (`MIN_PROMOTION_COST`); for 4 KiB
    /// pages tierkit takes 5 µs, the order of kernel `move_pages` per base page (the
    /// simulator's `cpu_ns_per_page`).
    pub min_move_cost_ns: f64,
    /// CPU per sample, ns, subtracted from the mechanism CPU before it is charged to
    /// moves. 200 ns, the simulator's `mechanisms.sample_ns` (tierkit's choice).
    pub sample_cost_ns: f64,
    /// Latency gap between the tiers, ns, when the platform reports no latencies.
    /// Artifact `UNLOADED_NVM_LAT - UNLOADED_DRAM_LAT`: 0.25 - 0.1 µs = 150 ns.
    pub latency_gap_ns: f64,
    /// How often the hot-change detector runs. Artifact: every second.
    pub hcd_period: Nanos,
    /// EWMA weight of the slow tier's bandwidth. Artifact `HCD_EWMA_ALPHA`: 0.1.
    pub hcd_alpha: f64,
    /// EWMA weight of its squared deviation. Artifact `HCD_STD_ALPHA`: 0.2.
    pub hcd_std_alpha: f64,
    /// CUSUM drift, in deviations. Artifact `HCD_PH_DRIFT`: 0.5.
    pub hcd_drift: f64,
    /// CUSUM alarm level, in deviations. Artifact `HCD_PH_THRESHOLD`: 6.
    pub hcd_threshold: f64,
    /// Slow-tier bandwidth below which a change is ignored, GB/s. Artifact
    /// `HCD_RECN_MIN_NVM_BW`: 0.3.
    pub hcd_min_slow_gbps: f64,
    /// Detector periods the recency bias lasts at least. Artifact
    /// `HCD_RECN_MAX_PERIODS`: 20.
    pub hcd_recency_periods: u32,
    /// Resident pages examined per step of the victim scan (tierkit's, as `threshold`).
    pub scan_batch: usize,
}

impl Default for ArmsParams {
    fn default() -> Self {
        Self {
            sample_period: 10_007,
            hf_sample_period: 5_003,
            interval: 500 * MILLISECOND,
            short_window: SECOND,
            long_window: 10 * SECOND,
            history_bias: 0.4,
            recency_bias: 0.731,
            cb_multiplier: 1.5,
            cost_window: 20,
            cost_decay: 1.5,
            min_move_cost_ns: 5_000.0,
            sample_cost_ns: 200.0,
            latency_gap_ns: 150.0,
            hcd_period: SECOND,
            hcd_alpha: 0.1,
            hcd_std_alpha: 0.2,
            hcd_drift: 0.5,
            hcd_threshold: 6.0,
            hcd_min_slow_gbps: 0.3,
            hcd_recency_periods: 20,
            scan_batch: 4096,
        }
    }
}

/// ARMS's per-page record (the artifact's `arms_page_info`).
#[derive(Clone, Copy, Debug)]
struct Record {
    page: Page,
    /// Samples in the current interval.
    samples: u32,
    hot_age: u32,
    /// Short- and long-term averages, high-fidelity samples per interval.
    w: [f32; 2],
    score: f32,
    prev_score: f32,
    can_promote: bool,
}

impl Scored for Record {
    fn page(&self) -> Page {
        self.page
    }
    fn score(&self) -> f32 {
        self.score
    }
}

/// The hot-change detector's state (artifact `detect_hot_change`).
#[derive(Clone, Copy, Debug, Default)]
struct Detector {
    mean: f64,
    dev: f64,
    cusum: f64,
    recency: bool,
    periods: u32,
    last: Nanos,
}

/// ARMS tiering; see the module documentation.
#[derive(Clone, Debug)]
pub struct ArmsPolicy {
    params: ArmsParams,
    alpha: [f64; 2],
    table: ScoreTable<Record>,
    detector: Detector,
    /// Cost per move, ns (the artifact's promotion/demotion cost averages).
    move_cost: f64,
    /// Samples since the last tick; moves reported since the last tick.
    tick_samples: u64,
    moved: u64,
    /// Promotions minus demotions queued and not yet executed.
    inflight: i64,
    ticked: bool,
    cursor: ScanCursor,
    scratch: Vec<Resident>,
}

impl ArmsPolicy {
    /// An ARMS policy; its page table is sized for `setup.pages`.
    pub fn new(params: ArmsParams, setup: &PolicySetup) -> Result<Self, ParamError> {
        let p = &params;
        let checks = [
            ("sample_period", p.sample_period.to_string(), p.sample_period > 0),
            ("hf_sample_period", p.hf_sample_period.to_string(), p.hf_sample_period > 0),
            ("interval", p.interval.to_string(), p.interval > 0),
            ("short_window", p.short_window.to_string(), p.short_window >= p.interval),
            ("long_window", p.long_window.to_string(), p.long_window >= p.short_window),
            ("history_bias", p.history_bias.to_string(), (0.0..=1.0).contains(&p.history_bias)),
            ("recency_bias", p.recency_bias.to_string(), (0.0..=1.0).contains(&p.recency_bias)),
            ("cb_multiplier", p.cb_multiplier.to_string(), p.cb_multiplier >= 0.0 && p.cb_multiplier.is_finite()),
            ("cost_window", p.cost_window.to_string(), p.cost_window > 0),
            ("cost_decay", p.cost_decay.to_string(), p.cost_decay >= 1.0 && p.cost_decay.is_finite()),
            ("min_move_cost_ns", p.min_move_cost_ns.to_string(), p.min_move_cost_ns > 0.0),
            ("sample_cost_ns", p.sample_cost_ns.to_string(), p.sample_cost_ns >= 0.0),
            ("latency_gap_ns", p.latency_gap_ns.to_string(), p.latency_gap_ns > 0.0),
            ("hcd_period", p.hcd_period.to_string(), p.hcd_period > 0),
            ("hcd_alpha", p.hcd_alpha.to_string(), p.hcd_alpha > 0.0 && p.hcd_alpha <= 1.0),
            ("hcd_std_alpha", p.hcd_std_alpha.to_string(), p.hcd_std_alpha > 0.0 && p.hcd_std_alpha <= 1.0),
            ("hcd_drift", p.hcd_drift.to_string(), p.hcd_drift >= 0.0),
            ("hcd_threshold", p.hcd_threshold.to_string(), p.hcd_threshold > 0.0),
            ("hcd_min_slow_gbps", p.hcd_min_slow_gbps.to_string(), p.hcd_min_slow_gbps >= 0.0),
            ("scan_batch", p.scan_batch.to_string(), p.scan_batch > 0),
        ];
        if let Some((name, value, _)) = checks.into_iter().find(|(_, _, ok)| !ok) {
            return Err(ParamError::new(
                name,
                value,
                "a positive value; biases in [0, 1]; interval <= short_window <= long_window; cost_decay >= 1",
            ));
        }
        let alpha = |window: Nanos| 2.0 / (window as f64 / p.interval as f64 + 1.0);
        Ok(Self {
            params,
            alpha: [alpha(p.short_window), alpha(p.long_window)],
            table: ScoreTable::with_capacity(setup.pages),
            detector: Detector::default(),
            move_cost: p.min_move_cost_ns,
            tick_samples: 0,
            moved: 0,
            inflight: 0,
            ticked: false,
            cursor: ScanCursor::default(),
            scratch: Vec::new(),
        })
    }

    fn period(&self) -> u64 {
        if self.detector.recency {
            self.params.hf_sample_period
        } else {
            self.params.sample_period
        }
    }

    fn on_sample(&mut self, page: Page) {
        self.tick_samples += 1;
        let r = self.table.entry(page, || Record {
            page,
            samples: 0,
            hot_age: 0,
            w: [0.0; 2],
            score: 0.0,
            prev_score: 0.0,
            can_promote: false,
        });
        r.samples = r.samples.saturating_add(1);
    }

    /// Folds the interval's samples into the averages and rescores every page.
    fn rescore(&mut self) {
        let scale = self.period() as f64 / self.params.hf_sample_period as f64;
        let short = if self.detector.recency { self.params.recency_bias } else { self.params.history_bias };
        let bias = [short, 1.0 - short];
        for r in &mut self.table.records {
            let x = f64::from(r.samples) * scale;
            let mut score = 0.0;
            for ((w, a), b) in r.w.iter_mut().zip(self.alpha).zip(bias) {
                let avg = (1.0 - a) * f64::from(*w) + a * x;
                *w = avg as f32;
                score += b * avg;
            }
            (r.prev_score, r.score, r.samples) = (r.score, score as f32, 0);
        }
        // Records whose averages have decayed to nothing say nothing more than no record.
        self.table.forget_where(|r| r.w[0].max(r.w[1]) < 1e-3);
    }

    /// Ranks the pages and updates hot ages.
    fn rank(&mut self, capacity: u64) {
        self.table.rank(capacity);
        let t = &mut self.table;
        for slot in 0..t.records.len() {
            let in_hot = t.is_hot(slot);
            let r = &mut t.records[slot];
            if in_hot && r.score > 0.0 {
                r.hot_age += 1;
                if r.hot_age > 1 && r.score >= r.prev_score {
                    r.can_promote = true;
                }
            } else if !in_hot {
                (r.hot_age, r.can_promote) = (0, false);
            }
        }
    }

    /// The Page-Hinkley test on the slow tier's bandwidth, once per `hcd_period`.
    fn detect_hot_change(&mut self, telemetry: &Telemetry) {
        let p = &self.params;
        let d = &mut self.detector;
        if telemetry.now < d.last + p.hcd_period {
            return;
        }
        d.last = telemetry.now;
        let rate: f64 = telemetry.tiers.iter().skip(1).map(|t| t.request_rate).sum();
        let gbps = rate * 64.0 / f64::from(1u32 << 30);
        d.mean = (1.0 - p.hcd_alpha) * d.mean + p.hcd_alpha * gbps;
        let var = (1.0 - p.hcd_std_alpha) * d.dev + p.hcd_std_alpha * (gbps - d.mean).powi(2);
        d.dev = var.max(1e-12).sqrt();
        d.cusum = (d.cusum + (gbps - d.mean) - p.hcd_drift * d.dev).max(0.0);
        if d.cusum > p.hcd_threshold * d.dev {
            if !d.recency && gbps > p.hcd_min_slow_gbps {
                (d.recency, d.periods) = (true, 0);
            }
            d.cusum = 0.0;
        } else if d.recency {
            d.periods += 1;
            if d.periods >= p.hcd_recency_periods && d.cusum <= 0.0 {
                (d.recency, d.periods) = (false, 0);
            }
        }
    }

    /// Charges the interval's mechanism CPU, less its samples, to the moves it executed.
    fn measure_cost(&mut self, telemetry: &Telemetry) {
        let p = &self.params;
        if self.moved > 0 {
            let cpu = telemetry.mechanism_cpu_ns as f64 - self.tick_samples as f64 * p.sample_cost_ns;
            let per_move = cpu / self.moved as f64;
            let a = 2.0 / (f64::from(p.cost_window) + 1.0);
            self.move_cost = ((1.0 - a) * self.move_cost + a * per_move).max(p.min_move_cost_ns);
        } else {
            self.move_cost = (self.move_cost / p.cost_decay).max(p.min_move_cost_ns);
        }
        (self.moved, self.tick_samples) = (0, 0);
    }

    /// The next fast page with no score, from the wrapping scan (one pass at most).
    fn next_unscored(&mut self, ctx: &Ctx<'_>, pass: &mut super::ScanPass, pending: &mut Vec<Page>) -> Option<Page> {
        loop {
            if let Some(p) = pending.pop() {
                return Some(p);
            }
            if !pass.next(ctx.mem, &mut self.cursor, self.params.scan_batch, &mut self.scratch) {
                return None;
            }
            let table = &self.table;
            let cold = |r: &&Resident| r.tier == TierId::FAST && table.get(r.page).is_none_or(|h| h.score <= 0.0);
            pending.extend(self.scratch.iter().filter(cold).map(|r| r.page).rev());
        }
    }

    /// One interval's cost/benefit-checked, bounded batch of promotions and exchanges.
    fn migrate(&mut self, ctx: &mut Ctx<'_>, gap_ns: f64) {
        let Some(slow) = ctx.mem.slower_than(TierId::FAST) else { return };
        let p = self.params;
        let max_moves = (p.interval as f64 / (2.0 * self.move_cost)) as usize;
        let worth = |score: f32, age: u32| f64::from(score) * f64::from(age) * p.hf_sample_period as f64 * gap_ns;
        let mut room = ctx.mem.free_pages(TierId::FAST) as i64 - self.inflight;
        let (mut promote, mut demote) = (Vec::new(), Vec::new());
        // Demotion victims: fast pages with no score, then scored fast pages outside the
        // hot set, coldest first.
        let table = &self.table;
        let scored_fast = |&s: &u32| {
            let r = &table.records[s as usize];
            r.score > 0.0 && ctx.mem.tier_of(r.page) == Some(TierId::FAST)
        };
        let mut scored_cold = table.ranked(table.slots(false).filter(scored_fast), Order::WorstFirst);
        // Candidates, best first: the hot set's slow pages that may be promoted, and its
        // unscored pages (the first of them ends the walk).
        let candidate = |&s: &u32| {
            let r = &table.records[s as usize];
            r.score <= 0.0 || (r.can_promote && ctx.mem.tier_of(r.page).is_some_and(|t| t != TierId::FAST))
        };
        let candidates = table.ranked(table.slots(true).filter(candidate), Order::BestFirst);
        let mut pass = super::ScanPass::new(&self.cursor);
        let mut pending = Vec::new();
        let mut unscored_done = false;
        for slot in candidates {
            if promote.len() >= max_moves {
                break;
            }
            let h = self.table.records[slot as usize];
            if h.score <= 0.0 {
                break;
            }
            if worth(h.score, h.hot_age) < p.cb_multiplier * self.move_cost {
                break;
            }
            if room > 0 {
                room -= 1;
                promote.push(h.page);
                continue;
            }
            let victim = if unscored_done { None } else { self.next_unscored(ctx, &mut pass, &mut pending) };
            unscored_done = victim.is_none();
            let (cold, w, score) = match victim {
                Some(page) => (page, [0.0f32; 2], 0.0f32),
                None => match scored_cold.next().map(|s| self.table.records[s as usize]) {
                    Some(r) => (r.page, r.w, r.score),
                    None => break,
                },
            };
            if h.w[0].min(h.w[1]) < w[0].max(w[1])
                || worth(h.score - score, h.hot_age) < p.cb_multiplier * 2.0 * self.move_cost
            {
                break;
            }
            demote.push(cold);
            promote.push(h.page);
        }
        for &page in &demote {
            ctx.plan.push(page, slow);
        }
        for &page in &promote {
            ctx.promote(page);
        }
        self.inflight += promote.len() as i64 - demote.len() as i64;
    }

    /// The measured latency gap between the slow and the fast tier, or the default.
    fn gap_ns(&self, telemetry: &Telemetry) -> f64 {
        let latency = |t: TierId| telemetry.tier(t).map_or(0.0, |s| s.latency_ns);
        let (fast, slow) = (latency(TierId::FAST), latency(TierId(1)));
        if fast > 0.0 && slow > fast {
            slow - fast
        } else if fast > 0.0 && slow > 0.0 {
            0.0 // the slow tier is no slower now: nothing to gain
        } else {
            self.params.latency_gap_ns
        }
    }
}

impl Policy for ArmsPolicy {
    fn name(&self) -> &str {
        "arms"
    }

    fn sources(&self) -> SourceRequest {
        SourceRequest { samples: Some(Sampling::every(self.period())), allocations: true, ..Default::default() }
    }

    fn tick_interval(&self) -> Nanos {
        self.params.interval
    }

    fn horizon(&self) -> Nanos {
        self.params.long_window
    }

    fn on_events(&mut self, events: &[Event], _ctx: &mut Ctx<'_>) {
        for e in events {
            match *e {
                Event::Sample { page, .. } => self.on_sample(page),
                Event::Free { page } => self.table.forget(page),
                _ => {}
            }
        }
    }

    fn on_tick(&mut self, telemetry: &Telemetry, ctx: &mut Ctx<'_>) {
        self.measure_cost(telemetry);
        self.detect_hot_change(telemetry);
        let rate: f64 = telemetry.tiers.iter().map(|t| t.request_rate).sum();
        if rate > 0.0 {
            self.ticked = true;
        }
        ctx.sources.samples = Some(if self.ticked && rate > 0.0 {
            Sampling::new(rate / self.period() as f64)
        } else {
            Sampling::every(self.period())
        });
        self.rescore();
        let capacity = ctx.mem.tiers().first().map_or(0, |t| t.capacity_pages);
        self.rank(capacity);
        let gap = self.gap_ns(telemetry);
        self.migrate(ctx, gap);
    }

    fn on_moved(&mut self, results: &[(Migration, MoveStatus)]) {
        for &(m, status) in results {
            self.inflight += if m.to == TierId::FAST { -1 } else { 1 };
            match status {
                MoveStatus::Moved => self.moved += 1,
                MoveStatus::NotResident => self.table.forget(m.page),
                _ => {}
            }
        }
    }

    fn metadata_bytes(&self) -> usize {
        self.table.heap_bytes() + self.scratch.capacity() * std::mem::size_of::<Resident>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::TierStats;
    use crate::{InMemory, Memory, Mover, Plan, SampleRate};

    struct Rig {
        mem: InMemory,
        policy: ArmsPolicy,
        sources: SourceRequest,
    }

    /// Telemetry of one interval: fast and slow latency (ns, 0 = not reported), the
    /// mechanism's CPU and the slow tier's request rate.
    #[derive(Clone, Copy, Default)]
    struct Tele {
        fast_ns: f64,
        slow_ns: f64,
        cpu_ns: u64,
        slow_rate: f64,
    }

    impl Rig {
        /// `fast` fast pages of which pages `0..full` are resident; slow pages 1000 on.
        fn new(params: ArmsParams, fast: u64, full: u64, slow: u64) -> Self {
            let mut mem = InMemory::new(&[fast, 10_000]).unwrap();
            for p in 0..fast {
                mem.touch(p);
            }
            for p in 1000..1000 + slow {
                mem.touch(p);
            }
            for p in full..fast {
                mem.free(p);
            }
            let policy = ArmsPolicy::new(params, &PolicySetup { fast_pages: fast, pages: 2000 }).unwrap();
            Self { mem, sources: policy.sources(), policy }
        }

        /// `times` samples of each page in `pages` in this interval.
        fn sample(&mut self, pages: impl Iterator<Item = Page> + Clone, times: usize) {
            let events: Vec<Event> = (0..times)
                .flat_map(|_| pages.clone())
                .map(|page| Event::Sample { page, tier: TierId(1), word: None, write: false, time: 0, stall_ns: None })
                .collect();
            let mut plan = Plan::default();
            self.policy.on_events(&events, &mut Ctx { mem: &self.mem, plan: &mut plan, sources: &mut self.sources });
            assert!(plan.is_empty(), "ARMS migrates once per interval");
        }

        /// The end of an interval; returns the moves it queued (then executed).
        fn tick(&mut self, t: Tele) -> Vec<Migration> {
            self.mem.advance(self.policy.params.interval);
            let stats = |tier, latency_ns, request_rate| TierStats {
                tier: TierId(tier),
                latency_ns,
                request_rate,
                ..Default::default()
            };
            let telemetry = Telemetry {
                now: self.mem.now(),
                interval: self.policy.params.interval,
                tiers: vec![stats(0, t.fast_ns, 1e6), stats(1, t.slow_ns, t.slow_rate)],
                mechanism_cpu_ns: t.cpu_ns,
                app_cpu_ns: 0,
                aol_ns: None,
            };
            let mut plan = Plan::default();
            self.policy.on_tick(&telemetry, &mut Ctx { mem: &self.mem, plan: &mut plan, sources: &mut self.sources });
            let queued = plan.as_slice().to_vec();
            let mut results = Vec::new();
            Mover::default().execute(&mut plan, &mut self.mem, &mut results);
            self.policy.on_moved(&results);
            queued
        }

        fn fast(&self, page: Page) -> bool {
            self.mem.tier_of(page) == Some(TierId::FAST)
        }
    }

    const LOADED: Tele = Tele { fast_ns: 100.0, slow_ns: 250.0, cpu_ns: 0, slow_rate: 0.0 };

    /// The interval at which slow page 1000, sampled `2k` times an interval from interval
    /// 0 on, replaces a fast page of fast pages 0..10, each sampled `k` times an interval
    /// for 30 intervals before; `None` if not within 20 intervals.
    fn rise(k: usize) -> (Option<usize>, Rig) {
        let mut rig = Rig::new(ArmsParams::default(), 10, 10, 1);
        for _ in 0..30 {
            rig.sample(0..10, k);
            assert!(rig.tick(LOADED).is_empty(), "a full fast tier and nothing better");
        }
        for i in 0..20 {
            rig.sample(0..10, k);
            rig.sample(1000..1001, 2 * k);
            if !rig.tick(LOADED).is_empty() {
                return (Some(i), rig);
            }
        }
        (None, rig)
    }

    #[test]
    fn a_page_whose_averages_rise_above_the_hot_set_is_promoted_without_a_threshold() {
        let (at, rig) = rise(2);
        // Interval 0-1: its short-term average leads, but the score (0.4 short + 0.6
        // long) has not passed the fast pages'; from interval 2 it is in the hot set,
        // and it may displace a page only once its long-term average has passed that
        // page's averages too (§ hot min EWMA >= cold max EWMA).
        let at = at.expect("promoted");
        assert!((4..=8).contains(&at), "promoted at interval {at}");
        assert!(rig.fast(1000));
        // The victim is the last of the fast pages in the ranking (equal scores: the
        // highest page), and only it.
        assert!(!rig.fast(9) && (0..9).all(|p| rig.fast(p)));
        // No absolute threshold: ten times the samples, the same interval.
        assert_eq!(rise(20).0, Some(at));
        // A page sampled no more than the fast pages never displaces one.
        let mut rig = Rig::new(ArmsParams::default(), 10, 10, 1);
        for _ in 0..40 {
            rig.sample(0..10, 3);
            rig.sample(1000..1001, 3);
            assert!(rig.tick(LOADED).is_empty());
        }
    }

    #[test]
    fn a_page_needs_two_intervals_in_the_hot_set_and_a_score_that_is_not_falling() {
        let mut rig = Rig::new(ArmsParams::default(), 10, 5, 1);
        rig.sample(1000..1001, 4);
        assert!(rig.tick(LOADED).is_empty(), "hot age 1");
        rig.sample(1000..1001, 1);
        assert!(rig.tick(LOADED).is_empty(), "hot age 2, but its score fell");
        rig.sample(1000..1001, 4);
        assert_eq!(rig.tick(LOADED), [Migration { page: 1000, to: TierId::FAST }], "free room: no victim");
        assert!(rig.fast(1000));
    }

    #[test]
    fn a_move_whose_benefit_does_not_cover_its_cost_is_not_made() {
        // The same page, free fast room: with the tiers 0.001 ns apart a promotion saves
        // far less than 1.5 x the 5 us move; 150 ns apart it saves far more.
        for (gap, promoted) in [(0.001, false), (150.0, true)] {
            let mut rig = Rig::new(ArmsParams::default(), 10, 5, 1);
            let t = Tele { fast_ns: 100.0, slow_ns: 100.0 + gap, ..Default::default() };
            for _ in 0..5 {
                rig.sample(1000..1001, 4);
                rig.tick(t);
            }
            assert_eq!(rig.fast(1000), promoted, "gap {gap} ns");
        }
        // A measured cost: the interval's CPU, less its samples, per page moved. 100 ms
        // for one move lifts the cost's average far above its 5 us floor, past what a
        // page of one sample per interval is worth.
        let mut rig = Rig::new(ArmsParams::default(), 10, 5, 3);
        while !rig.fast(1000) {
            rig.sample(1000..1001, 40);
            rig.tick(LOADED);
        }
        let before = rig.policy.move_cost;
        rig.sample(1001..1003, 1);
        rig.tick(Tele { cpu_ns: 100_000_000 + 2 * 200, ..LOADED });
        assert!(rig.policy.move_cost > 1000.0 * before, "{} vs {before}", rig.policy.move_cost);
        for _ in 0..3 {
            rig.sample(1001..1003, 1);
            assert!(rig.tick(LOADED).is_empty(), "cost {}", rig.policy.move_cost);
        }
        // Idle intervals decay the cost by 1.5x each, back to the floor: then they move.
        for _ in 0..30 {
            rig.sample(1001..1003, 1);
            rig.tick(LOADED);
        }
        assert!(rig.fast(1001) && rig.fast(1002), "cost {}", rig.policy.move_cost);
    }

    #[test]
    fn batches_are_bounded_by_what_the_interval_can_move_at_the_measured_cost() {
        // A 25 ms move: 500 ms / (25 + 25) ms = 10 exchanges' worth of moves an interval.
        let params = ArmsParams { min_move_cost_ns: 25e6, ..Default::default() };
        let mut rig = Rig::new(params, 100, 0, 35);
        let mut per_interval = Vec::new();
        for _ in 0..6 {
            rig.sample(1000..1035, 100);
            per_interval.push(rig.tick(LOADED).len());
        }
        assert_eq!(per_interval, [0, 10, 10, 10, 5, 0]);
        assert!((1000..1035).all(|p| rig.fast(p)));
    }

    #[test]
    fn exchanges_demote_first_and_take_unscored_fast_pages_before_scored_ones() {
        let mut rig = Rig::new(ArmsParams::default(), 4, 4, 2);
        // Fast pages 0 and 1 are warm, 2 and 3 never sampled; slow 1000 and 1001 hot.
        let mut moves = Vec::new();
        for _ in 0..40 {
            rig.sample(0..2, 1);
            rig.sample(1000..1002, 8);
            moves.extend(rig.tick(LOADED));
        }
        let slow = TierId(1);
        assert_eq!(moves.len(), 4, "{moves:?}");
        assert!(moves[..2].iter().all(|m| m.to == slow && m.page >= 2 && m.page < 4), "{moves:?}");
        assert!(moves[2..].iter().all(|m| m.to == TierId::FAST), "{moves:?}");
        assert!(rig.fast(0) && rig.fast(1) && rig.fast(1000) && rig.fast(1001));
    }

    #[test]
    fn a_rise_of_slow_tier_bandwidth_switches_to_recency_and_faster_sampling() {
        let mut rig = Rig::new(ArmsParams::default(), 4, 4, 2);
        let hz = |rig: &Rig| match rig.sources.samples.unwrap().rate {
            SampleRate::Hz(hz) => hz,
            r => panic!("{r:?}"),
        };
        let steady = Tele { slow_rate: 1e7, ..LOADED };
        for _ in 0..40 {
            rig.tick(steady);
        }
        assert!(!rig.policy.detector.recency);
        assert!((hz(&rig) - (1e6 + 1e7) / 10_007.0).abs() < 1e-6);
        // A sustained 20x rise: the first step also widens the deviation, so the CUSUM
        // takes a few detector periods to cross 6 deviations.
        let mut periods = 0;
        while !rig.policy.detector.recency && periods < 10 {
            rig.tick(Tele { slow_rate: 2e8, ..LOADED });
            periods += 1;
        }
        assert!(rig.policy.detector.recency && periods > 1, "{periods}: {:?}", rig.policy.detector);
        assert!((hz(&rig) - (1e6 + 2e8) / 5003.0).abs() < 1e-6);
        // Once the CUSUM has drained to 0, at least 20 detector periods (20 s) later,
        // back to history.
        for _ in 0..40 {
            rig.tick(Tele { slow_rate: 2e8, ..LOADED });
        }
        assert!(rig.policy.detector.recency, "not before 20 periods");
        for _ in 0..200 {
            rig.tick(Tele { slow_rate: 2e8, ..LOADED });
        }
        assert!(!rig.policy.detector.recency, "{:?}", rig.policy.detector);
    }

    #[test]
    fn freed_pages_are_forgotten_and_records_stay_consistent() {
        let mut rig = Rig::new(ArmsParams::default(), 4, 4, 3);
        rig.sample(1000..1003, 2);
        let mut plan = Plan::default();
        let frees = [Event::Free { page: 1000 }];
        rig.policy.on_events(&frees, &mut Ctx { mem: &rig.mem, plan: &mut plan, sources: &mut rig.sources });
        assert_eq!(rig.policy.table.len(), 2);
        assert!(rig.policy.table.consistent());
        // Unsampled records decay away.
        for _ in 0..200 {
            rig.tick(LOADED);
        }
        assert!(rig.policy.table.len() == 0 && rig.policy.table.consistent());
    }

    #[test]
    fn parameters_are_checked() {
        let s = PolicySetup { fast_pages: 1, pages: 2 };
        let bad = |p: ArmsParams| ArmsPolicy::new(p, &s).unwrap_err().param;
        let d = ArmsParams::default();
        assert_eq!(bad(ArmsParams { sample_period: 0, ..d }), "sample_period");
        assert_eq!(bad(ArmsParams { hf_sample_period: 0, ..d }), "hf_sample_period");
        assert_eq!(bad(ArmsParams { interval: 0, ..d }), "interval");
        assert_eq!(bad(ArmsParams { short_window: 100 * MILLISECOND, ..d }), "short_window");
        assert_eq!(bad(ArmsParams { long_window: 500 * MILLISECOND, ..d }), "long_window");
        assert_eq!(bad(ArmsParams { history_bias: 1.5, ..d }), "history_bias");
        assert_eq!(bad(ArmsParams { recency_bias: -0.1, ..d }), "recency_bias");
        assert_eq!(bad(ArmsParams { cb_multiplier: f64::NAN, ..d }), "cb_multiplier");
        assert_eq!(bad(ArmsParams { cost_window: 0, ..d }), "cost_window");
        assert_eq!(bad(ArmsParams { cost_decay: 0.5, ..d }), "cost_decay");
        assert_eq!(bad(ArmsParams { min_move_cost_ns: 0.0, ..d }), "min_move_cost_ns");
        assert_eq!(bad(ArmsParams { latency_gap_ns: 0.0, ..d }), "latency_gap_ns");
        assert_eq!(bad(ArmsParams { hcd_alpha: 0.0, ..d }), "hcd_alpha");
        assert_eq!(bad(ArmsParams { hcd_threshold: 0.0, ..d }), "hcd_threshold");
        assert_eq!(bad(ArmsParams { scan_batch: 0, ..d }), "scan_batch");
        assert!(ArmsPolicy::new(d, &s).is_ok());
    }
}
