//! Flags shared by `sim` and `compare`: the machine and the workload's size.

use anyhow::Result;
use clap::Args;
use tierkit_sim::compare::Grid;
use tierkit_sim::model::MachineConfig;
use tierkit_sim::workload::WorkloadSpec;

use crate::args::parse_size;

/// The modeled machine.
#[derive(Args, Debug, Clone)]
pub struct MachineArgs {
    /// Machine preset: cxl (HybridTier §5.1), cxl-slow (FreqTier CXL-2), numa (Colloid §2.1).
    #[arg(long, default_value = "cxl")]
    pub machine: String,
    /// TOML file overlaying the preset (any subset of its fields).
    #[arg(long, value_name = "FILE")]
    pub machine_file: Option<String>,
    /// Override one parameter, e.g. --set tiers.1.latency_ns=200 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Background (antagonist) traffic on the fast tier, as a fraction of its bandwidth
    /// (Colloid's 1x/2x/3x intensities are 0.51/0.65/0.70).
    #[arg(long, value_name = "FRACTION")]
    pub antagonist: Option<f64>,
    /// Real misses per generated access (time scale of the run) [default: a trace's own
    /// clock where it has one, else 1000]. Given, it also overrides a trace's clock.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub scale: Option<u64>,
    /// Leave placement to each page's first access instead of initializing memory in
    /// address order before the run.
    #[arg(long)]
    pub no_prefault: bool,
    /// Run as a plain cache (no prefault, no watermark, every event acted on at once);
    /// use with a cache policy such as lru-cache. Reports the cache miss ratio.
    #[arg(long)]
    pub cache_mode: bool,
    /// Count slow-tier accesses per page to report M5's access-count ratio (how hot the
    /// promoted pages were); costs simulation speed.
    #[arg(long)]
    pub access_count_ratio: bool,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

impl MachineArgs {
    /// The scale of generated streams: `--scale` or the default.
    pub fn scale(&self) -> u64 {
        self.scale.unwrap_or(tierkit_sim::engine::DEFAULT_SCALE)
    }

    /// Whether traces follow their own clock: unless `--scale` is given.
    pub fn follow_clock(&self) -> bool {
        self.scale.is_none()
    }

    /// The configuration these flags describe (see [`MachineConfig::resolve`]).
    pub fn config(&self) -> Result<MachineConfig> {
        Ok(MachineConfig::resolve(&self.machine, self.machine_file.as_deref(), &self.set, self.antagonist)?)
    }

    /// The grid of `workloads` x `ratios` x `policies` on this machine, with these flags'
    /// seed, time base, placement and modes.
    pub fn grid(&self, workloads: Vec<WorkloadSpec>, ratios: Vec<(u64, u64)>, policies: Vec<String>) -> Result<Grid> {
        Ok(Grid {
            machine: self.config()?,
            workloads,
            ratios,
            policies,
            seed: self.seed,
            scale: self.scale(),
            follow_clock: self.follow_clock(),
            prefault: !self.no_prefault,
            cache_mode: self.cache_mode,
            measure_acr: self.access_count_ratio,
            measure_hot: false,
        })
    }
}

/// Parallel runs: `given`, else one per core.
pub fn jobs(given: Option<usize>) -> usize {
    given.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// A workload's size and options.
#[derive(Args, Debug, Clone)]
pub struct SizeArgs {
    /// Footprint in 4 KiB pages (or use --footprint).
    #[arg(long, conflicts_with = "footprint")]
    pub pages: Option<u64>,
    /// Footprint as a size, e.g. 1GiB.
    #[arg(long, value_parser = parse_size)]
    pub footprint: Option<u64>,
    /// Generated accesses per run.
    #[arg(long)]
    pub accesses: Option<u64>,
    /// Workload option, e.g. --opt alpha=0.8 (repeatable).
    #[arg(long = "opt", value_name = "KEY=VALUE")]
    pub options: Vec<String>,
}

impl SizeArgs {
    /// `spec` resized and with the options applied (see [`WorkloadSpec::resized`]).
    pub fn apply(&self, spec: WorkloadSpec) -> Result<WorkloadSpec> {
        Ok(spec.resized(self.pages, self.footprint, self.accesses, &self.options)?)
    }
}
