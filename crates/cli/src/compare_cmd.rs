//! `tierkit sim` and `tierkit compare`: run policies on the simulator and print the
//! comparison.

mod summary;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use tierkit_sim::compare::{
    compare, default_suite, paper_suite, real_suite, real_suite_policies, Results, Row, DEFAULT_POLICIES,
    DEFAULT_RATIOS, PAPER_RATIOS,
};
use tierkit_sim::workload::WorkloadSpec;

use crate::args::parse_ratio;
use crate::machine_args::{MachineArgs, SizeArgs};
use crate::result_csv;

/// Flags of `tierkit compare`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Workloads, comma-separated (default: the built-in suite). See `tierkit list`.
    #[arg(long, value_delimiter = ',', conflicts_with = "suite")]
    pub workload: Vec<String>,
    /// Replay a trace file (any format `tierkit trace info` reads, e.g. one `tierkit record`
    /// or `tierkit trace convert` wrote) instead of built-in workloads: the same as
    /// `--workload trace --opt path=FILE`.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["workload", "suite"])]
    pub trace: Option<String>,
    /// A suite: `default`, `paper` (the papers' grid at 1:32, 1:16, 1:8, 1:4) or `real`
    /// (the recorded programs of --corpus, every policy, at 1:32, 1:16, 1:8).
    #[arg(long, value_parser = ["default", "paper", "real"])]
    pub suite: Option<String>,
    /// The real suite's traces: a directory (its `*.tktrace` files) or trace files,
    /// comma-separated [default: corpus].
    #[arg(long, value_delimiter = ',', value_name = "DIR|FILE")]
    pub corpus: Vec<String>,
    /// Shrink the paper suite 4x (a CI-sized run).
    #[arg(long)]
    pub quick: bool,
    /// Policies and references, comma-separated; a policy may carry settings (`hemem:hot_reads=8`). See `tierkit list` and `tierkit list --params POLICY`.
    #[arg(long, value_delimiter = ',')]
    pub policies: Vec<String>,
    /// Fast:slow ratios, comma-separated [default: 1:32,1:16,1:8].
    #[arg(long, value_delimiter = ',', value_parser = parse_ratio)]
    pub ratios: Vec<(u64, u64)>,
    #[command(flatten)]
    pub size: SizeArgs,
    #[command(flatten)]
    pub machine: MachineArgs,
    /// Parallel runs (default: one per core).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Print the rows as JSON instead of the table: `{"schema_version": 2, "rows": [...]}`.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV rows instead of the table.
    #[arg(long)]
    pub csv: bool,
    /// Write one per-interval CSV per run into DIR.
    #[arg(long, value_name = "DIR")]
    pub timeline: Option<String>,
}

/// Flags of `tierkit sim`: one workload, one policy, one ratio.
#[derive(Args, Debug)]
pub struct SimArgs {
    /// The workload. See `tierkit list`.
    #[arg(long)]
    pub workload: String,
    /// The policy or reference; a policy may carry settings (`hemem:hot_reads=8`). See `tierkit list` and `tierkit list --params POLICY`.
    #[arg(long)]
    pub policy: String,
    /// Fast:slow ratio.
    #[arg(long, value_parser = parse_ratio, default_value = "1:16")]
    pub ratio: (u64, u64),
    #[command(flatten)]
    pub size: SizeArgs,
    #[command(flatten)]
    pub machine: MachineArgs,
    /// Print the row as JSON instead of the table: `{"schema_version": 2, "rows": [...]}`.
    #[arg(long)]
    pub json: bool,
    /// Write the run's per-interval CSV into DIR.
    #[arg(long, value_name = "DIR")]
    pub timeline: Option<String>,
}

/// Runs `tierkit sim`: a one-cell comparison (with its references, for the fractions).
pub fn sim(a: SimArgs) -> Result<()> {
    let spec = a.size.apply(WorkloadSpec::new(&a.workload, 65_536, 3_000_000, a.machine.seed))?;
    let grid = a.machine.grid(vec![spec], vec![a.ratio], vec![a.policy])?;
    let rows = compare(&grid, 2, &|_, _, _| {})?;
    emit(&rows, a.json, false, a.timeline.as_deref(), placement(&a.machine))
}

/// Runs `tierkit compare`.
pub fn run(a: CompareArgs) -> Result<()> {
    let seed = a.machine.seed;
    let paper = a.suite.as_deref() == Some("paper");
    let real = a.suite.as_deref() == Some("real");
    let workloads = if let Some(path) = &a.trace {
        vec![a.size.apply(WorkloadSpec::new("trace", 65_536, 3_000_000, seed).with("path", path))?]
    } else if real {
        let opts = |w: WorkloadSpec| Ok(w.resized(None, None, None, &a.size.options)?);
        real_suite(&corpus_traces(&a.corpus)?, seed).into_iter().map(opts).collect::<Result<Vec<_>>>()?
    } else if a.workload.is_empty() {
        let suite = if paper { paper_suite(seed, a.quick) } else { default_suite(seed) };
        suite.into_iter().map(|w| a.size.apply(w)).collect::<Result<Vec<_>>>()?
    } else {
        a.workload
            .iter()
            .map(|n| a.size.apply(WorkloadSpec::new(n, 65_536, 3_000_000, seed)))
            .collect::<Result<Vec<_>>>()?
    };
    let policies = if a.policies.is_empty() && real {
        real_suite_policies()
    } else if a.policies.is_empty() {
        std::iter::once("all-local").chain(DEFAULT_POLICIES.iter().copied()).map(String::from).collect()
    } else {
        a.policies.clone()
    };
    let ratios = match (a.ratios.is_empty(), paper) {
        (false, _) => a.ratios,
        (true, true) => PAPER_RATIOS.to_vec(),
        (true, false) => DEFAULT_RATIOS.to_vec(),
    };
    let grid = a.machine.grid(workloads, ratios, policies)?;
    let jobs = crate::machine_args::jobs(a.jobs);
    let bar = progress_bar();
    let rows = compare(&grid, jobs, &|done, total, label| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
        bar.set_message(label.to_string());
    })?;
    bar.finish();
    emit(&rows, a.json, a.csv, a.timeline.as_deref(), placement(&a.machine))
}

/// The traces `--corpus` names: each directory's `*.tktrace` files (sorted) and each file.
fn corpus_traces(given: &[String]) -> Result<Vec<PathBuf>> {
    let given = if given.is_empty() { vec!["corpus".to_string()] } else { given.to_vec() };
    let mut out = Vec::new();
    for g in &given {
        let path = Path::new(g);
        if path.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(path)
                .with_context(|| format!("--corpus {g}: cannot list the directory"))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "tktrace"))
                .collect();
            if found.is_empty() {
                bail!("--corpus {g}: no .tktrace files in this directory (record them with `make corpus`)");
            }
            found.sort();
            out.extend(found);
        } else if path.is_file() {
            out.push(path.to_path_buf());
        } else {
            bail!("--corpus {g}: no such file or directory (the real suite replays recorded traces: `make corpus`)");
        }
    }
    Ok(out)
}

/// The runs done, on stderr: `[####------] 12/40 zipf 1:16 tpp`. indicatif draws it only
/// when stderr is a terminal (and TERM is not `dumb`), so piped output never has it.
/// The progress bar of a grid of runs (drawn only on a terminal).
pub fn progress_bar() -> ProgressBar {
    let style = ProgressStyle::with_template("[{bar:30}] {pos}/{len} {msg}").expect("a valid template");
    ProgressBar::no_length().with_style(style.progress_chars("#-"))
}

/// Writes `rows` as `--json` does: the versioned document ([`Results`]), pretty-printed.
pub fn write_json(mut out: impl Write, rows: &[Row]) -> Result<()> {
    serde_json::to_writer_pretty(&mut out, &Results::new(rows.to_vec()))?;
    writeln!(out)?;
    Ok(())
}

/// Where a replay puts each page before its first access, for the table's header: a
/// trace records accesses, not allocations, so its pages are either all placed before
/// the stream (the default) or each at its first access.
fn placement(m: &MachineArgs) -> &'static str {
    if m.cache_mode {
        "each page at its first access (a cache)"
    } else if m.no_prefault {
        "each page at its first access in the trace (--no-prefault)"
    } else {
        "every page touched once, in address order, before the stream, as if the program had \
         allocated all of them before the trace began (--no-prefault: each at its first access)"
    }
}

fn emit(rows: &[Row], json: bool, csv: bool, timeline: Option<&str>, placement: &str) -> Result<()> {
    if let Some(dir) = timeline {
        write_timelines(rows, Path::new(dir))?;
    }
    let mut out = std::io::stdout().lock();
    if json {
        write_json(&mut out, rows)?;
    } else if csv {
        result_csv::write_summary(&mut out, rows)?;
    } else {
        table(&mut out, rows, placement)?;
        summary::write(&mut out, rows, |r| {
            format!("{} {}:{}", workload_label(&r.result), r.result.ratio.0, r.result.ratio.1)
        })?;
    }
    Ok(())
}

fn table(out: &mut impl Write, rows: &[Row], placement: &str) -> Result<()> {
    let mut last = String::new();
    for r in rows {
        let x = &r.result;
        let group = format!("{} {}:{}", workload_label(x), x.ratio.0, x.ratio.1);
        if group != last {
            if !last.is_empty() {
                writeln!(out)?;
            }
            let cell: Vec<&Row> = rows
                .iter()
                .filter(|r| {
                    r.result.workload == x.workload && r.result.options == x.options && r.result.ratio == x.ratio
                })
                .collect();
            let span = |f: fn(&Row) -> f64| cell.iter().map(|r| f(r)).fold(f64::NAN, f64::min);
            let (shortest, longest) = (span(|r| r.result.wall_ns), -span(|r| -r.result.wall_ns));
            writeln!(out, "{} on {} ({} pages, {} accesses)", group, x.machine, x.pages, x.accesses)?;
            writeln!(out, "  time base: {}; runs span {} to {}", x.time_base, secs(shortest), secs(longest))?;
            if x.workload == "trace" {
                writeln!(out, "  placement: {placement}")?;
            }
            let short: Vec<&str> = cell
                .iter()
                .filter(|r| (r.result.horizon_ns as f64) > r.result.wall_ns)
                .map(|r| r.result.policy.as_str())
                .collect();
            if !short.is_empty() {
                writeln!(out, "  too short for: {} (runs shorter than their settling time)", short.join(", "))?;
            }
            writeln!(
                out,
                "  {:<14} {:>8} {:>8} {:>7} {:>9} {:>9} {:>9} {:>10} {:>6}",
                "policy", "%local", "%oracle", "hit", "promoted", "demoted", "migr GiB", "tracking", "cpu%"
            )?;
            last = group;
        }
        // The oracle maximizes fast-tier hits: under contention a policy can beat it.
        let beats = !["all-local", "oracle", "static-oracle"].contains(&x.policy.as_str()) && r.pct_of_oracle >= 100.05;
        writeln!(
            out,
            "  {:<14} {:>8.1} {:>8} {:>7.3} {:>9} {:>9} {:>9.3} {:>10} {:>6.2}",
            x.policy,
            r.pct_of_all_local,
            format!("{:.1}{}", r.pct_of_oracle, if beats { "*" } else { "" }),
            x.fast_hit_ratio,
            x.promotions,
            x.demotions,
            x.migrated_bytes as f64 / (1u64 << 30) as f64,
            bytes(x.tracking_bytes),
            x.mechanism_cpu_pct
        )?;
    }
    Ok(())
}

/// A workload's name in tables: a trace by its file's name.
fn workload_label(x: &tierkit_sim::result::RunResult) -> String {
    match x.options.get("path") {
        Some(p) if x.workload == "trace" => {
            Path::new(p).file_stem().map_or(p.clone(), |s| s.to_string_lossy().into_owned())
        }
        _ => x.workload.clone(),
    }
}

/// Simulated time for people.
fn secs(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.1} s", ns * 1e-9)
    } else {
        format!("{:.0} ms", ns * 1e-6)
    }
}

fn bytes(b: u64) -> String {
    match b {
        0 => "0".into(),
        b if b < 1 << 10 => format!("{b} B"),
        b if b < 1 << 20 => format!("{:.1} KiB", b as f64 / 1024.0),
        b if b < 1 << 30 => format!("{:.1} MiB", b as f64 / (1 << 20) as f64),
        b => format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64),
    }
}

fn write_timelines(rows: &[Row], dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("--timeline {}: cannot create the directory", dir.display()))?;
    for r in rows {
        let x = &r.result;
        let path = dir.join(result_csv::timeline_file(&x.workload, x.ratio, &x.policy));
        let mut text = Vec::new();
        result_csv::write_timeline(&mut text, &x.timeline)?;
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
