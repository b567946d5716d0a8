//! The reference placements every result is compared with.
//!
//! - `all-local`: every page in the fast tier (the upper bound).
//! - `none`: first touch, never migrate.
//! - `static-oracle`: the pages with the most accesses over the whole run are placed in
//!   the fast tier at first touch, everything else in the slow tier, and nothing ever
//!   moves: the best fixed placement by total accesses.
//! - `oracle`: knows the future. The run is cut into epochs of equal access counts; at
//!   the start of each epoch the fast tier is given the pages with the most accesses *in
//!   that epoch*, net of migration cost: a slow-tier page must earn its move, i.e. its
//!   count must exceed `migration_cost / saving_per_access` accesses (the CPU a move costs,
//!   per page and per call share, divided by what an access saves in the fast tier at
//!   unloaded latencies, per in-flight miss). M5 §7.2 makes the same argument (~318
//!   accesses to amortize one migration). Moves are charged like any policy's.
//!
//! Both oracles learn the future by running the (deterministic) workload once before
//! the measured run.

use std::sync::atomic::{AtomicBool, Ordering};

use tierkit_core::{Memory, MoveStatus, Page, TierId};

use crate::machine::Machine;
use crate::model::MachineConfig;
use crate::workload::{Access, Workload};
use crate::SimError;

/// A reference placement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reference {
    /// Everything in the fast tier.
    AllLocal,
    /// First touch, never migrate.
    None,
    /// Best fixed placement by total accesses.
    StaticOracle,
    /// Epoch-by-epoch best placement net of migration cost.
    Oracle,
}

impl Reference {
    /// Every reference with its name.
    pub const ALL: [(&'static str, Reference); 4] = [
        ("all-local", Reference::AllLocal),
        ("none", Reference::None),
        ("static-oracle", Reference::StaticOracle),
        ("oracle", Reference::Oracle),
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(_, r)| *r == self).map(|(n, _)| *n).expect("listed")
    }
}

/// Epochs of the `oracle` reference.
pub const ORACLE_EPOCHS: u64 = 20;

/// The look-ahead of an oracle reference.
pub(crate) struct Oracle {
    /// Pages the fast tier should hold now.
    want_fast: Vec<bool>,
    /// Per epoch: (page, accesses) of the most-accessed pages, most first.
    epochs: Vec<Vec<(u32, u32)>>,
    epoch_len: u64,
    next_epoch: usize,
    /// Accesses a promotion must be worth.
    cost_accesses: f64,
    capacity: u64,
}

impl Oracle {
    /// Runs the stream `wl` (freshly opened) once to learn its future. `capacity` is the
    /// fast pages to fill. `Ok(None)` when `stop` was set before the end (see
    /// [`crate::engine::run_until`]).
    pub(crate) fn learn(
        mut wl: Box<dyn Workload>,
        epochs: u64,
        capacity: u64,
        cfg: &MachineConfig,
        scale: u64,
        stop: &AtomicBool,
    ) -> Result<Option<Self>, SimError> {
        let pages = wl.pages() as usize;
        let epoch_len = wl.len().div_ceil(epochs).max(1);
        let mut counts = vec![0u32; pages];
        let mut lists = Vec::new();
        let mut buf: Vec<Access> = Vec::with_capacity(1 << 14);
        let mut in_epoch = 0u64;
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            buf.clear();
            let n = wl.try_fill(&mut buf, (epoch_len - in_epoch).min(1 << 14) as usize)?;
            for a in &buf {
                counts[a.page as usize] += 1;
            }
            in_epoch += n as u64;
            if in_epoch == epoch_len || (n == 0 && in_epoch > 0) {
                lists.push(top(&mut counts, capacity as usize));
                in_epoch = 0;
            }
            if n == 0 {
                break;
            }
        }
        let (fast, slow) = (cfg.tiers[0].latency_ns, cfg.tiers[1].latency_ns);
        let saving = (slow - fast) / cfg.app.mlp;
        let move_ns = cfg.migration.cpu_ns_per_page + cfg.migration.cpu_ns_per_call / cfg.migration.batch_pages as f64;
        // In generated accesses, each of which stands for `scale` real misses.
        let cost_accesses = if saving > 0.0 { move_ns / saving / scale as f64 } else { f64::INFINITY };
        Ok(Some(Self {
            want_fast: vec![false; pages],
            epochs: lists,
            epoch_len,
            next_epoch: 0,
            cost_accesses,
            capacity,
        }))
    }

    /// The static variant: one epoch over the whole run, no migration.
    pub(crate) fn learn_static(
        wl: Box<dyn Workload>,
        capacity: u64,
        cfg: &MachineConfig,
        stop: &AtomicBool,
    ) -> Result<Option<Self>, SimError> {
        let Some(mut o) = Self::learn(wl, 1, capacity, cfg, 1, stop)? else { return Ok(None) };
        for &(p, _) in &o.epochs[0] {
            o.want_fast[p as usize] = true;
        }
        o.epochs.clear();
        Ok(Some(o))
    }

    /// Whether first touch may place `page` on the fast tier.
    #[inline(always)]
    pub(crate) fn wants_fast(&self, page: u64) -> bool {
        self.want_fast[page as usize]
    }

    /// At an epoch boundary (`done` accesses so far), re-places pages for the coming
    /// epoch.
    pub(crate) fn at(&mut self, done: u64, machine: &mut Machine) {
        if self.next_epoch >= self.epochs.len() || done < self.next_epoch as u64 * self.epoch_len {
            return;
        }
        let list = std::mem::take(&mut self.epochs[self.next_epoch]);
        self.next_epoch += 1;
        self.want_fast.fill(false);
        let mut promote: Vec<Page> = Vec::new();
        let mut chosen = 0u64;
        // Value of holding a page in fast: its accesses, less the move's cost if it is
        // on the slow tier now. The list is sorted by accesses, so rank by value anew.
        let mut ranked: Vec<(f64, u32, bool)> = list
            .iter()
            .map(|&(p, c)| {
                let slow = machine.tier_index(p as u64).is_some_and(|t| t != 0);
                (c as f64 - if slow { self.cost_accesses } else { 0.0 }, p, slow)
            })
            .filter(|&(v, _, _)| v > 0.0)
            .collect();
        ranked.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        for &(_, p, slow) in ranked.iter().take(self.capacity as usize) {
            self.want_fast[p as usize] = true;
            chosen += 1;
            if slow {
                promote.push(p as u64);
            }
        }
        // Make room: demote fast pages not wanted, as many as the promotions need.
        let need = (promote.len() as u64).saturating_sub(machine.free_pages(TierId::FAST));
        let mut demote = Vec::new();
        if need > 0 {
            for page in 0..machine.pages() {
                if demote.len() as u64 == need {
                    break;
                }
                if machine.tier_index(page) == Some(0) && !self.want_fast[page as usize] {
                    demote.push(page);
                }
            }
        }
        let mut out: Vec<MoveStatus> = Vec::new();
        for batch in demote.chunks(512) {
            machine.migrate(batch, TierId(1), &mut out);
        }
        for batch in promote.chunks(512) {
            machine.migrate(batch, TierId::FAST, &mut out);
        }
        debug_assert!(chosen <= self.capacity);
    }
}

/// The `k` pages with the highest non-zero counts, most first; zeroes `counts`.
fn top(counts: &mut [u32], k: usize) -> Vec<(u32, u32)> {
    let mut all: Vec<(u32, u32)> =
        counts.iter().enumerate().filter(|&(_, &c)| c > 0).map(|(p, &c)| (p as u32, c)).collect();
    counts.fill(0);
    if all.len() > k && k > 0 {
        all.select_nth_unstable_by(k - 1, |a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        all.truncate(k);
    } else if k == 0 {
        all.clear();
    }
    all.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_keeps_the_k_largest() {
        let mut c = vec![5, 0, 9, 1, 9, 3];
        assert_eq!(top(&mut c, 3), [(2, 9), (4, 9), (0, 5)]);
        assert!(c.iter().all(|&x| x == 0));
        assert!(top(&mut [1, 2], 0).is_empty());
    }
}
