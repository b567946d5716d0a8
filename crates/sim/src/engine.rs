//! The engine: streams a workload through the machine, the sources and a policy.
//!
//! Per chunk of accesses (4096): each access is placed (first touch), counted per tier
//! and shown to the sources; then the chunk's wall time is solved by the time model
//! ([`crate::model::timing`]) from its per-tier counts plus the migration traffic, CPU
//! and stalls of the tiering work since the previous chunk. The policy then receives the
//! chunk's events, its ticks (every `tick_interval` of simulated time, with per-tier
//! telemetry), and the platform's [`Mover`] executes its plan within the migration rate
//! limit. A timeline records [`TIMELINE_POINTS`] equal slices of the run.

use std::sync::atomic::{AtomicBool, Ordering};

use tierkit_core::policies::PolicySetup;
use tierkit_core::{
    Ctx, Event, Memory, Migration, MoveStatus, Mover, Nanos, Plan, Policy, Telemetry, TierId, TierStats, MILLISECOND,
    PAGE_SIZE,
};

use crate::acr::AccessCountRatio;
use crate::machine::{capacities, Machine};
use crate::model::timing::{solve, Demand};
use crate::model::{AppModel, MachineConfig};
use crate::plain_cache::{ChunkCounts, PlainCache};
use crate::reference::{Oracle, Reference, ORACLE_EPOCHS};
use crate::result::{IntervalRecord, RunResult};
use crate::sources::Sources;
use crate::workload::{self, WorkloadSpec};
use crate::SimError;
use crate::{budget, catalog};

/// Accesses per chunk.
const CHUNK: usize = 4096;
/// Real misses per generated access unless told otherwise (see [`RunSpec::scale`]).
pub const DEFAULT_SCALE: u64 = 1000;
/// Points on a run's timeline.
pub const TIMELINE_POINTS: u64 = 100;
/// Bytes a run keeps per page of its footprint, about: the simulator's per-page arrays
/// (placement 1, hint-fault stamps 8, accessed bits 6, access-count ratio 4, an oracle's
/// counts 5 and its epochs' lists, shadows and write stamps 9 under non-exclusive
/// tiering) and a policy's tables (a page index of 21–43 bytes with a list node or
/// record each, about 100 in all for LRU, LFU or HeMem). A run whose workload's pages
/// need more than the memory available is refused before it allocates them.
pub const RUN_BYTES_PER_PAGE: u64 = 128;

/// What one run simulates.
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// The machine.
    pub machine: MachineConfig,
    /// Fast:slow capacity ratio.
    pub ratio: (u64, u64),
    /// The workload.
    pub workload: WorkloadSpec,
    /// Seed of the sources' randomness (sampling jitter, region sampling).
    pub seed: u64,
    /// Real misses each generated access stands for. A workload stream is a uniform
    /// 1-in-`scale` sample of the application's last-level-cache misses, so a run of
    /// tens of millions of generated accesses spans the seconds to minutes over which
    /// the papers' policies act (1 s aging, 100 ms ticks, minute-long monitoring).
    /// Hit ratios are unaffected; time, bandwidth and throughput count real misses.
    /// A trace with its own clock replaces it when `follow_clock` is set.
    pub scale: u64,
    /// Replay a trace that carries its own clock on that clock: each record stands for
    /// the trace's sample rate of misses, the program's compute between records is its
    /// instructions × `app.ns_per_instruction` on one thread, and `scale` and
    /// `app.compute_ns`/`app.threads` are not used. Off, or for a stream without a clock,
    /// time follows `scale`.
    pub follow_clock: bool,
    /// Touch every page once, in address order, before the measured stream: the
    /// initialization (load phase, memset, graph loading) the papers' applications run
    /// before their measured phase, so first-touch placement follows allocation order
    /// rather than hotness. Not counted as accesses.
    pub prefault: bool,
    /// Run as a plain cache: no prefault, no allocation watermark, and the policy sees
    /// and acts on every event before the next access (pair with a policy that samples
    /// every access, such as `lru-cache`). `miss_ratio` is then the cache's miss ratio,
    /// comparable with a cache simulator's.
    pub cache_mode: bool,
    /// Count every slow-tier access per page to report M5 §4.1's access-count ratio
    /// (costs a random write per slow access, so it is off unless asked for).
    pub measure_acr: bool,
}

impl RunSpec {
    /// `workload` at fast:slow `ratio` on the `cxl` preset with the model's defaults:
    /// seed 1, scale 1000 (a trace's own clock where it has one), prefault on, no cache
    /// mode, no access-count ratio.
    pub fn new(workload: WorkloadSpec, ratio: (u64, u64)) -> Self {
        Self {
            machine: MachineConfig::preset("cxl").expect("a built-in preset"),
            ratio,
            workload,
            seed: 1,
            scale: DEFAULT_SCALE,
            follow_clock: true,
            prefault: true,
            cache_mode: false,
            measure_acr: false,
        }
    }
}

/// Who decides placement.
pub enum Subject {
    /// A policy or reference by name, set up for the workload's footprint once it is
    /// built (see [`crate::catalog`]).
    Named(String),
    /// A tiering policy.
    Policy(Box<dyn Policy>),
    /// A reference placement.
    Reference(Reference),
}

impl Subject {
    /// The name in reports.
    pub fn name(&self) -> String {
        match self {
            Subject::Named(n) => n.clone(),
            Subject::Policy(p) => p.name().to_string(),
            Subject::Reference(r) => r.name().to_string(),
        }
    }
}

/// Per-tier accumulators.
#[derive(Default)]
struct Window {
    accesses: Vec<u64>,
    latency_weighted: Vec<f64>,
    wall_ns: f64,
    cpu_ns: f64,
}

impl Window {
    fn new(tiers: usize) -> Self {
        Self { accesses: vec![0; tiers], latency_weighted: vec![0.0; tiers], ..Default::default() }
    }

    fn add(&mut self, counts: &[u64], latency: &[f64], wall: f64, cpu: f64) {
        for t in 0..counts.len() {
            self.accesses[t] += counts[t];
            self.latency_weighted[t] += counts[t] as f64 * latency[t];
        }
        self.wall_ns += wall;
        self.cpu_ns += cpu;
    }

    fn latency(&self, t: usize, fallback: f64) -> f64 {
        if self.accesses[t] > 0 {
            self.latency_weighted[t] / self.accesses[t] as f64
        } else {
            fallback
        }
    }
}

/// Runs `subject` on `spec`, calling `progress(accesses_done)` after every chunk.
pub fn run(spec: &RunSpec, subject: Subject, progress: &mut dyn FnMut(u64)) -> Result<RunResult, SimError> {
    let never = AtomicBool::new(false);
    Ok(run_until(spec, subject, progress, &never)?.expect("never stopped"))
}

/// [`run`], giving up before the next chunk (of the run, or of the oracles' learning
/// pass) once `stop` is set from another thread, e.g. on Ctrl-C: then `Ok(None)`, with
/// nothing of the run kept.
pub fn run_until(
    spec: &RunSpec,
    subject: Subject,
    progress: &mut dyn FnMut(u64),
    stop: &AtomicBool,
) -> Result<Option<RunResult>, SimError> {
    let cfg = &spec.machine;
    cfg.validate()?;
    let cache_cfg;
    let cfg = if spec.cache_mode {
        cache_cfg = MachineConfig { alloc_watermark: 0.0, ..cfg.clone() };
        &cache_cfg
    } else {
        cfg
    };
    let name = subject.name();
    let mut wl = workload::build(&spec.workload)?;
    let clock = if spec.follow_clock { wl.clock() } else { None };
    let traced_cfg;
    let (cfg, scale) = match clock {
        Some(c) => {
            traced_cfg = MachineConfig { app: AppModel { threads: 1, compute_ns: 0.0, ..cfg.app }, ..cfg.clone() };
            (&traced_cfg, c.sample_every.max(1))
        }
        None => (cfg, spec.scale),
    };
    let time_base = match clock {
        Some(c) => format!(
            "trace clock: {} instructions at {} ns each on 1 thread, 1 record = {} misses",
            c.instructions, cfg.app.ns_per_instruction, scale
        ),
        None => format!(
            "scale: 1 access = {scale} misses, {} ns compute per miss on {} threads",
            cfg.app.compute_ns, cfg.app.threads
        ),
    };
    let pages = wl.pages();
    let input = || format!("workload {}: pages = {pages}", spec.workload.name);
    budget::check(u128::from(pages) * u128::from(RUN_BYTES_PER_PAGE), input, "the run")?;
    let total = wl.len();
    let tiers = cfg.tiers.len();
    if spec.scale == 0 {
        return Err(SimError::bad_option("run", "scale", 0, "at least 1 real miss per generated access"));
    }
    if spec.ratio.0 == 0 {
        let ratio = format!("{}:{}", spec.ratio.0, spec.ratio.1);
        return Err(SimError::bad_option("run", "ratio", ratio, "a fast part of at least 1"));
    }
    let subject = match subject {
        Subject::Named(name) => {
            let fast_pages = capacities(tiers, pages, spec.ratio)[0];
            catalog::subject(&name, &PolicySetup { fast_pages, pages })?
        }
        other => other,
    };
    let ratio = if matches!(subject, Subject::Reference(Reference::AllLocal)) { (1, 0) } else { spec.ratio };
    let mut caps = capacities(tiers, pages, ratio);
    if ratio.1 == 0 {
        // All-local: room for every page above the allocation watermark.
        caps[0] = (pages as f64 / (1.0 - cfg.alloc_watermark)).ceil() as u64 + 1;
    }
    let mut machine = Machine::new(cfg, &caps, pages);
    let fast_fill = caps[0] - (caps[0] as f64 * cfg.alloc_watermark).ceil() as u64;

    let (mut policy, mut oracle) = match subject {
        Subject::Policy(p) => (Some(p), None),
        Subject::Reference(Reference::StaticOracle) => {
            match Oracle::learn_static(&spec.workload, fast_fill, cfg, stop)? {
                Some(o) => (None, Some(o)),
                None => return Ok(None),
            }
        }
        Subject::Reference(Reference::Oracle) => {
            match Oracle::learn(&spec.workload, ORACLE_EPOCHS, fast_fill, cfg, scale, stop)? {
                Some(o) => (None, Some(o)),
                None => return Ok(None),
            }
        }
        Subject::Reference(_) | Subject::Named(_) => (None, None),
    };
    if policy.as_ref().is_some_and(|p| p.non_exclusive()) {
        machine.keep_shadows();
    }
    let shadows = machine.keeps_shadows();
    // lru-cache and clock-cache in cache mode: the same decisions over dense arrays.
    let mut plain = if spec.cache_mode && !shadows { PlainCache::for_policy(&name, pages) } else { None };
    let mut request = policy.as_ref().map(|p| p.sources()).unwrap_or_default();
    let mut sources = Sources::new(&request, cfg.mechanisms, pages, spec.seed)?;
    if !sources.samples_every_access() {
        plain = None;
    }
    let tick = policy.as_ref().map_or(Nanos::MAX, |p| p.tick_interval().max(MILLISECOND / 1000));
    let migration = cfg.migration;
    let mut mover = Mover::new(migration.batch_pages as usize, 0);
    let mut plan = Plan::default();
    let mut moved: Vec<(Migration, MoveStatus)> = Vec::new();
    let mut budget_pages = migration.batch_pages as f64;
    let budget_cap = (migration.max_bytes_per_sec / PAGE_SIZE as f64).max(migration.batch_pages as f64);

    let mut buf = Vec::with_capacity(CHUNK);
    let mut events: Vec<Event> = Vec::new();
    let mut counts = vec![0u64; tiers];
    let mut now = 0f64;
    let mut next_tick = tick;
    let mut per_access_ns = 10.0;
    let mut latency = cfg.tiers.iter().map(|t| t.latency_ns).collect::<Vec<_>>();
    let mut pending_cpu = 0f64;
    let mut pending_stall = 0f64;
    let (mut tick_window, mut record_window, mut run_window) =
        (Window::new(tiers), Window::new(tiers), Window::new(tiers));
    let mut last_tick_at = 0f64;
    let mut timeline = Vec::with_capacity(TIMELINE_POINTS as usize);
    let record_every = total.div_ceil(TIMELINE_POINTS).max(1);
    let mut next_record = record_every;
    let mut done = 0u64;
    let mut tracking = policy.as_ref().map_or(0, |p| p.metadata_bytes());
    let mut promo_mark = (0u64, 0u64, 0u64);
    let mut misses = 0u64;
    let mut acr = AccessCountRatio::new(if spec.measure_acr { pages } else { 0 });

    if let Some(o) = oracle.as_mut() {
        o.at(0, &mut machine);
    }
    if spec.prefault && !spec.cache_mode {
        for page in 0..pages {
            let fast_ok = oracle.as_ref().is_none_or(|o| o.wants_fast(page));
            let t = machine.first_touch(page, fast_ok);
            sources.on_alloc(page, wl.kind(page), t, &mut events);
        }
    }
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        if let Some(o) = oracle.as_mut() {
            o.at(done, &mut machine);
        }
        buf.clear();
        let n = wl.try_fill(&mut buf, CHUNK.min((next_record - done) as usize))?;
        if n == 0 {
            break;
        }
        let instructions = wl.take_instructions();
        counts.fill(0);
        let mut counted = 0u64;
        let mut write_stall = 0f64;
        let t0 = now;
        if let Some(cache) = plain.as_mut() {
            let acr = spec.measure_acr.then_some(&mut acr);
            cache.run(&buf, &mut machine, &mut ChunkCounts { per_tier: &mut counts, misses: &mut misses, acr });
            // The policy samples every access (period 1); the cache saw each itself.
            counted += sources.sampled_all(n as u64);
        } else {
            for (i, a) in buf.iter().enumerate() {
                if let Some(ahead) = buf.get(i + 16) {
                    machine.prefetch(ahead.page);
                }
                let tier = match machine.tier_index(a.page) {
                    Some(t) => t,
                    None => {
                        let t = machine.first_touch(a.page, oracle.as_ref().is_none_or(|o| o.wants_fast(a.page)));
                        sources.on_alloc(a.page, wl.kind(a.page), t, &mut events);
                        misses += (t == 0) as u64; // a first touch of the slow tier is counted below
                        t
                    }
                };
                if shadows && a.write {
                    write_stall += machine.write(a.page, (t0 + i as f64 * per_access_ns) as Nanos);
                }
                counts[tier as usize] += 1;
                misses += (tier != 0) as u64;
                if tier != 0 && spec.measure_acr {
                    acr.slow_access(a.page);
                }
                counted += sources.sampler_counts(tier) as u64;
                sources.on_access(a, tier, (t0 + i as f64 * per_access_ns) as Nanos, &mut events);
                if spec.cache_mode && !events.is_empty() {
                    // A cache acts on every access before the next one.
                    if let Some(p) = policy.as_mut() {
                        p.on_events(&events, &mut Ctx { mem: &machine, plan: &mut plan, sources: &mut request });
                        if !plan.is_empty() {
                            mover.max_pages_per_round = usize::MAX;
                            moved.clear();
                            mover.execute(&mut plan, &mut machine, &mut moved);
                            note_promotions(&moved, &mut acr);
                            p.on_moved(&moved);
                        }
                    }
                    events.clear();
                }
            }
        }
        done += n as u64;

        // Time: this chunk's accesses plus the tiering work since the previous chunk.
        let src = sources.advance((t0 + n as f64 * per_access_ns) as Nanos, &machine, &mut events);
        let (migration_bytes, migration_cpu) = machine.take_costs();
        let cpu = src.cpu_ns + migration_cpu + pending_cpu;
        let demand = Demand {
            accesses: counts.iter().map(|&c| c * scale).collect(),
            migration_bytes,
            stall_ns: src.stall_ns + pending_stall + write_stall,
            mechanism_cpu_ns: cpu,
            compute_ns: if clock.is_some() { instructions as f64 * cfg.app.ns_per_instruction } else { 0.0 },
        };
        (pending_cpu, pending_stall) = (0.0, 0.0);
        let timing = solve(cfg, &demand);
        now += timing.wall_ns;
        per_access_ns = timing.wall_ns / n as f64;
        latency.clone_from(&timing.latency_ns);
        machine.set_now(now as Nanos);
        for w in [&mut tick_window, &mut record_window, &mut run_window] {
            w.add(&demand.accesses, &latency, timing.wall_ns, cpu);
        }
        sources.retune(counted as f64 / timing.wall_ns * 1e9);
        budget_pages =
            (budget_pages + timing.wall_ns * 1e-9 * migration.max_bytes_per_sec / PAGE_SIZE as f64).min(budget_cap);

        if let Some(p) = policy.as_mut() {
            if !events.is_empty() {
                let mut ctx = Ctx { mem: &machine, plan: &mut plan, sources: &mut request };
                p.on_events(&events, &mut ctx);
                events.clear();
            }
            let mut ticked = false;
            while now >= next_tick as f64 {
                ticked = true;
                let t = telemetry(&machine, &tick_window, &latency, now - last_tick_at, next_tick, cfg.app.threads);
                tick_window = Window::new(tiers);
                last_tick_at = now;
                p.on_tick(&t, &mut Ctx { mem: &machine, plan: &mut plan, sources: &mut request });
                next_tick = next_tick.saturating_add(tick);
            }
            // The mover wakes once per tick, or earlier when a full batch is queued.
            let due = ticked || plan.len() >= migration.batch_pages as usize;
            if due && !plan.is_empty() && budget_pages >= 1.0 {
                mover.max_pages_per_round = budget_pages as usize;
                moved.clear();
                mover.execute(&mut plan, &mut machine, &mut moved);
                budget_pages -= moved.len() as f64;
                note_promotions(&moved, &mut acr);
                p.on_moved(&moved);
            }
            sources.reconfigure(&request, counted as f64 / timing.wall_ns * 1e9)?;
            tracking = tracking.max(plain.as_ref().map_or_else(|| p.metadata_bytes(), PlainCache::heap_bytes));
        } else {
            events.clear();
        }

        if done >= next_record || done == total {
            let mark = (machine.promotions, machine.demotions, machine.copied);
            let (p, d, c) = (mark.0 - promo_mark.0, mark.1 - promo_mark.1, mark.2 - promo_mark.2);
            promo_mark = mark;
            let mut point = record(&record_window, &latency, now, p, d, c);
            point.access_count_ratio = acr.close_window();
            timeline.push(point);
            record_window = Window::new(tiers);
            next_record = (next_record + record_every).min(total);
        }
        progress(done);
    }

    let real: u64 = run_window.accesses.iter().sum();
    let accesses = real / scale;
    let wall = run_window.wall_ns.max(1e-9);
    Ok(Some(RunResult {
        workload: spec.workload.name.clone(),
        policy: name,
        machine: cfg.name.clone(),
        ratio: spec.ratio,
        pages,
        workload_pages: spec.workload.pages,
        fast_pages: caps[0],
        accesses,
        scale,
        time_base,
        horizon_ns: policy.as_ref().map_or(0, |p| p.horizon()),
        seed: spec.workload.seed,
        options: spec.workload.options.clone(),
        wall_ns: wall,
        throughput: real as f64 / wall * 1e9,
        fast_hit_ratio: if real > 0 { run_window.accesses[0] as f64 / real as f64 } else { 0.0 },
        miss_ratio: if accesses > 0 { misses as f64 / accesses as f64 } else { 0.0 },
        access_count_ratio: acr.mean(),
        promotions: machine.promotions,
        demotions: machine.demotions,
        migrated_bytes: machine.copied * PAGE_SIZE,
        tracking_bytes: tracking as u64,
        mechanism_cpu_ns: run_window.cpu_ns,
        mechanism_cpu_pct: 100.0 * run_window.cpu_ns / (wall * cfg.app.threads as f64),
        timeline,
    }))
}

/// Tells the access-count ratio which pages reached the fast tier.
fn note_promotions(moved: &[(Migration, MoveStatus)], acr: &mut AccessCountRatio) {
    for &(m, status) in moved {
        if m.to == TierId::FAST && status == MoveStatus::Moved {
            acr.promoted(m.page);
        }
    }
}

/// The tick's telemetry; the application's CPU is its `threads` busy over the interval.
fn telemetry(machine: &Machine, w: &Window, latency: &[f64], interval_ns: f64, now: Nanos, threads: u32) -> Telemetry {
    let secs = (interval_ns * 1e-9).max(1e-12);
    let tiers = (0..w.accesses.len())
        .map(|t| {
            let rate = w.accesses[t] as f64 / secs;
            let lat = w.latency(t, latency[t]);
            TierStats {
                tier: TierId(t as u8),
                accesses: w.accesses[t],
                request_rate: rate,
                // Little's law: outstanding requests = arrival rate x latency.
                occupancy: rate * lat * 1e-9,
                latency_ns: lat,
                free_pages: machine.free_pages(TierId(t as u8)),
                capacity_pages: machine.tiers()[t].capacity_pages,
            }
        })
        .collect();
    let app_cpu_ns = (interval_ns * threads as f64) as u64;
    Telemetry { now, interval: interval_ns as Nanos, tiers, mechanism_cpu_ns: w.cpu_ns as u64, app_cpu_ns }
}

fn record(w: &Window, latency: &[f64], now: f64, promotions: u64, demotions: u64, copied: u64) -> IntervalRecord {
    let accesses: u64 = w.accesses.iter().sum();
    IntervalRecord {
        end_ns: now,
        accesses,
        throughput: if w.wall_ns > 0.0 { accesses as f64 / w.wall_ns * 1e9 } else { 0.0 },
        fast_hit_ratio: if accesses > 0 { w.accesses[0] as f64 / accesses as f64 } else { 0.0 },
        latency_ns: (0..latency.len()).map(|t| w.latency(t, latency[t])).collect(),
        promotions,
        demotions,
        migrated_bytes: copied * PAGE_SIZE,
        access_count_ratio: None,
    }
}
