//! `tierkit bench`: end-to-end simulator speed, in generated accesses per host second,
//! on one thread, against the cost of merely generating the workload's stream.

use std::time::Instant;

use anyhow::Result;
use clap::Args;
use tierkit_sim::engine::{run, RunSpec, Subject};
use tierkit_sim::workload::{self, Access, WorkloadSpec};

use crate::args::parse_ratio;
use crate::machine_args::{MachineArgs, SizeArgs};

/// Flags of `tierkit bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// The workload.
    #[arg(long, default_value = "zipf")]
    pub workload: String,
    /// Policies to time, comma-separated.
    #[arg(long, value_delimiter = ',', default_values = ["none", "lru"])]
    pub policies: Vec<String>,
    /// Fast:slow ratio.
    #[arg(long, value_parser = parse_ratio, default_value = "1:16")]
    pub ratio: (u64, u64),
    #[command(flatten)]
    pub size: SizeArgs,
    #[command(flatten)]
    pub machine: MachineArgs,
}

/// Runs the benchmark and prints one line per measurement.
pub fn run_bench(a: BenchArgs) -> Result<()> {
    let spec = a.size.apply(WorkloadSpec::new(&a.workload, 4 << 20, 20_000_000, a.machine.seed))?;
    let cfg = a.machine.config()?;
    // Baseline: generating the stream alone.
    let t = Instant::now();
    let mut wl = workload::build(&spec)?;
    let mut buf: Vec<Access> = Vec::with_capacity(4096);
    let mut n = 0u64;
    loop {
        buf.clear();
        let got = wl.try_fill(&mut buf, 4096)?;
        if got == 0 {
            break;
        }
        n += got as u64;
    }
    let base = n as f64 / t.elapsed().as_secs_f64();
    println!(
        "{} {} pages, {} accesses, machine {}, ratio {}:{}",
        spec.name, spec.pages, n, cfg.name, a.ratio.0, a.ratio.1
    );
    println!("  {:<20} {:>8.1} M accesses/s  (baseline)", "generate only", base / 1e6);
    for name in &a.policies {
        let run_spec = RunSpec {
            machine: cfg.clone(),
            ratio: a.ratio,
            workload: spec.clone(),
            seed: a.machine.seed,
            scale: a.machine.scale(),
            follow_clock: a.machine.follow_clock(),
            prefault: !a.machine.no_prefault,
            cache_mode: a.machine.cache_mode,
            measure_acr: a.machine.access_count_ratio,
        };
        let t = Instant::now();
        let r = run(&run_spec, Subject::Named(name.clone()), &mut |_| {})?;
        let rate = r.accesses as f64 / t.elapsed().as_secs_f64();
        println!(
            "  {:<20} {:>8.1} M accesses/s  ({:.2}x of baseline; hit ratio {:.3})",
            name,
            rate / 1e6,
            rate / base,
            r.fast_hit_ratio
        );
    }
    Ok(())
}
