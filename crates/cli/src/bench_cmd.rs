//! `tierkit bench`: end-to-end simulator speed, in generated accesses per host second,
//! on one thread, against the cost of merely generating the workload's stream, and for
//! cache policies on a trace, against libCacheSim in the same run (`--against`).

mod libcachesim;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Result};
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
    /// Also time another simulator on the same trace and cache size: `libcachesim`
    /// (needs `--workload trace` on an oracleGeneral file, `--cache-mode`, and policies
    /// lru-cache or clock-cache). Miss ratios must agree.
    #[arg(long, value_parser = ["libcachesim"])]
    pub against: Option<String>,
    /// The Python interpreter with the `libcachesim` package, for `--against`.
    #[arg(long, default_value = "python3")]
    pub python: PathBuf,
}

/// Runs the benchmark and prints one line per measurement.
pub fn run_bench(a: BenchArgs) -> Result<()> {
    let spec = a.size.apply(WorkloadSpec::new(&a.workload, 4 << 20, 20_000_000, a.machine.seed))?;
    let cfg = a.machine.config()?;
    let against = match a.against.as_deref() {
        Some(_) => Some(libcachesim_trace(&a, &spec)?),
        None => None,
    };
    if spec.name == "trace" {
        // A trace is decoded once (oracleGeneral ids are cached beside the file): time
        // the reads every run makes, not the first decode.
        let mut wl = workload::build(&spec)?;
        let mut buf: Vec<Access> = Vec::with_capacity(4096);
        while wl.try_fill(&mut buf, 4096)? > 0 {
            buf.clear();
        }
    }
    // Baseline: generating the stream alone.
    let t = Instant::now();
    let mut wl = workload::build(&spec)?;
    let pages = wl.pages();
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
    println!("{} {} pages, {} accesses, machine {}, ratio {}:{}", spec.name, pages, n, cfg.name, a.ratio.0, a.ratio.1);
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
            measure_hot: false,
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
        if let Some(path) = &against {
            let algo = libcachesim::counterpart(name).expect("checked before the runs");
            let theirs = libcachesim::measure(&a.python, path, algo, r.fast_pages, r.accesses)?;
            let same = (theirs.miss_ratio * r.accesses as f64).round() == (r.miss_ratio * r.accesses as f64).round();
            println!(
                "  {:<20} {:>8.1} M accesses/s  (tierkit {name} / libCacheSim: {:.2}x; miss ratio {:.6} vs {:.6}: {})",
                format!("libCacheSim {algo}"),
                theirs.requests_per_sec / 1e6,
                rate / theirs.requests_per_sec,
                r.miss_ratio,
                theirs.miss_ratio,
                if same { "identical" } else { "DIFFERENT" }
            );
            if !same {
                bail!("{name} and libCacheSim {algo} disagree on the miss ratio: the comparison is void");
            }
        }
    }
    Ok(())
}

/// The oracleGeneral trace `--against libcachesim` replays, after checking that the
/// comparison means something.
fn libcachesim_trace(a: &BenchArgs, spec: &WorkloadSpec) -> Result<String> {
    let path = spec.options.get("path").filter(|_| spec.name == "trace");
    let Some(path) = path else {
        bail!("--against libcachesim replays a trace: give --workload trace --opt path=FILE (an oracleGeneral file)")
    };
    let format = match spec.options.get("format") {
        Some(f) => tierkit_sim::trace::Format::parse(f)?,
        None => tierkit_sim::trace::detect(path)?,
    };
    if format != tierkit_sim::trace::Format::OracleGeneral {
        bail!("--against libcachesim reads oracleGeneral traces; {path} is another format (convert it with `tierkit trace convert`)");
    }
    if !a.machine.cache_mode {
        bail!("--against libcachesim compares plain caches: add --cache-mode");
    }
    if let Some(p) = a.policies.iter().find(|p| libcachesim::counterpart(p).is_none()) {
        bail!("--against libcachesim: {p} has no libCacheSim counterpart (lru-cache and clock-cache have)");
    }
    Ok(path.clone())
}
