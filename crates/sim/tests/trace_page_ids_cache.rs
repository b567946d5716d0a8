//! A trace in a format other than oracleGeneral is numbered once: opening the whole
//! trace writes every access's page id beside it (`TRACE.tkids`) and replays from it;
//! later openings skip the numbering pass; a prefix, a stale or a damaged cache is not
//! trusted.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use tierkit_core::dist::Rng;
use tierkit_sim::model::MlpClass;
use tierkit_sim::trace::native::Fields;
use tierkit_sim::trace::{Format, NativeWriter, PageAccess, PageTrace};
use tierkit_sim::workload::{Access, Workload};

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tierkit-pageids-{}-{test}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    names
}

/// A skewed stream over `pages` sparse page numbers, with stores, instruction gaps and
/// classes drawn from `seed`.
fn accesses(n: usize, pages: u64, seed: u64) -> Vec<(PageAccess, MlpClass)> {
    let mut rng = Rng::new(seed);
    let classes = [MlpClass::Default, MlpClass::Dependent, MlpClass::Streaming];
    (0..n)
        .map(|_| {
            let page = 0x7f00_0000 + 3 * rng.below(pages).min(rng.below(pages));
            let a = PageAccess { page, write: rng.below(4) == 0, instructions: 1 + rng.below(5000) };
            (a, classes[rng.below(3) as usize])
        })
        .collect()
}

fn write(path: &Path, stream: &[(PageAccess, MlpClass)]) {
    let fields = Fields { writes: true, sample_every: Some(8), classes: true };
    let mut w = NativeWriter::with_fields(path, fields).unwrap();
    for &(a, class) in stream {
        w.push_classed(a, class).unwrap();
    }
    w.finish().unwrap();
}

/// What a replay of `stream`'s first `len` accesses must give: pages numbered in order
/// of first appearance, and the instructions of those accesses.
fn expected(stream: &[(PageAccess, MlpClass)], len: usize) -> (Vec<Access>, u64) {
    let mut ids = HashMap::new();
    let out = stream[..len]
        .iter()
        .map(|&(a, class)| {
            let fresh = ids.len() as u64;
            let page = *ids.entry(a.page).or_insert(fresh);
            Access { page, word: 0, write: a.write, class }
        })
        .collect();
    (out, stream[..len].iter().map(|(a, _)| a.instructions).sum())
}

/// The whole stream in fills of `chunk`, the instructions taken after each, and the
/// stream's error.
fn drain(wl: &mut PageTrace, chunk: usize) -> (Vec<Access>, u64, Option<String>) {
    let (mut out, mut instructions) = (Vec::new(), 0);
    while wl.fill(&mut out, chunk) > 0 {
        instructions += wl.take_instructions();
    }
    (out, instructions, wl.take_error().map(|e| e.to_string()))
}

fn open(path: &Path, limit: u64) -> PageTrace {
    PageTrace::open(path, Format::Native, limit).unwrap()
}

/// A trace of `n` accesses over `pages` pages in a scratch directory for `test`, opened
/// whole once so that its cache exists: the trace, its cache and its stream.
fn cached_trace(test: &str, n: usize, pages: u64, seed: u64) -> (PathBuf, PathBuf, Vec<(PageAccess, MlpClass)>) {
    let dir = scratch(test);
    let path = dir.join("t.tktrace");
    let stream = accesses(n, pages, seed);
    write(&path, &stream);
    drop(open(&path, u64::MAX));
    let cache = dir.join("t.tktrace.tkids");
    assert!(cache.exists());
    (path, cache, stream)
}

#[test]
fn opening_the_whole_trace_caches_its_ids_and_every_replay_gives_the_same_stream() {
    let dir = scratch("same");
    let path = dir.join("t.tktrace");
    let stream = accesses(200_000, 30_000, 1);
    write(&path, &stream);
    let (want, instructions) = expected(&stream, stream.len());

    let mut first = open(&path, u64::MAX);
    assert_eq!(files_in(&dir), ["t.tktrace", "t.tktrace.tkids"], "one cache, no temporary file left");
    assert!(first.reads_cached_ids(), "the first replay already reads the ids it wrote");
    let pages = want.iter().map(|a| a.page).max().unwrap() + 1;
    assert_eq!((first.pages(), first.len()), (pages, stream.len() as u64));
    let clock = first.clock().expect("a clock");
    assert_eq!((clock.instructions, clock.sample_every), (instructions, 8));
    assert_eq!(drain(&mut first, 4096), (want.clone(), instructions, None));

    let mut second = open(&path, u64::MAX);
    assert!(second.reads_cached_ids());
    assert_eq!((second.pages(), second.len(), second.clock()), (pages, stream.len() as u64, Some(clock)));
    assert_eq!(drain(&mut second, 333), (want.clone(), instructions, None));
    // A limit past the trace's end replays all of it, from the cache too.
    let mut covering = open(&path, 10 * stream.len() as u64);
    assert!(covering.reads_cached_ids());
    assert_eq!(drain(&mut covering, 1000), (want, instructions, None));
}

#[test]
fn a_prefix_neither_writes_nor_reads_the_cache() {
    let dir = scratch("prefix");
    let path = dir.join("t.tktrace");
    let stream = accesses(50_000, 8_000, 2);
    write(&path, &stream);
    let (want, instructions) = expected(&stream, 20_000);
    let mut prefix = open(&path, 20_000);
    assert!(!prefix.reads_cached_ids());
    assert_eq!(files_in(&dir), ["t.tktrace"]);
    assert_eq!(prefix.clock().unwrap().instructions, instructions);
    assert_eq!(drain(&mut prefix, 4096), (want.clone(), instructions, None));

    drop(open(&path, u64::MAX));
    assert!(dir.join("t.tktrace.tkids").exists());
    let mut prefix = open(&path, 20_000);
    assert!(!prefix.reads_cached_ids(), "the cache counts the whole trace's pages, not the prefix's");
    assert_eq!(prefix.pages(), want.iter().map(|a| a.page).max().unwrap() + 1);
    assert_eq!(drain(&mut prefix, 4096), (want, instructions, None));
}

#[test]
fn a_cache_of_another_version_of_the_trace_is_not_used() {
    let (path, cache, _) = cached_trace("stale", 50_000, 8_000, 3);
    let old = fs::read(&cache).unwrap();
    let other = accesses(50_000, 20_000, 4);
    write(&path, &other);
    let (want, instructions) = expected(&other, other.len());
    let mut wl = open(&path, u64::MAX);
    assert_ne!(fs::read(&cache).unwrap(), old, "the new trace's numbering replaced the stale cache");
    assert_eq!(drain(&mut wl, 4096), (want, instructions, None));
}

#[test]
fn a_damaged_cache_is_ignored_or_fails_loudly() {
    let (path, cache, stream) = cached_trace("damaged", 50_000, 5_000, 5);
    let bytes = fs::read(&cache).unwrap();
    let (want, instructions) = expected(&stream, stream.len());

    // Cut short: not used; opening numbers the trace again and rewrites it.
    fs::write(&cache, &bytes[..bytes.len() - 4]).unwrap();
    let mut wl = open(&path, u64::MAX);
    assert_eq!(fs::read(&cache).unwrap(), bytes);
    assert_eq!(drain(&mut wl, 4096), (want.clone(), instructions, None));

    // The right length but an id past the pages: the replay ends with an error there.
    let mut bad = bytes.clone();
    let at = bad.len() - 4 * 100;
    bad[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    fs::write(&cache, &bad).unwrap();
    let mut wl = open(&path, u64::MAX);
    assert!(wl.reads_cached_ids());
    let (got, _, error) = drain(&mut wl, 4096);
    assert_eq!(got[..], want[..want.len() - 100]);
    let error = error.expect("an error");
    assert!(error.contains("t.tktrace.tkids") && error.contains("delete the file"), "{error}");
}
