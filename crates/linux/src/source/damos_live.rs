//! The `damos` live source: the kernel migrates by itself with DAMOS schemes
//! ([`crate::source::damon::DamosTiering`]); tierkit sets their quotas every
//! [`TUNE_EVERY`] from the fast tier's room and DAMON's access histogram per node
//! ([`crate::source::damon::QuotaTuner`]) and reports what they migrated, from the
//! schemes' `stats`. No tierkit policy runs and nothing is moved from user space.

use std::path::Path;
use std::time::{Duration, Instant};

use tierkit_core::{Memory, TierId, PAGE_SIZE};

use super::damon::{
    memcg, node_ranges::node_ranges, DamonError, DamosOptions, DamosStats, DamosTiering, QuotaTuner, Quotas,
    SchemeStats, TunerInput, TunerParams,
};
use super::live::{KernelMoves, Polled, LIVE_MIN_REGIONS};

/// How often the schemes' stats are read and their quotas set.
pub const TUNE_EVERY: Duration = Duration::from_secs(1);

/// What the user sets of the `damos` source (`tierkit run --damos-*`).
#[derive(Clone, Debug, PartialEq)]
pub struct DamosSettings {
    /// The quota tuner's ceiling and hit goal.
    pub tuner: TunerParams,
    /// The migrations stand still below this much free memory, machine-wide (permil).
    pub min_free_permil: u64,
    /// And above this much (permil; 1000: never).
    pub max_free_permil: u64,
    /// The memory cgroup the migrations are kept to, relative to the cgroup2 mount.
    pub memcg: Option<String>,
}

impl Default for DamosSettings {
    /// The tuner's defaults and [`DamosOptions::new`]'s watermarks; no memory cgroup.
    fn default() -> Self {
        let opts = DamosOptions::new((0, Vec::new()), (1, Vec::new()), 3);
        DamosSettings {
            tuner: TunerParams::default(),
            min_free_permil: opts.min_free_permil,
            max_free_permil: opts.max_free_permil,
            memcg: opts.memcg,
        }
    }
}

/// The `damos` source's state.
pub struct DamosLive {
    tiering: Option<DamosTiering>,
    tuner: QuotaTuner,
    quotas: Quotas,
    /// The stats at the previous read.
    last: DamosStats,
    next_at: Instant,
    hit_ratio: Option<f64>,
}

impl DamosLive {
    /// Starts DAMOS tiering between `fast` and `slow` (node ids) on behalf of `pid`, the
    /// claim recorded in `state_file`, with `settings`. Both migrations start paused; the
    /// first poll sets their quotas.
    pub fn open(
        root: &Path,
        pid: i32,
        (fast, slow): (u32, u32),
        state_file: &Path,
        settings: &DamosSettings,
    ) -> Result<DamosLive, DamonError> {
        let tuner = QuotaTuner::new(settings.tuner).ok_or_else(|| {
            let TunerParams { max_bytes_per_sec, hit_goal } = settings.tuner;
            DamonError::InvalidOptions(format!(
                "quota ceiling {max_bytes_per_sec} B/s and hit goal {hit_goal} (a ceiling above 0, a goal in (0, 1])"
            ))
        })?;
        let mut opts =
            DamosOptions::new((fast, node_ranges(root, fast)?), (slow, node_ranges(root, slow)?), LIVE_MIN_REGIONS);
        opts.state_file = Some(state_file.to_path_buf());
        opts.min_free_permil = settings.min_free_permil;
        opts.max_free_permil = settings.max_free_permil;
        opts.memcg = settings.memcg.as_deref().map(|path| memcg::kernel_path(root, path)).transpose()?;
        let tiering = DamosTiering::start(root, pid, &opts)?;
        let now = Instant::now();
        Ok(DamosLive {
            tiering: Some(tiering),
            tuner,
            quotas: Quotas::default(),
            last: DamosStats::default(),
            next_at: now,
            hit_ratio: None,
        })
    }

    /// One line on what runs.
    pub fn describe(&self) -> String {
        let Some(t) = &self.tiering else { return "damos (stopped)".to_string() };
        let o = t.options();
        let young = if t.young_filter() { "page-precise (young filter)" } else { "whole regions (no young filter)" };
        let scope = match &o.memcg {
            Some(path) => format!("only pages of memory cgroup {path} (memcg filter)"),
            None => "system-wide per node, not only this process".to_string(),
        };
        format!(
            "damos (the kernel migrates: kdamond {} with DAMOS migrate_hot node {} -> {} and migrate_cold node {} -> \
             {} over physical memory (paddr), {scope}; {young}; quotas tuned every {} s)",
            t.kdamond(),
            o.slow_node,
            o.fast_node,
            o.fast_node,
            o.slow_node,
            TUNE_EVERY.as_secs()
        )
    }

    /// The kdamond thread's pid.
    pub fn helper_pid(&self) -> Option<i32> {
        self.tiering.as_ref().and_then(|t| t.kdamond_pid().ok().flatten())
    }

    /// The schemes' migrations so far, in pages.
    pub fn moves(&self) -> KernelMoves {
        KernelMoves {
            promoted: self.last.promote.sz_applied / PAGE_SIZE,
            demoted: self.last.demote.sz_applied / PAGE_SIZE,
        }
    }

    /// The realised hit ratio of the last period (the share of the bytes DAMON found hot,
    /// at the promotion threshold, on the fast node).
    pub fn hit_ratio(&self) -> Option<f64> {
        self.hit_ratio
    }

    /// The quotas and the schemes' applied regions, for the status line.
    pub fn note(&self) -> String {
        let mib = |b: u64| b as f64 / (1 << 20) as f64;
        format!(
            "damos quota promote {:.0} MiB/s (accessed >= {}) demote {:.0} MiB/s (accessed <= {}), regions migrated {}/{}",
            mib(self.quotas.promote),
            self.quotas.hot_min_accesses,
            mib(self.quotas.demote),
            self.quotas.cold_max_accesses,
            self.last.promote.nr_applied,
            self.last.demote.nr_applied
        )
    }

    /// Whether the next [`DamosLive::poll`] tunes: the caller then re-reads free memory
    /// first, so that the room is not a period old.
    pub fn tune_due(&self) -> bool {
        Instant::now() >= self.next_at
    }

    /// Every [`TUNE_EVERY`] (else at once): reads the stats, sets the quotas from the
    /// fast tier's room (`mem`, read afresh by the caller: [`DamosLive::tune_due`]) and
    /// the hit ratio. `samples` counts the hot regions
    /// DAMON saw; `target_gone` means the kdamond is off (someone else turned it off).
    /// `force` reads the stats now (for the summary).
    pub fn poll(&mut self, mem: &dyn Memory, force: bool) -> Result<Polled, DamonError> {
        let now = Instant::now();
        if !force && now < self.next_at {
            return Ok(Polled::default());
        }
        let Some(tiering) = self.tiering.as_mut() else { return Ok(Polled { target_gone: true, ..Polled::default() }) };
        let Some(stats) = tiering.stats()? else { return Ok(Polled { target_gone: true, ..Polled::default() }) };
        let since = |now: &[SchemeStats], then: &[SchemeStats]| -> Vec<u64> {
            let before = |k: usize| then.get(k).map_or(0, |s| s.sz_tried);
            now.iter().enumerate().map(|(k, s)| s.sz_tried.saturating_sub(before(k))).collect()
        };
        let (fast_bytes, slow_bytes) = (since(&stats.fast, &self.last.fast), since(&stats.slow, &self.last.slow));
        // Rung 0 counts every byte of the fast node once per apply interval.
        let fast_size: u64 = tiering.options().fast_ranges.iter().map(|r| r.end - r.start).sum();
        let input = TunerInput {
            fast_room_bytes: mem.free_pages(TierId::FAST) * PAGE_SIZE,
            ladder: tiering.ladder().to_vec(),
            intervals: fast_bytes.first().map_or(0, |b| (b + fast_size / 2) / fast_size.max(1)),
            fast_bytes,
            slow_bytes,
        };
        // The regions found accessed at least once.
        let accessed = |v: &[SchemeStats]| v.get(1).map_or(0, |s| s.nr_tried);
        let samples = (accessed(&stats.fast) + accessed(&stats.slow))
            .saturating_sub(accessed(&self.last.fast) + accessed(&self.last.slow));
        if let Some(tuning) = self.tuner.tune(&input) {
            if tuning.hit_ratio.is_some() {
                self.hit_ratio = tuning.hit_ratio;
            }
            if tuning.quotas != self.quotas && !force {
                // Until the kernel enforces quotas, the quotas in force stay 0 (paused).
                let Some(in_force) = tiering.set_quotas(tuning.quotas)? else {
                    return Ok(Polled { target_gone: true, ..Polled::default() });
                };
                self.quotas = in_force;
            }
        }
        (self.last, self.next_at) = (stats, now + TUNE_EVERY);
        Ok(Polled { samples, ..Polled::default() })
    }

    /// Turns the kdamond off and gives it back.
    pub fn stop(&mut self) -> Option<String> {
        let tiering = self.tiering.take()?;
        tiering.stop().err().map(|e| format!("giving the kdamond back: {e}"))
    }
}
