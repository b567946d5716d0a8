//! `gap-bfs`: top-down breadth-first search (GAP's `bfs` without the bottom-up switch).

use tierkit_core::dist::Rng;

use super::graph::{pick_source, Graph};
use super::{Em, Kernel, CHUNK, NEIGH, NONE};

/// Top-down breadth-first search: a trial resets `parent`, then expands the queue from a
/// seeded source, claiming unvisited neighbours (GAP's `TDStep`).
pub(super) struct Bfs {
    parent: Vec<u32>,
    queue: Vec<u32>,
    rng: Rng,
    reset: usize,
    head: usize,
    tail: usize,
    u: usize,
    e: usize,
    end: usize,
    src: usize,
    trials: u64,
}
/// Element sizes (log2 bytes) of the per-vertex arrays: parent u32, queue u32.
pub(super) const BFS_ARRAYS: &[u32] = &[2, 2];
const PARENT: usize = 2;
const BFS_QUEUE: usize = 3;

impl Bfs {
    pub(super) fn new(n: usize, rng: Rng) -> Self {
        let (parent, queue) = (vec![NONE; n], vec![0; n]);
        Self { parent, queue, rng, reset: 0, head: 0, tail: 0, u: 0, e: 0, end: 0, src: 0, trials: 0 }
    }
}

impl Kernel for Bfs {
    fn step(&mut self, g: &Graph, em: &mut Em) {
        let n = g.n();
        if self.reset < n {
            let stop = (self.reset + CHUNK).min(n);
            for v in self.reset..stop {
                self.parent[v] = NONE;
                em.wr(PARENT, v);
            }
            self.reset = stop;
            if stop == n {
                let s = pick_source(g, &mut self.rng);
                (self.src, self.parent[s], self.queue[0], self.head, self.tail) = (s, s as u32, s as u32, 0, 1);
                em.wr(PARENT, s);
                em.wr(BFS_QUEUE, 0);
            }
            return;
        }
        let mut budget = CHUNK;
        while budget > 0 {
            if self.e == self.end {
                if self.head == self.tail {
                    self.trials += 1;
                    self.reset = 0;
                    return;
                }
                em.rd(BFS_QUEUE, self.head);
                self.u = self.queue[self.head] as usize;
                self.head += 1;
                (self.e, self.end) = em.list(g, self.u);
                budget -= 1;
            }
            let stop = (self.e + budget).min(self.end);
            for e in self.e..stop {
                let v = g.adj[e] as usize;
                em.rd(NEIGH, e);
                em.rd(PARENT, v);
                if self.parent[v] == NONE {
                    self.parent[v] = self.u as u32;
                    em.wr(PARENT, v);
                    self.queue[self.tail] = v as u32;
                    em.wr(BFS_QUEUE, self.tail);
                    self.tail += 1;
                }
            }
            budget -= stop - self.e;
            self.e = stop;
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
    fn bfs_builds_a_shortest_path_tree_of_the_sources_component() {
        for (seed, g) in test_graphs().enumerate() {
            let k = run_trial(&g, BFS_ARRAYS, Bfs::new(g.n(), Rng::new(seed as u64)));
            let (depth, _) = reference_bfs(&g, k.src);
            for v in 0..g.n() {
                assert_eq!(k.parent[v] != NONE, depth[v] != NONE, "vertex {v}");
                if depth[v] != NONE && v != k.src {
                    let p = k.parent[v] as usize;
                    assert!(g.neigh(v).contains(&(p as u32)) && depth[p] + 1 == depth[v]);
                }
            }
        }
    }
}
