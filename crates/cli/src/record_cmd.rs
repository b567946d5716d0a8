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
//! DAMON is not offered in this version.

mod filter;
mod perf;
mod valgrind;

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};

use crate::args::parse_size;

/// How `record` observes the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Via {
    /// Valgrind lackey with a simulated last-level-cache filter.
    Valgrind,
    /// `perf mem record` (needs a PMU with memory sampling).
    Perf,
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
    /// Filter this lackey `--trace-mem=yes` log instead of running a command (valgrind only).
    #[arg(long, conflicts_with = "cmd")]
    from: Option<PathBuf>,
    /// The command to record and its arguments (after `--`).
    #[arg(last = true)]
    cmd: Vec<String>,
}

/// Runs `tierkit record`; exits with the command's exit status when that is not 0.
pub fn run(a: RecordArgs) -> Result<()> {
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
