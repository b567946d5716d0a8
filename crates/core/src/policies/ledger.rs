//! A benefit ledger: what a policy's migrations earned, measured, and how many it may
//! make per tick as a result.
//!
//! Every sample that finds a recently promoted page in the fast tier is an access the
//! promotion saved; every sample that finds a recently demoted page in the slow tier is an
//! access the demotion cost (M5 §4.1 judges promotions by the accesses the promoted pages
//! then receive). Promotions answer for the demotions that made their room, not for
//! those that keep free headroom: when more pages were demoted than promoted, the
//! demotions' losses count in the share promotions / demotions. A move is "recent" for [`LedgerParams::memory_ticks`] ticks. Each
//! sample stands for the real accesses the platform says a sample stands for; each move
//! costs the accesses that amortize one migration (M5 §7.2) — or, where the platform
//! measures latencies and the mechanism's CPU, everything is valued in the application's
//! time: a sample saves or costs its accesses × the latency gap between the tiers over
//! the misses in flight, and the mechanism's measured CPU (sampling included) is the
//! cost — booked
//! [`LedgerParams::settle_ticks`] after the move, once its effect had time to show. The
//! balance decays by half every `memory_ticks`, so it weighs what the policy did lately.
//!
//! The allowance of promotions per tick follows the balance, as TCP's window follows
//! loss (Jacobson 1988): while the balance is negative the allowance halves (never below
//! `floor`); while it is positive and the allowance was used up, it doubles (never above
//! `ceiling`). A positive balance may open the allowance at any tick; a negative one
//! closes it only `settle_ticks` after the last opening (and after the start), so that the
//! moves made under the larger allowance show their effect first; after a decrease it
//! judges again at the next tick, as harm should be cut short. A policy whose migrations do
//! harm thus slows to a trickle within a few ticks, and one whose migrations pay keeps
//! its full rate, with no threshold tuned to a workload.

use crate::sketches::PageTable;
use crate::types::Page;

/// Parameters of a [`Ledger`].
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct LedgerParams {
    /// Ticks a move stays on the books, and the balance's half-life: 20 (2 s at 100 ms
    /// ticks, two FreqTier aging periods on a busy tier).
    pub memory_ticks: u32,
    /// Ticks between a move and the booking of its cost, and between two changes of the
    /// allowance: 5 (half a second at 100 ms ticks). Judged at once, a burst of moves
    /// would always look harmful: the pages it demoted are missed at once, while the
    /// pages it promoted earn their hits over the next ticks.
    pub settle_ticks: u32,
    /// Promotions per tick at most, as a share of the fast tier's hot capacity: all of
    /// it (no limit while moves pay).
    pub ceiling_share: f64,
    /// Promotions per tick at first, as a share of the ceiling: 1/16, a slow start as
    /// TCP's (Jacobson 1988): moves that do harm cost little before the first judgement,
    /// and moves that pay open the allowance to the ceiling within four ticks.
    pub start_share: f64,
    /// The fewest promotions per tick, as a share of the ceiling: 1/256. Never zero: a
    /// policy that stops moving cannot measure what a move would earn.
    pub floor_share: f64,
}

impl Default for LedgerParams {
    fn default() -> Self {
        Self {
            memory_ticks: 20,
            settle_ticks: 5,
            ceiling_share: 1.0,
            start_share: 1.0 / 16.0,
            floor_share: 1.0 / 256.0,
        }
    }
}

/// What a tick cost, in the unit the samples are valued in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cost {
    /// This much per move promotions answer for (each promotion and as many demotions).
    PerMove(f64),
    /// This much in all: the mechanism's measured cost (sampling, scans, migrations).
    Measured(f64),
}

/// The ledger; see the module documentation.
#[derive(Clone, Debug)]
pub struct Ledger {
    params: LedgerParams,
    /// Per recently moved page: `tick << 1 | promoted`.
    moved: PageTable,
    tick: u32,
    /// Decaying sums, in real accesses.
    gained: f64,
    lost: f64,
    cost: f64,
    /// Samples of moved pages since the last tick: (gained, lost).
    fresh: (u64, u64),
    /// Costs of the last `settle_ticks` ticks, oldest first, not yet booked.
    unbooked: std::collections::VecDeque<f64>,
    /// Promotions and demotions since the last tick, and their decaying sums.
    moves: (u64, u64),
    promoted: f64,
    demoted: f64,
    promoted_this_tick: u64,
    allowance: u64,
    /// Ticks since the allowance last changed (or since the start).
    held: u32,
    ceiling: u64,
    floor: u64,
}

impl Ledger {
    /// A ledger for a fast tier whose hot set may hold `hot_capacity` pages.
    pub fn new(params: LedgerParams, hot_capacity: u64) -> Self {
        let ceiling = ((hot_capacity as f64 * params.ceiling_share) as u64).max(1);
        let floor = ((ceiling as f64 * params.floor_share) as u64).max(1);
        Self {
            params,
            moved: PageTable::new(),
            tick: 0,
            gained: 0.0,
            lost: 0.0,
            cost: 0.0,
            fresh: (0, 0),
            unbooked: std::collections::VecDeque::new(),
            moves: (0, 0),
            promoted: 0.0,
            demoted: 0.0,
            promoted_this_tick: 0,
            allowance: ((ceiling as f64 * params.start_share) as u64).clamp(floor, ceiling),
            held: 0,
            ceiling,
            floor,
        }
    }

    /// Promotions the policy may still queue this tick.
    pub fn may_promote(&self) -> u64 {
        self.allowance.saturating_sub(self.promoted_this_tick)
    }

    /// The allowance per tick now.
    pub fn allowance(&self) -> u64 {
        self.allowance
    }

    /// Whether moves pay now: the balance is positive, or the ledger is too young to
    /// judge. A ledger that saw no move at all, or moves that did harm, says no: the
    /// policy's sampling then buys nothing.
    pub fn pays(&self) -> bool {
        self.tick <= self.params.settle_ticks || self.balance() > 0.0
    }

    /// The net balance in real accesses: saved by promotions, less lost by the
    /// demotions that made their room, less the moves' cost.
    pub fn balance(&self) -> f64 {
        let share = if self.demoted > self.promoted { self.promoted / self.demoted } else { 1.0 };
        self.gained - self.lost * share - self.cost
    }

    /// A promotion was queued.
    pub fn queued_promotion(&mut self) {
        self.promoted_this_tick += 1;
    }

    /// `page` moved: into the fast tier when `promoted`.
    pub fn moved(&mut self, page: Page, promoted: bool) {
        *self.moved.entry(page, 0) = (self.tick << 1) | promoted as u32;
        if promoted {
            self.moves.0 += 1;
        } else {
            self.moves.1 += 1;
        }
    }

    /// Starts loading what [`Self::sample`] will read for `page`.
    #[inline]
    pub fn prefetch(&self, page: Page) {
        self.moved.prefetch(page);
    }

    /// A sample found `page` in the fast tier (`fast`) or not.
    #[inline]
    pub fn sample(&mut self, page: Page, fast: bool) {
        let Some(mark) = self.moved.get(page) else { return };
        if self.tick.saturating_sub(mark >> 1) > self.params.memory_ticks {
            return;
        }
        match (mark & 1 == 1, fast) {
            (true, true) => self.fresh.0 += 1,
            (false, false) => self.fresh.1 += 1,
            _ => {}
        }
    }

    /// Closes a tick: books each sample of a moved page at `value_per_sample` and the
    /// tick's `cost`, then sets the next tick's allowance.
    pub fn tick(&mut self, value_per_sample: f64, cost: Cost) {
        let keep = 0.5f64.powf(1.0 / f64::from(self.params.memory_ticks.max(1)));
        self.gained = self.gained * keep + self.fresh.0 as f64 * value_per_sample;
        self.lost = self.lost * keep + self.fresh.1 as f64 * value_per_sample;
        let (p, d) = self.moves;
        self.promoted = self.promoted * keep + p as f64;
        self.demoted = self.demoted * keep + d as f64;
        self.unbooked.push_back(match cost {
            // The moves promotions answer for: themselves and as many demotions.
            Cost::PerMove(each) => (p + p.min(d)) as f64 * each,
            Cost::Measured(amount) => amount,
        });
        let due = if self.unbooked.len() > self.params.settle_ticks as usize {
            self.unbooked.pop_front().unwrap_or(0.0)
        } else {
            0.0
        };
        self.cost = self.cost * keep + due;
        let used = self.promoted_this_tick >= self.allowance;
        let before = self.allowance;
        self.held += 1;
        if used && self.balance() > 0.0 {
            self.allowance = (self.allowance * 2).min(self.ceiling);
        } else if self.balance() < 0.0 && self.held > self.params.settle_ticks {
            self.allowance = (self.allowance / 2).max(self.floor);
        }
        if self.allowance > before {
            self.held = 0;
        }
        self.fresh = (0, 0);
        self.moves = (0, 0);
        self.promoted_this_tick = 0;
        self.tick += 1;
        if self.moved.len() > 4 * self.ceiling.max(1024) as usize
            && self.tick.is_multiple_of(self.params.memory_ticks.max(1))
        {
            self.forget_old();
        }
    }

    /// Drops the marks of moves older than the memory.
    fn forget_old(&mut self) {
        let (now, memory) = (self.tick, self.params.memory_ticks);
        let mut kept = PageTable::new();
        for (page, mark) in self.moved.iter() {
            if now.saturating_sub(mark >> 1) <= memory {
                *kept.entry(page, 0) = mark;
            }
        }
        self.moved = kept;
    }

    /// Heap bytes of the marks.
    pub fn heap_bytes(&self) -> usize {
        self.moved.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger() -> Ledger {
        Ledger::new(LedgerParams { ceiling_share: 0.25, start_share: 1.0, ..Default::default() }, 4096)
    }

    #[test]
    fn promotions_that_are_hit_keep_the_full_allowance() {
        let mut l = ledger();
        assert_eq!(l.allowance(), 1024);
        for p in 0..100 {
            l.queued_promotion();
            l.moved(p, true);
        }
        for _ in 0..10 {
            for p in 0..100 {
                l.sample(p, true);
            }
        }
        l.tick(1000.0, Cost::PerMove(318.0));
        assert!(l.balance() > 0.0);
        assert_eq!(l.allowance(), 1024);
    }

    #[test]
    fn exchanges_that_lose_hits_shrink_the_allowance_to_its_floor_and_recover() {
        let mut l = ledger();
        // Eight halvings, one a tick once the first judgement is due.
        for tick in 0..16u64 {
            // 100 pages promoted are never hit again; the 100 demoted for them are.
            for p in 0..100 {
                l.queued_promotion();
                l.moved(tick * 1000 + p, true);
                l.moved(tick * 1000 + 500 + p, false);
                l.sample(tick * 1000 + 500 + p, false);
            }
            l.tick(100.0, Cost::PerMove(318.0));
        }
        assert!(l.balance() < 0.0);
        assert_eq!(l.allowance(), 4, "the floor: 1/256 of 1024");
        assert!(!l.pays());
        assert_eq!(l.may_promote(), 4);
        // Then promotions pay off: the allowance doubles back once the balance is positive.
        let mut grew = false;
        for tick in 0..200u64 {
            for p in 0..l.may_promote() {
                l.queued_promotion();
                l.moved(1_000_000 + tick * 10 + p, true);
            }
            for p in 0..l.allowance().min(10) {
                for _ in 0..50 {
                    l.sample(1_000_000 + tick * 10 + p, true);
                }
            }
            l.tick(100.0, Cost::PerMove(318.0));
            grew |= l.allowance() > 4;
        }
        // (It grows until the moves' cost outweighs the hits of the ten pages sampled,
        // then halves back: it oscillates around what pays.)
        assert!(grew, "allowance {}", l.allowance());
    }

    #[test]
    fn a_ledger_without_moves_does_not_pay_once_settled() {
        let mut l = ledger();
        assert!(l.pays(), "too early to judge");
        for _ in 0..=LedgerParams::default().settle_ticks {
            l.tick(100.0, Cost::PerMove(318.0));
        }
        assert!(!l.pays());
        l.queued_promotion();
        l.moved(1, true);
        l.sample(1, true);
        l.tick(100.0, Cost::PerMove(318.0));
        assert!(l.pays(), "a hit on a promoted page: balance {}", l.balance());
    }

    #[test]
    fn a_slow_start_opens_a_tick_at_a_time_while_moves_pay() {
        let mut l = Ledger::new(LedgerParams::default(), 1024);
        assert_eq!(l.allowance(), 64, "1/16 of the ceiling");
        for tick in 0..4u64 {
            for p in 0..l.may_promote() {
                l.queued_promotion();
                l.moved(tick * 10_000 + p, true);
                l.sample(tick * 10_000 + p, true);
            }
            l.tick(1000.0, Cost::PerMove(318.0));
        }
        assert_eq!(l.allowance(), 1024, "four doublings");
    }

    #[test]
    fn old_moves_stop_counting() {
        let mut l = ledger();
        l.moved(7, false);
        for _ in 0..=LedgerParams::default().memory_ticks + 1 {
            l.tick(1.0, Cost::PerMove(0.0));
        }
        l.sample(7, false);
        assert_eq!(l.fresh, (0, 0));
    }
}
