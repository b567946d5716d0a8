//! `gap-pr`: pull-style PageRank (GAP's `pr`).

use super::graph::Graph;
use super::{Em, Kernel, CHUNK, NEIGH};

/// Pull-style PageRank.
pub(super) struct Pr {
    score: Vec<f32>,
    contrib: Vec<f32>,
    max_iters: u32,
    /// 0: initialize scores, 1: contributions, 2: pull.
    stage: u8,
    i: usize,
    e: usize,
    end: usize,
    open: bool,
    sum: f32,
    error: f64,
    iter: u32,
    trials: u64,
}
/// Element sizes (log2 bytes) of the per-vertex arrays: scores f32, contributions f32.
pub(super) const PR_ARRAYS: &[u32] = &[2, 2];
const SCORE: usize = 2;
const CONTRIB: usize = 3;
const DAMP: f32 = 0.85;
const EPSILON: f64 = 1e-4;

impl Pr {
    pub(super) fn new(n: usize, max_iters: u32) -> Self {
        let (score, contrib) = (vec![0.0; n], vec![0.0; n]);
        Self {
            score,
            contrib,
            max_iters,
            stage: 0,
            i: 0,
            e: 0,
            end: 0,
            open: false,
            sum: 0.0,
            error: 0.0,
            iter: 0,
            trials: 0,
        }
    }
}

impl Kernel for Pr {
    fn step(&mut self, g: &Graph, em: &mut Em) {
        let n = g.n();
        if self.stage < 2 {
            let stop = (self.i + CHUNK).min(n);
            for v in self.i..stop {
                if self.stage == 0 {
                    self.score[v] = 1.0 / n as f32;
                } else {
                    em.rd(SCORE, v);
                    let (a, b) = em.list(g, v);
                    self.contrib[v] = if b > a { self.score[v] / (b - a) as f32 } else { 0.0 };
                }
                em.wr([SCORE, CONTRIB][self.stage as usize], v);
            }
            self.i = stop;
            if stop == n {
                (self.iter, self.error, self.i) = (if self.stage == 0 { 0 } else { self.iter }, 0.0, 0);
                self.stage += 1;
            }
            return;
        }
        let base = (1.0 - DAMP) / n as f32;
        let mut budget = CHUNK;
        while budget > 0 {
            if !self.open {
                if self.i == n {
                    self.iter += 1;
                    self.stage = if self.error < EPSILON || self.iter >= self.max_iters { 0 } else { 1 };
                    self.trials += (self.stage == 0) as u64;
                    self.i = 0;
                    return;
                }
                (self.e, self.end) = em.list(g, self.i);
                (self.sum, self.open) = (0.0, true);
                budget -= 1;
            }
            let stop = (self.e + budget).min(self.end);
            for e in self.e..stop {
                let v = g.adj[e] as usize;
                em.rd(NEIGH, e);
                em.rd(CONTRIB, v);
                self.sum += self.contrib[v];
            }
            budget -= stop - self.e;
            self.e = stop;
            if self.e == self.end {
                let u = self.i;
                em.rd(SCORE, u);
                let old = self.score[u];
                self.score[u] = base + DAMP * self.sum;
                em.wr(SCORE, u);
                self.error += (self.score[u] - old).abs() as f64;
                (self.i, self.open) = (u + 1, false);
            }
        }
    }

    #[cfg(test)]
    fn trials(&self) -> u64 {
        self.trials
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::gap::graph::test_graphs;
    use crate::workload::gap::run_trial;

    #[test]
    fn pagerank_converges_to_the_reference() {
        for g in test_graphs() {
            let n = g.n();
            let k = run_trial(&g, PR_ARRAYS, Pr::new(n, 100));
            // Isolated vertices keep only the teleport share; the rest keep their mass.
            let isolated = (0..n).filter(|&u| g.neigh(u).is_empty()).count() as f64;
            let sum: f64 = k.score.iter().map(|&s| s as f64).sum();
            assert!((sum - (1.0 - 0.85 * isolated / n as f64)).abs() < 1e-3, "{sum}");
            let mut r = vec![1.0 / n as f64; n];
            for _ in 0..200 {
                let c: Vec<f64> = (0..n).map(|u| r[u] / g.neigh(u).len().max(1) as f64).collect();
                r = (0..n)
                    .map(|u| 0.15 / n as f64 + 0.85 * g.neigh(u).iter().map(|&v| c[v as usize]).sum::<f64>())
                    .collect();
            }
            let l1: f64 = (0..n).map(|u| (r[u] - k.score[u] as f64).abs()).sum();
            assert!(l1 < 2e-3, "{l1}");
        }
    }
}
