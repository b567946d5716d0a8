//! `tierkit run -- CMD` and `tierkit attach PID`: tier a live process (see docs/LIVE.md).

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use tierkit_linux::perms;
use tierkit_linux::run::{self, DaemonConfig, SourceChoice, DEFAULT_STATE_DIR};
use tierkit_linux::signals::Signals;
use tierkit_linux::target::{Target, TargetError};
use tierkit_linux::topology::{parse_list, TopologyOverrides};

use crate::damos_args::DamosArgs;

/// Environment variable naming the directory of tierkit's lock and crash-recovery
/// state files (default /run/tierkit; the same as the hidden `--state-dir`).
pub const STATE_DIR_ENV: &str = "TIERKIT_STATE_DIR";

/// Options shared by `run` and `attach`.
#[derive(Args)]
pub struct LiveOptions {
    /// Policy to run (any registered one; `tierkit list` names them), with settings where given (`tierkit:sample_rate_hz=10000`; `tierkit list --params POLICY`).
    #[arg(long, default_value = "tierkit")]
    policy: String,
    /// Access source: damon, perf, kernel (the kernel's NUMA-balancing tiering), damos (the kernel's DAMOS migrate_hot/migrate_cold schemes, system-wide or one memory cgroup's pages, quotas tuned by tierkit; --damos-* options), or auto (damon, else perf).
    #[arg(long, default_value = "auto", value_parser = parse_source)]
    source: SourceChoice,
    /// Decide but never move a page (decisions are reported as would-promote/demote).
    #[arg(long)]
    dry_run: bool,
    /// Seconds between one-line status reports on stderr (0 = none).
    #[arg(long, value_name = "S", default_value = "5", value_parser = parse_seconds_or_zero)]
    status_every: Duration,
    /// Serve Prometheus metrics at http://ADDR/metrics, e.g. 127.0.0.1:9464.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
    /// Migration bandwidth limit in MB/s (default: unlimited within pacing).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_mbps: Option<u64>,
    /// Nodes to treat as fast, e.g. 0,1.
    #[arg(long, value_name = "LIST", value_parser = parse_nodes)]
    fast: Option<NodeList>,
    /// Nodes to treat as slow, e.g. 2-3.
    #[arg(long, value_name = "LIST", value_parser = parse_nodes)]
    slow: Option<NodeList>,
    /// Stop after S seconds (default: when the target exits).
    #[arg(long, value_name = "S", value_parser = parse_seconds)]
    duration: Option<Duration>,
    /// With DAMON: once the placement stops improving, poll DAMON less often (up to 1 in
    /// 16 aggregation intervals) while tierkit's own CPU exceeds PCT% of a core (the
    /// kdamond's time is the kernel's, reported beside it); 0 = always poll every interval.
    #[arg(long, value_name = "PCT", default_value = "2", value_parser = parse_percent)]
    cpu_budget: f64,
    /// Policy tick in milliseconds (default: the policy's own, 100 ms).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    tick: Option<u64>,
    /// Directory of the lock and crash-recovery state files (also TIERKIT_STATE_DIR).
    #[arg(long, hide = true)]
    state_dir: Option<PathBuf>,
    #[command(flatten)]
    damos: DamosArgs,
}

/// `tierkit run`'s arguments.
#[derive(Args)]
pub struct RunArgs {
    #[command(flatten)]
    opts: LiveOptions,
    /// The command to run and tier, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    cmd: Vec<String>,
}

/// `tierkit attach`'s arguments.
#[derive(Args)]
pub struct AttachArgs {
    #[command(flatten)]
    opts: LiveOptions,
    /// The process to tier.
    pid: u32,
}

/// NUMA node numbers given on the command line.
#[derive(Clone, Debug)]
pub struct NodeList(pub Vec<u32>);

/// A node list, `0,1` or `2-3`.
pub fn parse_nodes(text: &str) -> Result<NodeList> {
    let nodes =
        parse_list(text).with_context(|| format!("node list {text:?}: expected node numbers like 0,1 or 2-3"))?;
    Ok(NodeList(nodes))
}

fn parse_source(text: &str) -> Result<SourceChoice, String> {
    text.parse()
}

/// Seconds as a decimal number (`2`, `0.5`), more than 0.
pub fn parse_seconds(text: &str) -> Result<Duration> {
    let d = parse_seconds_or_zero(text)?;
    if d.is_zero() {
        bail!("{text:?}: expected more than 0 seconds");
    }
    Ok(d)
}

fn parse_seconds_or_zero(text: &str) -> Result<Duration> {
    let secs: f64 = text.trim().parse().with_context(|| format!("{text:?}: expected seconds, like 5 or 0.5"))?;
    Duration::try_from_secs_f64(secs).with_context(|| format!("{text:?}: expected a number of seconds from 0"))
}

/// A percentage from 0 to 100 (`2`, `0.5`).
pub fn parse_percent(text: &str) -> Result<f64> {
    let pct: f64 = text.trim().parse().with_context(|| format!("{text:?}: expected a percentage, like 2 or 0.5"))?;
    if !(0.0..=100.0).contains(&pct) {
        bail!("{text:?}: expected a percentage from 0 to 100");
    }
    Ok(pct)
}

/// The state directory: `--state-dir`, else `TIERKIT_STATE_DIR`, else /run/tierkit.
pub fn state_dir(flag: Option<PathBuf>) -> PathBuf {
    flag.or_else(|| std::env::var_os(STATE_DIR_ENV).map(PathBuf::from)).unwrap_or_else(|| DEFAULT_STATE_DIR.into())
}

impl LiveOptions {
    fn config(self) -> Result<DaemonConfig> {
        let damos = self.damos.settings(self.source)?;
        Ok(DaemonConfig {
            policy: self.policy,
            source: self.source,
            dry_run: self.dry_run,
            status_every: (!self.status_every.is_zero()).then_some(self.status_every),
            metrics_addr: self.metrics,
            max_mbps: self.max_mbps,
            overrides: TopologyOverrides { fast: self.fast.map(|l| l.0), slow: self.slow.map(|l| l.0) },
            duration: self.duration,
            tick: self.tick.map(Duration::from_millis),
            cpu_budget: self.cpu_budget / 100.0,
            state_dir: state_dir(self.state_dir),
            damos,
            ..DaemonConfig::default()
        })
    }
}

/// The shell's exit status for a command that could not be started.
fn spawn_failure_code(e: &TargetError) -> i32 {
    match e {
        TargetError::NotFound { .. } => 127,
        TargetError::NotExecutable { .. } => 126,
        _ => 1,
    }
}

/// Runs `tierkit run`: starts the command, tiers it until it exits, and exits with its
/// exit status (128 + the signal that killed it).
pub fn run(args: RunArgs) -> Result<()> {
    let cfg = args.opts.config()?;
    run::preflight(&cfg)?;
    let signals = Signals::install()?;
    let mut target = match Target::spawn(&args.cmd) {
        Ok(target) => target,
        Err(e) => {
            eprintln!("tierkit: {e}");
            std::process::exit(spawn_failure_code(&e));
        }
    };
    let pid = target.pid();
    let report = run::run(&cfg, &mut target, &signals, &mut io::stderr())
        .with_context(|| format!("cannot tier pid {pid} ({}); it keeps running untiered", args.cmd[0]))?;
    let code = run::run_exit_code(&report);
    drop((target, signals));
    std::process::exit(code)
}

/// Runs `tierkit attach`: tiers a running process until it exits or tierkit is told to
/// stop; exits 0, or 1 when the run ended on an error.
pub fn attach(args: AttachArgs) -> Result<()> {
    let cfg = args.opts.config()?;
    let pid = args.pid;
    perms::check_attach(&cfg.root, pid).with_context(|| format!("cannot attach to pid {pid}"))?;
    let mut target = Target::attach(pid).with_context(|| format!("cannot attach to pid {pid}"))?;
    run::preflight(&cfg)?;
    let signals = Signals::install()?;
    let report =
        run::run(&cfg, &mut target, &signals, &mut io::stderr()).with_context(|| format!("cannot tier pid {pid}"))?;
    let code = run::attach_exit_code(&report);
    drop((target, signals));
    if code != 0 {
        std::process::exit(code);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_and_sources_parse_with_clear_errors() {
        assert_eq!(parse_seconds("0.5").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_seconds_or_zero("0").unwrap(), Duration::ZERO);
        assert!(parse_seconds("0").unwrap_err().to_string().contains("more than 0"));
        assert!(parse_seconds("-1").is_err() && parse_seconds("soon").is_err());
        assert!(parse_source("dmon").unwrap_err().contains("damon, perf, kernel, damos or auto"));
        assert_eq!(state_dir(Some("/x".into())), PathBuf::from("/x"));
        assert_eq!(spawn_failure_code(&TargetError::NotFound { command: "x".into() }), 127);
    }
}
