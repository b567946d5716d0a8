//! What a run reports.

use std::collections::BTreeMap;

use serde::Serialize;

/// One point of a run's timeline (a fixed fraction of the run's accesses).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct IntervalRecord {
    /// Simulated time at the end of the interval, ns.
    pub end_ns: f64,
    /// Real misses in the interval (generated accesses × scale).
    pub accesses: u64,
    /// Real misses per second in the interval.
    pub throughput: f64,
    /// Fraction of the interval's accesses served by the fast tier.
    pub fast_hit_ratio: f64,
    /// Mean loaded latency per tier over the interval (access-weighted), ns.
    pub latency_ns: Vec<f64>,
    /// Pages promoted in the interval.
    pub promotions: u64,
    /// Pages demoted in the interval.
    pub demotions: u64,
    /// Bytes migrated in the interval (4 KiB per page copied).
    pub migrated_bytes: u64,
    /// M5 §4.1's access-count ratio of the interval's promotions (see `acr.rs`).
    pub access_count_ratio: Option<f64>,
}

/// The outcome of one simulation.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RunResult {
    /// Workload name.
    pub workload: String,
    /// Policy or reference name.
    pub policy: String,
    /// Machine preset / config name.
    pub machine: String,
    /// Fast:slow ratio.
    pub ratio: (u64, u64),
    /// Pages of the footprint.
    pub pages: u64,
    /// The footprint the workload was asked for (its spec's pages, `--pages`): graph,
    /// matrix and cache workloads build a footprint (`pages`) that only approaches it.
    pub workload_pages: u64,
    /// Capacity of the fast tier in pages (a cache's size in cache mode).
    pub fast_pages: u64,
    /// Generated accesses simulated.
    pub accesses: u64,
    /// Real misses per generated access (a trace with its own clock: its sample rate).
    pub scale: u64,
    /// How the run's time was derived: the trace's own clock, or the scale with the
    /// machine's per-miss compute.
    pub time_base: String,
    /// The policy's settling time ([`tierkit_core::Policy::horizon`]), ns; 0 for a
    /// reference. A run shorter than this says little about the policy.
    pub horizon_ns: u64,
    /// Seed of the workload's stream: with `workload`, `workload_pages`, `accesses` and
    /// `options` it rebuilds the same stream.
    pub seed: u64,
    /// The workload's options (`KEY=VALUE`), as an object of strings.
    pub options: BTreeMap<String, String>,
    /// Simulated wall time, ns.
    pub wall_ns: f64,
    /// Real misses per simulated second.
    pub throughput: f64,
    /// Fraction of accesses served by the fast tier.
    pub fast_hit_ratio: f64,
    /// Fraction of accesses that found their page outside the fast tier, counting an
    /// access that first touches a page as a miss (a cache's miss ratio).
    pub miss_ratio: f64,
    /// Pages promoted.
    pub promotions: u64,
    /// Pages demoted.
    pub demotions: u64,
    /// Bytes migrated: 4 KiB per page copied (a demotion that remaps a page to its
    /// shadow copies none; an aborted transactional promotion did copy).
    pub migrated_bytes: u64,
    /// M5 §4.1's access-count ratio, averaged over intervals with promotions: how hot
    /// the promoted pages were relative to the true hottest slow-tier pages.
    pub access_count_ratio: Option<f64>,
    /// Peak heap bytes of the policy's own metadata.
    pub tracking_bytes: u64,
    /// Tiering CPU time (sources, scans, migration), ns.
    pub mechanism_cpu_ns: f64,
    /// Tiering CPU as a percentage of the application's CPU time (threads × wall).
    pub mechanism_cpu_pct: f64,
    /// Per-interval timeline.
    pub timeline: Vec<IntervalRecord>,
}
