//! `tierkit trace write`: export a workload's stream as a libCacheSim `oracleGeneral`
//! trace, to compare tierkit with other simulators on the same requests.

use anyhow::Result;
use clap::{Args, Subcommand};
use tierkit_sim::trace::write_oracle_general;
use tierkit_sim::workload::{self, Access, WorkloadSpec};

use crate::machine_args::SizeArgs;

/// `tierkit trace ...`
#[derive(Subcommand, Debug)]
pub enum TraceCommand {
    /// Write a workload's page stream as an oracleGeneral trace (one object per page).
    Write(WriteArgs),
}

/// Flags of `tierkit trace write`.
#[derive(Args, Debug)]
pub struct WriteArgs {
    /// The workload. See `tierkit list`.
    #[arg(long)]
    pub workload: String,
    #[command(flatten)]
    pub size: SizeArgs,
    /// Seed of the workload.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output file.
    #[arg(short, long)]
    pub output: String,
}

/// Runs a `tierkit trace` command.
pub fn run(cmd: TraceCommand) -> Result<()> {
    match cmd {
        TraceCommand::Write(a) => {
            let spec = a.size.apply(WorkloadSpec::new(&a.workload, 65_536, 3_000_000, a.seed))?;
            let mut wl = workload::build(&spec)?;
            let mut ids = Vec::with_capacity(wl.len() as usize);
            let mut buf: Vec<Access> = Vec::with_capacity(1 << 16);
            loop {
                buf.clear();
                if wl.fill(&mut buf, 1 << 16) == 0 {
                    break;
                }
                ids.extend(buf.iter().map(|x| x.page));
            }
            let n = ids.len();
            write_oracle_general(&a.output, ids)?;
            eprintln!("wrote {n} requests over {} pages to {}", wl.pages(), a.output);
            Ok(())
        }
    }
}
