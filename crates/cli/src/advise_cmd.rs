//! `tierkit advise --trace FILE` (or `tierkit advise -- CMD`, which records CMD first):
//! the answer a CXL user wants for one program — the
//! smallest DRAM share that keeps it within a target slowdown of all-DRAM under the best
//! policy, the best policy at each size with its margins, and how far to trust that.
//!
//! It runs every policy (or `--policies`) over fast:slow ratios from 1:32 to 1:2 on the
//! chosen machine, as `compare --trace` does, and prints the answer first, then the
//! table per size and a chart of slowdown against DRAM share. With `--deploy` it then
//! runs the recommended policy live on the program and sets the prediction beside what
//! was measured ([`deploy`]).

mod deploy;

use anyhow::{bail, Context, Result};
use clap::Args;
use tierkit_linux::run::SourceChoice;
use tierkit_sim::advise::{advise, check_target, subjects, Advice, RATIOS};
use tierkit_sim::compare::{compare, Grid};
use tierkit_sim::corpus_class::{self, Class};
use tierkit_sim::span_fit;
use tierkit_sim::workload::WorkloadSpec;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::args::parse_ratio;
use crate::machine_args::{MachineArgs, SizeArgs};
use crate::record_cmd::{self, RecordArgs};

/// Flags of `tierkit advise`.
#[derive(Args, Debug)]
pub struct AdviseArgs {
    /// The program's trace (any format `tierkit trace info` reads; `tierkit record` makes
    /// one). Without it, the command after `--` is recorded first, as `tierkit record`
    /// records it (its flags, such as --via, -o and --duration, apply).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["cmd", "from"])]
    pub trace: Option<String>,
    /// For a trace without a clock of its own (DAMON, perf): the program's time it covers,
    /// in seconds. The misses a record stands for are then chosen so that the all-DRAM
    /// run spans this time, and the policies act on the program's time scale [default:
    /// the recording's duration, when advise records the program].
    #[arg(long, value_name = "SECONDS", value_parser = crate::live_cmd::parse_seconds, conflicts_with = "scale")]
    pub span: Option<Duration>,
    /// The largest slowdown against all-DRAM to accept, in percent (e.g. 5 or 5%).
    #[arg(long, default_value = "5%", value_parser = parse_percent)]
    pub target: f64,
    /// Fast:slow ratios to try, comma-separated [default: 1:32,1:16,1:8,1:4,1:2].
    #[arg(long, value_delimiter = ',', value_parser = parse_ratio)]
    pub ratios: Vec<(u64, u64)>,
    /// Policies to consider (default: every policy `compare --suite real` runs).
    #[arg(long, value_delimiter = ',')]
    pub policies: Vec<String>,
    #[command(flatten)]
    pub size: SizeArgs,
    #[command(flatten)]
    pub machine: MachineArgs,
    /// The corpus of recorded programs to place the trace's shape among (its NAME.tktrace
    /// traces and standins.toml) [default: the source tree's corpus/, when present].
    #[arg(long, value_name = "DIR")]
    pub corpus: Option<PathBuf>,
    /// Parallel runs (default: one per core).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Print the answer as JSON (with --deploy: {"advice": ..., "deployment": ...}).
    #[arg(long)]
    pub json: bool,
    /// After advising, run the recommended policy live on the program (as `tierkit run
    /// --policy P -- CMD`) and print predicted against measured. Needs the command after
    /// `--` and a machine with a slow tier (checked before recording).
    #[arg(long, conflicts_with = "trace")]
    pub deploy: bool,
    /// The live run's access source with --deploy: damon, perf, kernel or auto.
    #[arg(long, default_value = "auto", value_parser = |s: &str| s.parse::<SourceChoice>(), requires = "deploy")]
    pub deploy_source: SourceChoice,
    /// The live run's CPU budget with --deploy, in % of a core (as `tierkit run
    /// --cpu-budget`; 0 = none).
    #[arg(long, value_name = "PCT", default_value = "2", value_parser = crate::live_cmd::parse_percent, requires = "deploy")]
    pub deploy_cpu_budget: f64,
    #[command(flatten)]
    pub record: RecordArgs,
}

/// How long the recorded program has to end after SIGTERM (and again after SIGKILL)
/// before a deployment.
const END_GRACE: Duration = Duration::from_secs(10);

/// Records the program as `tierkit record` would, with everything it and the recorder
/// print sent to standard error (standard output is the answer's); returns the trace's
/// path. A program that fails gets no advice. When the recording stopped before the
/// program (`--duration`) and a deployment follows, the recorded run is ended first: the
/// deployed run of the same command would share the machine with it.
fn record_first(r: &RecordArgs, deploy: bool) -> Result<(String, Option<Duration>)> {
    let recording = {
        let _answer_only = StdoutToStderr::new()?;
        record_cmd::record(r)?
    };
    if let Some(mut program) = recording.running.filter(|_| deploy) {
        eprintln!(
            "ending the recorded run (pid {}) before the deployed one: SIGTERM, then SIGKILL after {} s",
            program.pid(),
            END_GRACE.as_secs()
        );
        if program.end(END_GRACE).is_none() {
            bail!("the recorded run (pid {}) did not end: not deploying beside it", program.pid());
        }
    }
    let out = r.output().display().to_string();
    if let Some(c) = recording.code.filter(|&c| c != 0) {
        bail!("the program exited with status {c}: no advice from a run that failed (what was recorded is in {out})");
    }
    let span = recording.span.map_or(String::new(), |d| format!(" --span {:.1}", d.as_secs_f64()));
    eprintln!("recorded {out}: `tierkit advise --trace {out}{span}` advises again without recording");
    Ok((out, recording.span))
}

/// While alive, descriptor 1 is the process's standard error, so that a recorded
/// program's output, which it inherits, stays out of the answer. (Two system calls:
/// no crate is needed for them.)
struct StdoutToStderr(libc::c_int);

impl StdoutToStderr {
    fn new() -> Result<Self> {
        std::io::stdout().flush()?;
        // SAFETY: dup and dup2 on the process's own standard descriptors, which stay open.
        let saved = unsafe { libc::dup(1) };
        if saved < 0 || unsafe { libc::dup2(2, 1) } < 0 {
            bail!("cannot send the recorded program's output to stderr: {}", std::io::Error::last_os_error());
        }
        Ok(Self(saved))
    }
}

impl Drop for StdoutToStderr {
    fn drop(&mut self) {
        let _ = std::io::stdout().flush();
        // SAFETY: `self.0` is the descriptor `new` saved, owned by this guard alone.
        unsafe {
            libc::dup2(self.0, 1);
            libc::close(self.0);
        }
    }
}

fn parse_percent(s: &str) -> Result<f64, String> {
    let v: f64 =
        s.trim().trim_end_matches('%').parse().map_err(|_| format!("target {s:?}: a percentage such as 5%"))?;
    check_target(v).map_err(|_| format!("target {s:?}: a slowdown above 0% and below 100%"))
}

/// Runs `tierkit advise`.
pub fn run(a: AdviseArgs) -> Result<()> {
    let seed = a.machine.seed;
    let topology = if a.deploy {
        if a.record.command().is_empty() {
            bail!("--deploy runs the program after advising: give its command after `--`");
        }
        let t = deploy::check_machine(a.deploy_source)?;
        deploy::fix_addresses()?;
        Some(t)
    } else {
        None
    };
    let (trace, recorded_span) = match &a.trace {
        Some(path) => (path.clone(), None),
        None if a.record.given() => record_first(&a.record, a.deploy)?,
        None => bail!(
            "nothing to advise on: give --trace FILE, or the command to record after `--` \
             (e.g. tierkit advise -- ./my-program)"
        ),
    };
    let workload = a.size.apply(WorkloadSpec::new("trace", 65_536, 3_000_000, seed).with("path", &trace))?;
    let policies = subjects(&a.policies);
    let ratios = if a.ratios.is_empty() { RATIOS.to_vec() } else { a.ratios.clone() };
    if ratios.iter().any(|&(f, s)| f == 0 || s == 0) {
        bail!("--ratios: every ratio needs a fast and a slow part, e.g. 1:8");
    }
    // A plain cache or M5's access-count ratio is no part of the answer.
    // A deployment compares where the runs leave the hot set with the live placement.
    let mut grid = Grid {
        cache_mode: false,
        measure_acr: false,
        measure_hot: a.deploy,
        ..a.machine.grid(vec![workload.clone()], ratios, policies)?
    };
    let jobs = crate::machine_args::jobs(a.jobs);
    let span = a.span.or(recorded_span.filter(|_| a.machine.scale.is_none()));
    let fitted = match span {
        Some(span) if span_fit::fit_scale(&mut grid, &trace, span)? => Some(span),
        Some(_) => {
            eprintln!("the trace has its own clock: it is replayed on it, and --span is not used");
            None
        }
        None => None,
    };
    let bar = crate::compare_cmd::progress_bar();
    let rows = compare(&grid, jobs, &|done, total, label| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
        bar.set_message(label.to_string());
    })?;
    bar.finish();
    // After the runs, which have named any bad policy or trace.
    let class = match corpus_dir(&a.corpus) {
        Some(dir) => Some(class_of(&workload, &dir, jobs)?),
        None => None,
    };
    let mut advice = advise(&trace, a.target, rows, class)?;
    if let Some(span) = fitted {
        advice.time_base += &span_fit::note(grid.scale, span);
    }
    let Some(topology) = topology else {
        if a.json {
            println!("{}", serde_json::to_string_pretty(&advice)?);
        } else {
            print(&advice);
        }
        return Ok(());
    };
    if !a.json {
        print(&advice);
        println!();
    }
    let prediction = deploy::predict(&advice, &trace, &grid)?;
    let measured = {
        let _answer_only = StdoutToStderr::new()?;
        let live = (a.deploy_source, a.deploy_cpu_budget / 100.0);
        deploy::deploy(a.record.command(), &prediction, live, &topology)?
    };
    if a.json {
        let doc =
            serde_json::json!({ "advice": advice, "deployment": { "predicted": prediction, "measured": measured } });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!("{}", deploy::text(&prediction, &measured));
    }
    Ok(())
}

/// The corpus to read: the one given, else the source tree's when it is there.
fn corpus_dir(given: &Option<PathBuf>) -> Option<PathBuf> {
    let tree = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus");
    given.clone().or_else(|| tree.is_dir().then(|| tree.canonicalize().unwrap_or(tree)))
}

/// The class of the trace `workload` replays among the programs of the corpus `dir`.
fn class_of(workload: &WorkloadSpec, dir: &Path, jobs: usize) -> Result<Class> {
    eprintln!("profiling the corpus's programs ({}) to place the trace among them ...", dir.display());
    corpus_class::class_of(workload, dir, jobs).with_context(|| format!("--corpus {}", dir.display()))
}

pub fn mib(bytes: u64) -> String {
    format!("{:.0} MiB", bytes as f64 / (1u64 << 20) as f64)
}

fn print(adv: &Advice) {
    println!("tierkit advise: {} ({})", adv.trace, adv.time_base);
    println!("{}", answer_line(adv));
    println!();
    println!(
        "  {:<6} {:>6} {:>10}  {:<14} {:>7}  {:<14} {:>7} {:>9}",
        "ratio", "DRAM", "", "best", "%local", "runner-up", "vs 2nd", "vs none"
    );
    for s in &adv.sizes {
        println!(
            "  {:<6} {:>6} {:>10}  {:<14} {:>7.1}  {:<14} {:>7} {:>9}",
            s.ratio,
            pct(s.dram_share),
            mib(s.dram_bytes),
            s.best,
            s.best_pct_of_all_local,
            s.runner_up.as_deref().unwrap_or("-"),
            s.margin_over_runner_up.map_or("-".into(), |m| format!("{m:+.1}")),
            s.margin_over_none.map_or("-".into(), |m| format!("{m:+.1}")),
        );
    }
    println!();
    chart(adv);
    println!();
    println!("{}", confidence_line(adv));
    println!("{}", class_line(adv.class.as_ref()));
}

/// The answer, in one sentence.
pub fn answer_line(adv: &Advice) -> String {
    match (&adv.recommended, adv.sizes.last()) {
        (Some(s), _) => format!(
            "answer: {} of the footprint in DRAM ({}, ratio {}) keeps it within {}% of all-DRAM: {} at {:.1}% \
             (slowdown {:.1}%)",
            pct(s.dram_share),
            mib(s.dram_bytes),
            s.ratio,
            adv.target_slowdown_pct,
            s.best,
            s.best_pct_of_all_local,
            100.0 - s.best_pct_of_all_local
        ),
        (None, Some(last)) => format!(
            "answer: no size tried keeps it within {}% of all-DRAM; the largest, {} ({}), reaches {:.1}% under {} \
             (slowdown {:.1}%)",
            adv.target_slowdown_pct,
            pct(last.dram_share),
            last.ratio,
            last.best_pct_of_all_local,
            last.best,
            100.0 - last.best_pct_of_all_local
        ),
        (None, None) => "answer: none: no size was tried".into(),
    }
}

/// How long the runs were against the policies' settling times.
pub fn confidence_line(adv: &Advice) -> String {
    format!(
        "confidence: the runs span {:.1} s of the program's time{}. Margins under a point are within what the \
         simulator's model of a real program can tell apart (docs/RESULTS.md, real programs).",
        adv.run_seconds,
        if adv.too_short_for.is_empty() {
            String::new()
        } else {
            format!(
                ", shorter than the settling time of {}: their figures understate them",
                adv.too_short_for.join(", ")
            )
        }
    )
}

/// What the trace's shape says of its class.
pub fn class_line(class: Option<&Class>) -> String {
    let Some(c) = class else {
        return "class: no corpus of recorded programs to place the trace among (--corpus DIR)".into();
    };
    let spacing = c.corpus_spacing.map_or(String::new(), |s| format!("; its programs lie {s:.3} apart (median)"));
    let mut out = format!(
        "class: by footprint, hot shares and LRU curve the trace is nearest {} of {} (distance {:.3}{spacing})",
        c.nearest, c.corpus, c.distance
    );
    if !c.fits {
        out += ", farther than the corpus's programs from each other: no class of the corpus fits it well";
    }
    if c.validated {
        out += &format!(
            ". {} is a class the corpus validated: stand-in {} ranks the policies as it does (rho >= 0.8, \
             standins.toml)",
            c.nearest,
            c.standins.join(", ")
        );
    } else {
        out += &format!(
            ". No stand-in is validated for {} (standins.toml): the simulator's ranking on programs like it is \
             unchecked",
            c.nearest
        );
    }
    out
}

pub fn pct(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

/// Slowdown against DRAM share: one column per size, one mark per policy among the best
/// at some size (and `none`).
fn chart(adv: &Advice) {
    let mut names: Vec<&str> = adv.sizes.iter().map(|s| s.best.as_str()).collect();
    names.push("none");
    names.sort();
    names.dedup();
    let slowdown = |policy: &str, ratio: &str| {
        adv.rows
            .iter()
            .find(|r| r.result.policy == policy && format!("{}:{}", r.result.ratio.0, r.result.ratio.1) == ratio)
            .map(|r| 100.0 - r.pct_of_all_local)
    };
    let top = adv
        .sizes
        .iter()
        .flat_map(|s| names.iter().filter_map(|p| slowdown(p, &s.ratio)))
        .fold(adv.target_slowdown_pct, f64::max);
    const HEIGHT: usize = 8;
    let marks: Vec<char> = "abcdefghijklmnopqrstuvwxyz".chars().collect();
    println!(
        "slowdown vs DRAM share (marks: {})",
        names.iter().zip(&marks).map(|(n, m)| format!("{m} {n}")).collect::<Vec<_>>().join(", ")
    );
    for line in 0..=HEIGHT {
        let level = top * (HEIGHT - line) as f64 / HEIGHT as f64;
        let half = top / HEIGHT as f64 / 2.0;
        let mut row = format!("  {:>6.1}% |", level);
        for s in &adv.sizes {
            let cell: String = names
                .iter()
                .zip(&marks)
                .filter(|(p, _)| slowdown(p, &s.ratio).is_some_and(|v| (v - level).abs() <= half))
                .map(|(_, m)| *m)
                .collect();
            let target = (adv.target_slowdown_pct - level).abs() <= half;
            row.push_str(&format!(" {:^8}", if cell.is_empty() && target { "-".to_string() } else { cell }));
        }
        println!("{row}");
    }
    println!("          +{}", "-".repeat(9 * adv.sizes.len()));
    println!(
        "           {}",
        adv.sizes.iter().map(|s| format!("{:^8}", pct(s.dram_share))).collect::<Vec<_>>().join(" ")
    );
}
