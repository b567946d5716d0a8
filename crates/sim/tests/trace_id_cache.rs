//! An oracleGeneral trace is decoded once: its first complete replay caches the page ids
//! beside it (`TRACE.tkids`), later replays read them and give the same stream, and a
//! cache that does not match its trace, or is damaged, is not used or fails loudly.

use std::fs;
use std::path::{Path, PathBuf};

use tierkit_core::dist::Rng;
use tierkit_sim::trace::{write_oracle_general, NextAccess, OracleGeneralTrace};
use tierkit_sim::workload::{Access, Workload};

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tierkit-idcache-{}-{test}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn cache_of(trace: &Path) -> PathBuf {
    PathBuf::from(format!("{}.tkids", trace.display()))
}

fn zipf_ids(n: usize, objects: u64, seed: u64) -> Vec<u64> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| 1_000_003 * (rng.below(objects).min(rng.below(objects)) + 1)).collect()
}

fn open(path: &Path) -> OracleGeneralTrace {
    OracleGeneralTrace::open(path, u64::MAX, NextAccess::Check).unwrap()
}

/// The whole stream, in chunks of `chunk`; the stream's error, if it ended on one.
fn drain(wl: &mut OracleGeneralTrace, chunk: usize) -> (Vec<u64>, Option<String>) {
    let mut out: Vec<Access> = Vec::new();
    while wl.fill(&mut out, chunk) > 0 {}
    (out.iter().map(|a| a.page).collect(), wl.take_error().map(|e| e.to_string()))
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    names
}

#[test]
fn the_second_replay_reads_the_cache_and_gives_the_same_stream() {
    let dir = scratch("same");
    let path = dir.join("t.bin");
    write_oracle_general(&path, zipf_ids(300_000, 40_000, 1)).unwrap();
    let mut first = open(&path);
    assert!(!first.reads_cached_ids());
    assert!(!cache_of(&path).exists(), "the cache is written by a complete replay, not by opening");
    let (pages, error) = drain(&mut first, 4096);
    assert_eq!(error, None);
    assert_eq!(files_in(&dir), ["t.bin", "t.bin.tkids"], "one cache, no temporary file left");

    let mut second = open(&path);
    assert!(second.reads_cached_ids());
    assert_eq!(second.info(), first.info());
    assert_eq!((second.pages(), second.len()), (first.pages(), first.len()));
    assert_eq!(drain(&mut second, 1000), (pages, None));
}

#[test]
fn a_replay_that_stops_early_writes_no_cache() {
    let dir = scratch("partial");
    let path = dir.join("t.bin");
    write_oracle_general(&path, zipf_ids(100_000, 10_000, 2)).unwrap();
    let mut wl = open(&path);
    let mut out = Vec::new();
    assert_eq!(wl.fill(&mut out, 50_000), 50_000);
    drop(wl);
    assert_eq!(files_in(&dir), ["t.bin"]);
    // Nor does a replay of a prefix (`limit`), whose scan never read the whole file.
    let mut limited = OracleGeneralTrace::open(&path, 70_000, NextAccess::Check).unwrap();
    assert_eq!(drain(&mut limited, 4096).0.len(), 70_000);
    assert_eq!(files_in(&dir), ["t.bin"]);
}

#[test]
fn a_cache_of_another_version_of_the_trace_is_not_used() {
    let dir = scratch("stale");
    let path = dir.join("t.bin");
    write_oracle_general(&path, zipf_ids(100_000, 10_000, 3)).unwrap();
    drain(&mut open(&path), 4096);
    assert!(cache_of(&path).exists());
    // The same length, other objects.
    let other = zipf_ids(100_000, 20_000, 4);
    write_oracle_general(&path, other.iter().copied()).unwrap();
    let mut wl = open(&path);
    assert!(!wl.reads_cached_ids());
    let (pages, error) = drain(&mut wl, 4096);
    assert_eq!(error, None);
    let mut ids = std::collections::HashMap::new();
    let want: Vec<u64> = other
        .iter()
        .map(|o| {
            let fresh = ids.len() as u64;
            *ids.entry(*o).or_insert(fresh)
        })
        .collect();
    assert_eq!(pages, want);
    // That replay rewrote the cache for the new file.
    assert!(open(&path).reads_cached_ids());
}

#[test]
fn a_damaged_cache_is_ignored_or_fails_loudly() {
    let dir = scratch("damaged");
    let path = dir.join("t.bin");
    write_oracle_general(&path, zipf_ids(50_000, 5_000, 5)).unwrap();
    let (pages, _) = drain(&mut open(&path), 4096);
    let cache = cache_of(&path);
    let bytes = fs::read(&cache).unwrap();

    // Cut short: not used, the trace is read instead.
    fs::write(&cache, &bytes[..bytes.len() - 4]).unwrap();
    let mut wl = open(&path);
    assert!(!wl.reads_cached_ids());
    assert_eq!(drain(&mut wl, 4096), (pages.clone(), None));

    // The right length but an id past the objects: the replay ends with an error.
    let mut bad = bytes.clone();
    let at = bad.len() - 4 * 100;
    bad[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    fs::write(&cache, &bad).unwrap();
    let mut wl = open(&path);
    assert!(wl.reads_cached_ids());
    let (got, error) = drain(&mut wl, 4096);
    assert_eq!(got[..], pages[..pages.len() - 100]);
    let error = error.expect("an error");
    assert!(error.contains("t.bin.tkids") && error.contains("delete the file"), "{error}");
}
