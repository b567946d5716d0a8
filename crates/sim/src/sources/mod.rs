//! Simulated access-information sources, wired from a policy's
//! [`tierkit_core::SourceRequest`]. Each charges its CPU cost to the run.

mod accessed;
mod device;
mod hint_faults;
mod sampler;

use tierkit_core::{Event, Nanos, PageKind, SourceRequest, TierId};

use crate::machine::Machine;
use crate::model::MechanismCosts;
use crate::workload::Access;
use crate::SimError;
use accessed::AccessScanner;
use device::DeviceTracker;
use hint_faults::HintScanner;
use sampler::Sampler;

/// The sources one run needs.
pub(crate) struct Sources {
    sampler: Option<Sampler>,
    hints: Option<HintScanner>,
    accessed: Option<AccessScanner>,
    device: Option<DeviceTracker>,
    allocations: bool,
    costs: MechanismCosts,
    pages: u64,
    seed: u64,
}

/// CPU and stall time the sources cost in an interval.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct SourceCosts {
    /// Tiering CPU, ns.
    pub cpu_ns: f64,
    /// Application stall (hint faults), ns.
    pub stall_ns: f64,
}

impl Sources {
    pub(crate) fn new(request: &SourceRequest, costs: MechanismCosts, pages: u64, seed: u64) -> Result<Self, SimError> {
        let mut s =
            Self { sampler: None, hints: None, accessed: None, device: None, allocations: false, costs, pages, seed };
        s.reconfigure(request, 0.0)?;
        Ok(s)
    }

    /// Applies a (possibly changed) request; unchanged sources keep their state.
    pub(crate) fn reconfigure(&mut self, r: &SourceRequest, counted_rate: f64) -> Result<(), SimError> {
        match (r.samples, self.sampler.as_mut()) {
            (Some(cfg), Some(s)) => s.reconfigure(cfg, counted_rate),
            (Some(cfg), None) => self.sampler = Some(Sampler::new(cfg, self.seed ^ 0x5a)),
            (None, _) => self.sampler = None,
        }
        if r.hint_faults != self.hints.as_ref().map(|h| h.config) {
            self.hints = r.hint_faults.map(|c| HintScanner::new(c, self.pages));
        }
        if r.accessed != self.accessed.as_ref().map(|a| a.config) {
            self.accessed = r.accessed.map(|c| AccessScanner::new(c, self.pages, self.seed ^ 0xac));
        }
        if r.device_topk != self.device.as_ref().map(|d| d.config) {
            self.device = r.device_topk.map(DeviceTracker::new).transpose()?;
        }
        self.allocations = r.allocations;
        Ok(())
    }

    /// Whether the sampler counts accesses on `tier` (for its rate).
    pub(crate) fn sampler_counts(&self, tier: u8) -> bool {
        self.sampler.as_ref().is_some_and(|s| s.counts(tier))
    }

    /// Whether the sampler takes every access on every tier.
    pub(crate) fn samples_every_access(&self) -> bool {
        self.sampler.as_ref().is_some_and(|s| s.takes_every_access())
    }

    /// `n` accesses the caller delivered itself to a sampler that takes every access
    /// (period 1, all tiers): counts them as taken samples, for their CPU cost. Returns
    /// the accesses the sampler counted (`n`, or 0 with no sampler).
    pub(crate) fn sampled_all(&mut self, n: u64) -> u64 {
        match &mut self.sampler {
            Some(s) => {
                s.taken += n;
                n
            }
            None => 0,
        }
    }

    /// Tells the sampler the stall per miss by tier and class (`latency_ns[t] /
    /// mlp[class]`), which its samples report.
    pub(crate) fn set_stalls(&mut self, latency_ns: &[f64], mlp: [f64; 3]) {
        if let Some(s) = &mut self.sampler {
            s.set_stalls(latency_ns, mlp);
        }
    }

    /// Re-derives a Hz sampler's period from the counted access rate.
    pub(crate) fn retune(&mut self, counted_rate_per_sec: f64) {
        if let Some(s) = &mut self.sampler {
            s.retune(counted_rate_per_sec);
        }
    }

    /// A page was touched for the first time (its kind is asked only when a policy
    /// wants allocations).
    #[inline]
    pub(crate) fn on_alloc(&self, page: u64, kind: impl FnOnce() -> PageKind, tier: u8, events: &mut Vec<Event>) {
        if self.allocations {
            events.push(Event::Alloc { page, kind: kind(), tier: TierId(tier) });
        }
    }

    /// Whether no source watches accesses (a run without a policy's sources, such as
    /// `none` or a reference): the engine then skips [`Sources::on_access`].
    pub(crate) fn watch_nothing(&self) -> bool {
        self.sampler.is_none() && self.hints.is_none() && self.accessed.is_none() && self.device.is_none()
    }

    /// Starts loading the per-page entries [`Sources::on_access`] will read for `page`
    /// (the engine calls it a few accesses ahead).
    #[inline(always)]
    pub(crate) fn prefetch(&self, page: u64) {
        if let Some(h) = &self.hints {
            h.prefetch(page);
        }
        if let Some(x) = &self.accessed {
            x.prefetch(page);
        }
    }

    /// One access served by `tier` at `time()` (called only for an access that becomes
    /// an event).
    #[inline(always)]
    pub(crate) fn on_access(&mut self, a: &Access, tier: u8, time: impl Fn() -> Nanos, events: &mut Vec<Event>) {
        if let Some(s) = &mut self.sampler {
            s.on_access(a, tier, &time, events);
        }
        if let Some(h) = &mut self.hints {
            h.on_access(a.page, tier, &time, events);
        }
        if let Some(x) = &mut self.accessed {
            x.on_access(a.page);
        }
        if let Some(d) = &mut self.device {
            d.on_access(a.page, a.word, tier);
        }
    }

    /// Runs the periodic parts due by `now` and returns the costs since the last call.
    pub(crate) fn advance(&mut self, now: Nanos, machine: &Machine, events: &mut Vec<Event>) -> SourceCosts {
        let c = &self.costs;
        let mut cost = SourceCosts::default();
        if let Some(s) = &mut self.sampler {
            cost.cpu_ns += std::mem::take(&mut s.taken) as f64 * c.sample_ns;
        }
        if let Some(h) = &mut self.hints {
            h.advance(now, machine);
            cost.cpu_ns += std::mem::take(&mut h.protected_pages) as f64 * c.pte_ns;
            cost.stall_ns += std::mem::take(&mut h.faults) as f64 * c.hint_fault_ns;
        }
        if let Some(x) = &mut self.accessed {
            x.advance(now, machine, events);
            let per_check = if x.config.regions.is_some() { c.region_check_ns } else { c.pte_ns };
            cost.cpu_ns += std::mem::take(&mut x.checks) as f64 * per_check;
        }
        if let Some(d) = &mut self.device {
            d.advance(now, events);
            cost.cpu_ns += std::mem::take(&mut d.queries) as f64 * c.device_query_ns;
        }
        cost
    }
}
