//! Before the first access: the run's machine configuration and time base, the
//! workload, the subject resolved for its footprint, the machine with its capacities, an
//! oracle's learning pass, the sources, and the initialization touch of every page.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use tierkit_core::policies::PolicySetup;
use tierkit_core::{Driver, Mover, Nanos, MILLISECOND, PAGE_SIZE};

use super::steps::{Budget, Run};
use super::window::{Moves, Window};
use super::{RunSpec, Subject, CHUNK, RUN_BYTES_PER_PAGE, TIMELINE_POINTS};
use crate::acr::AccessCountRatio;
use crate::hot_set::HotSet;
use crate::machine::{capacities, Machine};
use crate::model::AppModel;
use crate::plain_cache::PlainCache;
use crate::reference::{Oracle, Reference, ORACLE_EPOCHS};
use crate::sources::Sources;
use crate::workload::{self, Recorded};
use crate::SimError;
use crate::{budget, catalog};

impl<'s> Run<'s> {
    /// Everything [`Run`] needs before its first chunk; `None` when `stop` was set
    /// during an oracle's learning pass.
    pub(super) fn prepare(
        spec: &'s RunSpec,
        recorded: Option<&Arc<Recorded>>,
        subject: Subject,
        stop: &AtomicBool,
    ) -> Result<Option<Self>, SimError> {
        spec.machine.validate()?;
        let mut cfg = spec.machine.clone();
        if spec.cache_mode {
            cfg.alloc_watermark = 0.0;
        }
        let name = subject.name();
        let wl = workload::open(&spec.workload, recorded)?;
        let clock = if spec.follow_clock { wl.clock() } else { None };
        let scale = match clock {
            Some(c) => {
                cfg.app = AppModel { threads: 1, compute_ns: 0.0, ..cfg.app };
                c.sample_every.max(1)
            }
            None => spec.scale,
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
        let mut machine = Machine::new(&cfg, &caps, pages);
        let fast_fill = caps[0] - (caps[0] as f64 * cfg.alloc_watermark).ceil() as u64;

        let (policy, oracle) = match subject {
            Subject::Policy(p) => (Some(p), None),
            Subject::Reference(Reference::StaticOracle) => {
                match Oracle::learn_static(workload::open(&spec.workload, recorded)?, fast_fill, &cfg, stop)? {
                    Some(o) => (None, Some(o)),
                    None => return Ok(None),
                }
            }
            Subject::Reference(Reference::Oracle) => {
                match Oracle::learn(
                    workload::open(&spec.workload, recorded)?,
                    ORACLE_EPOCHS,
                    fast_fill,
                    &cfg,
                    scale,
                    stop,
                )? {
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
        let request = policy.as_ref().map(|p| p.sources()).unwrap_or_default();
        let sources = Sources::new(&request, cfg.mechanisms, pages, spec.seed)?;
        if !sources.samples_every_access() {
            plain = None;
        }
        let tick = policy.as_ref().map_or(Nanos::MAX, |p| p.tick_interval().max(MILLISECOND / 1000));
        let migration = cfg.migration;
        let budget = Budget {
            pages: migration.batch_pages as f64,
            cap: (migration.max_bytes_per_sec / PAGE_SIZE as f64).max(migration.batch_pages as f64),
        };
        let tracking = policy.as_ref().map_or(0, |p| p.metadata_bytes());
        let driver = policy.map(|p| Driver::new(p, Mover::new(migration.batch_pages as usize, 0)));
        let record_every = total.div_ceil(TIMELINE_POINTS).max(1);
        Ok(Some(Run {
            latency: cfg.tiers.iter().map(|t| t.latency_ns).collect(),
            cfg,
            spec,
            name,
            clock,
            scale,
            time_base,
            wl,
            pages,
            total,
            caps,
            machine,
            driver,
            oracle,
            plain,
            sources,
            shadows,
            tick,
            next_tick: tick,
            budget,
            buf: Vec::with_capacity(CHUNK),
            events: Vec::new(),
            counts: vec![0; tiers],
            classed: [vec![0; tiers], vec![0; tiers]],
            now: 0.0,
            per_access_ns: 10.0,
            tick_window: Window::new(tiers),
            record_window: Window::new(tiers),
            run_window: Window::new(tiers),
            last_tick_at: 0.0,
            timeline: Vec::with_capacity(TIMELINE_POINTS as usize),
            record_every,
            next_record: record_every,
            moves_mark: Moves::default(),
            done: 0,
            tracking,
            misses: 0,
            acr: AccessCountRatio::new(if spec.measure_acr { pages } else { 0 }),
            hot: HotSet::new(pages, spec.measure_hot),
        }))
    }

    /// An oracle places its first epoch; with `prefault`, every page is touched once in
    /// address order (the application's initialization), where the oracle wants it.
    pub(super) fn initialize(&mut self) {
        if let Some(o) = self.oracle.as_mut() {
            o.at(0, &mut self.machine);
        }
        if self.spec.prefault && !self.spec.cache_mode {
            for page in 0..self.pages {
                let fast_ok = self.oracle.as_ref().is_none_or(|o| o.wants_fast(page));
                let t = self.machine.first_touch(page, fast_ok);
                self.sources.on_alloc(page, || self.wl.kind(page), t, &mut self.events);
            }
        }
    }
}
