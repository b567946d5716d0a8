//! The input graph: Kronecker (R-MAT) or uniform random edges, symmetrized into a CSR.

use tierkit_core::bijection::Bijection;
use tierkit_core::dist::Rng;

use super::NONE;

/// An undirected graph in CSR form.
pub(super) struct Graph {
    pub(super) offs: Vec<usize>,
    pub(super) adj: Vec<u32>,
}

impl Graph {
    pub(super) fn n(&self) -> usize {
        self.offs.len() - 1
    }

    #[cfg(test)]
    pub(super) fn neigh(&self, u: usize) -> &[u32] {
        &self.adj[self.offs[u]..self.offs[u + 1]]
    }

    /// `2^scale` vertices and `degree << scale` generated edges (R-MAT if `kron`, else
    /// uniform), made undirected, without self loops or duplicates; lists sorted.
    pub(super) fn generate(scale: u32, degree: u64, kron: bool, rng: &mut Rng) -> Self {
        let n = 1usize << scale;
        // GAP's random permutation of Kronecker vertex ids, without a lookup table.
        let (shuffle, table) = (Bijection::<2>::new(1 << scale, rng), rmat_table());
        // Directed edges (u << 32 | v) bucketed by u's high bits, so that the CSR is then
        // assembled one cache-sized block of vertices at a time.
        let shift = scale.saturating_sub(10);
        let expect = (2 * degree as usize) << shift;
        let mut buckets: Vec<Vec<u64>> = (0..n >> shift).map(|_| Vec::with_capacity(expect + expect / 8)).collect();
        for _ in 0..degree << scale {
            let (s, d) = if kron {
                let (s, d) = rmat(&table, rng, scale);
                (shuffle.apply(s), shuffle.apply(d))
            } else {
                (rng.below(n as u64), rng.below(n as u64))
            };
            if s != d {
                buckets[(s >> shift) as usize].push(s << 32 | d);
                buckets[(d >> shift) as usize].push(d << 32 | s);
            }
        }
        let (mut offs, mut adj) = (Vec::with_capacity(n + 1), Vec::with_capacity(buckets.iter().map(Vec::len).sum()));
        offs.push(0);
        let (mut start, mut pos, mut tmp) = (vec![0usize; (1 << shift) + 1], vec![0usize; 1 << shift], Vec::new());
        for (b, bucket) in buckets.into_iter().enumerate() {
            let lo = b << shift;
            start.fill(0);
            for &x in &bucket {
                start[(x >> 32) as usize - lo + 1] += 1;
            }
            for i in 0..1 << shift {
                start[i + 1] += start[i];
            }
            pos.copy_from_slice(&start[..1 << shift]);
            tmp.resize(bucket.len(), 0u32);
            for &x in &bucket {
                let u = (x >> 32) as usize - lo;
                tmp[pos[u]] = x as u32;
                pos[u] += 1;
            }
            drop(bucket);
            // Sorted lists without duplicates (GAP's builder "squishes" likewise).
            for u in 0..1 << shift {
                let list = &mut tmp[start[u]..start[u + 1]];
                list.sort_unstable();
                let mut last = NONE;
                for &v in list.iter() {
                    if v != last {
                        adj.push(v);
                        last = v;
                    }
                }
                offs.push(adj.len());
            }
        }
        adj.shrink_to_fit();
        Self { offs, adj }
    }
}

/// Two R-MAT levels per 16 random bits: entry `r` is the outcome `s1 s2 d1 d2` (4 bits)
/// whose cumulative probability range holds `r / 2^16`.
fn rmat_table() -> Vec<u8> {
    const P: [f64; 4] = [0.57, 0.19, 0.19, 0.05]; // quadrants (s, d) = 00, 01, 10, 11
    let mut table = Vec::with_capacity(1 << 16);
    let mut cum = 0.0;
    for (q1, p1) in P.iter().enumerate() {
        for (q2, p2) in P.iter().enumerate() {
            cum += p1 * p2;
            let outcome = ((q1 >> 1) << 3 | (q2 >> 1) << 2 | (q1 & 1) << 1 | (q2 & 1)) as u8;
            let end = if q1 == 3 && q2 == 3 { 1 << 16 } else { (cum * 65536.0).round() as usize };
            table.resize(end.max(table.len()), outcome);
        }
    }
    table
}

/// One R-MAT edge (Graph500 A=0.57, B=0.19, C=0.19): a quadrant per level, two levels
/// per table lookup; an odd scale drops the last level.
#[inline]
fn rmat(table: &[u8], rng: &mut Rng, scale: u32) -> (u64, u64) {
    let (mut s, mut d, mut bits) = (0, 0, 0);
    for pair in 0..scale.div_ceil(2) {
        if pair % 4 == 0 {
            bits = rng.next_u64();
        }
        let o = table[(bits & 0xffff) as usize] as u64;
        bits >>= 16;
        (s, d) = (s << 2 | o >> 2, d << 2 | (o & 3));
    }
    (s >> (scale & 1), d >> (scale & 1))
}

/// A seeded vertex with at least one edge (GAP's `SourcePicker`).
pub(super) fn pick_source(g: &Graph, rng: &mut Rng) -> usize {
    loop {
        let v = rng.below(g.n() as u64) as usize;
        if g.adj.is_empty() || g.offs[v + 1] > g.offs[v] {
            return v;
        }
    }
}

/// Hop counts and shortest-path counts from `s` (a plain reference BFS).
#[cfg(test)]
pub(super) fn reference_bfs(g: &Graph, s: usize) -> (Vec<u32>, Vec<f64>) {
    let (mut depth, mut sigma) = (vec![NONE; g.n()], vec![0.0; g.n()]);
    (depth[s], sigma[s]) = (0, 1.0);
    let mut queue = std::collections::VecDeque::from([s]);
    while let Some(u) = queue.pop_front() {
        for &v in g.neigh(u) {
            let v = v as usize;
            if depth[v] == NONE {
                depth[v] = depth[u] + 1;
                queue.push_back(v);
            }
            if depth[v] == depth[u] + 1 {
                sigma[v] += sigma[u];
            }
        }
    }
    (depth, sigma)
}

/// Small Kronecker and uniform graphs, some with several components, to check kernels on.
#[cfg(test)]
pub(super) fn test_graphs() -> impl Iterator<Item = Graph> {
    let graph = |scale, degree, kron, seed| Graph::generate(scale, degree, kron, &mut Rng::new(seed));
    (0..3).flat_map(move |seed| [graph(7, 4, true, seed), graph(7, 2, false, seed), graph(5, 1, false, seed)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rmat_quadrants_follow_the_gap_probabilities() {
        let (table, mut rng) = (rmat_table(), Rng::new(1));
        let mut freq = [0.0f64; 4];
        for _ in 0..100_000 {
            let (s, d) = rmat(&table, &mut rng, 1);
            freq[(s * 2 + d) as usize] += 1e-5;
        }
        for (f, p) in freq.iter().zip([0.57, 0.19, 0.19, 0.05]) {
            assert!((f - p).abs() < 0.01, "{freq:?}");
        }
    }

    #[test]
    fn csr_is_symmetric_sorted_and_simple() {
        for g in test_graphs() {
            for u in 0..g.n() {
                let list = g.neigh(u);
                assert!(list.windows(2).all(|w| w[0] < w[1]) && !list.contains(&(u as u32)));
                assert!(list.iter().all(|&v| g.neigh(v as usize).binary_search(&(u as u32)).is_ok()));
            }
        }
    }

    #[test]
    fn kronecker_degrees_are_skewed_uniform_ones_are_not() {
        let stats = |g: &Graph| {
            let max = (0..g.n()).map(|u| g.neigh(u).len()).max().unwrap() as f64;
            (max, g.adj.len() as f64 / g.n() as f64)
        };
        let (max, mean) = stats(&Graph::generate(14, 16, true, &mut Rng::new(1)));
        assert!(max > 20.0 * mean, "kronecker: max {max}, mean {mean}");
        let (max, mean) = stats(&Graph::generate(14, 16, false, &mut Rng::new(1)));
        assert!(max < 2.0 * mean && mean > 30.0, "uniform: max {max}, mean {mean}");
    }
}
