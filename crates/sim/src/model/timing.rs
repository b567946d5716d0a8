//! The time model: how long an interval of accesses takes on the modeled machine.
//!
//! In an interval the application issues `n_t,k` last-level-cache misses of MLP class `k`
//! ([`MlpClass`]) to each tier `t` and migrations move `m_t` bytes through it. Each of the
//! `T` threads keeps `N_k` misses of class `k` in flight (`app.mlp` for the default
//! class, `app.mlp_dependent` for pointer chasing, `app.mlp_streaming` for streaming)
//! and computes `c` ns per miss, so by Little's law (Colloid §3.1: per-core throughput
//! N·64/L) the application needs
//!
//! ```text
//! W_app(W) = ( Σ_t Σ_k n_t,k · (c + L_t(u_t(W)) / N_k)  +  stalls  +  mechanism CPU ) / T
//! u_t(W)   = (64·n_t + m_t) / (W · B_t)  +  background_t / B_t,   n_t = Σ_k n_t,k
//! ```
//!
//! `L_t / N_k` is the miss's amortized offcore latency (SOAR/ALTO, OSDI'25): the time
//! its thread waits for it, which [`stall_ns`] sums over an interval.
//!
//! of wall time, where `L_t` is the loaded latency ([`super::LatencyCurve`]) at
//! utilization `u_t`: the faster the interval runs, the higher the utilization and the
//! latency. The interval's wall time is the fixed point `W = W_app(W)`, found by
//! Newton's method within a bracket (`W - W_app(W)` is increasing, so the root is
//! unique), but never shorter than the bandwidth bound at which any tier would pass the
//! curve's `u_max`. Stalls are time threads spend blocked (hint faults); mechanism CPU
//! is tiering work (sampling, scanning, migration) that competes for the application's
//! cores.

use super::config::{MachineConfig, MlpClass};

/// One interval's demand.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Demand {
    /// Misses served by each tier, of every class.
    pub accesses: Vec<u64>,
    /// Of those, the misses of [`MlpClass::Dependent`] per tier (empty: none).
    pub dependent: Vec<u64>,
    /// Of those, the misses of [`MlpClass::Streaming`] per tier (empty: none).
    pub streaming: Vec<u64>,
    /// Migration bytes read or written on each tier.
    pub migration_bytes: Vec<u64>,
    /// Thread time blocked in faults, ns (summed over threads).
    pub stall_ns: f64,
    /// Tiering CPU time competing with the application, ns.
    pub mechanism_cpu_ns: f64,
    /// The application's own compute, ns summed over threads, when it is known as a
    /// whole (a trace's instructions) rather than per miss (`app.compute_ns`).
    pub compute_ns: f64,
}

/// The interval's outcome.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timing {
    /// Wall time, ns.
    pub wall_ns: f64,
    /// Loaded latency per tier, ns.
    pub latency_ns: Vec<f64>,
    /// Bandwidth utilization per tier (including background traffic).
    pub utilization: Vec<f64>,
}

impl Demand {
    /// Misses of tier `t` per class, with the class's MLP: default, dependent, streaming.
    fn by_class(&self, t: usize, cfg: &MachineConfig) -> [(f64, f64); 3] {
        let at = |v: &[u64]| v.get(t).copied().unwrap_or(0);
        let (dependent, streaming) = (at(&self.dependent), at(&self.streaming));
        let default = at(&self.accesses) - dependent - streaming;
        let app = &cfg.app;
        [
            (default as f64, app.mlp_of(MlpClass::Default)),
            (dependent as f64, app.mlp_of(MlpClass::Dependent)),
            (streaming as f64, app.mlp_of(MlpClass::Streaming)),
        ]
    }
}

/// The time the application's threads waited for `demand`'s misses at the loaded
/// `latency_ns` per tier, ns summed over threads: Σ_t Σ_k n_t,k · L_t / N_k.
pub fn stall_ns(cfg: &MachineConfig, demand: &Demand, latency_ns: &[f64]) -> f64 {
    let mut stall = 0.0;
    for (t, &latency) in latency_ns.iter().enumerate() {
        for (n, mlp) in demand.by_class(t, cfg) {
            stall += n * latency / mlp;
        }
    }
    stall
}

/// Relative size of the last Newton step at which the wall time is taken as found: the
/// root is then much closer than that, Newton's error squaring with each step.
const CONVERGED: f64 = 1e-10;

/// Solves `demand` on `cfg`.
pub fn solve(cfg: &MachineConfig, demand: &Demand) -> Timing {
    let tiers = &cfg.tiers;
    let mut fixed = demand.stall_ns + demand.mechanism_cpu_ns + demand.compute_ns;
    // Per tier: the utilization is `traffic / W + background`, and the misses wait
    // `weight · L_t(u)`: the unloaded latency times Σ_k n_t,k / N_k.
    let loads: Vec<(f64, f64, f64)> = tiers
        .iter()
        .enumerate()
        .map(|(t, tier)| {
            let bytes = 64.0 * demand.accesses.get(t).copied().unwrap_or(0) as f64
                + demand.migration_bytes.get(t).copied().unwrap_or(0) as f64;
            let mut weight = 0.0;
            for (n, mlp) in demand.by_class(t, cfg) {
                fixed += n * cfg.app.compute_ns;
                weight += n / mlp;
            }
            // GB/s is bytes per ns.
            (bytes / tier.bandwidth_gbps, tier.background_gbps / tier.bandwidth_gbps, weight * tier.latency_ns)
        })
        .collect();
    let threads = cfg.app.threads as f64;
    // The application's time at wall time `w`, and its derivative in `w`.
    let app = |w: f64| -> (f64, f64) {
        let (mut time, mut slope) = (fixed, 0.0);
        for &(traffic, background, weight) in &loads {
            let (factor, df) = cfg.curve.factor_and_slope(traffic / w + background);
            time += weight * factor;
            slope -= weight * df * traffic / (w * w);
        }
        (time / threads, slope / threads)
    };
    // The bandwidth bound: the shortest wall time keeping every tier at or below u_max.
    let mut lo = 1e-9f64;
    for &(traffic, background, _) in &loads {
        lo = lo.max(traffic / (cfg.curve.u_max - background).max(1e-3));
    }
    let at_lo = app(lo).0;
    let wall = if lo >= at_lo { lo } else { root(app, lo, at_lo) };
    let utilization: Vec<f64> = loads.iter().map(|&(traffic, background, _)| traffic / wall + background).collect();
    let latency_ns = tiers.iter().zip(&utilization).map(|(tier, &u)| tier.latency_ns * cfg.curve.factor(u)).collect();
    Timing { wall_ns: wall, latency_ns, utilization }
}

/// The root of `g(w) = w - app(w)` in `(lo, hi]`, where `g(lo) < 0 <= g(hi)`: Newton's
/// method from `hi` (`g' = 1 - app' >= 1`, as `app` falls as `w` grows), kept inside the
/// bracket the evaluations narrow, bisecting where a step would leave it.
fn root(app: impl Fn(f64) -> (f64, f64), mut lo: f64, mut hi: f64) -> f64 {
    let mut w = hi;
    for _ in 0..100 {
        let (time, slope) = app(w);
        let g = w - time;
        if g >= 0.0 {
            hi = w;
        } else {
            lo = w;
        }
        let step = g / (1.0 - slope);
        if step.abs() <= CONVERGED * w {
            return (w - step).clamp(lo, hi);
        }
        let next = w - step;
        w = if next > lo && next < hi { next } else { 0.5 * (lo + hi) };
        if hi - lo <= 1e-9 * hi {
            break;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::LatencyCurve;

    fn demand(fast: u64, slow: u64) -> Demand {
        Demand { accesses: vec![fast, slow], migration_bytes: vec![0, 0], ..Default::default() }
    }

    #[test]
    fn a_lightly_loaded_machine_runs_at_unloaded_latency() {
        let mut cfg = MachineConfig::preset("cxl").unwrap();
        cfg.app.threads = 1;
        cfg.app.mlp = 1.0;
        let t = solve(&cfg, &demand(1000, 0));
        // One thread, one miss in flight: 1000 x (20 + ~85) ns, utilization ~0.6 GB/s.
        assert!((t.wall_ns / 1000.0 - 105.0).abs() < 1.0, "{}", t.wall_ns);
        assert!(t.utilization[0] < 0.01 && t.latency_ns[0] < 85.5);
    }

    #[test]
    fn slow_tier_and_contention_cost_throughput() {
        let cfg = MachineConfig::preset("cxl").unwrap();
        let all_fast = solve(&cfg, &demand(1_000_000, 0)).wall_ns;
        let all_slow = solve(&cfg, &demand(0, 1_000_000)).wall_ns;
        let half = solve(&cfg, &demand(500_000, 500_000)).wall_ns;
        assert!(all_fast < half && half < all_slow, "{all_fast} {half} {all_slow}");
        // The fixed point holds: wall time equals the application's time at that wall time.
        let mut contended = cfg.clone();
        contended.tiers[0].background_gbps = 0.65 * contended.tiers[0].bandwidth_gbps; // Colloid 2x
        let t = solve(&contended, &demand(1_000_000, 0));
        assert!(t.wall_ns > 1.5 * all_fast, "contention must slow the fast tier down");
        assert!(t.latency_ns[0] > 3.0 * cfg.tiers[0].latency_ns);
        // Under 2x contention, the loaded DRAM is slower than idle CXL: Colloid's regime.
        assert!(t.latency_ns[0] > cfg.tiers[1].latency_ns);
    }

    #[test]
    fn each_class_waits_its_latency_over_its_own_mlp() {
        let mut cfg = MachineConfig::preset("cxl").unwrap();
        cfg.app.threads = 1;
        let n = 1000u64;
        let classed = |dependent: u64, streaming: u64| Demand {
            accesses: vec![0, n],
            dependent: vec![0, dependent],
            streaming: vec![0, streaming],
            ..Default::default()
        };
        let latency = [85.0, 124.0];
        // All default: n x L / app.mlp; a class moves its misses to its own MLP.
        let default = stall_ns(&cfg, &classed(0, 0), &latency);
        assert!((default - n as f64 * 124.0 / cfg.app.mlp).abs() < 1e-6, "{default}");
        let chased = stall_ns(&cfg, &classed(n, 0), &latency);
        assert!((chased - n as f64 * 124.0 / cfg.app.mlp_dependent).abs() < 1e-6, "{chased}");
        let streamed = stall_ns(&cfg, &classed(0, n), &latency);
        assert!((streamed - n as f64 * 124.0 / cfg.app.mlp_streaming).abs() < 1e-6, "{streamed}");
        // The same misses take longer when they are chased, less when streamed.
        let wall = |d: &Demand| solve(&cfg, d).wall_ns;
        assert!(wall(&classed(0, n)) < wall(&classed(0, 0)) && wall(&classed(0, 0)) < wall(&classed(n, 0)));
        // A lone thread's dependent chain runs at compute + unloaded latency per miss.
        assert!((wall(&classed(n, 0)) / n as f64 - (20.0 + 124.0)).abs() < 1.0);
    }

    /// The application's time at wall time `w`, computed as the model defines it, term by
    /// term, independently of the solver's own sums.
    fn app_at(cfg: &MachineConfig, d: &Demand, w: f64) -> f64 {
        let mut thread_ns = d.stall_ns + d.mechanism_cpu_ns + d.compute_ns;
        for (t, tier) in cfg.tiers.iter().enumerate() {
            let bytes = 64.0 * d.accesses[t] as f64 + d.migration_bytes[t] as f64;
            let u = bytes / (w * tier.bandwidth_gbps) + tier.background_gbps / tier.bandwidth_gbps;
            let latency = tier.latency_ns * cfg.curve.factor(u);
            for (n, mlp) in d.by_class(t, cfg) {
                thread_ns += n * (cfg.app.compute_ns + latency / mlp);
            }
        }
        thread_ns / cfg.app.threads as f64
    }

    #[test]
    fn the_wall_time_is_the_fixed_point_or_the_bandwidth_bound() {
        let mut rng = tierkit_core::dist::Rng::new(7);
        let mut bound = 0;
        for i in 0..2000 {
            let mut cfg = MachineConfig::preset(["cxl", "cxl-slow", "numa"][i % 3]).unwrap();
            cfg.app.threads = 1 + rng.below(64) as u32;
            cfg.tiers[0].background_gbps = rng.next_f64() * 0.8 * cfg.tiers[0].bandwidth_gbps;
            if i % 4 == 0 {
                // A curve of another shape: concave below b = 1.
                cfg.curve = LatencyCurve { a: 0.2 + 2.0 * rng.next_f64(), b: 0.5 + rng.next_f64(), u_max: 0.9 };
            }
            let n = |rng: &mut tierkit_core::dist::Rng| rng.below(10_000_000);
            let accesses = vec![n(&mut rng), n(&mut rng)];
            let d = Demand {
                dependent: vec![rng.below(accesses[0] + 1), 0],
                streaming: vec![0, rng.below(accesses[1] + 1)],
                accesses,
                migration_bytes: vec![4096 * rng.below(1000), 4096 * rng.below(1000)],
                stall_ns: 1e6 * rng.next_f64(),
                mechanism_cpu_ns: 1e6 * rng.next_f64(),
                compute_ns: 0.0,
            };
            let t = solve(&cfg, &d);
            let app = app_at(&cfg, &d, t.wall_ns);
            if t.utilization.iter().any(|&u| u > cfg.curve.u_max - 1e-9) {
                // Bandwidth-bound: the application alone would finish sooner.
                bound += 1;
                assert!(app <= t.wall_ns * (1.0 + 1e-9), "{d:?}: {} against {app}", t.wall_ns);
            } else {
                assert!((t.wall_ns / app - 1.0).abs() < 1e-9, "{cfg:?} {d:?}: {} against {app}", t.wall_ns);
            }
        }
        assert!(bound > 0 && bound < 2000, "both regimes are exercised: {bound} bound");
    }

    #[test]
    fn bandwidth_bound_caps_utilization() {
        let mut cfg = MachineConfig::preset("cxl").unwrap();
        cfg.app.threads = 1000; // absurd parallelism: only bandwidth limits
        let t = solve(&cfg, &demand(0, 10_000_000));
        assert!(t.utilization[1] <= cfg.curve.u_max + 1e-9);
        let min_wall = 64.0 * 1e7 / cfg.tiers[1].bandwidth_gbps;
        assert!(t.wall_ns >= min_wall);
        // Migration traffic competes for the same bandwidth.
        let mut with_mig = demand(0, 10_000_000);
        with_mig.migration_bytes = vec![0, 4096 * 100_000];
        assert!(solve(&cfg, &with_mig).wall_ns > t.wall_ns);
    }
}
