//! The daemon loop: one [`Session`] per managed target (see the module documentation of
//! [`super`] for what each pass does).

use std::collections::BTreeMap;
use std::io::Write;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tierkit_core::{Event, Memory, Page, MILLISECOND, PAGE_SIZE};

use super::cadence::Cadence;
use super::engine::Engine;
use super::phases::{Phase, PhaseMeter};
use super::reachable::reachable_tiers;
use super::report::{ending_of, Ended, Report};
use super::telemetry::{fast_residency, process_cpu_ns, TelemetryBuilder};
use super::{exit_of, missing, DaemonConfig};
use crate::memory::process::{HeldBack, LiveProcess, ProcessError};
use crate::metrics::{errno_name, Direction, TierkitMetrics};
use crate::perms::Need;
use crate::selfstat::{CpuMeter, SelfUsage};
use crate::signals::Signals;
use crate::source::live::{LiveSource, SourceKind};
use crate::status::{format_status_line, StatusLine, Summary};
use crate::target::Target;
use tierkit_core::Round;

/// Shortest time between two rebuilds of the process view.
const REFRESH_MIN: Duration = Duration::from_secs(1);
/// A rebuild may take at most 1/50 of the time between rebuilds (2% of a core), counted
/// in the daemon thread's CPU time.
const REFRESH_COST_SHARE: u32 = 50;
/// Consecutive failed rebuilds that end the run.
const REFRESH_FAILURES: u32 = 3;
/// How often the gauges (residency, hit ratio, tierkit's own CPU time and RSS) are
/// re-published.
const USAGE_EVERY: Duration = Duration::from_secs(1);
/// Most resident units whose node is asked afresh for the residency when the kernel
/// moves the pages (kernel and damos sources): one `move_pages` query of at most this
/// many pages, spread over the process (a whole process up to 16 MiB; of a larger one,
/// every k-th resident page).
const RESIDENCY_SAMPLE: usize = 4096;
/// How often the nodes' free memory is re-read (`/proc/zoneinfo`, a few KiB a CPU);
/// between reads the moves keep the room current.
const FREE_EVERY: Duration = Duration::from_secs(1);
/// How long a step of a move round should take: between steps the status line and
/// gauges are published when due, and signals and the target's exit end the round.
const MOVE_STEP: Duration = Duration::from_millis(250);
/// Bounds of a step, in pages (the first step has the smallest).
const MOVE_STEP_PAGES: (usize, usize) = (256, 16_384);
/// The longest a move round runs before the loop ticks, rebuilds and polls again (the
/// rest of the plan waits for the next pass); signals and the target's exit end a round
/// at the next step. While a backlog remains, a source that blocks (DAMON) is not polled:
/// the policy has work queued, and the moves keep the whole pass.
const MOVE_ROUND: Duration = Duration::from_secs(1);

/// CPU time of this process since `start_ns` on its CPU clock (nanosecond precision,
/// unlike `/proc/self/stat`'s clock ticks).
pub(super) fn own_cpu_since(start_ns: u64) -> Duration {
    Duration::from_nanos(process_cpu_ns(None).unwrap_or(start_ns).saturating_sub(start_ns))
}

/// The kdamond working for tierkit, whose CPU time is reported beside tierkit's own.
struct Kdamond {
    pid: i32,
    start_ns: u64,
    meter: CpuMeter,
}

impl Kdamond {
    /// Its CPU time since tierkit started it (`None` once it is gone).
    fn cpu(&self) -> Option<Duration> {
        process_cpu_ns(Some(self.pid)).map(|ns| Duration::from_nanos(ns.saturating_sub(self.start_ns)))
    }
}

/// Counts at the previous status line.
#[derive(Clone, Copy)]
struct Mark {
    at: Instant,
    samples: u64,
    lost: u64,
    promoted: u64,
    demoted: u64,
}

/// One managed target's loop state.
pub(super) struct Session<'a> {
    cfg: &'a DaemonConfig,
    started: Instant,
    /// tierkit's CPU clock when the run started (ns).
    started_cpu: u64,
    process: LiveProcess,
    engine: Option<Engine>,
    source: Option<LiveSource>,
    telemetry: TelemetryBuilder,
    metrics: TierkitMetrics,
    events: Vec<Event>,
    tick: Duration,
    samples: u64,
    lost: u64,
    /// Kernel and damos sources: the kernel's moves as last published to the metrics.
    kernel_published: (u64, u64),
    /// The source's own hit ratio when it stopped (damos).
    source_hit: Option<f64>,
    /// When the kernel moves the pages: the fast-tier residency last sampled, and when.
    sampled_residency: Option<(Instant, Option<f64>)>,
    next_tick: Instant,
    next_refresh: Instant,
    next_free: Instant,
    refresh_failures: u32,
    /// Rebuilds of the process view that succeeded.
    view_rebuilds: u64,
    next_status: Option<Instant>,
    mark: Mark,
    cpu: CpuMeter,
    /// Pages per move step, sized from the last step's speed to take about [`MOVE_STEP`].
    step_pages: usize,
    /// The last move round ended at [`MOVE_ROUND`] with moves still queued and allowed.
    backlog: bool,
    kdamond: Option<Kdamond>,
    usage: SelfUsage,
    next_usage: Instant,
    warned_permission: bool,
    warned_threads: bool,
    /// The loop's CPU time by phase, for the summary.
    phases: PhaseMeter,
    /// The kernel's per-page refusals by errno and the pages held back, as last
    /// published to the metrics.
    published_errors: BTreeMap<i32, u64>,
    published_held: HeldBack,
    /// How often the source is polled under the CPU budget (DAMON, not in a dry run).
    cadence: Option<Cadence>,
    /// When the source is polled next.
    next_poll: Instant,
}

impl<'a> Session<'a> {
    pub(super) fn new(
        cfg: &'a DaemonConfig,
        process: LiveProcess,
        mut engine: Option<Engine>,
        source: LiveSource,
        metrics: TierkitMetrics,
        (started, started_cpu): (Instant, u64),
    ) -> Self {
        let tick = cfg
            .tick
            .or_else(|| engine.as_ref().map(|e| Duration::from_nanos(e.tick_interval())))
            .unwrap_or(Duration::from_nanos(100 * MILLISECOND))
            .max(Duration::from_millis(1));
        let usage = SelfUsage::read(&cfg.root).unwrap_or_default();
        let now = Instant::now();
        let kdamond = source.helper_pid().and_then(|pid| {
            let start_ns = process_cpu_ns(Some(pid))?;
            Some(Kdamond { pid, start_ns, meter: CpuMeter::new(Duration::ZERO) })
        });
        if kdamond.is_some() {
            metrics.add_kdamond_cpu();
        }
        if let Some(engine) = engine.as_mut() {
            engine.set_reachable(reachable_tiers(&process, &process.resident_by_tier()));
        }
        let cadence = (engine.is_some() && !cfg.dry_run && cfg.cpu_budget > 0.0 && source.aggregation().is_some())
            .then(|| Cadence::new(cfg.cpu_budget, now, own_cpu_since(started_cpu), (0, 0)));
        if cadence.is_some() {
            metrics.add_poll_stretch();
        }
        let mut session = Self {
            telemetry: TelemetryBuilder::new(source.accesses_per_sample(), process.now()),
            cfg,
            started,
            started_cpu,
            process,
            engine,
            source: Some(source),
            metrics,
            events: Vec::new(),
            tick,
            samples: 0,
            lost: 0,
            kernel_published: (0, 0),
            source_hit: None,
            sampled_residency: None,
            next_tick: now + tick,
            next_refresh: now + REFRESH_MIN,
            next_free: now + FREE_EVERY,
            refresh_failures: 0,
            view_rebuilds: 0,
            next_status: cfg.status_every.filter(|d| !d.is_zero()).map(|d| now + d),
            mark: Mark { at: now, samples: 0, lost: 0, promoted: 0, demoted: 0 },
            cpu: CpuMeter::new(own_cpu_since(started_cpu)),
            step_pages: MOVE_STEP_PAGES.0,
            backlog: false,
            kdamond,
            usage,
            next_usage: now + USAGE_EVERY,
            warned_permission: false,
            warned_threads: false,
            phases: PhaseMeter::default(),
            published_errors: BTreeMap::new(),
            published_held: HeldBack::default(),
            cadence,
            next_poll: now,
        };
        session.publish_gauges();
        session
    }

    /// The start line (and where the metrics are served).
    pub(super) fn announce(&self, log: &mut dyn Write, metrics: Option<SocketAddr>) -> std::io::Result<()> {
        let source = self.source.as_ref().map_or_else(String::new, LiveSource::describe);
        let policy = match &self.engine {
            Some(e) => format!("policy {}", e.policy_name()),
            None => "no policy (the kernel decides)".to_string(),
        };
        let dry = if self.cfg.dry_run && self.engine.is_some() { ", dry run (no page is moved)" } else { "" };
        let resident = self.process.resident_by_tier();
        writeln!(
            log,
            "tierkit: managing pid {} ({} resident pages over {} tier(s)) with {policy}, source {source}, tick {} ms{dry}",
            self.process.pid(),
            resident.iter().sum::<u64>(),
            resident.len(),
            self.tick.as_millis(),
        )?;
        let request = self.engine.as_ref().map(|e| *e.sources()).unwrap_or_default();
        if request.allocations {
            writeln!(
                log,
                "tierkit: note: the policy also asks for allocation events, which the live platform does not \
                 deliver; it learns pages from samples and its scans"
            )?;
        }
        if let Some(addr) = metrics {
            writeln!(log, "tierkit: metrics at http://{addr}/metrics")?;
        }
        Ok(())
    }

    /// Runs passes until the run ends, and says why.
    pub(super) fn run_loop(&mut self, target: &mut Target, signals: &Signals, log: &mut dyn Write) -> Ended {
        let deadline = self.cfg.duration.map(|d| (self.started + d, d));
        loop {
            if let Some(sig) = signals.received() {
                return Ended::Signal(sig);
            }
            if let Some((_, d)) = deadline.filter(|(at, _)| Instant::now() >= *at) {
                return Ended::Duration(d);
            }
            if !target.is_alive() || self.process.gone() {
                return Ended::TargetExited(target.wait_timeout(Duration::from_secs(1)).unwrap_or(exit_of(target)));
            }
            if let Err(ended) = self.pass(target, signals, log) {
                return ended;
            }
            if self.backlog {
                continue; // moves are waiting: no sleep
            }
            let mut wake = self.next_tick;
            if let Some((at, _)) = deadline {
                wake = wake.min(at);
            }
            if let Some(at) = self.next_status {
                wake = wake.min(at);
            }
            signals.sleep_until_signal(wake.saturating_duration_since(Instant::now()));
        }
    }

    /// One pass: poll, decide, move; tick, rebuild, publish when due.
    fn pass(&mut self, target: &mut Target, signals: &Signals, log: &mut dyn Write) -> Result<(), Ended> {
        let stop_because = |target: &mut Target, err: String| -> Ended {
            if let Some(sig) = signals.received() {
                Ended::Signal(sig)
            } else if !target.is_alive() {
                Ended::TargetExited(exit_of(target))
            } else {
                Ended::Error(err)
            }
        };
        let skip_poll =
            (self.backlog && self.source.as_ref().is_some_and(LiveSource::blocks)) || Instant::now() < self.next_poll;
        let polled = if skip_poll {
            false
        } else {
            let polled = self.measured(Phase::Source, Self::poll);
            polled.map_err(|e| stop_because(target, e))?
        };
        if polled {
            return Err(match target.wait_timeout(Duration::from_secs(1)) {
                Some(exit) => Ended::TargetExited(exit),
                None => Ended::Error(
                    "the source stopped although the target still runs (was DAMON's kdamond turned \
                                      off by someone else?)"
                        .to_string(),
                ),
            });
        }
        self.measured(Phase::Policy, Self::deliver);
        if !skip_poll {
            self.adapt_cadence();
        }
        self.measured(Phase::Moves, |s| s.execute(signals, log));
        let now = Instant::now();
        if now >= self.next_tick {
            self.on_tick();
            self.next_tick = (self.next_tick + self.tick).max(now);
        }
        if now >= self.next_refresh {
            self.refresh(signals, log).map_err(|e| stop_because(target, e))?;
        }
        self.measured(Phase::Publish, |s| s.publish(now, log));
        Ok(())
    }

    /// Runs `f` on the session, charging its thread CPU time to `phase`.
    fn measured<T>(&mut self, phase: Phase, f: impl FnOnce(&mut Self) -> T) -> T {
        let mut meter = std::mem::take(&mut self.phases);
        let out = meter.measure(phase, || f(self));
        self.phases = meter;
        out
    }

    /// Polls the source into `events`; `Ok(true)` when it saw the target exit.
    fn poll(&mut self) -> Result<bool, String> {
        let Some(source) = self.source.as_mut() else { return Ok(true) };
        if source.wants_fresh_free() {
            let _ = self.process.refresh_free();
            self.next_free = Instant::now() + FREE_EVERY;
        }
        let (engine, process) = (self.engine.as_ref(), &self.process);
        let tier_of = |p: Page| match engine {
            Some(e) => e.tier_of(process, p),
            None => process.tier_of(p),
        };
        let request = engine.map(|e| *e.sources()).unwrap_or_default();
        let polled = source.poll(process, &tier_of, &request, &mut self.events).map_err(|e| e.to_string())?;
        self.samples += polled.samples;
        self.lost += polled.lost;
        let name = source.kind().name();
        self.metrics.add_samples(name, polled.samples);
        self.metrics.add_lost_samples(polled.lost);
        if let Some(moves) = source.kernel_moves() {
            let (p, d) = self.kernel_published;
            self.metrics.add_moved(Direction::Promote, moves.promoted - p, (moves.promoted - p) * PAGE_SIZE);
            self.metrics.add_moved(Direction::Demote, moves.demoted - d, (moves.demoted - d) * PAGE_SIZE);
            self.kernel_published = (moves.promoted, moves.demoted);
        }
        Ok(polled.target_gone)
    }

    /// After a poll: the stretch's window may end ([`Cadence`]); the next poll is due
    /// `stretch - 1` aggregation intervals from now (the poll then waits for the next).
    fn adapt_cadence(&mut self) {
        let (Some(cadence), Some(source)) = (self.cadence.as_mut(), self.source.as_mut()) else { return };
        let now = Instant::now();
        let cpu = own_cpu_since(self.started_cpu);
        let moved = self.engine.as_ref().map_or((0, 0), |e| (e.totals().promoted, e.totals().demoted));
        if let Some(decision) = cadence.after_poll(now, cpu, moved) {
            source.set_stretch(decision.stretch);
            self.metrics.set_poll_stretch(decision.stretch);
        }
        let period = source.aggregation().unwrap_or(self.tick);
        self.next_poll = now + period * (cadence.stretch() - 1);
    }

    /// The current stretch of the polls (1 without a [`Cadence`]).
    fn stretch(&self) -> u32 {
        self.cadence.as_ref().map_or(1, Cadence::stretch)
    }

    /// Hands the collected events to the policy.
    fn deliver(&mut self) {
        if self.events.is_empty() {
            return;
        }
        self.telemetry.count(&self.events);
        if let Some(engine) = self.engine.as_mut() {
            engine.on_events(&self.events, &self.process);
        }
        self.events.clear();
    }

    /// Executes the policy's plan within the pacer's allowance, in steps of about
    /// [`MOVE_STEP`] with the status line and gauges published between them, for at most
    /// [`MOVE_ROUND`] or until a signal arrives or the target exits; counts the outcome.
    fn execute(&mut self, signals: &Signals, log: &mut dyn Write) {
        let began = Instant::now();
        self.backlog = false;
        loop {
            let Some(engine) = self.engine.as_mut() else { return };
            if engine.queued() > 0 && self.process.free_age() >= MOVE_STEP {
                // Moves are bounded by the nodes' room, which the target's own allocations
                // use too: a room older than a step is read afresh (its CPU counts as moving).
                let _ = self.process.refresh_free();
            }
            let now = self.process.now();
            let allowance = self.process.pacer_mut().allowance(now);
            let step = allowance.min(self.step_pages);
            let queued = engine.queued();
            let step_began = Instant::now();
            let round = engine.execute(&mut self.process, step);
            let done = queued.min(step) as f64;
            let took = step_began.elapsed().as_secs_f64();
            if done >= MOVE_STEP_PAGES.0 as f64 && took > 0.0 && !engine.is_dry_run() {
                let pages = done * MOVE_STEP.as_secs_f64() / took;
                self.step_pages = (pages as usize).clamp(MOVE_STEP_PAGES.0, MOVE_STEP_PAGES.1);
            }
            let more = engine.queued() > 0 && allowance > step && !engine.is_dry_run();
            self.account(&round, log);
            if !more || signals.received().is_some() || self.process.gone() {
                return;
            }
            if began.elapsed() >= MOVE_ROUND {
                self.backlog = true;
                return;
            }
            self.publish(Instant::now(), log);
        }
    }

    /// Counts a move round in the metrics; says once when permissions refuse moves.
    fn account(&mut self, round: &Round, log: &mut dyn Write) {
        self.metrics.add_moved(Direction::Promote, round.promoted, round.promoted * PAGE_SIZE);
        self.metrics.add_moved(Direction::Demote, round.demoted, round.demoted * PAGE_SIZE);
        let held = self.process.held_back();
        let was = std::mem::replace(&mut self.published_held, held);
        self.metrics.add_held_back(held.no_room - was.no_room, held.cooling - was.cooling);
        for (&errno, &total) in &self.process.pacer().counts().by_errno {
            let seen = self.published_errors.entry(errno).or_default();
            let n = total - *seen;
            *seen = total;
            if n == 0 {
                continue;
            }
            self.metrics.add_move_errors(errno, n);
            if matches!(errno, libc::EPERM | libc::EACCES) && !self.warned_permission {
                self.warned_permission = true;
                let why = missing(&self.cfg.root, Need::MoveOtherProcessPages).unwrap_or_else(|| {
                    "pages shared with other processes (page cache, shared memory) are left in place: tierkit \
                     moves only the target's private pages (MPOL_MF_MOVE)"
                        .to_string()
                });
                let _ = writeln!(log, "tierkit: move_pages refused {n} page(s) with {}: {why}", errno_name(errno));
            }
        }
        if round.dropped > 0 {
            let _ = writeln!(
                log,
                "tierkit: note: {} queued moves waited too long (bandwidth limit or ENOMEM back-off) and were handed \
                 back to the policy",
                round.dropped
            );
        }
    }

    /// The policy's tick.
    fn on_tick(&mut self) {
        let now = Instant::now();
        if now >= self.next_free {
            // Between reads the moves keep the room current; under the CPU budget a stretched
            // run reads less often.
            self.next_free = now + FREE_EVERY * self.stretch();
            let _ = self.phases.measure(Phase::View, || self.process.refresh_free());
        }
        let (process, telemetry, engine) = (&self.process, &mut self.telemetry, self.engine.as_mut());
        self.phases.measure(Phase::Policy, || {
            let telemetry = telemetry.tick(process, process.now());
            if let Some(engine) = engine {
                engine.on_tick(&telemetry, process);
            }
        });
    }

    /// Rebuilds the process view; `Err` ends the run (the message says why).
    fn refresh(&mut self, signals: &Signals, log: &mut dyn Write) -> Result<(), String> {
        let process = &mut self.process;
        let (rebuilt, cost) = self.phases.measure_cost(Phase::View, || process.refresh());
        match rebuilt {
            Ok(_) => {
                self.view_rebuilds += 1;
                self.refresh_failures = 0;
                // Under the CPU budget a stretched run rebuilds the view less often as well.
                self.next_refresh = Instant::now() + REFRESH_MIN.max(cost * REFRESH_COST_SHARE) * self.stretch();
            }
            Err(ProcessError::Gone { .. }) => return Ok(()), // the next pass sees `gone()`
            Err(e) => {
                self.refresh_failures += 1;
                self.next_refresh = Instant::now() + REFRESH_MIN;
                if self.refresh_failures >= REFRESH_FAILURES {
                    return Err(format!("the process view could not be rebuilt {REFRESH_FAILURES} times: {e}"));
                }
                let _ = writeln!(log, "tierkit: warning: rebuilding the process view failed, retrying: {e}");
                return Ok(());
            }
        }
        let Some(source) = self.source.as_mut() else { return Ok(()) };
        let (engine, process) = (self.engine.as_mut(), &self.process);
        if let Some(engine) = engine {
            self.phases.measure(Phase::Policy, || {
                engine.after_refresh(process);
                engine.set_reachable(reachable_tiers(process, &process.resident_by_tier()));
            });
        }
        let engine = self.engine.as_ref();
        let tier_of = |p: Page| match engine {
            Some(e) => e.tier_of(process, p),
            None => process.tier_of(p),
        };
        let events = &mut self.events;
        if let Err(e) = self.phases.measure(Phase::Source, || source.after_refresh(&tier_of, events)) {
            if !self.warned_threads {
                self.warned_threads = true;
                let _ = writeln!(log, "tierkit: warning: some of the target's threads are not sampled: {e}");
            }
        }
        self.measured(Phase::Policy, Self::deliver);
        self.measured(Phase::Moves, |s| s.execute(signals, log));
        Ok(())
    }

    /// Pages promoted and demoted so far (decided, in a dry run; the kernel's, with the
    /// kernel source).
    fn moves(&self) -> (u64, u64) {
        match (&self.engine, self.source.as_ref().and_then(LiveSource::kernel_moves)) {
            (Some(e), _) => (e.totals().promoted, e.totals().demoted),
            (None, Some(k)) => (k.promoted, k.demoted),
            (None, None) => self.kernel_published,
        }
    }

    /// The hit ratio: the source's own (damos), else from the samples.
    fn hit_ratio(&self) -> Option<f64> {
        self.source.as_ref().and_then(LiveSource::hit_ratio).or(self.source_hit).or(self.telemetry.hit_ratio())
    }

    /// The share of the target's resident pages on the fast tier. With a policy the
    /// process view is current: the policy's moves update it. When the kernel moves the
    /// pages nothing updates the view between rebuilds (which may be many seconds apart:
    /// [`REFRESH_COST_SHARE`]), so a spread sample of the pages is located afresh, at most
    /// once per [`USAGE_EVERY`]; once the target is gone, the last sample stands (before
    /// any, the view's).
    fn fast_residency(&mut self) -> Option<f64> {
        if self.engine.is_some() {
            return fast_residency(&self.process.resident_by_tier());
        }
        let now = Instant::now();
        if let Some((at, residency)) = self.sampled_residency {
            if now < at + USAGE_EVERY || self.process.gone() {
                return residency;
            }
        }
        let residency = match self.process.sample_by_tier(RESIDENCY_SAMPLE) {
            Ok(by_tier) => fast_residency(&by_tier),
            Err(_) => match self.sampled_residency {
                Some((_, last)) => last,
                None => fast_residency(&self.process.resident_by_tier()),
            },
        };
        self.sampled_residency = Some((now, residency));
        residency
    }

    /// The residency, hit ratio and self-usage gauges. A residency the kernel's moves
    /// make stale is sampled for the gauge only when the metrics are served.
    fn publish_gauges(&mut self) {
        if self.engine.is_some() || self.cfg.metrics_addr.is_some() {
            let residency = self.fast_residency();
            self.metrics.set_fast_tier_residency(residency);
        }
        self.metrics.set_hit_ratio(self.hit_ratio());
        if let Ok(usage) = SelfUsage::read(&self.cfg.root) {
            self.usage = usage;
            self.metrics.set_self_usage(&usage);
        }
        if let Some(cpu) = self.kdamond.as_ref().and_then(Kdamond::cpu) {
            self.metrics.set_kdamond_cpu(cpu);
        }
    }

    /// Gauges and self usage for the metrics when due; the status line when due.
    fn publish(&mut self, now: Instant, log: &mut dyn Write) {
        if now >= self.next_usage {
            self.next_usage = now + USAGE_EVERY;
            self.publish_gauges();
        }
        let (Some(at), Some(every)) = (self.next_status, self.cfg.status_every) else { return };
        if now < at {
            return;
        }
        self.next_status = Some(now + every);
        if let Ok(usage) = SelfUsage::read(&self.cfg.root) {
            self.usage = usage;
        }
        let (promoted, demoted) = self.moves();
        let fast_residency = self.fast_residency();
        let line = StatusLine {
            elapsed: now - self.started,
            interval: now - self.mark.at,
            samples: self.samples - self.mark.samples,
            lost: self.lost - self.mark.lost,
            promoted_pages: promoted - self.mark.promoted,
            demoted_pages: demoted - self.mark.demoted,
            fast_residency,
            hit_ratio: self.hit_ratio(),
            cpu_percent: self.cpu.update(own_cpu_since(self.started_cpu)),
            rss_bytes: self.usage.rss_bytes,
        };
        self.mark = Mark { at: now, samples: self.samples, lost: self.lost, promoted, demoted };
        let mut text = format_status_line(&line);
        if let Some(k) = self.kdamond.as_mut() {
            if let Some(cpu) = k.cpu() {
                text.push_str(&format!(" | kdamond cpu {:.1}%", k.meter.update(cpu)));
            }
        }
        if self.stretch() > 1 {
            text.push_str(&format!(" | budget: 1 poll in {}", self.stretch()));
        }
        if let Some(note) = self.source.as_ref().and_then(LiveSource::status_note) {
            text.push_str(&format!(" | {note}"));
        }
        let _ = writeln!(log, "tierkit: status {text}");
    }

    /// Stops the source (giving back kernel state) and prints the summary block.
    pub(super) fn finish(mut self, ended: Ended, log: &mut dyn Write) -> Report {
        let (mut kind, mut knobs) = (None, Vec::new());
        // Before the source stops: stopping ends the kdamond thread.
        let kdamond_cpu = self.kdamond.as_ref().and_then(Kdamond::cpu);
        // Where the pages are now, while the target may still be there.
        self.sampled_residency = self.sampled_residency.filter(|_| self.process.gone());
        let fast_residency = self.fast_residency();
        if let Some(mut source) = self.source.take() {
            if source.kind().kernel_moves_pages() {
                source.final_poll(&self.process);
                self.kernel_published = source.kernel_moves().map_or((0, 0), |k| (k.promoted, k.demoted));
                self.source_hit = source.hit_ratio();
            }
            kind = Some(source.kind());
            let stopped = source.stop();
            if let Some(warning) = stopped.warning {
                let _ = writeln!(log, "tierkit: warning: {warning}");
            }
            knobs = stopped.knobs;
        }
        let usage = SelfUsage::read(&self.cfg.root).unwrap_or(self.usage);
        let cpu = own_cpu_since(self.started_cpu);
        let (promoted, demoted) = self.moves();
        let errors = self.process.pacer().counts().by_errno.clone();
        let pid = self.process.pid();
        let summary = Summary {
            elapsed: self.started.elapsed(),
            dry_run: self.cfg.dry_run && self.engine.is_some(),
            samples: self.samples,
            lost: self.lost,
            promoted_pages: promoted,
            promoted_bytes: promoted * PAGE_SIZE,
            demoted_pages: demoted,
            demoted_bytes: demoted * PAGE_SIZE,
            move_errors: errors,
            move_calls: (self.process.pacer().counts().calls, self.process.pacer().counts().pages_sent),
            held_back: self.process.held_back(),
            fast_residency,
            hit_ratio: self.hit_ratio(),
            cpu,
            kdamond_cpu,
            cpu_split: self.phases.split(),
            view_rebuilds: self.view_rebuilds,
            rss_bytes: usage.rss_bytes,
            knobs,
            ending: ending_of(&ended, pid),
        };
        let report = Report {
            changed_knobs: kind == Some(SourceKind::Kernel),
            ended,
            summary,
            source: kind.map(SourceKind::name),
            policy: self.engine.as_ref().map(|e| e.policy_name().to_string()),
            pid,
        };
        let _ = write!(log, "{}", report.render());
        let _ = log.flush();
        report
    }
}

/// The report of a run whose target exited before its loop started; `started_cpu` is
/// tierkit's CPU clock (ns) when the run started.
pub(super) fn empty_report(
    cfg: &DaemonConfig,
    pid: u32,
    ended: Ended,
    (started, started_cpu): (Instant, u64),
) -> Report {
    let usage = SelfUsage::read(&cfg.root).unwrap_or_default();
    let summary = Summary {
        elapsed: started.elapsed(),
        dry_run: cfg.dry_run,
        samples: 0,
        lost: 0,
        promoted_pages: 0,
        promoted_bytes: 0,
        demoted_pages: 0,
        demoted_bytes: 0,
        move_errors: BTreeMap::new(),
        move_calls: (0, 0),
        held_back: HeldBack::default(),
        fast_residency: None,
        hit_ratio: None,
        cpu: own_cpu_since(started_cpu),
        kdamond_cpu: None,
        cpu_split: Vec::new(),
        view_rebuilds: 0,
        rss_bytes: usage.rss_bytes,
        knobs: Vec::new(),
        ending: ending_of(&ended, pid),
    };
    Report { ended, summary, source: None, policy: None, pid, changed_knobs: false }
}
