//! `gap-bc`: Brandes betweenness centrality from a few sources (GAP's `bc`).

use tierkit_core::dist::Rng;

use super::graph::{pick_source, Graph};
use super::{Em, Kernel, CHUNK, NEIGH, NONE};

/// Brandes betweenness centrality from a few sources per trial.
pub(super) struct Bc {
    depth: Vec<u32>,
    sigma: Vec<f64>,
    delta: Vec<f32>,
    score: Vec<f32>,
    queue: Vec<u32>,
    srcs: Vec<usize>,
    sources: usize,
    rng: Rng,
    /// 0 zero scores, 1 reset per-source arrays, 2 forward BFS, 3 backward accumulation.
    stage: u8,
    i: usize,
    head: usize,
    tail: usize,
    u: usize,
    e: usize,
    end: usize,
    open: bool,
    acc: f64,
    trials: u64,
}
/// Element sizes (log2 bytes) of the per-vertex arrays: depth u32, sigma f64, delta f32,
/// score f32, queue u32.
pub(super) const BC_ARRAYS: &[u32] = &[2, 3, 2, 2, 2];
const DEPTH: usize = 2;
const SIGMA: usize = 3;
const DELTA: usize = 4;
const BC_SCORE: usize = 5;
const BC_QUEUE: usize = 6;

impl Bc {
    pub(super) fn new(n: usize, sources: usize, rng: Rng) -> Self {
        Self {
            depth: vec![NONE; n],
            sigma: vec![0.0; n],
            delta: vec![0.0; n],
            score: vec![0.0; n],
            queue: vec![0; n],
            srcs: Vec::new(),
            sources,
            rng,
            stage: 0,
            i: 0,
            head: 0,
            tail: 0,
            u: 0,
            e: 0,
            end: 0,
            open: false,
            acc: 0.0,
            trials: 0,
        }
    }
}

impl Kernel for Bc {
    fn step(&mut self, g: &Graph, em: &mut Em) {
        let n = g.n();
        if self.stage < 2 {
            let stop = (self.i + CHUNK).min(n);
            for v in self.i..stop {
                if self.stage == 0 {
                    self.score[v] = 0.0;
                    em.wr(BC_SCORE, v);
                } else {
                    (self.depth[v], self.sigma[v], self.delta[v]) = (NONE, 0.0, 0.0);
                    em.wr(DEPTH, v);
                    em.wr(SIGMA, v);
                    em.wr(DELTA, v);
                }
            }
            self.i = stop;
            if stop == n {
                if self.stage == 1 {
                    let s = pick_source(g, &mut self.rng);
                    self.srcs.push(s);
                    (self.depth[s], self.sigma[s], self.queue[0], self.head, self.tail) = (0, 1.0, s as u32, 0, 1);
                    em.wr(DEPTH, s);
                    em.wr(SIGMA, s);
                    em.wr(BC_QUEUE, 0);
                } else {
                    self.srcs.clear();
                }
                (self.stage, self.i) = (self.stage + 1, 0);
            }
            return;
        }
        let forward = self.stage == 2;
        let mut budget = CHUNK;
        while budget > 0 {
            if !self.open {
                if forward && self.head == self.tail {
                    (self.stage, self.i) = (3, self.tail);
                    return;
                }
                if !forward && self.i == 0 {
                    self.stage = if self.srcs.len() == self.sources { 0 } else { 1 };
                    self.trials += (self.stage == 0) as u64;
                    return;
                }
                let at = if forward { self.head } else { self.i - 1 };
                (self.head, self.i) = if forward { (self.head + 1, self.i) } else { (self.head, self.i - 1) };
                em.rd(BC_QUEUE, at);
                self.u = self.queue[at] as usize;
                em.rd(DEPTH, self.u);
                em.rd(SIGMA, self.u);
                (self.e, self.end) = em.list(g, self.u);
                (self.acc, self.open) = (0.0, true);
                budget -= 1;
            }
            let (u, next) = (self.u, self.depth[self.u] + 1);
            let stop = (self.e + budget).min(self.end);
            for e in self.e..stop {
                let v = g.adj[e] as usize;
                em.rd(NEIGH, e);
                em.rd(DEPTH, v);
                if forward && self.depth[v] == NONE {
                    self.depth[v] = next;
                    em.wr(DEPTH, v);
                    self.queue[self.tail] = v as u32;
                    em.wr(BC_QUEUE, self.tail);
                    self.tail += 1;
                }
                if self.depth[v] == next {
                    em.rd(SIGMA, v);
                    if forward {
                        self.sigma[v] += self.sigma[u];
                        em.wr(SIGMA, v);
                    } else {
                        em.rd(DELTA, v);
                        self.acc += self.sigma[u] / self.sigma[v] * (1.0 + self.delta[v] as f64);
                    }
                }
            }
            budget -= stop - self.e;
            self.e = stop;
            if self.e == self.end {
                self.open = false;
                if !forward {
                    self.delta[u] = self.acc as f32;
                    em.wr(DELTA, u);
                    if u != *self.srcs.last().unwrap() {
                        em.rd(BC_SCORE, u);
                        self.score[u] += self.acc as f32;
                        em.wr(BC_SCORE, u);
                    }
                }
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
    use crate::workload::gap::graph::{reference_bfs, test_graphs};
    use crate::workload::gap::run_trial;

    #[test]
    fn brandes_matches_brute_force() {
        for (seed, g) in test_graphs().enumerate() {
            let n = g.n();
            let k = run_trial(&g, BC_ARRAYS, Bc::new(n, 3, Rng::new(seed as u64)));
            assert_eq!(k.srcs.len(), 3);
            let all: Vec<_> = (0..n).map(|s| reference_bfs(&g, s)).collect();
            for v in 0..n {
                let mut want = 0.0;
                for &s in &k.srcs {
                    let (ds, ss) = &all[s];
                    for t in (0..n).filter(|&t| t != s && t != v && v != s && ds[t] != NONE) {
                        let (dv, sv) = &all[v];
                        if ds[v] != NONE && dv[t] != NONE && ds[v] + dv[t] == ds[t] {
                            want += ss[v] * sv[t] / ss[t];
                        }
                    }
                }
                let got = k.score[v] as f64;
                assert!(got >= 0.0 && (got - want).abs() <= 1e-4 * want.max(1.0), "vertex {v}: {got} vs {want}");
            }
        }
    }
}
