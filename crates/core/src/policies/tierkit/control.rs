//! What tierkit's policy adjusts once per tick: its sampling rate, the ledger's books,
//! the probes' CPU credit, the demotion band, shift detection and the free headroom.

use super::{TierkitPolicy, MAX_BAND, PINGPONG_TICKS, PROBE_CREDIT_TICKS};
use crate::policies::Cost;
use crate::policy::{Ctx, Sampling};
use crate::telemetry::Telemetry;
use crate::types::TierId;

impl TierkitPolicy {
    /// Sampling under the CPU budget, once per tick: over the budget the rate falls to
    /// what fits it (the rate times budget over the mechanism's CPU; at least a halving),
    /// down to the floor; under half of it the rate doubles back towards the maximum.
    /// Unlike FreqTier's stability-driven steps the rate never falls while the budget
    /// allows it: at lower rates the counts separate pages too slowly. Until moves have
    /// earned something (a balance at or below zero: no verdict yet, or harm), the
    /// budget is also at most [`TierkitParams::stall_share`] of the slow tier's stall.
    pub(super) fn control_sampling(&mut self, telemetry: &Telemetry, ctx: &mut Ctx<'_>) {
        let p = &self.params;
        let cpu = telemetry.mechanism_cpu_ns as f64 / telemetry.interval.max(1) as f64;
        let app_cores = telemetry.app_cpu_ns as f64 / telemetry.interval.max(1) as f64;
        let mut budget = if app_cores > 0.0 { p.cpu_budget.min(p.app_cpu_share * app_cores) } else { p.cpu_budget };
        if self.ledger.balance() <= 0.0 {
            if let Some(stall) = self.slow_stall_share(telemetry) {
                budget = budget.min(p.stall_share * stall);
            }
        }
        if cpu > budget {
            self.rate_hz = (self.rate_hz * (budget / cpu).min(0.5)).max(p.min_sample_rate_hz);
        } else if 2.0 * cpu <= budget {
            self.rate_hz = (self.rate_hz * 2.0).min(p.sample_rate_hz);
        }
        // Each step of the demotion band says counts near the threshold are noise: more
        // samples buy little, so the rate halves every two steps.
        let noisy = (p.sample_rate_hz / f64::from(1u32 << (self.band / 2))).max(p.min_sample_rate_hz);
        // Samples buy moves: while moves do not pay, sampling only probes.
        let earning = if self.ledger.pays() { p.sample_rate_hz } else { p.min_sample_rate_hz };
        ctx.sources.samples = Some(Sampling::new(self.rate_hz.min(noisy).min(earning)));
    }

    /// The application time an access saves when the fast tier serves it instead of the
    /// slow one: the latency gap over the misses in flight
    /// ([`TierkitParams::misses_in_flight`]); `None` where latencies are not measured.
    fn saved_ns_per_access(&self, telemetry: &Telemetry) -> Option<f64> {
        let latency = |t: TierId| telemetry.tier(t).map_or(0.0, |s| s.latency_ns);
        let (fast, slow) = (latency(TierId::FAST), latency(TierId(1)));
        (fast > 0.0 && slow > fast).then(|| (slow - fast) / self.params.misses_in_flight)
    }

    /// The share of the last tick the application stalled on the slow tier beyond what
    /// the fast tier would have cost; `None` where latencies are not measured.
    fn slow_stall_share(&self, telemetry: &Telemetry) -> Option<f64> {
        let slow_accesses = telemetry.tier(TierId(1))?.accesses as f64;
        let saved_ns = self.saved_ns_per_access(telemetry)?;
        Some(slow_accesses * saved_ns / telemetry.interval.max(1) as f64)
    }

    /// Closes the ledger's tick. With latencies and CPU measured, in the application's
    /// time: a sample of a moved page is worth its accesses × what each saves
    /// ([`Self::saved_ns_per_access`]), against all the mechanism's CPU. With a cost
    /// model only, in accesses: M5's cost per move. Without one, a sample is one access
    /// and a move costs nothing but its effect.
    pub(super) fn book(&mut self, telemetry: &Telemetry) {
        let aps = self.accesses_per_sample;
        match self.saved_ns_per_access(telemetry) {
            Some(saved_ns) if aps > 0.0 => {
                self.ledger.tick(aps * saved_ns, Cost::Measured(telemetry.mechanism_cpu_ns as f64));
            }
            _ if aps > 0.0 => self.ledger.tick(aps, Cost::PerMove(self.params.migration_cost_accesses)),
            _ => self.ledger.tick(1.0, Cost::PerMove(0.0)),
        }
    }

    /// While moves do not pay, probes run only while the mechanism's measured CPU since
    /// they stopped paying stays within [`TierkitParams::probe_cpu_share`] of the
    /// application's: a bucket credited with that share each tick and debited with the
    /// mechanism's CPU, holding at most `PROBE_CREDIT_TICKS` ticks' credit. A platform
    /// that reports no application CPU sets no such bound.
    pub(super) fn budget_probes(&mut self, telemetry: &Telemetry) {
        let share = self.params.probe_cpu_share * telemetry.app_cpu_ns as f64;
        if self.ledger.pays() || share <= 0.0 {
            self.probe_credit = 0.0;
            self.probing = true;
            return;
        }
        let credit = self.probe_credit + share - telemetry.mechanism_cpu_ns as f64;
        self.probe_credit = credit.min(PROBE_CREDIT_TICKS * share);
        self.probing = self.probe_credit > 0.0;
    }

    /// Promotions this tick may still queue: the ledger's allowance, none while probes
    /// wait for credit.
    pub(super) fn may_promote(&self) -> u64 {
        if self.probing {
            self.ledger.may_promote()
        } else {
            0
        }
    }

    /// Widens or narrows the demotion band once per window of `PINGPONG_TICKS / 5` ticks
    /// (see [`TierkitParams::pingpong_share`]).
    pub(super) fn adapt_band(&mut self) {
        self.ticks += 1;
        if !self.ticks.is_multiple_of(PINGPONG_TICKS / 5) {
            return;
        }
        let share = self.window_pingpong as f64 / self.window_promoted.max(1) as f64;
        if share > self.params.pingpong_share {
            self.band = (self.band + 1).min(MAX_BAND);
        } else if share < self.params.pingpong_share / 3.0 {
            self.band = self.band.saturating_sub(1);
        }
        self.window_promoted = 0;
        self.window_pingpong = 0;
        if self.promoted_at.len() > 4 * self.hot_capacity as usize {
            self.promoted_at.clear(); // only recent promotions matter
        }
    }

    /// Halves every count twice when the hit ratio collapses (see
    /// [`TierkitParams::shift_drop`]).
    pub(super) fn watch_for_shift(&mut self, telemetry: &Telemetry) {
        let Some(hit) = telemetry.fast_hit_ratio() else { return };
        match self.hit_average {
            Some(avg) if hit < self.params.shift_drop * avg => {
                self.age();
                self.age();
                self.hit_average = Some(hit);
                // The old hot set leaving is not ping-pong.
                self.band = 0;
                self.promoted_at.clear();
                self.window_promoted = 0;
                self.window_pingpong = 0;
            }
            Some(avg) => self.hit_average = Some(avg + (hit - avg) / 8.0),
            None => self.hit_average = Some(hit),
        }
    }

    /// Sizes the free-page headroom from the allocations since the last tick: the drop
    /// in free fast pages that migrations do not explain.
    pub(super) fn size_headroom(&mut self, ctx: &Ctx<'_>) {
        let free = ctx.mem.free_pages(TierId::FAST);
        if let Some(prev) = self.prev_free {
            let allocated = (prev as i64 - free as i64 - self.net_in).max(0) as f64;
            self.alloc_peak = (self.alloc_peak * 0.9).max(allocated);
        }
        self.prev_free = Some(free);
        self.net_in = 0;
        let cap = ctx.mem.tiers()[0].capacity_pages as f64;
        let p = &self.params;
        let headroom = (2.0 * self.alloc_peak).clamp(p.min_headroom * cap, p.promoting_wmark * cap).ceil();
        let scale = if p.promoting_wmark > 0.0 { p.demoting_wmark / p.promoting_wmark } else { 1.0 };
        self.headroom = headroom as i64;
        self.demote_to = (headroom * scale).ceil() as i64;
        self.hot_capacity = (cap as i64 - self.demote_to).max(1) as u64;
    }
}
