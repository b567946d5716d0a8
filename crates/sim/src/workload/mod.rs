//! Workloads: seeded generators of page-access streams (and trace readers).
//!
//! A workload is a stream of last-level-cache misses, each one [`Access`] to a page with
//! dense ids `0..pages()`. Generators are streamed, never materialized, and fully
//! determined by their [`WorkloadSpec`] (name, size, seed, options), so the engine can
//! build the same stream twice (the oracle references look ahead by running it once
//! first).
//!
//! Adding a workload: a file here with a `build(spec)` function, registered in
//! [`REGISTRY`]; document which paper setup it mimics.

use std::collections::BTreeMap;

use tierkit_core::PageKind;

use crate::error::SimError;
pub use crate::model::MlpClass;

pub use heat::page_heat;
pub use recorded::{open, Recorded};

mod cachelib;
mod chase_stream;
mod gap;
mod gups;
mod heat;
mod hotset_shift;
mod llc_view;
mod recorded;
mod resize;
mod scan;
mod sparse_kv;
mod xgboost;
mod ycsb;
mod zipf;

/// One memory access that missed the last-level cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Access {
    /// Dense page id, `< Workload::pages()`.
    pub page: u64,
    /// 64-byte word within the page (0..64).
    pub word: u8,
    /// A store.
    pub write: bool,
    /// How the miss overlaps with its thread's others (the MLP its latency is divided
    /// by); every generator but `chase-stream` leaves the default, and a trace replay
    /// gives the class its record carries (the default where it carries none).
    pub class: MlpClass,
}

impl Access {
    /// A read of word 0 of `page`.
    pub fn read(page: u64) -> Self {
        Self { page, word: 0, write: false, class: MlpClass::Default }
    }
}

/// A synthetic generator, one access at a time; [`Stream`] makes it a [`Workload`] of a
/// given length.
pub(crate) trait Generate: Send {
    /// Distinct pages it draws from; every page id is below this.
    fn pages(&self) -> u64;

    /// The next access.
    fn next_access(&mut self) -> Access;
}

/// A [`Generate`] cut to a number of accesses: the [`Workload`] of every generator that
/// has no per-chunk work of its own.
pub(crate) struct Stream<G> {
    generator: G,
    total: u64,
    left: u64,
}

impl<G: Generate + 'static> Stream<G> {
    /// `accesses` of `generator`'s accesses as a workload.
    pub(crate) fn boxed(generator: G, accesses: u64) -> Box<dyn Workload> {
        Box::new(Self { generator, total: accesses, left: accesses })
    }
}

impl<G: Generate> Workload for Stream<G> {
    fn pages(&self) -> u64 {
        self.generator.pages()
    }

    fn len(&self) -> u64 {
        self.total
    }

    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> usize {
        let n = (max as u64).min(self.left) as usize;
        out.extend((0..n).map(|_| self.generator.next_access()));
        self.left -= n as u64;
        n
    }

    fn fill_prefetching(&mut self, out: &mut Vec<Access>, max: usize, table: &[u8]) -> usize {
        let n = (max as u64).min(self.left) as usize;
        out.extend((0..n).map(|_| {
            let a = self.generator.next_access();
            tierkit_core::prefetch::prefetch_at(table, a.page as usize);
            a
        }));
        self.left -= n as u64;
        n
    }
}

/// A stream of accesses.
pub trait Workload: Send {
    /// Distinct pages the workload may touch; every page id is below this.
    fn pages(&self) -> u64;

    /// Accesses the stream will produce in total.
    fn len(&self) -> u64;

    /// True for a stream that produces no access.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends up to `max` next accesses to `out` and returns how many; 0 once the
    /// stream is exhausted. A stream that can fail (a trace read while it is replayed)
    /// ends at its first error and keeps it for [`Workload::take_error`]; consumers read
    /// through [`Workload::try_fill`], which reports it.
    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> usize;

    /// [`Workload::fill`], hinting the CPU to load each access's entry of `table` (a
    /// per-page table its consumer reads next) while the stream computes the following
    /// accesses. Streams that compute nothing per access need not override it.
    fn fill_prefetching(&mut self, out: &mut Vec<Access>, max: usize, table: &[u8]) -> usize {
        let _ = table;
        self.fill(out, max)
    }

    /// The error that ended the stream early, once; `None` for streams that cannot fail.
    fn take_error(&mut self) -> Option<SimError> {
        None
    }

    /// [`Workload::fill`], failing with the error that ended the stream (the accesses
    /// appended before it are then not to be used).
    fn try_fill(&mut self, out: &mut Vec<Access>, max: usize) -> Result<usize, SimError> {
        let n = self.fill(out, max);
        self.take_error().map_or(Ok(n), Err)
    }

    /// The stream's own clock, for a recorded trace that carries one (see
    /// [`crate::trace::TraceClock`]); `None` for generated streams, whose time comes from
    /// the machine's per-miss compute and the run's scale.
    fn clock(&self) -> Option<crate::trace::TraceClock> {
        None
    }

    /// Instructions the program retired over the accesses filled since the previous call
    /// (0 without a clock).
    fn take_instructions(&mut self) -> u64 {
        0
    }

    /// What backs `page` (TPP §5.4 places file and tmpfs pages on the slow tier first).
    fn kind(&self, _page: u64) -> PageKind {
        PageKind::Anon
    }
}

/// Everything that determines a workload's stream.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadSpec {
    /// Registered name, e.g. `"zipf"`.
    pub name: String,
    /// Footprint in 4 KiB pages (for graph and matrix workloads: the size the generated
    /// input is scaled to approach).
    pub pages: u64,
    /// Accesses to generate.
    pub accesses: u64,
    /// Seed of every random choice.
    pub seed: u64,
    /// Workload-specific options (`alpha=0.9`, `shift_at=0.5`, ...).
    pub options: BTreeMap<String, String>,
}

impl WorkloadSpec {
    /// A spec with no options.
    pub fn new(name: &str, pages: u64, accesses: u64, seed: u64) -> Self {
        Self { name: name.to_string(), pages, accesses, seed, options: BTreeMap::new() }
    }

    /// Adds an option.
    pub fn with(mut self, key: &str, value: impl ToString) -> Self {
        self.options.insert(key.to_string(), value.to_string());
        self
    }

    fn owner(&self) -> String {
        format!("workload {}", self.name)
    }

    /// Fails on any option not in `known`, listing the known ones.
    pub fn check_options(&self, known: &[&str]) -> Result<(), SimError> {
        match self.options.keys().find(|k| !known.contains(&k.as_str())) {
            Some(k) => Err(SimError::bad_option(
                self.owner(),
                k,
                &self.options[k],
                if known.is_empty() {
                    "no options".to_string()
                } else {
                    format!("one of the options {}", known.join(", "))
                },
            )),
            None => Ok(()),
        }
    }

    /// Option `key` as a float in `range`, or `default`.
    pub fn f64_opt(&self, key: &str, default: f64, range: std::ops::RangeInclusive<f64>) -> Result<f64, SimError> {
        self.opt(key, default, range, "a number")
    }

    /// Option `key` as an integer in `range`, or `default`.
    pub fn u64_opt(&self, key: &str, default: u64, range: std::ops::RangeInclusive<u64>) -> Result<u64, SimError> {
        self.opt(key, default, range, "an integer")
    }

    fn opt<T>(&self, key: &str, default: T, range: std::ops::RangeInclusive<T>, what: &str) -> Result<T, SimError>
    where
        T: std::str::FromStr + PartialOrd + std::fmt::Display,
    {
        let Some(text) = self.options.get(key) else { return Ok(default) };
        match text.parse::<T>() {
            Ok(v) if range.contains(&v) => Ok(v),
            _ => Err(SimError::bad_option(
                self.owner(),
                key,
                text,
                format!("{what} in [{}, {}]", range.start(), range.end()),
            )),
        }
    }

    /// Checks the common sizes: at least `min_pages` pages and one access.
    pub fn check_sizes(&self, min_pages: u64) -> Result<(), SimError> {
        if self.pages < min_pages {
            return Err(SimError::bad_option(self.owner(), "pages", self.pages, format!("at least {min_pages} pages")));
        }
        if self.accesses == 0 {
            return Err(SimError::bad_option(self.owner(), "accesses", 0, "at least 1 access"));
        }
        Ok(())
    }
}

/// A registered workload: its name, a one-line description, and its builder.
pub struct Registered {
    /// Name on the command line.
    pub name: &'static str,
    /// What it mimics.
    pub about: &'static str,
    /// Builds the stream.
    pub build: fn(&WorkloadSpec) -> Result<Box<dyn Workload>, SimError>,
}

/// Every built-in workload. A module may register several names (its `build` reads
/// `spec.name` to tell them apart).
pub const REGISTRY: &[Registered] = &[
    Registered {
        name: "zipf",
        about: "scrambled Zipf(alpha) over all pages (option alpha, default 0.99)",
        build: zipf::build,
    },
    Registered { name: "gups", about: "GUPS: a hot set takes 90% of updates (HeMem, Colloid)", build: gups::build },
    Registered {
        name: "hotset-shift",
        about: "2/3 of the hot set turns cold mid-run (HybridTier §2.3.2, FreqTier §VII-D)",
        build: hotset_shift::build,
    },
    Registered { name: "ycsb-a", about: "YCSB A: 50% reads, 50% updates, scrambled Zipf 0.99", build: ycsb::build },
    Registered { name: "ycsb-b", about: "YCSB B: 95% reads, 5% updates, scrambled Zipf 0.99", build: ycsb::build },
    Registered { name: "ycsb-c", about: "YCSB C: read only, scrambled Zipf 0.99", build: ycsb::build },
    Registered {
        name: "cachelib-cdn",
        about: "CacheLib CDN: large objects, Zipf popularity, slab pages (HybridTier §5)",
        build: cachelib::build,
    },
    Registered {
        name: "cachelib-social",
        about: "CacheLib social graph: small objects packed in slab pages (HybridTier §5)",
        build: cachelib::build,
    },
    Registered {
        name: "gap-bfs",
        about: "GAP breadth-first search on a Kronecker graph (FreqTier §VI)",
        build: gap::build,
    },
    Registered { name: "gap-pr", about: "GAP PageRank on a Kronecker graph", build: gap::build },
    Registered { name: "gap-cc", about: "GAP connected components on a Kronecker graph", build: gap::build },
    Registered { name: "gap-bc", about: "GAP betweenness centrality on a Kronecker graph", build: gap::build },
    Registered {
        name: "xgboost",
        about: "XGBoost histogram building with row subsampling (HybridTier §5)",
        build: xgboost::build,
    },
    Registered { name: "scan", about: "one-time sequential pollution over a Zipf hot set", build: scan::build },
    Registered { name: "sparse-kv", about: "small objects: few hot words per page (M5 §4)", build: sparse_kv::build },
    Registered {
        name: "chase-stream",
        about:
            "pointer chasing (MLP 1) beside streamed arrays taking more accesses per page (SOAR/ALTO's microbenchmark)",
        build: chase_stream::build,
    },
    Registered {
        name: "trace",
        about: "a trace file: native, oracle-general, csv, lackey, perf-script, pinatrace or damo (detected; options \
                path, format, limit, next_access)",
        build: crate::trace::build,
    },
];

/// Builds the workload `spec` names; an unknown name lists the valid ones. The options
/// `llc_mib`, `llc_ways`, `sample_every` and `instructions` show any workload through a
/// last-level cache, as `tierkit record` sees a program (see `llc_view`).
pub fn build(spec: &WorkloadSpec) -> Result<Box<dyn Workload>, SimError> {
    if llc_view::wanted(spec) {
        return llc_view::build(spec, build_named);
    }
    build_named(spec)
}

fn build_named(spec: &WorkloadSpec) -> Result<Box<dyn Workload>, SimError> {
    match REGISTRY.iter().find(|r| r.name == spec.name) {
        Some(r) => (r.build)(spec),
        None => Err(SimError::unknown("workload", &spec.name, REGISTRY.iter().map(|r| r.name))),
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Checks every workload must pass.
    use super::*;

    /// Drains `spec`'s stream, checking ids, length and determinism; returns per-page
    /// access counts.
    pub fn drain_checked(spec: &WorkloadSpec) -> Vec<u64> {
        let mut a = build(spec).unwrap();
        let mut b = build(spec).unwrap();
        let pages = a.pages();
        assert!(pages > 0);
        let mut counts = vec![0u64; pages as usize];
        let (mut xa, mut xb) = (Vec::new(), Vec::new());
        let mut total = 0;
        loop {
            xa.clear();
            xb.clear();
            let n = a.fill(&mut xa, 4096);
            assert_eq!(n, b.fill(&mut xb, 4096));
            assert_eq!(xa, xb, "same spec, same stream");
            assert_eq!(n, xa.len());
            if n == 0 {
                break;
            }
            for acc in &xa {
                assert!(acc.page < pages, "page {} >= {pages}", acc.page);
                assert!(acc.word < 64);
                counts[acc.page as usize] += 1;
            }
            total += n as u64;
        }
        assert_eq!(total, a.len(), "len() is the number of accesses produced");
        counts
    }
}
