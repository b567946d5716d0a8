//! A run in progress and its steps, in the order [`super::run_until`] calls them per
//! chunk: [`Run::fill`] the chunk, place and count its [`Run::accesses`], solve its
//! [`Run::time`], [`Run::drive`] the policy, and [`Run::record`] the timeline.

use tierkit_core::{Driver, Event, Migration, MoveStatus, Nanos, TierId, PAGE_SIZE};

use super::window::{Moves, Window};
use super::{RunSpec, CHUNK};
use crate::acr::AccessCountRatio;
use crate::hot_set::HotSet;
use crate::machine::Machine;
use crate::model::timing::{solve, stall_ns, Demand};
use crate::model::{MachineConfig, MlpClass};
use crate::plain_cache::{ChunkCounts, PlainCache};
use crate::reference::Oracle;
use crate::result::{IntervalRecord, RunResult};
use crate::sources::Sources;
use crate::trace::TraceClock;
use crate::workload::{Access, Workload};
use crate::SimError;

/// Pages the mover may still migrate: refilled at the machine's migration bandwidth,
/// capped at a second's worth (at least one batch).
pub(super) struct Budget {
    pub(super) pages: f64,
    pub(super) cap: f64,
}

/// One run from its first chunk to its result.
pub(super) struct Run<'s> {
    pub(super) spec: &'s RunSpec,
    /// The machine as this run models it (cache mode and a trace's clock adjust the spec's).
    pub(super) cfg: MachineConfig,
    pub(super) name: String,
    pub(super) clock: Option<TraceClock>,
    /// Real misses per access.
    pub(super) scale: u64,
    pub(super) time_base: String,
    pub(super) wl: Box<dyn Workload>,
    pub(super) pages: u64,
    pub(super) total: u64,
    pub(super) caps: Vec<u64>,
    pub(super) machine: Machine,
    pub(super) driver: Option<Driver>,
    pub(super) oracle: Option<Oracle>,
    pub(super) plain: Option<PlainCache>,
    pub(super) sources: Sources,
    /// Non-exclusive tiering: writes to shadowed pages are tracked.
    pub(super) shadows: bool,
    pub(super) tick: Nanos,
    pub(super) next_tick: Nanos,
    pub(super) budget: Budget,
    pub(super) buf: Vec<Access>,
    pub(super) events: Vec<Event>,
    /// The chunk's accesses per tier.
    pub(super) counts: Vec<u64>,
    /// Of those, the accesses of [`MlpClass::Dependent`] and of [`MlpClass::Streaming`]
    /// per tier.
    pub(super) classed: [Vec<u64>; 2],
    /// Simulated time, ns.
    pub(super) now: f64,
    /// The previous chunk's wall time per access: spaces this chunk's event times.
    pub(super) per_access_ns: f64,
    /// The previous chunk's loaded latency per tier.
    pub(super) latency: Vec<f64>,
    pub(super) tick_window: Window,
    pub(super) record_window: Window,
    pub(super) run_window: Window,
    pub(super) last_tick_at: f64,
    pub(super) timeline: Vec<IntervalRecord>,
    pub(super) record_every: u64,
    pub(super) next_record: u64,
    pub(super) moves_mark: Moves,
    /// Accesses done.
    pub(super) done: u64,
    pub(super) tracking: usize,
    pub(super) misses: u64,
    pub(super) acr: AccessCountRatio,
    pub(super) hot: HotSet,
}

/// What one chunk did before its time is solved.
pub(super) struct Chunk {
    /// Accesses in it.
    n: usize,
    /// Simulated time at its start.
    t0: f64,
    /// Instructions the traced program retired over it.
    instructions: u64,
    /// Accesses the sampler counted (the rate it tunes its period by).
    counted: u64,
    /// Time writes to shadowed pages stalled the application.
    write_stall: f64,
}

impl Run<'_> {
    /// The next chunk, up to the next timeline point; `None` at the end of the workload.
    pub(super) fn fill(&mut self) -> Result<Option<Chunk>, SimError> {
        if let Some(o) = self.oracle.as_mut() {
            o.at(self.done, &mut self.machine);
        }
        self.buf.clear();
        let max = CHUNK.min((self.next_record - self.done) as usize);
        let n = self.wl.fill_prefetching(&mut self.buf, max, self.machine.placement());
        if let Some(e) = self.wl.take_error() {
            return Err(e);
        }
        if n == 0 {
            return Ok(None);
        }
        let instructions = self.wl.take_instructions();
        self.counts.fill(0);
        self.classed.iter_mut().for_each(|c| c.fill(0));
        Ok(Some(Chunk { n, t0: self.now, instructions, counted: 0, write_stall: 0.0 }))
    }

    /// Places (first touch) and counts the chunk's accesses per tier and shows each to
    /// the sources; a cache acts on every access before the next one.
    pub(super) fn accesses(&mut self, chunk: &mut Chunk) {
        let (t0, spacing) = (chunk.t0, self.per_access_ns);
        if let Some(cache) = self.plain.as_mut() {
            let acr = self.spec.measure_acr.then_some(&mut self.acr);
            let counts = &mut ChunkCounts {
                per_tier: &mut self.counts,
                classed: &mut self.classed,
                misses: &mut self.misses,
                acr,
            };
            cache.run(&self.buf, &mut self.machine, counts);
            // The policy samples every access (period 1); the cache saw each itself.
            chunk.counted += self.sources.sampled_all(chunk.n as u64);
        } else if self.watched() {
            let buf = std::mem::take(&mut self.buf);
            let clock = |i: usize| move || (t0 + i as f64 * spacing) as Nanos;
            for (i, a) in buf.iter().enumerate() {
                if let Some(ahead) = buf.get(i + 16) {
                    self.machine.prefetch(ahead.page);
                    self.sources.prefetch(ahead.page);
                }
                let tier = self.place(a);
                if self.shadows && a.write {
                    chunk.write_stall += self.machine.write(a.page, clock(i)());
                }
                if tier != 0 && self.spec.measure_acr {
                    self.acr.slow_access(a.page);
                }
                if self.spec.measure_hot {
                    self.hot.access(a.page);
                }
                chunk.counted += self.sources.sampler_counts(tier) as u64;
                self.sources.on_access(a, tier, clock(i), &mut self.events);
                if self.spec.cache_mode && !self.events.is_empty() {
                    if let Some(d) = self.driver.as_mut() {
                        d.on_events(&self.events, &self.machine);
                        d.execute(&mut self.machine, usize::MAX);
                        note_promotions(d.moved(), &mut self.acr);
                    }
                    self.events.clear();
                }
            }
            self.buf = buf;
        } else {
            // Nothing watches the accesses (`none`, a reference): place and count only.
            let buf = std::mem::take(&mut self.buf);
            for (i, a) in buf.iter().enumerate() {
                if let Some(ahead) = buf.get(i + 16) {
                    self.machine.prefetch(ahead.page);
                }
                self.place(a);
            }
            self.buf = buf;
        }
        self.done += chunk.n as u64;
    }

    /// Whether anything but the per-tier counts looks at each access: a source, the
    /// shadows' write tracking, the access-count ratio, the hot set, or a cache-mode
    /// policy acting before the next access.
    fn watched(&self) -> bool {
        !self.sources.watch_nothing()
            || self.shadows
            || self.spec.measure_acr
            || self.spec.measure_hot
            || self.spec.cache_mode
    }

    /// The tier serving access `a` (placing its page on first touch) after counting it.
    #[inline(always)]
    fn place(&mut self, a: &Access) -> u8 {
        let tier = match self.machine.tier_index(a.page) {
            Some(t) => t,
            None => {
                let fast_ok = self.oracle.as_ref().is_none_or(|o| o.wants_fast(a.page));
                let t = self.machine.first_touch(a.page, fast_ok);
                self.sources.on_alloc(a.page, || self.wl.kind(a.page), t, &mut self.events);
                self.misses += (t == 0) as u64; // a first touch of the slow tier is counted below
                t
            }
        };
        self.counts[tier as usize] += 1;
        a.class.count(&mut self.classed, tier as usize);
        self.misses += (tier != 0) as u64;
        tier
    }

    /// Solves the chunk's wall time from its per-tier counts plus the tiering work since
    /// the previous chunk, advances the clock and the windows, retunes the sampler and
    /// refills the migration budget. Returns the chunk's wall time, ns.
    pub(super) fn time(&mut self, chunk: &Chunk) -> f64 {
        let n = chunk.n as f64;
        let src = self.sources.advance((chunk.t0 + n * self.per_access_ns) as Nanos, &self.machine, &mut self.events);
        let (migration_bytes, migration_cpu) = self.machine.take_costs();
        let cpu = src.cpu_ns + migration_cpu;
        let app = &self.cfg.app;
        let real = |counts: &[u64]| counts.iter().map(|&c| c * self.scale).collect();
        let demand = Demand {
            accesses: real(&self.counts),
            dependent: real(&self.classed[0]),
            streaming: real(&self.classed[1]),
            migration_bytes,
            stall_ns: src.stall_ns + chunk.write_stall,
            mechanism_cpu_ns: cpu,
            compute_ns: if self.clock.is_some() { chunk.instructions as f64 * app.ns_per_instruction } else { 0.0 },
        };
        let timing = solve(&self.cfg, &demand);
        let wall = timing.wall_ns;
        self.now += wall;
        self.per_access_ns = wall / n;
        self.latency.clone_from(&timing.latency_ns);
        self.machine.set_now(self.now as Nanos);
        let stall = stall_ns(&self.cfg, &demand, &self.latency);
        for w in [&mut self.tick_window, &mut self.record_window, &mut self.run_window] {
            w.add(&demand.accesses, &self.latency, wall, cpu, stall);
        }
        let mlp = [MlpClass::Default, MlpClass::Dependent, MlpClass::Streaming].map(|c| app.mlp_of(c));
        self.sources.set_stalls(&self.latency, mlp);
        self.sources.retune(chunk.counted as f64 / wall * 1e9);
        let bytes_per_sec = self.cfg.migration.max_bytes_per_sec;
        self.budget.pages = (self.budget.pages + wall * 1e-9 * bytes_per_sec / PAGE_SIZE as f64).min(self.budget.cap);
        wall
    }

    /// Hands the chunk's events to the policy, runs its ticks that fell due, and lets the
    /// mover execute its plan within the migration budget: once per tick, or earlier
    /// when a full batch is queued. Then the sources follow the policy's request.
    pub(super) fn drive(&mut self, chunk: &Chunk, wall: f64) -> Result<(), SimError> {
        let Some(d) = self.driver.as_mut() else {
            self.events.clear();
            return Ok(());
        };
        d.on_events(&self.events, &self.machine);
        self.events.clear();
        let mut ticked = false;
        while self.now >= self.next_tick as f64 {
            ticked = true;
            let interval = self.now - self.last_tick_at;
            let t = self.tick_window.telemetry(
                &self.machine,
                &self.latency,
                interval,
                self.next_tick,
                self.cfg.app.threads,
            );
            self.tick_window = Window::new(self.counts.len());
            self.last_tick_at = self.now;
            d.on_tick(&t, &self.machine);
            self.next_tick = self.next_tick.saturating_add(self.tick);
        }
        let due = ticked || d.queued() >= self.cfg.migration.batch_pages as usize;
        if due && d.queued() > 0 && self.budget.pages >= 1.0 {
            let round = d.execute(&mut self.machine, self.budget.pages as usize);
            self.budget.pages -= round.attempted as f64;
            note_promotions(d.moved(), &mut self.acr);
        }
        self.sources.reconfigure(d.sources(), chunk.counted as f64 / wall * 1e9)?;
        let bytes = self.plain.as_ref().map_or_else(|| d.policy().metadata_bytes(), PlainCache::heap_bytes);
        self.tracking = self.tracking.max(bytes);
        Ok(())
    }

    /// Closes the timeline's slice when its share of the workload is done.
    pub(super) fn record(&mut self) {
        if self.done < self.next_record && self.done != self.total {
            return;
        }
        let mark = Moves::of(&self.machine);
        let mut point = self.record_window.point(&self.latency, self.now, mark.since(self.moves_mark));
        self.moves_mark = mark;
        point.access_count_ratio = self.acr.close_window();
        self.timeline.push(point);
        self.record_window = Window::new(self.counts.len());
        self.next_record = (self.next_record + self.record_every).min(self.total);
    }

    /// The run's result.
    pub(super) fn finish(self) -> RunResult {
        let accesses_per_tier = self.run_window.accesses();
        let real: u64 = accesses_per_tier.iter().sum();
        let accesses = real / self.scale;
        let wall = self.run_window.wall_ns.max(1e-9);
        let cpu_ns = self.run_window.cpu_ns;
        RunResult {
            workload: self.spec.workload.name.clone(),
            policy: self.name,
            machine: self.cfg.name.clone(),
            ratio: self.spec.ratio,
            pages: self.pages,
            workload_pages: self.spec.workload.pages,
            fast_pages: self.caps[0],
            accesses,
            scale: self.scale,
            time_base: self.time_base,
            horizon_ns: self.driver.as_ref().map_or(0, |d| d.policy().horizon()),
            seed: self.spec.workload.seed,
            options: self.spec.workload.options.clone(),
            wall_ns: wall,
            throughput: real as f64 / wall * 1e9,
            fast_hit_ratio: if real > 0 { accesses_per_tier[0] as f64 / real as f64 } else { 0.0 },
            miss_ratio: if accesses > 0 { self.misses as f64 / accesses as f64 } else { 0.0 },
            access_count_ratio: self.acr.mean(),
            hot_fast_residency: self.hot.fast_share(self.caps[0], |p| self.machine.tier_index(p) == Some(0)),
            promotions: self.machine.promotions,
            demotions: self.machine.demotions,
            migrated_bytes: self.machine.copied * PAGE_SIZE,
            tracking_bytes: self.tracking as u64,
            mechanism_cpu_ns: cpu_ns,
            mechanism_cpu_pct: 100.0 * cpu_ns / (wall * self.cfg.app.threads as f64),
            timeline: self.timeline,
        }
    }
}

/// Tells the access-count ratio which pages reached the fast tier.
fn note_promotions(moved: &[(Migration, MoveStatus)], acr: &mut AccessCountRatio) {
    for &(m, status) in moved {
        if m.to == TierId::FAST && status == MoveStatus::Moved {
            acr.promoted(m.page);
        }
    }
}
