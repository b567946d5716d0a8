//! `tierkit move PID --to fast|slow [--range 0xSTART-0xEND]`: moves a running process's
//! pages to one tier with the daemon's own mover, once, and says how fast it went.
//!
//! The mover is the one `run` and `attach` use ([`LiveProcess`]'s `Memory::migrate`):
//! only pages its view places outside the destination tier go to the kernel, in address
//! order, in `move_pages(2)` calls sized to about 20 ms, onto the destination node with
//! the most room, never past a node's room. No source, no policy: this is the way to
//! place a process by hand (a freshly started service onto the slow tier, say) and the
//! way to measure the mover against a plain `move_pages` loop.

use std::io::Write;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use tierkit_core::{Memory, MoveStatus, Page, Resident, ScanCursor, TierId, PAGE_SIZE};
use tierkit_linux::memory::process::LiveProcess;
use tierkit_linux::perms;
use tierkit_linux::run::telemetry::process_cpu_ns;
use tierkit_linux::signals::Signals;
use tierkit_linux::topology::{Topology, TopologyOverrides};

use crate::live_cmd::NodeList;

/// Pages handed to the mover at a time: between two, a signal stops the move.
const STEP_PAGES: usize = 16_384;

/// `tierkit move`'s arguments.
#[derive(Args)]
pub struct MoveArgs {
    /// The process whose pages to move.
    pid: u32,
    /// The destination tier: fast or slow.
    #[arg(long, value_parser = parse_tier)]
    to: Dest,
    /// Only the pages of this address range, as 0xSTART-0xEND (as in /proc/PID/maps);
    /// default: every resident page tierkit tiers (anonymous, heap, stack, file mappings).
    #[arg(long, value_name = "RANGE", value_parser = parse_range)]
    range: Option<(u64, u64)>,
    /// Nodes to treat as fast, e.g. 0,1.
    #[arg(long, value_name = "LIST", value_parser = crate::live_cmd::parse_nodes)]
    fast: Option<NodeList>,
    /// Nodes to treat as slow, e.g. 2-3.
    #[arg(long, value_name = "LIST", value_parser = crate::live_cmd::parse_nodes)]
    slow: Option<NodeList>,
}

/// A destination tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dest {
    Fast,
    Slow,
}

fn parse_tier(text: &str) -> Result<Dest, String> {
    match text {
        "fast" => Ok(Dest::Fast),
        "slow" => Ok(Dest::Slow),
        _ => Err(format!("{text:?}: expected fast or slow")),
    }
}

/// `0xSTART-0xEND` (hex, page-aligned or not: every page the range touches).
fn parse_range(text: &str) -> Result<(u64, u64)> {
    let hex = |s: &str| {
        let digits = s.strip_prefix("0x").unwrap_or(s);
        u64::from_str_radix(digits, 16).with_context(|| format!("{s:?} is not a hex address"))
    };
    let (start, end) = text.split_once('-').with_context(|| format!("{text:?}: expected 0xSTART-0xEND"))?;
    let (start, end) = (hex(start)?, hex(end)?);
    if start >= end {
        bail!("{text:?}: the range is empty (START must be below END)");
    }
    Ok((start / PAGE_SIZE, end.div_ceil(PAGE_SIZE)))
}

/// What the move did to the pages that did not move (moved base pages are the mover's
/// own count: a huge page is one status but 512 pages).
#[derive(Default)]
struct Tally {
    already: u64,
    not_resident: u64,
    /// Pages refused or held back, by cause.
    refused: std::collections::BTreeMap<&'static str, u64>,
}

impl Tally {
    fn add(&mut self, statuses: &[MoveStatus]) {
        for s in statuses {
            match s {
                MoveStatus::Moved => {}
                MoveStatus::AlreadyThere => self.already += 1,
                MoveStatus::NotResident => self.not_resident += 1,
                other => *self.refused.entry(other.cause()).or_default() += 1,
            }
        }
    }
}

/// The pages to move: the resident pages of the view (a huge page once), those in the
/// page range `range` only when given — so a range as wide as the address space costs
/// no more than the process's own pages.
fn pages_of(process: &LiveProcess, range: Option<(u64, u64)>) -> Vec<Page> {
    let (start, end) = range.unwrap_or((0, Page::MAX));
    // From the lowest page, one call returns every resident unit once (the wrap adds
    // only pages below the start).
    let mut units = Vec::<Resident>::new();
    process.scan(&mut ScanCursor::default(), usize::MAX, &mut units);
    units.into_iter().map(|r| r.page).filter(|p| (start..end).contains(p)).collect()
}

/// Runs `tierkit move`.
pub fn run(args: MoveArgs) -> Result<()> {
    let root = std::path::Path::new("/");
    let overrides = TopologyOverrides { fast: args.fast.map(|l| l.0), slow: args.slow.map(|l| l.0) };
    let topology = Topology::discover_with(root, &overrides)?;
    if let Some(why) = topology.nothing_to_tier() {
        bail!("{why}");
    }
    let pid = args.pid;
    perms::check_attach(root, pid).with_context(|| format!("cannot move the pages of pid {pid}"))?;
    let to = match args.to {
        Dest::Fast => TierId::FAST,
        Dest::Slow => TierId(1),
    };
    let signals = Signals::install()?;
    let mut process = LiveProcess::open(pid, &topology).with_context(|| format!("cannot read pid {pid}'s memory"))?;
    let pages = pages_of(&process, args.range);
    let (began, cpu0) = (Instant::now(), process_cpu_ns(None).unwrap_or(0));
    let (mut tally, mut statuses) = (Tally::default(), Vec::new());
    for step in pages.chunks(STEP_PAGES) {
        if signals.received().is_some() || process.gone() {
            break;
        }
        statuses.clear();
        process.migrate(step, to, &mut statuses);
        tally.add(&statuses);
    }
    let seconds = began.elapsed().as_secs_f64();
    let cpu_seconds = process_cpu_ns(None).unwrap_or(cpu0).saturating_sub(cpu0) as f64 / 1e9;
    let counts = process.pacer().counts();
    let (moved, rate) = (counts.pages_moved, counts.pages_moved as f64 / seconds.max(1e-9));
    let nodes: Vec<String> = topology.tier_nodes(to).iter().map(u32::to_string).collect();
    let refused: u64 = tally.refused.values().sum();
    let mut err = std::io::stderr().lock();
    writeln!(
        err,
        "tierkit: moved {moved} pages ({} resident units asked for) to the {} tier (node {}) in {seconds:.2} s: \
         {rate:.0} pages/s, {} move_pages calls; already there {}, not resident {}, refused or held back {refused}{}",
        pages.len(),
        if to == TierId::FAST { "fast" } else { "slow" },
        nodes.join(","),
        counts.calls,
        tally.already,
        tally.not_resident,
        tally.refused.iter().map(|(cause, n)| format!(" {cause}={n}")).collect::<String>(),
    )?;
    let interrupted = signals.received();
    println!(
        "MOVE pid={pid} units={} to_tier={} moved={moved} already={} not_resident={} refused={refused} calls={} \
         seconds={seconds:.3} cpu_seconds={cpu_seconds:.3} pages_per_s={rate:.0} complete={}",
        pages.len(),
        to.0,
        tally.already,
        tally.not_resident,
        counts.calls,
        interrupted.is_none() && !process.gone(),
    );
    if let Some(sig) = interrupted {
        std::process::exit(128 + sig);
    }
    if process.gone() {
        bail!("pid {pid} exited during the move");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_tiers_parse_with_clear_errors() {
        assert_eq!(parse_range("0x1000-0x3000").unwrap(), (1, 3));
        assert_eq!(parse_range("1800-2001").unwrap(), (1, 3), "every page the range touches");
        assert!(parse_range("0x3000-0x1000").unwrap_err().to_string().contains("empty"));
        assert!(parse_range("0x1000").unwrap_err().to_string().contains("0xSTART-0xEND"));
        assert!(parse_range("0xg-0x1").unwrap_err().to_string().contains("not a hex address"));
        assert_eq!(parse_tier("slow"), Ok(Dest::Slow));
        assert!(parse_tier("dram").unwrap_err().contains("fast or slow"));
    }

    #[test]
    fn the_tally_counts_each_outcome() {
        let mut t = Tally::default();
        t.add(&[MoveStatus::Moved, MoveStatus::Moved, MoveStatus::AlreadyThere, MoveStatus::NotResident]);
        t.add(&[MoveStatus::NoSpace, MoveStatus::Failed(libc::EACCES), MoveStatus::NoSpace]);
        assert_eq!((t.already, t.not_resident), (1, 1), "moved pages are the mover's count");
        assert_eq!(t.refused.get("no-space"), Some(&2));
        assert_eq!(t.refused.values().sum::<u64>(), 3);
    }
}
