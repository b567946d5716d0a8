//! The parameters of tierkit's policy and the ranges they must keep.

use super::MAX_COUNT;
use crate::policies::streams::MAX_SLOTS;
use crate::policies::{check_demotion_scan, LedgerParams, PolicySetup, StreamParams};
use crate::ParamError;

/// Parameters of [`TierkitPolicy`](super::TierkitPolicy).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TierkitParams {
    /// Sampling rate, constant (FreqTier §V-B-2's highest level, 100 kHz).
    pub sample_rate_hz: f64,
    /// The lowest the hot threshold goes: 2, as FreqTier (a page sampled once shows no
    /// reuse).
    pub min_hot_threshold: u32,
    /// Samples per fast-tier page between halvings: 160, as FreqTier (the authors'
    /// HybridTier artifact's `SAMPLE_SIZE`).
    pub age_samples_per_fast_page: u64,
    /// M5 §7.2: about 318 accesses amortize one page migration. 0 disables the gate.
    pub migration_cost_accesses: f64,
    /// The most fast memory kept free for new allocations, as a fraction: demote when
    /// less is free (2%, FreqTier §V-B / MEMTIS). tierkit keeps only what the observed
    /// allocation rate needs, between `min_headroom` and this.
    pub promoting_wmark: f64,
    /// Demote until this fraction is free (3%, FreqTier §V-B); scaled with the headroom.
    pub demoting_wmark: f64,
    /// The least fast memory kept free, as a fraction (0.2%). Fixed 2–3% watermarks idle
    /// that share of DRAM even when nothing allocates (20–30 GB of a 1 TB server); here the
    /// headroom is twice the largest per-tick allocation seen recently (decaying 10% per
    /// tick), within `[min_headroom, promoting_wmark]`.
    pub min_headroom: f64,
    /// Pages examined per step of the demotion scan (1024, as FreqTier's artifact).
    pub scan_batch: usize,
    /// The lowest sampling rate the CPU budget may push the rate to (FreqTier §V-B-2's
    /// lowest level, 1 kHz). Never zero: a policy that stops sampling cannot see a shift.
    pub min_sample_rate_hz: f64,
    /// The share of one core the mechanism (sampling and migration) may take: 10%. At
    /// 100 kHz and ~200 ns per PEBS sample, sampling alone takes 2% of a core (MEMTIS
    /// holds its sampler to 3%); migration bursts after a phase change take the rest.
    pub cpu_budget: f64,
    /// A tick whose fast-tier hit ratio falls below this fraction of its running average
    /// (EWMA, weight 1/8 per tick) is a shift of the hot set: every count is halved twice
    /// at once, so the new hot pages overtake the stale ones within a tick or two
    /// instead of waiting out the aging period (HybridTier's momentum solves the same
    /// problem with a second sketch; TinyLFU resets on drift). 0.7, between a value that
    /// takes noise for a shift and one that misses shifts; 0 disables.
    pub shift_drop: f64,
    /// Adaptive demotion hysteresis: when more than this share of the pages promoted
    /// within the last 5 s are demoted again (ping-pong, TPP §5.5's counter), the counts
    /// near the threshold are noise (GUPS's uniform hot set) and a fast page must fall
    /// one more count below the threshold before it is demoted (up to 4); under a third
    /// of it, the band narrows again. 0.3. The band adapts because a fixed one costs
    /// workloads whose pages do differ.
    pub pingpong_share: f64,
    /// Without a cost model (a source that gives no access counts: DAMON's regions, page
    /// faults) a candidate displaces a fast page only when its count exceeds the hot
    /// threshold `t` by this many widths of a count's noise there (`sqrt(2t)`). 1. More
    /// cuts exchanges on noise but also the exchanges a hot set needs once the fast tier
    /// is full of lukewarm pages (measured in the test guest: docs/BENCHMARKS.md). The
    /// simulator's sources have a cost model and never use it.
    pub exchange_margin: f64,
    /// Sequential-stream prefetching (`None` disables it).
    pub streams: Option<StreamParams>,
    /// The benefit ledger that sets how many pages may be promoted per tick from what
    /// recent moves earned ([`Ledger`](crate::policies::Ledger)); the sampling rate follows its allowance.
    pub ledger: LedgerParams,
    /// Misses the application keeps in flight, over which a faster access's latency gain
    /// is shared: 4 (Colloid §3.1: of ~10 line-fill buffers per core, random-access code
    /// keeps a few busy). Values the ledger's hits in the application's time.
    pub misses_in_flight: f64,
    /// The share of the application's own CPU time the mechanism may take where the
    /// platform reports it (`Telemetry::app_cpu_ns`): 1%. A mechanism that finds
    /// nothing worth moving must not cost more than the point of throughput a policy
    /// may lose against not migrating at all.
    pub app_cpu_share: f64,
    /// The share of the application's own CPU the mechanism may spend on probes while
    /// its moves do not pay (`Telemetry::app_cpu_ns` reported): 0.1%, a fifth of the half
    /// point of throughput a policy may lose against not migrating at all. Probes are
    /// the allowance's trickle of promotions, the demotion scans that make their room
    /// and sweep prefetches.
    pub probe_cpu_share: f64,
    /// Until moves have earned something, the mechanism's CPU is also held under this
    /// share of the application's stall on the slow tier, where the platform measures
    /// latencies: its accesses there × the latency gap between the tiers over
    /// [`TierkitParams::misses_in_flight`], the most any placement could give back. 1/32:
    /// finding out what to move must not cost more than a small part of what moving
    /// could ever gain, on a program whose slow-tier stall is small as on one whose
    /// stall is large; once moves earn, the ledger judges them instead. 0 holds the
    /// mechanism to the sampling floor until moves earn.
    pub stall_share: f64,
}

impl Default for TierkitParams {
    fn default() -> Self {
        Self {
            sample_rate_hz: 100_000.0,
            min_hot_threshold: 2,
            age_samples_per_fast_page: 160,
            migration_cost_accesses: 318.0,
            promoting_wmark: 0.02,
            demoting_wmark: 0.03,
            min_headroom: 0.002,
            shift_drop: 0.7,
            pingpong_share: 0.3,
            scan_batch: 1024,
            min_sample_rate_hz: 1_000.0,
            cpu_budget: 0.10,
            exchange_margin: 1.0,
            streams: Some(StreamParams::default()),
            ledger: LedgerParams::default(),
            misses_in_flight: 4.0,
            app_cpu_share: 0.01,
            probe_cpu_share: 0.001,
            stall_share: 1.0 / 32.0,
        }
    }
}

impl TierkitParams {
    /// Checks every parameter, and that `setup` gives the policy a fast tier.
    pub(super) fn check(&self, setup: &PolicySetup) -> Result<(), ParamError> {
        let p = self;
        if !(p.sample_rate_hz.is_finite() && p.sample_rate_hz > 0.0) {
            return Err(ParamError::new("sample_rate_hz", p.sample_rate_hz, "a rate above 0 Hz"));
        }
        if !(1..=MAX_COUNT).contains(&p.min_hot_threshold) {
            return Err(ParamError::new("min_hot_threshold", p.min_hot_threshold, "1 to 255"));
        }
        if p.age_samples_per_fast_page == 0 {
            return Err(ParamError::new("age_samples_per_fast_page", 0, "at least 1 sample"));
        }
        if !(p.migration_cost_accesses.is_finite() && p.migration_cost_accesses >= 0.0) {
            return Err(ParamError::new("migration_cost_accesses", p.migration_cost_accesses, "accesses >= 0"));
        }
        check_demotion_scan(p.promoting_wmark, p.demoting_wmark, p.scan_batch)?;
        if !(p.pingpong_share > 0.0 && p.pingpong_share <= 1.0) {
            return Err(ParamError::new("pingpong_share", p.pingpong_share, "a share in (0, 1]"));
        }
        if !(0.0..1.0).contains(&p.shift_drop) {
            return Err(ParamError::new("shift_drop", p.shift_drop, "a fraction in [0, 1)"));
        }
        if !(0.0..=p.promoting_wmark).contains(&p.min_headroom) {
            return Err(ParamError::new("min_headroom", p.min_headroom, "a fraction from 0 to promoting_wmark"));
        }
        if !(p.min_sample_rate_hz > 0.0 && p.min_sample_rate_hz <= p.sample_rate_hz) {
            return Err(ParamError::new(
                "min_sample_rate_hz",
                p.min_sample_rate_hz,
                "above 0 and at most sample_rate_hz",
            ));
        }
        if !(p.cpu_budget > 0.0 && p.cpu_budget <= 1.0) {
            return Err(ParamError::new("cpu_budget", p.cpu_budget, "a share of one core in (0, 1]"));
        }
        if !(p.exchange_margin.is_finite() && p.exchange_margin >= 0.0) {
            return Err(ParamError::new("exchange_margin", p.exchange_margin, "noise widths >= 0"));
        }
        if let Some(sp) = &p.streams {
            if !(1..=MAX_SLOTS).contains(&sp.slots) || sp.max_gap == 0 || sp.confirm < 2 || sp.max_ahead == 0 {
                return Err(ParamError::new(
                    "streams",
                    sp.slots,
                    "1 <= slots <= 64, max_gap and max_ahead >= 1, and confirm >= 2",
                ));
            }
        }
        if setup.fast_pages == 0 {
            return Err(ParamError::new("fast_pages", 0, "at least 1 page"));
        }
        let l = &p.ledger;
        if l.memory_ticks == 0
            || l.settle_ticks > l.memory_ticks
            || !(l.ceiling_share > 0.0 && l.ceiling_share <= 1.0)
            || !(l.floor_share > 0.0 && l.floor_share <= 1.0)
            || !(l.start_share > 0.0 && l.start_share <= 1.0)
        {
            return Err(ParamError::new("ledger", l.memory_ticks, "memory_ticks >= 1 and shares in (0, 1]"));
        }
        if !(p.misses_in_flight.is_finite() && p.misses_in_flight >= 1.0) {
            return Err(ParamError::new("misses_in_flight", p.misses_in_flight, "at least 1"));
        }
        if !(p.app_cpu_share > 0.0 && p.app_cpu_share <= 1.0) {
            return Err(ParamError::new("app_cpu_share", p.app_cpu_share, "a share in (0, 1]"));
        }
        if !(p.probe_cpu_share > 0.0 && p.probe_cpu_share <= p.app_cpu_share) {
            return Err(ParamError::new("probe_cpu_share", p.probe_cpu_share, "a share in (0, app_cpu_share]"));
        }
        if !(0.0..=1.0).contains(&p.stall_share) {
            return Err(ParamError::new("stall_share", p.stall_share, "a share in [0, 1]"));
        }
        Ok(())
    }
}
