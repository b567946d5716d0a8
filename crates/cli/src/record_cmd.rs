//! `tierkit record`: record a real program's page-access trace in tierkit's native
//! format.
//!
//! - `--via valgrind` (works anywhere Valgrind runs): the program runs under tierkit's
//!   own Valgrind tool ([`tool`], built with gcc on first use), which simulates a
//!   last-level cache and streams only memory-level accesses (misses and dirty
//!   write-backs) as binary records with their instruction gaps ([`stream`]). Without
//!   gcc or Valgrind's headers, or with `--lackey`, it runs under
//!   `valgrind --tool=lackey --trace-mem=yes` instead, whose access lines go through the
//!   same cache in Rust ([`tierkit_sim::trace::LlcFilter`]). `--from FILE` filters a
//!   lackey log recorded earlier instead of running a command. Either way the trace has
//!   a clock (native version 2).
//! - `--via perf`: `perf mem record` where the PMU supports memory sampling (Intel PEBS
//!   load latency or AMD IBS); elsewhere a "not available here because …" error.
//!
//! - `--via damon` (Linux with DAMON sysfs, as root): DAMON monitors the program's
//!   address space; each aggregation interval's regions become page samples
//!   ([`damon`]).

mod damon;
mod emitter;
mod filter;
mod lackey;
mod perf;
mod stream;
mod summary;
mod tool;
mod valgrind;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};

use crate::args::parse_size;
use crate::live_cmd::{parse_seconds, state_dir};
use tierkit_linux::target::Target;

/// DAMON's aggregation interval by default: the kernel's 100 ms.
const DEFAULT_AGGREGATION_MS: u64 = 100;

/// How `record` observes the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Via {
    /// tierkit's Valgrind tool (or lackey) with a simulated last-level cache.
    Valgrind,
    /// `perf mem record` (needs a PMU with memory sampling).
    Perf,
    /// DAMON regions as page samples (needs DAMON sysfs and root).
    Damon,
}

/// Arguments of `tierkit record`.
#[derive(Args, Debug)]
pub struct RecordArgs {
    /// How to observe the program.
    #[arg(long, value_enum, default_value = "valgrind")]
    via: Via,
    /// Output trace (tierkit native format).
    #[arg(short = 'o', long, default_value = "record.tktrace")]
    output: PathBuf,
    /// Simulated last-level cache size (valgrind only), e.g. 32MiB.
    #[arg(long, default_value = "32MiB", value_parser = parse_size)]
    llc: u64,
    /// Ways per set of the simulated last-level cache (valgrind only).
    #[arg(long, default_value_t = 16)]
    llc_ways: usize,
    /// DAMON's aggregation interval in milliseconds, 10-10000: one snapshot each (damon
    /// only; default 100).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(10..=10_000))]
    aggregation: Option<u64>,
    /// Pages take turns: each snapshot writes one page in STRIDE, so every page is written
    /// once every STRIDE snapshots (damon only; default 16; 1 writes every page every time).
    #[arg(long, value_name = "STRIDE", value_parser = clap::value_parser!(u64).range(1..))]
    stride: Option<u64>,
    /// Stop recording after S seconds (damon only; default: when the command exits).
    #[arg(long, value_name = "S", value_parser = parse_seconds)]
    duration: Option<Duration>,
    /// Directory of the lock and crash-recovery state files (also TIERKIT_STATE_DIR).
    #[arg(long, hide = true)]
    state_dir: Option<PathBuf>,
    /// Filter this lackey `--trace-mem=yes` log instead of running a command (valgrind only).
    #[arg(long, conflicts_with = "cmd")]
    from: Option<PathBuf>,
    /// Record with Valgrind's lackey instead of tierkit's tool (valgrind only; slower,
    /// the reference the tool is checked against).
    #[arg(long)]
    lackey: bool,
    /// Keep a pseudo-random 1-in-N sample of the memory-level accesses; the cache still
    /// sees every access (valgrind only).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1 << 40))]
    sample_every: Option<u64>,
    /// Write nothing until the program writes STR with write(2) or writev(2), e.g. a
    /// driver that prints TK_START after loading its data; the cache is simulated from
    /// the beginning (valgrind, tierkit's tool only).
    #[arg(long, value_name = "STR")]
    start_marker: Option<String>,
    /// Write nothing for the first N instructions (after the start marker, if any)
    /// (valgrind only).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(0..=1 << 62))]
    skip_instructions: Option<u64>,
    /// Stop after N records: end the program and finish the trace (valgrind only).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_records: Option<u64>,
    /// The command to record and its arguments (after `--`).
    #[arg(last = true)]
    cmd: Vec<String>,
}

impl RecordArgs {
    /// Whether there is something to record: a command, or a lackey log (`--from`).
    pub fn given(&self) -> bool {
        !self.cmd.is_empty() || self.from.is_some()
    }

    /// Where the trace goes.
    pub fn output(&self) -> &std::path::Path {
        &self.output
    }

    /// The command to record (empty with --from).
    pub fn command(&self) -> &[String] {
        &self.cmd
    }
}

/// Runs `tierkit record`; exits with the command's exit status when that is not 0.
pub fn run(a: RecordArgs) -> Result<()> {
    match record(&a)?.code {
        Some(0) => println!("command exited with status 0"),
        Some(c) => {
            println!("command exited with status {c}");
            std::process::exit(c);
        }
        None => {}
    }
    Ok(())
}

/// What a recording leaves behind.
pub struct Recording {
    /// The command's exit status: `None` when no command ran (`--from`) or the
    /// recording stopped first.
    pub code: Option<i32>,
    /// The command, when it runs on after the recording stopped (`--via damon`
    /// `--duration`); dropped, it runs on unwatched.
    pub running: Option<Target>,
    /// The program's wall time the trace covers, when the recorder let it run at full
    /// speed (`--via damon`, `--via perf`); `None` under Valgrind, whose traces carry
    /// the program's own clock.
    pub span: Option<Duration>,
}

/// Records as `a` says and prints what was recorded.
pub fn record(a: &RecordArgs) -> Result<Recording> {
    if a.via != Via::Valgrind {
        for (given, flag) in [
            (a.lackey, "--lackey"),
            (a.sample_every.is_some(), "--sample-every"),
            (a.start_marker.is_some(), "--start-marker"),
            (a.skip_instructions.is_some(), "--skip-instructions"),
            (a.max_records.is_some(), "--max-records"),
        ] {
            if given {
                bail!("{flag} goes with --via valgrind");
            }
        }
    }
    if a.via != Via::Damon {
        for (given, flag) in [
            (a.aggregation.is_some(), "--aggregation"),
            (a.stride.is_some(), "--stride"),
            (a.duration.is_some(), "--duration"),
        ] {
            if given {
                bail!("{flag} goes with --via damon");
            }
        }
    }
    let code = match a.via {
        Via::Valgrind => record_valgrind(a)?,
        Via::Perf => {
            if a.from.is_some() {
                bail!("--from filters a lackey log: it goes with --via valgrind");
            }
            need_cmd(&a.cmd)?;
            let began = Instant::now();
            let code = perf::record(&a.cmd, &a.output)?;
            let span = began.elapsed();
            print_span(&a.output, span);
            return Ok(Recording { code: Some(code), running: None, span: Some(span) });
        }
        Via::Damon => {
            if a.from.is_some() {
                bail!("--from filters a lackey log: it goes with --via valgrind");
            }
            need_cmd(&a.cmd)?;
            let args = damon::DamonArgs {
                aggregation: Duration::from_millis(a.aggregation.unwrap_or(DEFAULT_AGGREGATION_MS)),
                stride: a.stride.unwrap_or(tierkit_sim::trace::DAMON_TURNS),
                duration: a.duration,
                state_dir: state_dir(a.state_dir.clone()),
            };
            let began = Instant::now();
            let recorded = damon::record(&a.cmd, &args, &a.output)?;
            let span = began.elapsed();
            print!("{}", recorded.text(&a.output, &args));
            print_span(&a.output, span);
            return Ok(Recording { code: recorded.exit_code(), running: recorded.running, span: Some(span) });
        }
    };
    Ok(Recording { code, running: None, span: None })
}

/// The program time a recording without a clock covered, and how to replay it over that.
fn print_span(out: &std::path::Path, span: Duration) {
    println!(
        "covered {:.1} s of the program (the trace has no clock: `tierkit advise --trace {} --span {:.1}` replays it \
         over that time)",
        span.as_secs_f64(),
        out.display(),
        span.as_secs_f64()
    );
}

/// `--via valgrind`: with tierkit's tool, lackey, or from a lackey log.
fn record_valgrind(a: &RecordArgs) -> Result<Option<i32>> {
    let mut llc = tierkit_sim::trace::LlcFilter::new(a.llc, a.llc_ways)?;
    if a.start_marker.as_deref() == Some("") {
        bail!("--start-marker: the marker is empty");
    }
    let (skip, sample_every) = (a.skip_instructions.unwrap_or(0), a.sample_every.unwrap_or(1));
    let lackey_opts = (skip, sample_every, a.max_records);
    let (summary, code) = match &a.from {
        Some(log) => {
            if a.start_marker.is_some() {
                bail!(
                    "--start-marker needs tierkit's Valgrind tool: a lackey log does not hold what the program wrote"
                );
            }
            (filter::filter_file(log, &mut llc, &a.output, skip, sample_every, a.max_records)?, None)
        }
        None => {
            need_cmd(&a.cmd)?;
            let tool = tool::prepare();
            if a.lackey {
                if a.start_marker.is_some() {
                    bail!("--start-marker needs tierkit's Valgrind tool: it does not go with --lackey");
                }
                // The tool's library directory, when there is one, so that the program
                // sees the same environment (VALGRIND_LIB, LD_PRELOAD) under both.
                lackey::record(&a.cmd, &mut llc, &a.output, tool.as_deref().ok(), lackey_opts)?
            } else {
                match tool {
                    Ok(dir) => {
                        let o = stream::ToolOptions {
                            llc: a.llc,
                            ways: a.llc_ways,
                            sample_every,
                            start_marker: a.start_marker.as_deref(),
                            skip,
                            max_records: a.max_records,
                        };
                        stream::record(&a.cmd, &dir, &o, &a.output)?
                    }
                    Err(why) if a.start_marker.is_some() => {
                        bail!("--start-marker needs tierkit's Valgrind tool, which is not available here: {why}")
                    }
                    Err(why) => {
                        eprintln!(
                            "note: recording with lackey (slower): tierkit's Valgrind tool is not available: {why}"
                        );
                        lackey::record(&a.cmd, &mut llc, &a.output, None, lackey_opts)?
                    }
                }
            }
        }
    };
    print!("{}", summary.text(&a.output, a.llc, a.llc_ways));
    Ok(code)
}

fn need_cmd(cmd: &[String]) -> Result<()> {
    if cmd.is_empty() {
        bail!("no command to record: give it after `--`, e.g. tierkit record -- sqlite3 :memory: < queries.sql");
    }
    Ok(())
}
