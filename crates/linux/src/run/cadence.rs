//! How often a run polls DAMON: tierkit's own CPU budget.
//!
//! Each DAMON poll costs tierkit the read of the regions, the samples it makes of them,
//! the policy's counting and the moves the samples lead to. An operator expects the
//! daemon to cost little once the fast tier is full: then what is left is exchanging
//! pages, and with DAMON's coarse regions most exchanges are on noise (see
//! docs/LIVE.md). The *stretch* `s` makes tierkit poll every `s`-th aggregation interval
//! and make `1/s` of the samples, so polling, sample synthesis, counting and the moves
//! they cause all fall about `s`-fold, and so do the rebuilds of the process view. The
//! kernel answers the same question with AutoNUMA's scan period, which grows from
//! `numa_balancing_scan_period_min_ms` towards `…_max_ms` while a task's placement is
//! stable.
//!
//! The controller decides once per window of at least [`WINDOW`] and [`WINDOW_POLLS`]
//! polls, from tierkit's own CPU share of a core over the window (every thread; the
//! kdamond's time is the kernel's and is reported beside it) and the pages moved:
//!
//! - while the fast tier **fills** (at least [`FILL_PAGES`] more pages promoted than
//!   demoted in the window, and at most half as many demoted), full speed: `s = 1`. Filling free fast memory with
//!   sampled pages is the cheapest gain there is, and a new process starts there.
//! - otherwise, while the CPU share `c` exceeds the budget `b`, `s` grows to `s·c/b`
//!   (rounded up; at least doubled, at most [`MAX_STRETCH`]): the share falls about in
//!   proportion, so one window comes close to the budget instead of one doubling per
//!   window (a 1 GiB target at 14% of a core under a 2% budget reached a stretch of 16 in
//!   ~24 s by doubling). `s` halves when twice the share still fits (the policy's own
//!   rule for its sampling rate).
//!
//! Exchanges on a full fast tier (a hot set overtaking lukewarm pages, or a shift of the
//! hot set) go on at the budget's pace. A signal that told useful exchanges from noisy
//! ones would spare the first: the fast tier's share of the samples was tried and is
//! too noisy for it (in the test guest it swung by 5–13 points from one 2 s window to
//! the next while a clustered hot set moved in).

use std::time::{Duration, Instant};

/// The shortest window the controller decides over.
pub const WINDOW: Duration = Duration::from_secs(2);

/// The fewest polls a window holds (at a stretch of 16 and 100 ms aggregations, ~13 s).
pub const WINDOW_POLLS: u32 = 8;

/// The largest stretch: one poll every 16 aggregation intervals (1.6 s at DAMON's default
/// 100 ms), so a new hot set is still sampled every couple of seconds.
pub const MAX_STRETCH: u32 = 16;

/// Promotions beyond demotions in a window that (with at most half as many demotions as
/// promotions) mean the fast tier is filling: 256 pages (1 MiB).
pub const FILL_PAGES: u64 = 256;

/// The default budget: 2% of a core, the live-tiering goal for a 1 GiB target.
pub const DEFAULT_CPU_BUDGET: f64 = 0.02;

/// Counters at the start of a window.
#[derive(Clone, Copy, Debug)]
struct Mark {
    at: Instant,
    cpu: Duration,
    promoted: u64,
    demoted: u64,
}

/// What the controller saw over a window, and what it decided.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decision {
    /// tierkit's CPU over the window, as a share of a core.
    pub cpu_share: f64,
    /// The fast tier was filling.
    pub filling: bool,
    /// The stretch from now on.
    pub stretch: u32,
}

/// The stretch controller; see the module documentation.
#[derive(Clone, Debug)]
pub struct Cadence {
    budget: f64,
    stretch: u32,
    mark: Mark,
    polls: u32,
}

impl Cadence {
    /// A controller holding tierkit to `budget` (a share of one core, > 0), its first
    /// window starting at `now` with tierkit's CPU time `cpu` and `moved` = (promoted,
    /// demoted) pages so far.
    pub fn new(budget: f64, now: Instant, cpu: Duration, moved: (u64, u64)) -> Self {
        Self { budget, stretch: 1, mark: Mark { at: now, cpu, promoted: moved.0, demoted: moved.1 }, polls: 0 }
    }

    /// The current stretch: poll every `stretch`-th aggregation interval.
    pub fn stretch(&self) -> u32 {
        self.stretch
    }

    /// After a poll at `now`, with tierkit's CPU time `cpu` and `moved` = (promoted,
    /// demoted) pages so far: the window's decision when it ends here.
    pub fn after_poll(&mut self, now: Instant, cpu: Duration, moved: (u64, u64)) -> Option<Decision> {
        self.polls += 1;
        let elapsed = now.saturating_duration_since(self.mark.at);
        if self.polls < WINDOW_POLLS || elapsed < WINDOW {
            return None;
        }
        let promoted = moved.0.saturating_sub(self.mark.promoted);
        let demoted = moved.1.saturating_sub(self.mark.demoted);
        let filling = promoted >= demoted + FILL_PAGES && demoted * 2 <= promoted;
        let cpu_share = cpu.saturating_sub(self.mark.cpu).as_secs_f64() / elapsed.as_secs_f64();
        self.stretch = if filling {
            1
        } else if cpu_share > self.budget {
            let proportional = (f64::from(self.stretch) * cpu_share / self.budget).ceil().min(f64::from(MAX_STRETCH));
            (proportional as u32).max(self.stretch * 2).min(MAX_STRETCH)
        } else if cpu_share * 2.0 <= self.budget {
            (self.stretch / 2).max(1)
        } else {
            self.stretch
        };
        self.mark = Mark { at: now, cpu, promoted: moved.0, demoted: moved.1 };
        self.polls = 0;
        Some(Decision { cpu_share, filling, stretch: self.stretch })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives a controller through windows of 20 polls, 100 ms apart.
    struct Drive {
        cadence: Cadence,
        now: Instant,
        cpu: Duration,
        moved: (u64, u64),
    }

    impl Drive {
        fn new(budget: f64) -> Self {
            let now = Instant::now();
            Self { cadence: Cadence::new(budget, now, Duration::ZERO, (0, 0)), now, cpu: Duration::ZERO, moved: (0, 0) }
        }

        /// A window that spends `cpu_ms` of CPU and moves `promoted` and `demoted` pages.
        fn window(&mut self, cpu_ms: u64, promoted: u64, demoted: u64) -> Decision {
            let polls = WINDOW_POLLS + 12;
            let mut decided = None;
            for i in 0..polls {
                self.now += Duration::from_millis(100);
                self.cpu += Duration::from_millis(cpu_ms) / polls;
                if i == 0 {
                    self.moved = (self.moved.0 + promoted, self.moved.1 + demoted);
                }
                if let Some(d) = self.cadence.after_poll(self.now, self.cpu, self.moved) {
                    assert_eq!(i, polls - 1, "a window decides once, at its end (2 s)");
                    decided = Some(d);
                }
            }
            decided.expect("a 2 s window of 20 polls decides")
        }
    }

    #[test]
    fn over_budget_it_stretches_in_proportion_to_the_limit_and_holds() {
        let mut d = Drive::new(0.02);
        // 10% of a core against 2%: five times the budget.
        let first = d.window(200, 500, 500);
        assert!((first.cpu_share - 0.10).abs() < 0.01, "{first:?}");
        assert_eq!(first.stretch, 5);
        // Still 3% (fixed costs): 5 * 1.5, rounded up, is 8, less than a doubling: 10.
        assert_eq!(d.window(60, 500, 500).stretch, 10);
        let mut seen = Vec::new();
        for _ in 0..4 {
            seen.push(d.window(200, 500, 500).stretch);
        }
        assert_eq!(seen, [16, 16, 16, 16]);
    }

    #[test]
    fn slightly_over_budget_it_still_doubles() {
        let mut d = Drive::new(0.02);
        assert_eq!(d.window(42, 0, 0).stretch, 2, "2.1% of a core");
        assert_eq!(d.window(42, 0, 0).stretch, 4);
    }

    #[test]
    fn filling_the_fast_tier_runs_at_full_speed_whatever_it_costs() {
        let mut d = Drive::new(0.02);
        for _ in 0..3 {
            d.window(200, 0, 0);
        }
        assert_eq!(d.cadence.stretch(), 16);
        let fill = d.window(400, 5_000, 100);
        assert!(fill.filling && fill.stretch == 1, "{fill:?}");
        // Too few pages, or as many out as in, is not filling (2.1% of a core: doubling).
        assert_eq!(d.window(42, FILL_PAGES - 1, 0).stretch, 2);
        assert_eq!(d.window(42, FILL_PAGES * 2, FILL_PAGES + 1).stretch, 4);
        assert_eq!(d.window(42, FILL_PAGES * 2, FILL_PAGES).stretch, 1);
        assert_eq!(d.window(42, FILL_PAGES - 1, 0).stretch, 2);
        assert_eq!(d.window(42, 5_000, 2_501).stretch, 4);
        assert_eq!(d.window(42, 5_000, 2_500).stretch, 1);
    }

    #[test]
    fn within_budget_it_relaxes_only_while_twice_the_cost_fits() {
        let mut d = Drive::new(0.02);
        for _ in 0..3 {
            d.window(200, 0, 0);
        }
        assert_eq!(d.cadence.stretch(), 16);
        // 1.5% of a core: within budget, but doubling would not fit.
        assert_eq!(d.window(30, 0, 0).stretch, 16);
        // 0.5%: doubling fits.
        assert_eq!(d.window(10, 0, 0).stretch, 8);
        assert_eq!(d.window(10, 0, 0).stretch, 4);
        assert_eq!(d.window(10, 0, 0).stretch, 2);
        assert_eq!(d.window(10, 0, 0).stretch, 1);
        assert_eq!(d.window(10, 0, 0).stretch, 1, "never below 1");
    }

    #[test]
    fn a_window_needs_both_its_time_and_its_polls() {
        let start = Instant::now();
        let mut c = Cadence::new(0.02, start, Duration::ZERO, (0, 0));
        // Seven polls over 10 s: too few polls.
        for i in 1..WINDOW_POLLS {
            assert_eq!(c.after_poll(start + Duration::from_secs(u64::from(i)), Duration::from_secs(1), (0, 0)), None);
        }
        let d = c.after_poll(start + Duration::from_secs(10), Duration::from_secs(1), (0, 0)).expect("8 polls, 10 s");
        assert!((d.cpu_share - 0.1).abs() < 1e-9 && d.stretch == 5, "{d:?}");
        // Eight quick polls within a second: too short.
        for i in 1..=WINDOW_POLLS {
            let at = start + Duration::from_secs(10) + Duration::from_millis(100 * u64::from(i));
            assert_eq!(c.after_poll(at, Duration::from_secs(1), (0, 0)), None);
        }
    }
}
