//! `gap-cc`: Afforest connected components (GAP's default `cc`).

use tierkit_core::dist::Rng;

use super::graph::Graph;
use super::{Em, Kernel, CHUNK, NEIGH};

/// Afforest connected components (Sutton, Ben-Nun, Barak, IPDPS 2018), sequential.
pub(super) struct Cc {
    comp: Vec<u32>,
    rng: Rng,
    /// 0 init, 1 link 1st neighbours, 2 compress, 3 link 2nd, 4 compress, 5 sample,
    /// 6 link the rest, 7 compress.
    stage: u8,
    i: usize,
    e: usize,
    end: usize,
    open: bool,
    c: u32,
    trials: u64,
}
/// Element sizes (log2 bytes) of the per-vertex arrays: component ids u32.
pub(super) const CC_ARRAYS: &[u32] = &[2];
const COMP: usize = 2;
const ROUNDS: usize = 2;

impl Cc {
    pub(super) fn new(n: usize, rng: Rng) -> Self {
        Self { comp: vec![0; n], rng, stage: 0, i: 0, e: 0, end: 0, open: false, c: 0, trials: 0 }
    }

    fn next_stage(&mut self) {
        self.i = 0;
        self.stage = (self.stage + 1) % 8;
        self.trials += (self.stage == 0) as u64;
    }

    /// Hooks the higher of the two roots under the lower one (GAP's `Link`).
    fn link(&mut self, em: &mut Em, u: usize, v: usize) {
        let c = &mut self.comp;
        em.rd(COMP, u);
        em.rd(COMP, v);
        let (mut p1, mut p2) = (c[u], c[v]);
        while p1 != p2 {
            let (high, low) = (p1.max(p2) as usize, p1.min(p2));
            em.rd(COMP, high);
            let p_high = c[high];
            if p_high == low {
                break;
            }
            if p_high == high as u32 {
                c[high] = low;
                em.wr(COMP, high);
                break;
            }
            em.rd(COMP, p_high as usize);
            em.rd(COMP, low as usize);
            (p1, p2) = (c[p_high as usize], c[low as usize]);
        }
    }
}

impl Kernel for Cc {
    fn step(&mut self, g: &Graph, em: &mut Em) {
        let n = g.n();
        if self.stage == 5 {
            // The most frequent of 1024 sampled labels guesses the largest component.
            let mut s: Vec<u32> = (0..1024)
                .map(|_| {
                    let v = self.rng.below(n as u64) as usize;
                    em.rd(COMP, v);
                    self.comp[v]
                })
                .collect();
            s.sort_unstable();
            let (mut best, mut run) = ((0, 0), 0);
            for i in 0..s.len() {
                run = if i > 0 && s[i] == s[i - 1] { run + 1 } else { 1 };
                best = best.max((run, u32::MAX - s[i]));
            }
            self.c = u32::MAX - best.1;
            return self.next_stage();
        }
        if self.stage != 6 {
            let stop = (self.i + CHUNK).min(n);
            for u in self.i..stop {
                match self.stage {
                    0 => {
                        self.comp[u] = u as u32;
                        em.wr(COMP, u);
                    }
                    1 | 3 => {
                        let (a, b) = em.list(g, u);
                        let r = a + (self.stage / 2) as usize;
                        if r < b {
                            em.rd(NEIGH, r);
                            self.link(em, u, g.adj[r] as usize);
                        }
                    }
                    _ => loop {
                        em.rd(COMP, u);
                        let p = self.comp[u] as usize;
                        em.rd(COMP, p);
                        if self.comp[p] == p as u32 {
                            break;
                        }
                        self.comp[u] = self.comp[p];
                        em.wr(COMP, u);
                    },
                }
            }
            self.i = stop;
            if stop == n {
                self.next_stage();
            }
            return;
        }
        let mut budget = CHUNK;
        while budget > 0 {
            if !self.open {
                if self.i == n {
                    return self.next_stage();
                }
                budget -= 1;
                em.rd(COMP, self.i);
                if self.comp[self.i] == self.c {
                    self.i += 1;
                    continue;
                }
                let (a, b) = em.list(g, self.i);
                (self.e, self.end, self.open) = ((a + ROUNDS).min(b), b, true);
            }
            let stop = (self.e + budget).min(self.end);
            for e in self.e..stop {
                em.rd(NEIGH, e);
                self.link(em, self.i, g.adj[e] as usize);
            }
            budget -= stop - self.e;
            self.e = stop;
            if self.e == self.end {
                (self.i, self.open) = (self.i + 1, false);
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
    use crate::workload::gap::NONE;

    #[test]
    fn afforest_matches_union_find() {
        for (seed, g) in test_graphs().enumerate() {
            let k = run_trial(&g, CC_ARRAYS, Cc::new(g.n(), Rng::new(seed as u64)));
            let mut uf: Vec<usize> = (0..g.n()).collect();
            fn find(uf: &mut [usize], mut x: usize) -> usize {
                while uf[x] != x {
                    uf[x] = uf[uf[x]];
                    x = uf[x];
                }
                x
            }
            for u in 0..g.n() {
                for &v in g.neigh(u) {
                    let (a, b) = (find(&mut uf, u), find(&mut uf, v as usize));
                    uf[a] = b;
                }
            }
            // The partitions agree: a bijection between union-find roots and labels.
            let (mut label_of, mut root_of) = (vec![NONE; g.n()], vec![NONE; g.n()]);
            for u in 0..g.n() {
                let (r, c) = (find(&mut uf, u), k.comp[u] as usize);
                assert!(label_of[r] == NONE || label_of[r] == c as u32, "vertex {u}");
                assert!(root_of[c] == NONE || root_of[c] == r as u32, "vertex {u}");
                (label_of[r], root_of[c]) = (c as u32, r as u32);
            }
        }
    }
}
