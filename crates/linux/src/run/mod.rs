//! The live daemon: ties topology, process view, sources, policy, mover, metrics and
//! status together for `tierkit run` and `tierkit attach` (and the heat report of
//! `tierkit profile`, in [`crate::profile`]).
//!
//! [`run`] manages one target until it exits, tierkit gets SIGINT/SIGTERM/SIGHUP,
//! `--duration` elapses or a fatal error occurs. Each pass of the loop:
//!
//! 1. polls the source ([`LiveSource`]) into a batch of events and hands it to the
//!    policy ([`Engine`]), then executes its plan within the pacer's allowance (in a dry
//!    run the moves are only recorded);
//! 2. every tick (the policy's tick interval, or `--tick`): re-reads free memory, builds
//!    [`tierkit_core::Telemetry`], runs the policy's tick and executes its plan;
//! 3. every second or so rebuilds the process view (less often when a rebuild is
//!    expensive, so it stays under 2% of a core) and delivers samples of pages the view
//!    did not know yet;
//! 4. updates the metrics and prints a status line every `--status-every`;
//! 5. sleeps until the next tick (a signal ends the sleep at once).
//!
//! With DAMON, a run whose placement has stopped improving polls less often, to stay
//! within `--cpu-budget` ([`cadence`]).
//!
//! tierkit never signals, stops or kills its target. Kernel state (DAMON's kdamond, the
//! tiering knobs) is given back on every exit path, and a run that was killed is
//! recovered by the next one ([`state`]).

pub mod cadence;
pub mod dry_run;
pub mod engine;
pub mod phases;
pub mod reachable;
pub mod report;
mod session;
pub mod state;
pub mod telemetry;

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use tierkit_core::policies::{self, PolicySetup};
use tierkit_core::{Memory, ParamError, TierId};

use crate::memory::pacing::{MovePacer, PacerConfig, PacerError};
use crate::memory::process::{LiveProcess, ProcessError};
use crate::metrics::TierkitMetrics;
use crate::metrics_server::{MetricsServer, ServerError};
use crate::perms::{self, Need, Privileges};
use crate::signals::Signals;
use crate::target::{Target, TargetExit};
use crate::topology::{Topology, TopologyError, TopologyOverrides};

pub use crate::source::damos_live::DamosSettings;
pub use crate::source::live::{LiveSource, SourceChoice, SourceError, SourceKind};
pub use engine::Engine;
pub use report::{Ended, Report};

/// Default directory of tierkit's lock and crash-recovery state files.
pub const DEFAULT_STATE_DIR: &str = "/run/tierkit";

/// How the daemon runs.
#[derive(Clone, Debug)]
pub struct DaemonConfig {
    /// A registered policy name (`tierkit policies` lists them; `+colloid` wraps one).
    pub policy: String,
    /// Where access information comes from.
    pub source: SourceChoice,
    /// Decide, never move.
    pub dry_run: bool,
    /// Status line period; `None`: no status lines.
    pub status_every: Option<Duration>,
    /// `HOST:PORT` to serve Prometheus metrics on.
    pub metrics_addr: Option<String>,
    /// Migration bandwidth limit in MB/s (10^6 bytes).
    pub max_mbps: Option<u64>,
    /// Fast/slow node overrides.
    pub overrides: TopologyOverrides,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Policy tick; `None`: the policy's own.
    pub tick: Option<Duration>,
    /// The share of one core tierkit holds itself to once the placement stops improving
    /// (DAMON source; see [`cadence`]); 0: always poll every aggregation interval.
    pub cpu_budget: f64,
    /// Root of sysfs/procfs for topology, DAMON and the kernel knobs (`/`).
    pub root: PathBuf,
    /// Directory of the lock and crash-recovery state files.
    pub state_dir: PathBuf,
    /// The damos source's settings (quota ceiling, hit goal, watermarks, memory cgroup).
    pub damos: DamosSettings,
}

impl Default for DaemonConfig {
    /// The tierkit policy, `--source auto`, live moves, a status line every 5 s.
    fn default() -> Self {
        Self {
            policy: "tierkit".to_string(),
            source: SourceChoice::Auto,
            dry_run: false,
            status_every: Some(Duration::from_secs(5)),
            metrics_addr: None,
            max_mbps: None,
            overrides: TopologyOverrides::default(),
            duration: None,
            tick: None,
            cpu_budget: cadence::DEFAULT_CPU_BUDGET,
            root: PathBuf::from("/"),
            state_dir: PathBuf::from(DEFAULT_STATE_DIR),
            damos: DamosSettings::default(),
        }
    }
}

/// Why the daemon could not start.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// The topology could not be read or the overrides were refused.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// No policy has this name.
    #[error("unknown policy {name:?}; registered policies: {known} (any of them may end in +colloid)")]
    UnknownPolicy {
        /// The name given.
        name: String,
        /// The registered names.
        known: String,
    },
    /// The policy refused its parameters for this process.
    #[error("policy {name} cannot start: {source}")]
    Policy {
        /// The policy.
        name: String,
        /// Why.
        source: ParamError,
    },
    /// `--max-mbps` was refused.
    #[error(transparent)]
    Pacer(#[from] PacerError),
    /// The metrics server could not start.
    #[error(transparent)]
    Metrics(#[from] ServerError),
    /// The lock or state directory could not be used.
    #[error(transparent)]
    State(#[from] state::StateError),
    /// The process could not be read.
    #[error("{source}{}", hint_suffix(.hint))]
    Process {
        /// Why.
        source: ProcessError,
        /// The capability that is missing, when that is why.
        hint: Option<String>,
    },
    /// The source could not be opened.
    #[error("{source}{}", hint_suffix(.hint))]
    Source {
        /// Why.
        source: SourceError,
        /// The capability that is missing, when that is why.
        hint: Option<String>,
    },
    /// The options contradict each other.
    #[error("{0}")]
    Options(String),
    /// Writing the log failed.
    #[error("writing tierkit's output: {0}")]
    Output(#[from] std::io::Error),
}

fn hint_suffix(hint: &Option<String>) -> String {
    hint.as_ref().map_or_else(String::new, |h| format!(" ({h})"))
}

/// What tierkit lacks for `need`, if that is the problem.
fn missing(root: &std::path::Path, need: Need) -> Option<String> {
    let me = Privileges::of_self(root).ok()?;
    perms::what_is_missing(&me, &[need]).into_iter().next()
}

/// The missing privilege behind a source failure, when it is one.
fn source_hint(root: &std::path::Path, err: &SourceError) -> Option<String> {
    use crate::source::damon::{DamonError, Unavailable};
    use crate::source::kernel::TieringError;
    use crate::source::perf::PerfError;
    match err {
        SourceError::Damon(DamonError::NotAvailable(Unavailable::NotRoot { .. })) => missing(root, Need::DamonSysfs),
        SourceError::Perf(PerfError::Open { errno, .. }) if matches!(errno.0, libc::EPERM | libc::EACCES) => {
            let paranoid = perms::read_perf_event_paranoid(root).ok().flatten().unwrap_or(2);
            missing(root, Need::AddressSampling { perf_event_paranoid: paranoid })
        }
        SourceError::Kernel(TieringError::PermissionDenied { .. }) => missing(root, Need::KernelKnobs),
        _ => None,
    }
}

fn unknown_policy(name: &str) -> DaemonError {
    let known: Vec<&str> = policies::REGISTRY.iter().map(|r| r.name).collect();
    DaemonError::UnknownPolicy { name: name.to_string(), known: known.join(", ") }
}

/// Checks what can be checked before a target exists, so that `tierkit run` refuses
/// before starting its command: the topology (and overrides), the metrics address, the
/// policy name, whether
/// the source can serve the policy, and for an explicit `damon`, `kernel` or `damos`
/// source that it is there and tierkit may use it (for `damos`, also that its memory
/// cgroup exists). Returns the topology.
pub fn preflight(cfg: &DaemonConfig) -> Result<Topology, DaemonError> {
    let topology = Topology::discover_with(&cfg.root, &cfg.overrides)?;
    if let Some(addr) = &cfg.metrics_addr {
        // Binding once now catches a bad address or a port in use before anything starts.
        std::net::TcpListener::bind(addr.as_str())
            .map_err(|e| DaemonError::Options(format!("--metrics {addr}: cannot listen there: {e}")))?;
    }
    let source_error = |source: SourceError| DaemonError::Source { hint: source_hint(&cfg.root, &source), source };
    match cfg.source {
        SourceChoice::Only(SourceKind::Kernel) => {
            if cfg.dry_run {
                return Err(DaemonError::Options(
                    "--dry-run cannot be combined with --source kernel: the kernel moves pages itself".to_string(),
                ));
            }
            if let Some(why) = missing(&cfg.root, Need::KernelKnobs) {
                return Err(source_error(SourceError::Unavailable { source_name: "kernel", why }));
            }
            return Ok(topology);
        }
        SourceChoice::Only(SourceKind::Damon) => {
            crate::source::damon::DamonMonitor::check_available(&cfg.root).map_err(|e| source_error(e.into()))?;
        }
        SourceChoice::Only(SourceKind::Damos) => {
            if cfg.dry_run {
                return Err(DaemonError::Options(
                    "--dry-run cannot be combined with --source damos: the kernel moves pages itself".to_string(),
                ));
            }
            if topology.tiers.len() < 2 {
                let why = "the machine has no slow memory tier to migrate to (name slow nodes with --slow)";
                return Err(source_error(SourceError::Unavailable { source_name: "damos", why: why.to_string() }));
            }
            crate::source::damon::KdamondClaim::check_available(&cfg.root).map_err(|e| source_error(e.into()))?;
            if let Some(path) = &cfg.damos.memcg {
                crate::source::damon::memcg::kernel_path(&cfg.root, path).map_err(|e| source_error(e.into()))?;
            }
            return Ok(topology);
        }
        _ => {}
    }
    // A throwaway instance says what the policy asks for.
    let probe = PolicySetup { fast_pages: 1024, pages: 4096 };
    let policy = match policies::build(&cfg.policy, &probe) {
        None => return Err(unknown_policy(&cfg.policy)),
        Some(Err(source)) => return Err(DaemonError::Policy { name: cfg.policy.clone(), source }),
        Some(Ok(policy)) => policy,
    };
    let request = policy.sources();
    let kinds: &[SourceKind] = match cfg.source {
        SourceChoice::Only(kind) => &[kind],
        SourceChoice::Auto => &[SourceKind::Damon, SourceKind::Perf],
    };
    let mut first_error = None;
    for &kind in kinds {
        match crate::source::live::check_suited(kind, &cfg.policy, &request) {
            Ok(()) => return Ok(topology),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(source_error(first_error.unwrap_or(SourceError::NoneAvailable(Vec::new()))))
}

/// The nodes the damos source migrates between: the first node of the fast tier and the
/// first of the next tier (`None` with a single tier).
fn damos_nodes(topology: &Topology) -> Option<(u32, u32)> {
    let first = |tier: u8| topology.tier_nodes(TierId(tier)).first().copied();
    Some((first(0)?, first(1)?))
}

/// How tierkit sizes a policy for `process`: the fast tier it may fill (the pages it
/// holds there plus what is free there, at most the tier's capacity) and its footprint.
fn policy_setup(process: &LiveProcess) -> PolicySetup {
    let resident = process.resident_by_tier();
    let fast = TierId::FAST;
    let capacity = process.tiers().first().map_or(0, |t| t.capacity_pages);
    let fast_pages = (resident.first().copied().unwrap_or(0) + process.free_pages(fast)).min(capacity);
    PolicySetup { fast_pages: fast_pages.max(1), pages: resident.iter().sum() }
}

/// Ends a run before its loop started because the target is already gone.
fn early_exit(target: &mut Target) -> Option<Ended> {
    let exit = target.wait_timeout(Duration::from_millis(200))?;
    Some(Ended::TargetExited(exit))
}

/// Manages `target` until it exits, a signal arrives, `cfg.duration` elapses or a fatal
/// error occurs; writes the start line, status lines and the summary block to `log`.
/// Returns the report (also when the target exited during setup); `Err` only when
/// tierkit could not start managing a live target.
pub fn run(
    cfg: &DaemonConfig,
    target: &mut Target,
    signals: &Signals,
    log: &mut dyn Write,
) -> Result<Report, DaemonError> {
    let started = Instant::now();
    let started_cpu = telemetry::process_cpu_ns(None).unwrap_or(0);
    let topology = preflight(cfg)?;
    if let Some(why) = topology.nothing_to_tier() {
        writeln!(log, "tierkit: note: {why}; policies decide, but no page can change tier")?;
    }
    let pid = target.pid();
    // DAMON and the kernel source change kernel state: one tierkit at a time, and only
    // after what a killed run left is recovered. `auto` falls back to perf without it.
    let mut choice = cfg.source;
    let lock = match state::acquire(&cfg.root, &cfg.state_dir) {
        Ok(acquired) => {
            for line in acquired.recovered.iter().chain(&acquired.problems) {
                writeln!(log, "tierkit: {line}")?;
            }
            (choice != SourceChoice::Only(SourceKind::Perf)).then_some(acquired.lock)
        }
        Err(e) => match choice {
            SourceChoice::Only(SourceKind::Perf) => None,
            SourceChoice::Auto => {
                writeln!(log, "tierkit: note: not using DAMON: {e}")?;
                choice = SourceChoice::Only(SourceKind::Perf);
                None
            }
            SourceChoice::Only(_) => return Err(e.into()),
        },
    };
    let ended_early = |target: &mut Target, log: &mut dyn Write| -> Result<Option<Report>, DaemonError> {
        let Some(ended) = early_exit(target) else { return Ok(None) };
        let report = session::empty_report(cfg, pid, ended, (started, started_cpu));
        write!(log, "{}", report.render())?;
        Ok(Some(report))
    };
    let mut process = match LiveProcess::open(pid, &topology) {
        Ok(p) => p,
        Err(e) => {
            if let Some(report) = ended_early(target, log)? {
                return Ok(report);
            }
            let hint = matches!(&e, ProcessError::Query { errno, .. } if matches!(errno.0, libc::EPERM | libc::EACCES))
                .then(|| missing(&cfg.root, Need::MoveOtherProcessPages))
                .flatten();
            return Err(DaemonError::Process { source: e, hint });
        }
    };
    if let Some(mbps) = cfg.max_mbps {
        *process.pacer_mut() =
            MovePacer::new(PacerConfig { bandwidth: Some(mbps * 1_000_000), ..PacerConfig::default() })?;
    }
    let engine = if matches!(cfg.source, SourceChoice::Only(kind) if kind.kernel_moves_pages()) {
        None
    } else {
        let policy = match policies::build(&cfg.policy, &policy_setup(&process)) {
            Some(Ok(policy)) => policy,
            Some(Err(source)) => return Err(DaemonError::Policy { name: cfg.policy.clone(), source }),
            None => return Err(unknown_policy(&cfg.policy)),
        };
        Some(Engine::new(policy, cfg.dry_run))
    };
    let setup = crate::source::live::SourceSetup {
        root: cfg.root.clone(),
        state_dir: cfg.state_dir.clone(),
        pid,
        policy: engine.as_ref().map(|e| (e.policy_name().to_string(), *e.sources())),
        nodes: damos_nodes(&topology),
        damos: cfg.damos.clone(),
    };
    let mut source = match LiveSource::open(choice, &setup) {
        Ok(source) => source,
        Err(e) => {
            if let Some(report) = ended_early(target, log)? {
                return Ok(report);
            }
            let hint = source_hint(&cfg.root, &e);
            return Err(DaemonError::Source { source: e, hint });
        }
    };
    source.set_clock(process.now());
    let metrics = TierkitMetrics::new();
    let server = match &cfg.metrics_addr {
        Some(addr) => match MetricsServer::start(addr, metrics.shared()) {
            Ok(server) => Some(server),
            Err(e) => {
                source.stop(); // puts kernel state back before the error returns
                return Err(e.into());
            }
        },
        None => None,
    };
    let mut session = session::Session::new(cfg, process, engine, source, metrics, (started, started_cpu));
    session.announce(log, server.as_ref().map(MetricsServer::local_addr))?;
    let ended = session.run_loop(target, signals, log);
    let report = session.finish(ended, log);
    drop(server);
    drop(lock);
    Ok(report)
}

/// The exit status `tierkit run` reports for `report`: the target's exit code (128 +
/// the signal that killed it) when it ended; otherwise 128 + the signal that stopped
/// tierkit, 1 after an error, 0 after `--duration`.
pub fn run_exit_code(report: &Report) -> i32 {
    if let Some(code) = report.target_exit_code() {
        return code;
    }
    match report.ended {
        Ended::Signal(sig) => 128 + sig,
        Ended::Error(_) => 1,
        Ended::Duration(_) | Ended::TargetExited(_) => 0,
    }
}

/// The exit status `tierkit attach` reports: 1 after an error, else 0.
pub fn attach_exit_code(report: &Report) -> i32 {
    i32::from(matches!(report.ended, Ended::Error(_)))
}

/// `TargetExit::Unknown` when an attached target is gone.
fn exit_of(target: &mut Target) -> TargetExit {
    target.is_alive();
    target.exit_status().unwrap_or(TargetExit::Unknown)
}
