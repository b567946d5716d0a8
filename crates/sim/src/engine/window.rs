//! Per-tier accumulators over a slice of a run, and what the engine makes of them: the
//! policy's tick telemetry and the timeline's points.

use tierkit_core::{Memory, Nanos, Telemetry, TierId, TierStats, PAGE_SIZE};

use crate::machine::Machine;
use crate::result::IntervalRecord;

/// Real accesses per tier, their latency and the stall they caused, and the wall and
/// mechanism CPU time of a slice.
#[derive(Default)]
pub(super) struct Window {
    accesses: Vec<u64>,
    latency_weighted: Vec<f64>,
    /// Time threads waited on the accesses, ns summed over threads.
    stall_ns: f64,
    pub(super) wall_ns: f64,
    pub(super) cpu_ns: f64,
}

impl Window {
    pub(super) fn new(tiers: usize) -> Self {
        Self { accesses: vec![0; tiers], latency_weighted: vec![0.0; tiers], ..Default::default() }
    }

    pub(super) fn add(&mut self, counts: &[u64], latency: &[f64], wall: f64, cpu: f64, stall: f64) {
        for t in 0..counts.len() {
            self.accesses[t] += counts[t];
            self.latency_weighted[t] += counts[t] as f64 * latency[t];
        }
        self.stall_ns += stall;
        self.wall_ns += wall;
        self.cpu_ns += cpu;
    }

    /// Real accesses of every tier, fastest first.
    pub(super) fn accesses(&self) -> &[u64] {
        &self.accesses
    }

    fn latency(&self, t: usize, fallback: f64) -> f64 {
        if self.accesses[t] > 0 {
            self.latency_weighted[t] / self.accesses[t] as f64
        } else {
            fallback
        }
    }

    /// The tick's telemetry; the application's CPU is its `threads` busy over the interval.
    pub(super) fn telemetry(
        &self,
        machine: &Machine,
        latency: &[f64],
        interval_ns: f64,
        now: Nanos,
        threads: u32,
    ) -> Telemetry {
        let secs = (interval_ns * 1e-9).max(1e-12);
        let tiers = (0..self.accesses.len())
            .map(|t| {
                let rate = self.accesses[t] as f64 / secs;
                let lat = self.latency(t, latency[t]);
                TierStats {
                    tier: TierId(t as u8),
                    accesses: self.accesses[t],
                    request_rate: rate,
                    // Little's law: outstanding requests = arrival rate x latency.
                    occupancy: rate * lat * 1e-9,
                    latency_ns: lat,
                    free_pages: machine.free_pages(TierId(t as u8)),
                    capacity_pages: machine.tiers()[t].capacity_pages,
                }
            })
            .collect();
        let app_cpu_ns = (interval_ns * threads as f64) as u64;
        let misses: u64 = self.accesses.iter().sum();
        let aol_ns = (misses > 0).then(|| self.stall_ns / misses as f64);
        Telemetry {
            now,
            interval: interval_ns as Nanos,
            tiers,
            mechanism_cpu_ns: self.cpu_ns as u64,
            app_cpu_ns,
            aol_ns,
        }
    }

    /// The timeline point of this slice, ending at `now`, with the moves made in it.
    pub(super) fn point(&self, latency: &[f64], now: f64, moves: Moves) -> IntervalRecord {
        let accesses: u64 = self.accesses.iter().sum();
        IntervalRecord {
            end_ns: now,
            accesses,
            throughput: if self.wall_ns > 0.0 { accesses as f64 / self.wall_ns * 1e9 } else { 0.0 },
            fast_hit_ratio: if accesses > 0 { self.accesses[0] as f64 / accesses as f64 } else { 0.0 },
            latency_ns: (0..latency.len()).map(|t| self.latency(t, latency[t])).collect(),
            promotions: moves.promotions,
            demotions: moves.demotions,
            migrated_bytes: moves.copied * PAGE_SIZE,
            access_count_ratio: None,
        }
    }
}

/// The machine's move counters, or their growth over a slice.
#[derive(Clone, Copy, Default)]
pub(super) struct Moves {
    pub(super) promotions: u64,
    pub(super) demotions: u64,
    /// Pages copied.
    pub(super) copied: u64,
}

impl Moves {
    pub(super) fn of(machine: &Machine) -> Self {
        Self { promotions: machine.promotions, demotions: machine.demotions, copied: machine.copied }
    }

    /// What grew from `earlier` to `self`.
    pub(super) fn since(self, earlier: Moves) -> Moves {
        Moves {
            promotions: self.promotions - earlier.promotions,
            demotions: self.demotions - earlier.demotions,
            copied: self.copied - earlier.copied,
        }
    }
}
