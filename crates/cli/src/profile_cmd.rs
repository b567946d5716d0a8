//! `tierkit profile`: the heat report of a process (see docs/LIVE.md).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use serde_json::json;
use tierkit_linux::perms;
use tierkit_linux::profile::{self, format_snapshot, ProfileChoice, ProfileConfig, Snapshot, WINDOW};
use tierkit_linux::signals::Signals;
use tierkit_linux::status::format_duration;
use tierkit_linux::target::Target;

use crate::live_cmd::{parse_seconds, state_dir};

/// `tierkit profile`'s arguments.
#[derive(Args)]
pub struct ProfileArgs {
    /// Stop after S seconds (default: when the target exits, or on Ctrl-C).
    #[arg(long, value_name = "S", value_parser = parse_seconds)]
    duration: Option<Duration>,
    /// Length of one interval in milliseconds.
    #[arg(long, value_name = "MS", default_value = "1000", value_parser = clap::value_parser!(u64).range(10..))]
    interval: u64,
    /// Print one JSON document at the end instead of text as it goes.
    #[arg(long)]
    json: bool,
    /// How to measure: damon, refs (clear_refs + smaps Referenced), or auto (damon, else refs).
    #[arg(long, default_value = "auto", value_parser = parse_choice)]
    source: ProfileChoice,
    /// Mappings shown per interval in text output, most resident first.
    #[arg(long, value_name = "N", default_value = "8")]
    top: usize,
    /// The process to profile.
    #[arg(required_unless_present = "cmd", conflicts_with = "cmd")]
    pid: Option<u32>,
    /// A command to start and profile, after `--`.
    #[arg(last = true, value_name = "CMD")]
    cmd: Vec<String>,
    /// Directory of the lock and crash-recovery state files (also TIERKIT_STATE_DIR).
    #[arg(long, hide = true)]
    state_dir: Option<PathBuf>,
}

fn parse_choice(text: &str) -> Result<ProfileChoice, String> {
    text.parse()
}

/// Runs `tierkit profile`.
pub fn run(args: ProfileArgs) -> Result<()> {
    let cfg = ProfileConfig {
        interval: Duration::from_millis(args.interval),
        duration: args.duration,
        choice: args.source,
        root: PathBuf::from("/"),
        state_dir: state_dir(args.state_dir),
    };
    let mut target = match args.pid {
        Some(pid) => {
            perms::check_attach(&cfg.root, pid).with_context(|| format!("cannot profile pid {pid}"))?;
            Target::attach(pid).with_context(|| format!("cannot profile pid {pid}"))?
        }
        None => Target::spawn(&args.cmd)?,
    };
    let signals = Signals::install()?;
    let pid = target.pid();
    let mut snapshots: Vec<Snapshot> = Vec::new();
    let mut header = false;
    let mut last_t = None;
    let (json, top) = (args.json, args.top);
    let mut report = |method: profile::ProfileMethod, s: &Snapshot| {
        last_t = Some(s.t);
        if json {
            snapshots.push(s.clone());
            return;
        }
        if !header {
            header = true;
            println!(
                "tierkit profile: pid {pid}, {} ({}), interval {} ms, hot = referenced in each of the last {WINDOW} \
                 intervals, cold = in none",
                method.name(),
                method.describe(),
                args.interval
            );
        }
        print!("{}", format_snapshot(s, top));
    };
    let mut warn = |problem: &str| eprintln!("tierkit: warning: {problem}");
    let outcome = profile::profile(&cfg, &mut target, &signals, &mut report, &mut warn)
        .with_context(|| format!("cannot profile pid {pid}"))?;
    if json {
        let doc = json!({
            "pid": pid,
            "method": outcome.method.name(),
            "interval_ms": args.interval,
            "window": WINDOW,
            "ended": outcome.ended.name(),
            "intervals": outcome.intervals,
            "snapshots": snapshots,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        let after =
            last_t.map_or_else(String::new, |t| format!(" after {}", format_duration(Duration::from_secs_f64(t))));
        println!("tierkit profile: ended={}{after}, {} interval(s)", outcome.ended.name(), outcome.intervals);
    }
    Ok(())
}
