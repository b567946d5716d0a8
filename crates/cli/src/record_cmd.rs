//! `tierkit record`: record a real program's page-access trace in tierkit's native
//! format.
//!
//! - `--via valgrind` (works anywhere Valgrind runs): the program runs under
//!   `valgrind --tool=lackey --trace-mem=yes`; its access lines stream through a
//!   simulated last-level cache ([`tierkit_sim::trace::LlcFilter`]) so that only
//!   memory-level accesses (misses and dirty write-backs) are kept. `--from FILE` filters
//!   a lackey log recorded earlier instead of running a command.
//! - `--via perf`: `perf mem record` where the PMU supports memory sampling (Intel PEBS
//!   load latency or AMD IBS); elsewhere a "not available here because …" error.
//!
//! - `--via damon` (Linux with DAMON sysfs, as root): DAMON monitors the program's
//!   address space; each aggregation interval's regions become page samples
//!   ([`damon`]).

mod damon;
mod filter;
mod perf;
mod valgrind;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};

use crate::args::parse_size;
use crate::live_cmd::{parse_seconds, state_dir};

/// DAMON's aggregation interval by default: the kernel's 100 ms.
const DEFAULT_AGGREGATION_MS: u64 = 100;

/// How `record` observes the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Via {
    /// Valgrind lackey with a simulated last-level-cache filter.
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
    /// The command to record and its arguments (after `--`).
    #[arg(last = true)]
    cmd: Vec<String>,
}

/// Runs `tierkit record`; exits with the command's exit status when that is not 0.
pub fn run(a: RecordArgs) -> Result<()> {
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
        Via::Valgrind => {
            let mut llc = tierkit_sim::trace::LlcFilter::new(a.llc, a.llc_ways)?;
            let (summary, code) = match &a.from {
                Some(log) => (filter::filter_file(log, &mut llc, &a.output)?, None),
                None => {
                    need_cmd(&a.cmd)?;
                    let (s, code) = valgrind::record(&a.cmd, &mut llc, &a.output)?;
                    (s, Some(code))
                }
            };
            print!("{}", summary.text(&a.output, a.llc, a.llc_ways, &llc.stats()));
            code
        }
        Via::Perf => {
            if a.from.is_some() {
                bail!("--from filters a lackey log: it goes with --via valgrind");
            }
            need_cmd(&a.cmd)?;
            Some(perf::record(&a.cmd, &a.output)?)
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
                state_dir: state_dir(a.state_dir),
            };
            let recorded = damon::record(&a.cmd, &args, &a.output)?;
            print!("{}", recorded.text(&a.output, &args));
            recorded.exit_code()
        }
    };
    match code {
        Some(0) => println!("command exited with status 0"),
        Some(c) => {
            println!("command exited with status {c}");
            std::process::exit(c);
        }
        None => {}
    }
    Ok(())
}

fn need_cmd(cmd: &[String]) -> Result<()> {
    if cmd.is_empty() {
        bail!("no command to record: give it after `--`, e.g. tierkit record -- sqlite3 :memory: < queries.sql");
    }
    Ok(())
}
