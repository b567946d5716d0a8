//! Update throughput of the hotness sketches on a Zipf(0.99) page stream over 64M pages,
//! and the tracking memory of each structure at HybridTier's default sizing.
//!
//! ```text
//! cargo bench -p tierkit-core --bench sketch_update
//! ```
//!
//! Every benchmark iteration feeds one batch of `BATCH` samples of a fixed, pre-generated
//! stream (the batches are taken in turn, wrapping around), so all structures see the
//! same pages in the same order and criterion reports samples per second
//! (`Throughput::Elements`). The structures keep their state across iterations, as a
//! policy's sketch does; nothing is aged.
//!
//! - `cbf/<MiB>`: standard 4-bit counting Bloom filter, k = 4, one `increment` per sample.
//! - `blocked-cbf/<MiB>`: blocked 4-bit filter, k = 4, one `increment` per sample.
//! - `blocked-cbf-increment-all/<MiB>`: the same filter fed one batch at a time through
//!   `BlockedCountingBloomFilter::increment_all` (hash ahead + prefetch), not the trait.
//! - `blocked-cbf-coalesced/<MiB>`: the batch goes into a [`Coalescer`], then one
//!   `flush` per batch (FreqTier §V-C-c); the figure counts samples, not filter updates.
//! - `exact-map/64M-pages`: [`ExactCounter`] holding an entry for every one of the 64M
//!   pages beforehand (HeMem/MEMTIS-style per-page metadata), one `increment` per sample.
//!   This is the baseline `docs/BENCHMARKS.md` divides by. It runs first and again last
//!   (`exact-map-recheck`), so drift during the run (a busy neighbour) shows.
//!
//! Under `cargo test --benches` (criterion's test mode, each routine run once) the page
//! universe and stream are shrunk so the smoke test does not build a 2 GiB map.

use std::collections::HashSet;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput};
use tierkit_core::dist::{Rng, Zipf};
use tierkit_core::hash::mix64;
use tierkit_core::sketches::footprint::footprint;
use tierkit_core::sketches::{
    BlockedCountingBloomFilter, Coalescer, CounterBits, CountingBloomFilter, ExactCounter, FrequencySketch,
};
use tierkit_core::PAGE_SIZE;

/// Distinct pages of the Zipf universe.
const PAGES: u64 = 64 << 20;
/// Zipf exponent (YCSB's and the papers' default).
const ZIPF_S: f64 = 0.99;
/// Samples in the pre-generated stream.
const STREAM_LEN: usize = 2 << 20;
/// Samples per benchmark iteration, and per coalescing batch.
const BATCH: usize = 100_000;
/// Filter sizes, MiB.
const SIZES_MIB: [u64; 5] = [1, 4, 16, 64, 256];
/// Hash functions per filter (HybridTier §4.2).
const K: u32 = 4;
const STREAM_SEED: u64 = 0x5eed_2026;

const GIB: u64 = 1 << 30;

/// Criterion measures only with `--bench` (what `cargo bench` passes) and without `--test`.
fn measuring() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test" || a == "--list")
}

fn print_footprint() {
    // HybridTier's default machine: 16 GiB fast tier, 1:16 fast:slow.
    let fast_pages = 16 * GIB / PAGE_SIZE;
    let slow_pages = 16 * fast_pages;
    let managed_gib = ((fast_pages + slow_pages) * PAGE_SIZE) as f64 / GIB as f64;
    let fast_gib = (fast_pages * PAGE_SIZE) as f64 / GIB as f64;
    let rows = footprint(fast_pages, slow_pages).expect("footprint at the default sizing");
    println!("tracking memory: fast {fast_gib} GiB ({fast_pages} pages), slow {} GiB ({slow_pages} pages), managed {managed_gib} GiB", 16.0 * fast_gib);
    println!("{:<16} {:<42} {:>15} {:>16} {:>14}", "structure", "sizing", "heap bytes", "B/managed GiB", "B/fast GiB");
    for r in &rows {
        println!(
            "{:<16} {:<42} {:>15} {:>16.0} {:>14.0}",
            r.structure,
            r.sizing,
            r.heap_bytes,
            r.heap_bytes as f64 / managed_gib,
            r.heap_bytes as f64 / fast_gib
        );
    }
    println!();
}

/// The fixed page stream: scrambled Zipf ranks, so every page is `mix64(rank)`.
fn stream(pages: u64, len: usize) -> Vec<u64> {
    let zipf = Zipf::new(pages, ZIPF_S).expect("zipf parameters");
    let mut rng = Rng::new(STREAM_SEED);
    (0..len).map(|_| zipf.sample_scrambled(&mut rng)).collect()
}

fn print_stream_stats(pages: u64, stream: &[u64]) {
    let distinct = stream.iter().copied().collect::<HashSet<_>>().len();
    let per_batch: Vec<usize> = stream.chunks(BATCH).map(|c| c.iter().copied().collect::<HashSet<_>>().len()).collect();
    let mean = per_batch.iter().sum::<usize>() as f64 / per_batch.len() as f64;
    println!(
        "stream: {} samples of Zipf({ZIPF_S}) over {pages} pages (seed {STREAM_SEED:#x}); {distinct} distinct pages; \
         batches of {BATCH}: {mean:.0} distinct pages on average ({:.2} samples per filter update when coalesced)",
        stream.len(),
        BATCH as f64 / mean
    );
    println!("coalescer: with_capacity({BATCH}) allocates {} heap bytes", Coalescer::with_capacity(BATCH).heap_bytes());
    println!();
}

/// Round-robin over the stream's batches, so each iteration costs the same.
struct Batches<'a> {
    stream: &'a [u64],
    next: usize,
}

impl<'a> Batches<'a> {
    fn new(stream: &'a [u64]) -> Self {
        Self { stream, next: 0 }
    }

    #[inline]
    fn next(&mut self) -> &'a [u64] {
        if self.next + BATCH > self.stream.len() {
            self.next = 0;
        }
        let b = &self.stream[self.next..self.next + BATCH];
        self.next += BATCH;
        b
    }
}

#[inline]
fn feed<S: FrequencySketch>(sketch: &mut S, batch: &[u64]) -> u32 {
    let mut acc = 0u32;
    for &page in batch {
        acc = acc.wrapping_add(sketch.increment(black_box(page)));
    }
    acc
}

fn pages_label(pages: u64) -> String {
    if pages >= 1 << 20 {
        format!("{}M-pages", pages >> 20)
    } else {
        format!("{}K-pages", pages >> 10)
    }
}

fn bench_updates(c: &mut Criterion, pages: u64, stream: &[u64]) {
    let mut group = c.benchmark_group("sketch_update");
    group.throughput(Throughput::Elements(BATCH as u64));

    // The baseline first, and again last (`exact-map-recheck`): on a shared machine the
    // two bracket the run, and a run whose two baseline figures disagree is not used.
    let mut exact: Option<ExactCounter> = None;
    let mut exact_batches = Batches::new(stream);
    bench_exact(&mut group, "exact-map", pages, &mut exact, &mut exact_batches);

    for mib in SIZES_MIB {
        let bytes = mib << 20;
        let mut filter: Option<CountingBloomFilter> = None;
        let mut batches = Batches::new(stream);
        group.bench_function(BenchmarkId::new("cbf", format!("{mib}MiB")), |b| {
            let f = filter
                .get_or_insert_with(|| CountingBloomFilter::with_bytes(bytes, K, CounterBits::Four).expect("cbf"));
            b.iter(|| feed(f, batches.next()));
        });
    }

    for mib in SIZES_MIB {
        let bytes = mib << 20;
        let mut filter: Option<BlockedCountingBloomFilter> = None;
        let mut batches = Batches::new(stream);
        group.bench_function(BenchmarkId::new("blocked-cbf", format!("{mib}MiB")), |b| {
            let f = filter.get_or_insert_with(|| {
                BlockedCountingBloomFilter::with_bytes(bytes, K, CounterBits::Four).expect("blocked cbf")
            });
            b.iter(|| feed(f, batches.next()));
        });
    }

    // Not a `FrequencySketch` call: the blocked filter's own batched path (hashes a group
    // of pages ahead and prefetches their lines), same result as `increment` per sample.
    for mib in SIZES_MIB {
        let bytes = mib << 20;
        let mut filter: Option<BlockedCountingBloomFilter> = None;
        let mut batches = Batches::new(stream);
        group.bench_function(BenchmarkId::new("blocked-cbf-increment-all", format!("{mib}MiB")), |b| {
            let f = filter.get_or_insert_with(|| {
                BlockedCountingBloomFilter::with_bytes(bytes, K, CounterBits::Four).expect("blocked cbf")
            });
            b.iter(|| f.increment_all(black_box(batches.next())));
        });
    }

    for mib in SIZES_MIB {
        let bytes = mib << 20;
        let mut state: Option<(BlockedCountingBloomFilter, Coalescer)> = None;
        let mut batches = Batches::new(stream);
        group.bench_function(BenchmarkId::new("blocked-cbf-coalesced", format!("{mib}MiB")), |b| {
            let (f, co) = state.get_or_insert_with(|| {
                let f = BlockedCountingBloomFilter::with_bytes(bytes, K, CounterBits::Four).expect("blocked cbf");
                (f, Coalescer::with_capacity(BATCH))
            });
            b.iter(|| {
                for &page in batches.next() {
                    co.add(black_box(page));
                }
                co.flush(f)
            });
        });
    }

    bench_exact(&mut group, "exact-map-recheck", pages, &mut exact, &mut exact_batches);
    group.finish();
}

/// The exact map with every managed page present, built on first use.
fn bench_exact(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    pages: u64,
    exact: &mut Option<ExactCounter>,
    batches: &mut Batches<'_>,
) {
    group.bench_function(BenchmarkId::new(name, pages_label(pages)), |b| {
        let map = exact.get_or_insert_with(|| {
            let t = Instant::now();
            let mut map = ExactCounter::with_capacity(pages as usize);
            for rank in 1..=pages {
                map.increase(mix64(rank), 0);
            }
            eprintln!(
                "  (exact map: {} pages, {} heap bytes, populated in {:.1?})",
                map.len(),
                map.heap_bytes(),
                t.elapsed()
            );
            map
        });
        b.iter(|| feed(map, batches.next()));
    });
}

fn main() {
    let measuring = measuring();
    // Test mode runs each routine once: a small universe keeps it quick.
    let (pages, len) = if measuring { (PAGES, STREAM_LEN) } else { (1 << 16, 2 * BATCH) };

    print_footprint();
    let stream = stream(pages, len);
    if measuring {
        print_stream_stats(pages, &stream);
    }

    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    bench_updates(&mut c, pages, &stream);
    c.final_summary();
}
