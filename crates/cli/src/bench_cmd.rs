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
    /// Rounds: each round times the baseline, then every policy (and its libCacheSim
    /// counterpart); each figure is the median over the rounds.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
}

/// Runs the benchmark and prints one line per measurement: each subject's median over
/// the rounds, and its ratio to the baseline as the median of the rounds' ratios (each
/// against the baseline of its own round, so that the machine's drift between rounds
/// cancels), with the rounds' range.
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
        generate(&spec)?;
    }
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
    let mut base = Vec::new();
    let mut subjects: Vec<Timed> = a.policies.iter().map(|p| Timed::new(p)).collect();
    for round in 0..a.repeat {
        // Baseline: generating the stream alone.
        let t = Instant::now();
        let (pages, n) = generate(&spec)?;
        let rate = n as f64 / t.elapsed().as_secs_f64();
        base.push(rate);
        if round == 0 {
            println!(
                "{} {} pages, {} accesses, machine {}, ratio {}:{}",
                spec.name, pages, n, cfg.name, a.ratio.0, a.ratio.1
            );
        }
        for s in &mut subjects {
            let t = Instant::now();
            let r = run(&run_spec, Subject::Named(s.name.clone()), &mut |_| {})?;
            let ours = r.accesses as f64 / t.elapsed().as_secs_f64();
            s.add(ours, rate, &r)?;
            if let Some(path) = &against {
                let algo = libcachesim::counterpart(&s.name).expect("checked before the runs");
                let theirs = libcachesim::measure(&a.python, path, algo, r.fast_pages, r.accesses)?;
                let same =
                    (theirs.miss_ratio * r.accesses as f64).round() == (r.miss_ratio * r.accesses as f64).round();
                if !same {
                    bail!(
                        "{} and libCacheSim {algo} disagree on the miss ratio ({:.6} vs {:.6}): the comparison is void",
                        s.name,
                        r.miss_ratio,
                        theirs.miss_ratio
                    );
                }
                s.against.push((theirs.requests_per_sec, ours / theirs.requests_per_sec));
                s.their_miss_ratio = theirs.miss_ratio;
            }
        }
    }
    let base_m: Vec<f64> = base.iter().map(|r| r / 1e6).collect();
    println!("  {:<20} {:>8.1} M accesses/s  (baseline{})", "generate only", median(&base_m), rounds(&base_m, ""));
    for s in &subjects {
        println!(
            "  {:<20} {:>8.1} M accesses/s  ({:.2}x of baseline{}; hit ratio {:.3})",
            s.name,
            median(&s.rates) / 1e6,
            median(&s.ratios),
            rounds(&s.ratios, "x"),
            s.hit_ratio.unwrap_or(0.0)
        );
        if !s.against.is_empty() {
            let algo = libcachesim::counterpart(&s.name).expect("checked before the runs");
            let theirs: Vec<f64> = s.against.iter().map(|&(r, _)| r).collect();
            let ratios: Vec<f64> = s.against.iter().map(|&(_, x)| x).collect();
            println!(
                "  {:<20} {:>8.1} M accesses/s  (tierkit {} / libCacheSim: {:.2}x{}; miss ratio {:.6} vs {:.6}: identical)",
                format!("libCacheSim {algo}"),
                median(&theirs) / 1e6,
                s.name,
                median(&ratios),
                rounds(&ratios, "x"),
                s.miss_ratio,
                s.their_miss_ratio
            );
        }
    }
    Ok(())
}

/// ", LO–HI over N rounds" when there was more than one round.
fn rounds(v: &[f64], unit: &str) -> String {
    if v.len() < 2 {
        return String::new();
    }
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!(", {lo:.2}–{hi:.2}{unit} over {} rounds", v.len())
}

/// The median of `v` (the mean of the middle two for an even count).
fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// Generates the workload's whole stream and drops it; returns its pages and accesses.
fn generate(spec: &WorkloadSpec) -> Result<(u64, u64)> {
    let mut wl = workload::build(spec)?;
    let pages = wl.pages();
    let mut buf: Vec<Access> = Vec::with_capacity(4096);
    let mut n = 0u64;
    loop {
        buf.clear();
        let got = wl.try_fill(&mut buf, 4096)?;
        if got == 0 {
            return Ok((pages, n));
        }
        n += got as u64;
    }
}

/// One timed policy over the rounds.
struct Timed {
    name: String,
    /// Accesses per second, and the ratio to the same round's baseline, per round.
    rates: Vec<f64>,
    ratios: Vec<f64>,
    /// libCacheSim's requests per second and tierkit's ratio to it, per round.
    against: Vec<(f64, f64)>,
    hit_ratio: Option<f64>,
    miss_ratio: f64,
    their_miss_ratio: f64,
}

impl Timed {
    fn new(name: &str) -> Self {
        Self {
            name: name.to_string(),
            rates: Vec::new(),
            ratios: Vec::new(),
            against: Vec::new(),
            hit_ratio: None,
            miss_ratio: 0.0,
            their_miss_ratio: 0.0,
        }
    }

    /// Adds a round; every round of a deterministic run must reach the same result.
    fn add(&mut self, rate: f64, base: f64, r: &tierkit_sim::result::RunResult) -> Result<()> {
        if let Some(h) = self.hit_ratio {
            if h.to_bits() != r.fast_hit_ratio.to_bits() || self.miss_ratio.to_bits() != r.miss_ratio.to_bits() {
                bail!("{}: a repeated run reached another result (hit ratio {h} then {}): the simulation is not deterministic", self.name, r.fast_hit_ratio);
            }
        }
        self.hit_ratio = Some(r.fast_hit_ratio);
        self.miss_ratio = r.miss_ratio;
        self.rates.push(rate);
        self.ratios.push(rate / base);
        Ok(())
    }
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
