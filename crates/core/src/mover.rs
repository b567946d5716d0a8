//! The Mover: executes a policy's [`Plan`] against a [`Memory`] in bounded rounds.

use std::collections::BTreeMap;

use crate::memory::{Memory, MoveStatus};
use crate::policy::{Migration, Plan};
use crate::types::Page;

/// Executes queued migrations in batches, at most `max_pages_per_round` per
/// [`execute`](Self::execute) call (the rest stay queued for the next round). Within a
/// round, migrations are grouped by destination, slowest destination first — demotions
/// free fast pages before promotions need them — keeping plan order within a group, and
/// each group goes out in `migrate` calls of at most `batch` pages. Counts every
/// outcome by cause.
#[derive(Clone, Debug)]
pub struct Mover {
    /// Pages per `migrate` call.
    pub batch: usize,
    /// Pages executed per round (the platform calls one round per tick or per batch of
    /// events; it sets this from its bandwidth budget).
    pub max_pages_per_round: usize,
    stats: MoveStats,
    todo: Vec<Migration>,
    pages: Vec<Page>,
    statuses: Vec<MoveStatus>,
}

/// Outcome counts of every migration a [`Mover`] executed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MoveStats {
    /// Outcomes by [`MoveStatus::cause`].
    pub by_cause: BTreeMap<&'static str, u64>,
    /// Failures by errno ([`MoveStatus::Failed`]).
    pub by_errno: BTreeMap<i32, u64>,
    /// `migrate` calls made.
    pub calls: u64,
}

impl MoveStats {
    /// Pages that actually moved.
    pub fn moved(&self) -> u64 {
        self.by_cause.get("moved").copied().unwrap_or(0)
    }
}

impl Default for Mover {
    /// 512 pages per call and no per-round limit.
    fn default() -> Self {
        Self::new(512, usize::MAX)
    }
}

impl Mover {
    /// A mover making calls of `batch` pages, at most `max_pages_per_round` per round.
    pub fn new(batch: usize, max_pages_per_round: usize) -> Self {
        Self {
            batch: batch.max(1),
            max_pages_per_round,
            stats: MoveStats::default(),
            todo: Vec::new(),
            pages: Vec::new(),
            statuses: Vec::new(),
        }
    }

    /// Executes up to `max_pages_per_round` migrations from the front of `plan`,
    /// appending `(migration, status)` to `results` in execution order (hand them to
    /// [`crate::Policy::on_moved`]). Returns the number of pages that moved.
    pub fn execute(
        &mut self,
        plan: &mut Plan,
        mem: &mut dyn Memory,
        results: &mut Vec<(Migration, MoveStatus)>,
    ) -> usize {
        let mut todo = std::mem::take(&mut self.todo);
        todo.clear();
        todo.extend(plan.take_front(self.max_pages_per_round));
        todo.sort_by_key(|m| std::cmp::Reverse(m.to)); // stable: plan order within a tier
        let mut moved = 0;
        for run in todo.chunk_by(|a, b| a.to == b.to) {
            for chunk in run.chunks(self.batch) {
                self.pages.clear();
                self.pages.extend(chunk.iter().map(|m| m.page));
                self.statuses.clear();
                mem.migrate(&self.pages, chunk[0].to, &mut self.statuses);
                self.stats.calls += 1;
                for (m, &s) in chunk.iter().zip(&self.statuses) {
                    *self.stats.by_cause.entry(s.cause()).or_default() += 1;
                    if let MoveStatus::Failed(errno) = s {
                        *self.stats.by_errno.entry(errno).or_default() += 1;
                    }
                    moved += (s == MoveStatus::Moved) as usize;
                    results.push((*m, s));
                }
            }
        }
        self.todo = todo;
        moved
    }

    /// Everything counted so far.
    pub fn stats(&self) -> &MoveStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{InMemory, TierId};

    #[test]
    fn rounds_are_bounded_batched_and_counted() {
        let mut mem = InMemory::new(&[4, 100]).unwrap();
        for p in 0..10 {
            mem.touch(p);
        }
        let mut plan = Plan::default();
        for p in [4, 5, 6] {
            plan.push(p, TierId(0)); // fast is full: no space
        }
        plan.push(0, TierId(1));
        plan.push(1, TierId(1));
        plan.push(4, TierId(0));
        plan.push(99, TierId(0));
        let mut mover = Mover::new(2, 6);
        let mut results = Vec::new();
        assert_eq!(mover.execute(&mut plan, &mut mem, &mut results), 4);
        assert_eq!(plan.len(), 1, "the 7th migration waits for the next round");
        // Demotions go first and make room: every promotion of the round succeeds.
        let order: Vec<_> = results.iter().map(|r| (r.0.page, r.1)).collect();
        use MoveStatus::*;
        assert_eq!(order, [(0, Moved), (1, Moved), (4, Moved), (5, Moved), (6, NoSpace), (4, AlreadyThere)]);
        // Groups: 2 to tier 1 (1 call), 4 to tier 0 (2 calls of at most 2).
        assert_eq!(mover.stats().calls, 3);
        mover.execute(&mut plan, &mut mem, &mut results);
        assert!(plan.is_empty());
        assert_eq!(mover.stats().by_cause["not-resident"], 1);
        assert_eq!(mover.stats().moved(), 4);
    }
}
