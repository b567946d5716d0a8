//! Telemetry: per-tier counters the platform hands a policy at every tick.

use crate::types::{Nanos, TierId};

/// Per-tier measurements over the last tick interval.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TierStats {
    /// The tier.
    pub tier: TierId,
    /// Memory requests the tier served in the interval.
    pub accesses: u64,
    /// Request arrival rate, requests per second.
    pub request_rate: f64,
    /// Mean outstanding requests (the occupancy of Colloid's CHA counters).
    pub occupancy: f64,
    /// Mean loaded access latency in ns. By Little's law it is `occupancy / rate`
    /// (Colloid §3.1); platforms that measure it directly report that instead.
    pub latency_ns: f64,
    /// Free pages in the tier for the managed process now.
    pub free_pages: u64,
    /// Tier capacity in pages.
    pub capacity_pages: u64,
}

/// What a policy sees at each tick.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Telemetry {
    /// Time of the tick.
    pub now: Nanos,
    /// Length of the interval the counters cover.
    pub interval: Nanos,
    /// One entry per tier, fastest first.
    pub tiers: Vec<TierStats>,
    /// CPU time spent by sources and migration in the interval, ns (the tiering
    /// system's own overhead).
    pub mechanism_cpu_ns: u64,
    /// CPU time the application itself ran in the interval, ns (all its threads); 0
    /// where the platform does not know it.
    pub app_cpu_ns: u64,
    /// The application's amortized offcore latency over the interval, ns (SOAR/ALTO,
    /// OSDI'25): the time its threads waited on memory per miss, i.e. the mean latency
    /// divided by the misses in flight. On Intel hardware
    /// `OFFCORE_REQUESTS_OUTSTANDING.CYCLES_WITH_DEMAND_DATA_RD /
    /// OFFCORE_REQUESTS.DEMAND_DATA_RD` over the core clock; `None` where the platform
    /// does not measure it (the live daemon does not).
    pub aol_ns: Option<f64>,
}

impl Telemetry {
    /// The fraction of memory requests the fastest tier served (the papers' "local DRAM
    /// hit ratio"); `None` before any request.
    pub fn fast_hit_ratio(&self) -> Option<f64> {
        let total: u64 = self.tiers.iter().map(|t| t.accesses).sum();
        let fast = self.tiers.first().map_or(0, |t| t.accesses);
        (total > 0).then(|| fast as f64 / total as f64)
    }

    /// Stats of `tier`, if the platform has it.
    pub fn tier(&self, tier: TierId) -> Option<&TierStats> {
        self.tiers.get(tier.index())
    }
}

/// Little's law: mean latency (ns) = mean occupancy / arrival rate (per second).
/// Returns `None` when no request arrived.
pub fn littles_law_latency_ns(occupancy: f64, rate_per_sec: f64) -> Option<f64> {
    (rate_per_sec > 0.0).then(|| occupancy / rate_per_sec * 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hit_ratio_and_littles_law() {
        let t = Telemetry {
            tiers: vec![
                TierStats { tier: TierId(0), accesses: 90, ..Default::default() },
                TierStats { tier: TierId(1), accesses: 10, ..Default::default() },
            ],
            ..Default::default()
        };
        assert_eq!(t.fast_hit_ratio(), Some(0.9));
        assert_eq!(Telemetry::default().fast_hit_ratio(), None);
        // 10 outstanding requests at 1e8 req/s: 100 ns each.
        assert!((littles_law_latency_ns(10.0, 1e8).unwrap() - 100.0).abs() < 1e-9);
        assert_eq!(littles_law_latency_ns(1.0, 0.0), None);
    }
}
