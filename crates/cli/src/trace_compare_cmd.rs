//! `tierkit trace compare A B`: two workloads side by side — a recorded program and the
//! built-in stand-in named after it — by footprint, hot shares, LRU miss-ratio curve
//! and how they rank the policies.

use std::path::Path;

use anyhow::Result;
use clap::Args;
use serde::Serialize;
use tierkit_sim::compare::{real_suite_policies, Grid};
use tierkit_sim::profile::{profile, rankings, Profile, Ranking};
use tierkit_sim::workload::WorkloadSpec;

use crate::args::parse_ratio;
use crate::machine_args::{MachineArgs, SizeArgs};

/// Flags of `tierkit trace compare`.
#[derive(Args, Debug)]
pub struct CompareTracesArgs {
    /// The first workload: a trace file or a built-in workload's name.
    pub first: String,
    /// The second workload: a trace file or a built-in workload's name.
    pub second: String,
    /// Size of built-in workloads (traces are read whole unless --opt limit=N).
    #[command(flatten)]
    pub size: SizeArgs,
    #[command(flatten)]
    pub machine: MachineArgs,
    /// Ratios at which to rank the policies.
    #[arg(long, value_delimiter = ',', value_parser = parse_ratio, default_value = "1:16,1:8")]
    pub ratios: Vec<(u64, u64)>,
    /// Policies to rank, comma-separated (default: the real suite's).
    #[arg(long, value_delimiter = ',')]
    pub policies: Vec<String>,
    /// Only the shapes: no policy runs.
    #[arg(long)]
    pub no_rank: bool,
    /// Parallel runs (default: one per core).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// What `trace compare` reports.
#[derive(Serialize)]
struct Report {
    names: [String; 2],
    profiles: [Profile; 2],
    rankings: Vec<Ranking>,
}

/// The `--opt`s that apply to a trace file.
const TRACE_OPTIONS: [&str; 3] = ["limit", "format", "next_access"];

/// A trace file when `name` is an existing path, else a built-in workload.
fn spec(name: &str, size: &SizeArgs, seed: u64) -> Result<WorkloadSpec> {
    if Path::new(name).is_file() {
        // Only a trace's own options: the others describe the built-in workload.
        let own: Vec<String> = size
            .options
            .iter()
            .filter(|o| TRACE_OPTIONS.iter().any(|k| o.starts_with(&format!("{k}="))))
            .cloned()
            .collect();
        let spec = WorkloadSpec::new("trace", 0, 0, seed).with("path", name);
        Ok(spec.resized(None, None, None, &own)?)
    } else {
        size.apply(WorkloadSpec::new(name, 65_536, 3_000_000, seed))
    }
}

/// Runs `tierkit trace compare`.
pub fn run(a: CompareTracesArgs) -> Result<()> {
    let seed = a.machine.seed;
    let pair = [spec(&a.first, &a.size, seed)?, spec(&a.second, &a.size, seed)?];
    let profiles = [profile(&pair[0], u64::MAX)?, profile(&pair[1], u64::MAX)?];
    let rankings = if a.no_rank {
        Vec::new()
    } else {
        let policies: Vec<String> = if a.policies.is_empty() {
            real_suite_policies().into_iter().filter(|p| p != "all-local").collect()
        } else {
            a.policies.clone()
        };
        let base =
            Grid { cache_mode: false, measure_acr: false, ..a.machine.grid(Vec::new(), Vec::new(), Vec::new())? };
        let jobs = crate::machine_args::jobs(a.jobs);
        rankings(&base, pair.clone(), &a.ratios, &policies, jobs)?
    };
    let report = Report { names: [a.first.clone(), a.second.clone()], profiles, rankings };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", text(&report));
    }
    Ok(())
}

fn text(r: &Report) -> String {
    let [p, q] = &r.profiles;
    let mut out = format!("{:<26} {:>14} {:>14}\n", "", short(&r.names[0]), short(&r.names[1]));
    out += &format!("{:<26} {:>14} {:>14}\n", "pages", p.pages, q.pages);
    out += &format!("{:<26} {:>14} {:>14}\n", "accesses", p.accesses, q.accesses);
    for (i, &((n, d), s)) in p.top_share.iter().enumerate() {
        out += &format!("{:<26} {:>14.3} {:>14.3}\n", format!("share of top {n}/{d} pages"), s, q.top_share[i].1);
    }
    for (i, m) in p.mrc.iter().enumerate() {
        let (n, d) = m.fraction;
        out += &format!(
            "{:<26} {:>14.3} {:>14.3}\n",
            format!("LRU miss ratio at {n}/{d}"),
            m.miss_ratio,
            q.mrc[i].miss_ratio
        );
    }
    for k in &r.rankings {
        let rho = k.rho.map_or("n/a (a constant series)".to_string(), |v| format!("{v:.2}"));
        out += &format!("\n% of all-local at {}:{} (Spearman's rho {rho})\n", k.ratio.0, k.ratio.1);
        for (i, name) in k.policies.iter().enumerate() {
            out += &format!("  {:<24} {:>14.1} {:>14.1}\n", name, k.first[i], k.second[i]);
        }
    }
    out
}

/// A file's name without its directory, or a workload's name.
fn short(name: &str) -> String {
    Path::new(name).file_name().map_or(name.to_string(), |f| f.to_string_lossy().into_owned())
}
