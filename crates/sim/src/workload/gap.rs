//! `gap-bfs`, `gap-pr`, `gap-cc`, `gap-bc`: the GAP benchmark suite's kernels (Beamer,
//! Asanović, Patterson, "The GAP benchmark suite", arXiv:1508.03619) really run on a
//! generated graph, and the stream is the page accesses of their arrays. FreqTier §VI runs
//! BC, BFS and CC on a Kronecker graph (trials repeated for an hour); HybridTier §5 runs
//! BFS, CC and PR on Kronecker and uniform random graphs (BFS changes its source every
//! trial, so its hot set moves); M5 §4/§7 runs BFS, PR, CC and BC on Twitter-like inputs
//! and finds PR's pages dense and BFS/CC/BC's sparse.
//!
//! Graph (setup, not emitted): `2^scale` vertices and `degree * 2^scale` generated edges,
//! Kronecker (Graph500 R-MAT, A=0.57, B=0.19, C=0.19, vertex ids randomly permuted as GAP
//! does, here with a seeded bijection) or `graph=uniform` (both endpoints uniform).
//! Symmetrized into an undirected CSR without self loops or duplicate edges (GAP's builder
//! "squishes" likewise). Without the `scale` option (4..=26), the largest scale in 4..=20
//! whose estimated footprint (before duplicate removal) fits `spec.pages`; `pages()` is
//! the real footprint, so it is at most `spec.pages` unless that is below scale 4's few
//! pages, and it stops growing at scale 20 (about 35k pages; a scale-20 graph takes about
//! a second to build, and build time and memory double per scale).
//!
//! Layout, each array a contiguous page range in this order: offsets (u64, n+1),
//! neighbours (u32, one per directed edge), then the kernel's per-vertex arrays:
//! - BFS (top-down; GAP's direction-optimizing switch is not modelled): parent u32,
//!   queue u32. Each trial resets `parent` and searches from a new seeded source.
//! - PR (pull, GAP's `pr`: damping 0.85, stop when the L1 change < 1e-4 or after `iters`
//!   iterations, default 20): scores f32, outgoing contributions f32.
//! - CC (Afforest, GAP's default `cc`: 2 neighbour-sampling rounds, 1024-sample largest
//!   component guess, then link the other vertices' remaining edges; compress after
//!   each phase): component ids u32.
//! - BC (Brandes, from `sources` seeded sources per trial, default 4; scores reset every
//!   trial and not normalized; successors are found by re-checking depths, instead of
//!   GAP's per-edge successor bitmap): depth u32, sigma f64, delta f32, score f32,
//!   queue u32.
//!
//! Trials repeat until `spec.accesses` accesses were emitted. The kernels are explicit
//! state machines: a step does about [`CHUNK`] edges' or vertices' work and pushes its
//! accesses into a buffer that `fill` drains. LLC-miss filter: an access is dropped when
//! it touches the same 64-byte line as its array's previous access, unless it is the first
//! store to that line (a read then a write of one line emits both, the write flagged).

use tierkit_core::dist::Rng;

use self::bc::{Bc, BC_ARRAYS};
use self::bfs::{Bfs, BFS_ARRAYS};
use self::cc::{Cc, CC_ARRAYS};
use self::graph::Graph;
use self::pr::{Pr, PR_ARRAYS};
use super::{Access, MlpClass, Workload, WorkloadSpec};
use crate::budget;
use crate::error::SimError;

mod bc;
mod bfs;
mod cc;
mod graph;
mod pr;

/// Edges or vertices of work per kernel step.
const CHUNK: usize = 1024;
const NONE: u32 = u32::MAX;
const OFFS: usize = 0;
const NEIGH: usize = 1;
const MAX_AUTO_SCALE: u32 = 20;
/// The smallest scale, given or chosen: below it every per-vertex array fits in one
/// cache line, consecutive accesses to a line are one, and a kernel can run on without
/// emitting an access.
const MIN_SCALE: u32 = 4;

#[derive(Clone, Copy)]
struct Arr {
    base: u64,
    shift: u32,
    /// Line of the previous access << 1 | whether that line was written.
    last: u64,
}

/// The access recorder: the arrays' layout, the line filter, and the buffer of accesses.
struct Em {
    buf: Vec<Access>,
    arr: Vec<Arr>,
    pages: u64,
}

impl Em {
    /// Offsets, neighbours, then `n` elements of `1 << shift` bytes per kernel array.
    fn new(g: &Graph, shifts: &[u32]) -> Self {
        let lens = [(g.n() + 1, 3), (g.adj.len(), 2)].into_iter().chain(shifts.iter().map(|&s| (g.n(), s)));
        let mut pages = 0;
        let mut arr = Vec::new();
        for (len, shift) in lens {
            arr.push(Arr { base: pages, shift, last: u64::MAX });
            pages += ((len as u64) << shift).div_ceil(4096);
        }
        Self { buf: Vec::with_capacity(8 * CHUNK), arr, pages }
    }

    #[inline]
    fn at(&mut self, a: usize, i: usize, write: bool) {
        let r = &mut self.arr[a];
        let byte = (i as u64) << r.shift;
        let line = byte >> 6;
        if r.last >> 1 == line && (!write || r.last & 1 == 1) {
            return;
        }
        r.last = line << 1 | write as u64;
        self.buf.push(Access { page: r.base + (byte >> 12), word: (line & 63) as u8, write, class: MlpClass::Default });
    }

    #[inline]
    fn rd(&mut self, a: usize, i: usize) {
        self.at(a, i, false)
    }

    #[inline]
    fn wr(&mut self, a: usize, i: usize) {
        self.at(a, i, true)
    }

    /// Reads the two offsets bounding `u`'s list and returns the list's range.
    #[inline]
    fn list(&mut self, g: &Graph, u: usize) -> (usize, usize) {
        self.rd(OFFS, u);
        self.rd(OFFS, u + 1);
        (g.offs[u], g.offs[u + 1])
    }
}

trait Kernel: Send {
    /// Does about [`CHUNK`] edges' or vertices' work, recording its accesses in `em`.
    fn step(&mut self, g: &Graph, em: &mut Em);
    /// Trials completed; a completed trial's results stay intact until the next step.
    #[cfg(test)]
    fn trials(&self) -> u64;
}

struct Gap<K> {
    g: Graph,
    k: K,
    em: Em,
    pos: usize,
    total: u64,
    left: u64,
}

impl<K: Kernel> Workload for Gap<K> {
    fn pages(&self) -> u64 {
        self.em.pages
    }

    fn len(&self) -> u64 {
        self.total
    }

    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> usize {
        let want = (max as u64).min(self.left) as usize;
        let mut done = 0;
        while done < want {
            if self.pos == self.em.buf.len() {
                self.em.buf.clear();
                self.pos = 0;
                self.k.step(&self.g, &mut self.em);
                continue;
            }
            let take = (want - done).min(self.em.buf.len() - self.pos);
            out.extend_from_slice(&self.em.buf[self.pos..self.pos + take]);
            self.pos += take;
            done += take;
        }
        self.left -= want as u64;
        want
    }
}

/// Per-vertex array element sizes (log2 bytes) of the kernel `name`.
fn kernel_arrays(name: &str) -> &'static [u32] {
    match name {
        "gap-pr" => PR_ARRAYS,
        "gap-cc" => CC_ARRAYS,
        "gap-bc" => BC_ARRAYS,
        _ => BFS_ARRAYS,
    }
}

/// Checks the options and builds the graph (refused when generating it needs more memory
/// than is available); also returns the kernel's seed, PR's `iters` and BC's `sources`.
fn prepare(spec: &WorkloadSpec) -> Result<(Graph, Rng, u32, usize), SimError> {
    let extra: &[&str] = match spec.name.as_str() {
        "gap-pr" => &["iters"],
        "gap-bc" => &["sources"],
        _ => &[],
    };
    spec.check_options(&[&["graph", "degree", "scale"], extra].concat())?;
    spec.check_sizes(1)?;
    let kron = match spec.options.get("graph").map(String::as_str) {
        None | Some("kronecker") => true,
        Some("uniform") => false,
        Some(other) => {
            return Err(SimError::bad_option(spec.owner(), "graph", other, "kronecker or uniform"));
        }
    };
    let degree = spec.u64_opt("degree", 16, 1..=256)?;
    let (iters, sources) = (spec.u64_opt("iters", 20, 1..=1000)?, spec.u64_opt("sources", 4, 1..=1024)?);
    let arrays = kernel_arrays(&spec.name);
    let estimate = |scale: u32| {
        let n = 1u64 << scale;
        let bytes = [((n + 1) << 3), (2 * degree * n) << 2].into_iter().chain(arrays.iter().map(|&s| n << s));
        bytes.map(|b| b.div_ceil(4096)).sum::<u64>()
    };
    let auto = (MIN_SCALE..=MAX_AUTO_SCALE).rev().find(|&s| estimate(s) <= spec.pages).unwrap_or(MIN_SCALE);
    let scale = spec.u64_opt("scale", auto as u64, u64::from(MIN_SCALE)..=26)? as u32;
    // Generating holds each of the 2·degree·2^scale directed edges as a u64 pair (with
    // 1/8 slack) while it writes them as u32 adjacency: about 13 bytes each.
    let input = || format!("{}: scale = {scale}, degree = {degree}", spec.owner());
    budget::check((u128::from(2 * degree) << scale) * 13, input, "generating the graph")?;
    let mut root = Rng::new(spec.seed);
    let g = Graph::generate(scale, degree, kron, &mut Rng::new(root.next_u64()));
    Ok((g, Rng::new(root.next_u64()), iters as u32, sources as usize))
}

pub(super) fn build(spec: &WorkloadSpec) -> Result<Box<dyn Workload>, SimError> {
    let (g, rng, iters, sources) = prepare(spec)?;
    let n = g.n();
    fn boxed<K: Kernel + 'static>(spec: &WorkloadSpec, g: Graph, k: K) -> Box<dyn Workload> {
        let em = Em::new(&g, kernel_arrays(&spec.name));
        Box::new(Gap { g, k, em, pos: 0, total: spec.accesses, left: spec.accesses })
    }
    Ok(match spec.name.as_str() {
        "gap-pr" => boxed(spec, g, Pr::new(n, iters)),
        "gap-cc" => boxed(spec, g, Cc::new(n, rng)),
        "gap-bc" => boxed(spec, g, Bc::new(n, sources, rng)),
        _ => boxed(spec, g, Bfs::new(n, rng)),
    })
}

/// Steps `k` until it completes a trial.
#[cfg(test)]
fn run_trial<K: Kernel>(g: &Graph, arrays: &[u32], mut k: K) -> K {
    let mut em = Em::new(g, arrays);
    while k.trials() == 0 {
        em.buf.clear();
        k.step(g, &mut em);
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::testing::drain_checked;

    #[test]
    fn streams_cover_the_csr_and_write_only_kernel_arrays() {
        for name in ["gap-bfs", "gap-pr", "gap-cc", "gap-bc"] {
            for graph in ["kronecker", "uniform"] {
                let spec = WorkloadSpec::new(name, 400, 300_001, 5).with("graph", graph);
                let counts = drain_checked(&spec);
                let (g, ..) = prepare(&spec).unwrap();
                let em = Em::new(&g, kernel_arrays(name));
                assert!(em.pages <= 400 && em.pages > 100 && em.pages == counts.len() as u64, "{name}");
                let bases: Vec<u64> = em.arr.iter().map(|a| a.base).chain([em.pages]).collect();
                for (a, w) in bases.windows(2).enumerate() {
                    let touched = counts[w[0] as usize..w[1] as usize].iter().filter(|&&c| c > 0).count() as u64;
                    // The offsets' last page may hold just the sentinel; Afforest skips most
                    // of the largest component's edges; queues fill only as far as the
                    // searched component reaches.
                    let need = match a {
                        0 => w[1] - w[0] - 1,
                        1 => (w[1] - w[0]) * 9 / 10,
                        _ => 1,
                    };
                    assert!(touched >= need, "{name} {graph}: array {a}: {touched} of {} pages", w[1] - w[0]);
                }
                let mut w = build(&spec).unwrap();
                let mut out = Vec::new();
                while w.fill(&mut out, 100_000) > 0 {}
                assert!(out.iter().any(|a| a.write) && out.iter().filter(|a| a.write).all(|a| a.page >= bases[2]));
            }
        }
    }

    #[test]
    fn stream_does_not_depend_on_fill_sizes() {
        for name in ["gap-bfs", "gap-pr", "gap-cc", "gap-bc"] {
            let spec = WorkloadSpec::new(name, 50, 20_000, 2);
            let drain = |max: usize| {
                let (mut w, mut out) = (build(&spec).unwrap(), Vec::new());
                while w.fill(&mut out, max) > 0 {}
                out
            };
            let all = drain(1 << 20);
            assert_eq!(all.len(), 20_000);
            assert_eq!(all, drain(7), "{name}");
        }
    }

    #[test]
    fn scale_follows_pages_and_options() {
        for pages in [1, 1000, 5000] {
            let w = build(&WorkloadSpec::new("gap-cc", pages, 10, 1)).unwrap();
            assert!(w.pages() <= pages.max(3) && (pages < 1000 || w.pages() > pages / 4), "{pages}: {}", w.pages());
        }
        let small = build(&WorkloadSpec::new("gap-bfs", 20_000, 10, 1).with("scale", 8)).unwrap();
        let sparse = build(&WorkloadSpec::new("gap-bfs", 20_000, 10, 1).with("scale", 8).with("degree", 2)).unwrap();
        assert!(sparse.pages() < small.pages() && small.pages() < 50);
        let err = |spec: WorkloadSpec| build(&spec).err().unwrap().to_string();
        let e = err(WorkloadSpec::new("gap-pr", 100, 10, 1).with("graph", "twitter"));
        assert!(e.contains("graph") && e.contains("uniform"), "{e}");
        let e = err(WorkloadSpec::new("gap-bfs", 100, 10, 1).with("sources", 2));
        assert!(e.contains("sources") && e.contains("degree"), "{e}");
        assert!(build(&WorkloadSpec::new("gap-bc", 100, 10, 1).with("sources", 2)).is_ok());
        assert!(build(&WorkloadSpec::new("gap-bc", 100, 0, 1)).is_err());
    }

    /// Found by the `workload_opt` fuzz target (fuzz/, docs/FUZZING.md): `gap-pr` at
    /// scale 2 (`--opt degree=5 --opt scale=2`) never finished its stream, every access
    /// folding into the last one to its line. Scales below 4 are refused; at 4, every
    /// kernel's stream comes out whole.
    #[test]
    fn the_smallest_graphs_are_refused_and_the_smallest_allowed_stream() {
        let e = build(&WorkloadSpec::new("gap-pr", 512, 4096, 1).with("degree", 5).with("scale", 2)).err().unwrap();
        assert!(e.to_string().contains("scale"), "{e}");
        for name in ["gap-bfs", "gap-pr", "gap-cc", "gap-bc"] {
            for (graph, degree) in [("kronecker", 1), ("kronecker", 5), ("uniform", 1), ("uniform", 256)] {
                for seed in 0..4 {
                    let spec = WorkloadSpec::new(name, 512, 20_000, seed)
                        .with("scale", MIN_SCALE)
                        .with("degree", degree)
                        .with("graph", graph);
                    let mut w = build(&spec).unwrap();
                    let mut out = Vec::new();
                    while w.fill(&mut out, 4096) > 0 {}
                    assert_eq!(out.len(), 20_000, "{name} {graph} degree {degree} seed {seed}");
                }
            }
        }
    }
}
