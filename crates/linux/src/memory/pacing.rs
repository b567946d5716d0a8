//! Pacing of live page moves: `move_pages(2)` batch size, a bandwidth limit, back-off
//! after the destination runs out of memory, and per-errno outcome counts.
//!
//! [`MovePacer`] is pure logic over an injected clock (tierkit [`Nanos`]), so it is
//! unit-tested without a kernel. How it is wired:
//!
//! - [`crate::memory::process::LiveProcess`]'s `migrate` splits whatever it is given into calls of
//!   [`MovePacer::batch_pages`] pages, times each call and reports it with
//!   [`MovePacer::record`], so every `move_pages` call lasts about
//!   [`PacerConfig::target_call`] whatever batch the caller used.
//! - The daemon, before each [`tierkit_core::Mover::execute`] round, sets
//!   `mover.max_pages_per_round = pacer.allowance(now)` with `now` from the live
//!   process's clock ([`tierkit_core::Memory::now`], the clock `migrate` records with):
//!   zero while backing off after
//!   `ENOMEM` or while the bandwidth budget is spent, otherwise the pages the budget
//!   allows. `Mover::batch` can stay large; `migrate` never sleeps.

use std::collections::BTreeMap;

use tierkit_core::{Nanos, MILLISECOND, PAGE_SIZE, SECOND};

/// A pacing parameter out of range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid move pacing {param} = {value}: expected {expected}")]
pub struct PacerError {
    /// The [`PacerConfig`] field.
    pub param: &'static str,
    /// The value given.
    pub value: String,
    /// What would be accepted.
    pub expected: &'static str,
}

/// Pacing parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PacerConfig {
    /// Duration each `move_pages` call should take (20 ms: long enough to amortise the
    /// call, short enough that the target's page faults on moving pages stay brief).
    pub target_call: Nanos,
    /// Pages per call before any call was measured.
    pub start_batch: usize,
    /// Smallest batch.
    pub min_batch: usize,
    /// Largest batch.
    pub max_batch: usize,
    /// Migration bandwidth limit in bytes per second (`None`: unlimited).
    pub bandwidth: Option<u64>,
    /// First back-off after an `ENOMEM` outcome; doubles on each further one.
    pub backoff_start: Nanos,
    /// Longest back-off.
    pub backoff_max: Nanos,
}

impl Default for PacerConfig {
    /// 20 ms calls starting at 512 pages within 64..=16384, unlimited bandwidth, back-off
    /// from 100 ms doubling to 5 s.
    fn default() -> Self {
        Self {
            target_call: 20 * MILLISECOND,
            start_batch: 512,
            min_batch: 64,
            max_batch: 16384,
            bandwidth: None,
            backoff_start: 100 * MILLISECOND,
            backoff_max: 5 * SECOND,
        }
    }
}

/// What one `move_pages` call did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallRecord {
    /// Pages passed to the call (a huge page counts once).
    pub pages: usize,
    /// Pages that moved (a huge page counts once).
    pub moved: usize,
    /// Bytes that moved (2 MiB per huge page).
    pub moved_bytes: u64,
    /// How long the call took.
    pub took: Nanos,
    /// Whether any page failed with `ENOMEM` (destination full).
    pub no_space: bool,
}

/// Everything a [`MovePacer`] counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PacerCounts {
    /// `move_pages` calls recorded.
    pub calls: u64,
    /// Pages passed to those calls (a huge page counts once).
    pub pages_sent: u64,
    /// Base pages moved.
    pub pages_moved: u64,
    /// Bytes moved.
    pub bytes_moved: u64,
    /// Per-page failures by errno (`ENOENT`, `ENOMEM`, `EBUSY`, `EACCES`, …).
    pub by_errno: BTreeMap<i32, u64>,
    /// Whole-call failures by errno (`EPERM`, `ESRCH`, …).
    pub call_errors: BTreeMap<i32, u64>,
    /// Back-offs started after `ENOMEM`.
    pub backoffs: u64,
}

/// Sizes `move_pages` batches, limits bandwidth and backs off when the destination is
/// full. See the module documentation for how the live platform uses it.
#[derive(Clone, Debug)]
pub struct MovePacer {
    cfg: PacerConfig,
    batch: usize,
    /// Call time and pages moved, each halved at every call that moved pages before the
    /// call's own are added: their ratio is the time per page, weighted by pages.
    timed: (f64, f64),
    tokens: f64,
    refilled_at: Option<Nanos>,
    backoff: Nanos,
    backoff_until: Nanos,
    counts: PacerCounts,
}

impl Default for MovePacer {
    /// A pacer with [`PacerConfig::default`].
    fn default() -> Self {
        Self::with_valid(PacerConfig::default())
    }
}

impl MovePacer {
    /// A pacer with `cfg`, refused when a parameter is out of range.
    pub fn new(cfg: PacerConfig) -> Result<Self, PacerError> {
        let err = |param, value: &dyn std::fmt::Display, expected| {
            Err(PacerError { param, value: value.to_string(), expected })
        };
        if cfg.min_batch == 0 || cfg.min_batch > cfg.max_batch {
            return err("min_batch", &cfg.min_batch, "at least 1 and at most max_batch");
        }
        if !(cfg.min_batch..=cfg.max_batch).contains(&cfg.start_batch) {
            return err("start_batch", &cfg.start_batch, "between min_batch and max_batch");
        }
        if cfg.target_call == 0 {
            return err("target_call", &cfg.target_call, "more than 0 ns");
        }
        if cfg.bandwidth == Some(0) {
            return err("bandwidth", &0, "more than 0 bytes/s (or no limit)");
        }
        if cfg.backoff_start == 0 || cfg.backoff_start > cfg.backoff_max {
            return err("backoff_start", &cfg.backoff_start, "more than 0 ns and at most backoff_max");
        }
        Ok(Self::with_valid(cfg))
    }

    fn with_valid(cfg: PacerConfig) -> Self {
        Self {
            batch: cfg.start_batch,
            tokens: Self::burst(&cfg),
            cfg,
            timed: (0.0, 0.0),
            refilled_at: None,
            backoff: 0,
            backoff_until: 0,
            counts: PacerCounts::default(),
        }
    }

    /// The bucket size: 100 ms of bandwidth, at least one huge page.
    fn burst(cfg: &PacerConfig) -> f64 {
        cfg.bandwidth.map_or(f64::INFINITY, |b| (b as f64 / 10.0).max((2 << 20) as f64))
    }

    /// Its parameters.
    pub fn config(&self) -> &PacerConfig {
        &self.cfg
    }

    /// Pages per `move_pages` call.
    pub fn batch_pages(&self) -> usize {
        self.batch
    }

    /// Pages that may be moved now: 0 while backing off or while the bandwidth budget is
    /// spent, `usize::MAX` without a bandwidth limit.
    pub fn allowance(&mut self, now: Nanos) -> usize {
        self.refill(now);
        if now < self.backoff_until {
            return 0;
        }
        if self.tokens.is_infinite() {
            return usize::MAX;
        }
        (self.tokens.max(0.0) / PAGE_SIZE as f64) as usize
    }

    /// When the current back-off ends, if one is running at `now`.
    pub fn backing_off_until(&self, now: Nanos) -> Option<Nanos> {
        (now < self.backoff_until).then_some(self.backoff_until)
    }

    fn refill(&mut self, now: Nanos) {
        if let (Some(rate), Some(at)) = (self.cfg.bandwidth, self.refilled_at) {
            let earned = rate as f64 * now.saturating_sub(at) as f64 / SECOND as f64;
            self.tokens = (self.tokens + earned).min(Self::burst(&self.cfg));
        }
        self.refilled_at = Some(self.refilled_at.map_or(now, |at| at.max(now)));
    }

    /// Records one call made at `now`: spends bandwidth on the bytes moved, adapts the
    /// batch to the measured time per moved page, starts or doubles the back-off on
    /// `ENOMEM` and clears it on a call that moved pages without one.
    pub fn record(&mut self, now: Nanos, call: &CallRecord) {
        self.refill(now);
        self.counts.calls += 1;
        self.counts.pages_sent += call.pages as u64;
        self.counts.pages_moved += call.moved_bytes / PAGE_SIZE;
        self.counts.bytes_moved += call.moved_bytes;
        if self.tokens.is_finite() {
            self.tokens -= call.moved_bytes as f64; // may go into debt: the refill repays it
        }
        // Time goes to the pages that move; a page already in place costs ~100x less. A
        // call of under a quarter batch (the end of a plan) is mostly the call's fixed
        // cost (draining every CPU's page lists, ~1.4 ms under the test guest's
        // emulation): timed per page it would shrink the batch, and smaller batches pay
        // that cost more often. It is left out once a larger call was timed.
        let representative = call.pages * 4 >= self.batch || self.timed.1 == 0.0;
        if call.moved > 0 && representative {
            // Weighted by pages: one slow call cannot shrink the batch to its minimum.
            let (took, moved) = self.timed;
            self.timed = (took / 2.0 + call.took as f64, moved / 2.0 + call.moved as f64);
            let avg = self.timed.0 / self.timed.1;
            let ideal = if avg > 0.0 { self.cfg.target_call as f64 / avg } else { f64::INFINITY };
            self.batch = (ideal.min(self.cfg.max_batch as f64) as usize).clamp(self.cfg.min_batch, self.cfg.max_batch);
        }
        if call.no_space {
            self.backoff = if self.backoff == 0 { self.cfg.backoff_start } else { self.backoff * 2 };
            self.backoff = self.backoff.min(self.cfg.backoff_max);
            self.backoff_until = now + self.backoff;
            self.counts.backoffs += 1;
        } else if call.moved > 0 {
            self.backoff = 0;
            self.backoff_until = 0;
        }
    }

    /// Counts `pages` per-page failures with `errno`.
    pub fn count_errno(&mut self, errno: i32, pages: u64) {
        *self.counts.by_errno.entry(errno).or_default() += pages;
    }

    /// Counts a whole-call failure with `errno`.
    pub fn count_call_error(&mut self, errno: i32) {
        *self.counts.call_errors.entry(errno).or_default() += 1;
    }

    /// Everything counted so far.
    pub fn counts(&self) -> &PacerCounts {
        &self.counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(pages: usize, moved: usize, took_ms: u64) -> CallRecord {
        CallRecord { pages, moved, moved_bytes: moved as u64 * PAGE_SIZE, took: took_ms * MILLISECOND, no_space: false }
    }

    #[test]
    fn batches_converge_to_the_target_call_time_within_bounds() {
        let mut p = MovePacer::default();
        assert_eq!(p.batch_pages(), 512);
        // 512 pages in 40 ms: 78 us/page, so 20 ms is 256 pages.
        p.record(0, &call(512, 512, 40));
        assert_eq!(p.batch_pages(), 256);
        // Faster calls grow it; the average (half the past, weighted by pages) smooths the jump.
        p.record(0, &call(256, 256, 2));
        assert_eq!(p.batch_pages(), (20e6 / (22e6 / 512.0)) as usize);
        for _ in 0..30 {
            let n = p.batch_pages();
            p.record(0, &call(n, n, 0));
        }
        assert_eq!(p.batch_pages(), 16384, "clamped at max_batch");
        for _ in 0..30 {
            let n = p.batch_pages();
            p.record(0, &call(n, n, 1000));
        }
        assert_eq!(p.batch_pages(), 64, "clamped at min_batch");
        // Calls where nothing moved say nothing about the cost of moving.
        p.record(0, &call(64, 0, 0));
        assert_eq!(p.batch_pages(), 64);
    }

    #[test]
    fn calls_of_under_a_quarter_batch_are_not_timed_and_larger_ones_by_pages() {
        let mut p = MovePacer::default();
        for _ in 0..10 {
            p.record(0, &call(500, 500, 20)); // 40 us a page: 500-page calls
        }
        assert_eq!(p.batch_pages(), 500);
        p.record(0, &call(5, 5, 20)); // 4 ms a page, for 5 pages: the call's fixed cost
        assert_eq!(p.batch_pages(), 500, "a call of under a quarter batch is not timed");
        p.record(0, &call(200, 200, 16)); // 80 us a page over 200 pages: timed
        assert!((300..450).contains(&p.batch_pages()), "{}", p.batch_pages());
    }

    #[test]
    fn bandwidth_is_a_token_bucket() {
        let cfg = PacerConfig { bandwidth: Some(100 << 20), ..PacerConfig::default() };
        let mut p = MovePacer::new(cfg).unwrap();
        // 100 MiB/s: 10 MiB burst = 2560 pages.
        assert_eq!(p.allowance(0), 2560);
        p.record(0, &call(2560, 2560, 20));
        assert_eq!(p.allowance(0), 0);
        assert_eq!(p.allowance(50 * MILLISECOND), 1280, "5 MiB earned in 50 ms");
        // Debt is repaid before anything is allowed again.
        p.record(50 * MILLISECOND, &call(4000, 4000, 20));
        assert_eq!(p.allowance(100 * MILLISECOND), 0);
        assert_eq!(p.allowance(SECOND), 2560, "never more than the burst");
        assert_eq!(MovePacer::default().allowance(0), usize::MAX);
    }

    #[test]
    fn enomem_backs_off_exponentially_and_success_resets() {
        let mut p = MovePacer::default();
        let full = CallRecord { pages: 10, no_space: true, ..CallRecord::default() };
        p.record(0, &full);
        assert_eq!(p.backing_off_until(0), Some(100 * MILLISECOND));
        assert_eq!(p.allowance(99 * MILLISECOND), 0);
        assert_eq!(p.allowance(100 * MILLISECOND), usize::MAX);
        let mut until = 0;
        for _ in 0..10 {
            p.record(until, &full);
            until = p.backing_off_until(until).unwrap();
        }
        p.record(until, &full);
        assert_eq!(p.backing_off_until(until), Some(until + 5 * SECOND), "capped at backoff_max");
        assert_eq!(p.counts().backoffs, 12);
        // A call that moves pages without ENOMEM ends the back-off.
        p.record(until, &call(10, 10, 1));
        assert_eq!(p.backing_off_until(until), None);
        p.record(until, &full);
        assert_eq!(p.backing_off_until(until), Some(until + 100 * MILLISECOND), "starts over");
    }

    #[test]
    fn counts_and_validation() {
        let mut p = MovePacer::default();
        p.count_errno(libc::ENOENT, 3);
        p.count_errno(libc::ENOENT, 2);
        p.count_call_error(libc::EPERM);
        p.record(0, &call(8, 8, 1));
        assert_eq!(p.counts().by_errno[&libc::ENOENT], 5);
        assert_eq!(p.counts().call_errors[&libc::EPERM], 1);
        assert_eq!((p.counts().calls, p.counts().bytes_moved), (1, 8 * 4096));
        let bad = |cfg: PacerConfig| MovePacer::new(cfg).unwrap_err().param;
        assert_eq!(bad(PacerConfig { min_batch: 0, ..Default::default() }), "min_batch");
        assert_eq!(bad(PacerConfig { start_batch: 1 << 20, ..Default::default() }), "start_batch");
        assert_eq!(bad(PacerConfig { bandwidth: Some(0), ..Default::default() }), "bandwidth");
        assert_eq!(bad(PacerConfig { backoff_start: 10 * SECOND, ..Default::default() }), "backoff_start");
        assert_eq!(bad(PacerConfig { target_call: 0, ..Default::default() }), "target_call");
    }
}
