//! oracleGeneral files with either convention of `next_access_vtime`: a file counting
//! from 0 replays and simulates exactly like the same trace counting from 1 (pointers
//! followed), a file that fits neither is refused naming the record, and the reader
//! behind `trace info` reports the convention.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use tierkit_core::dist::Rng;
use tierkit_sim::engine::{run, RunSpec, Subject};
use tierkit_sim::result::RunResult;
use tierkit_sim::trace::info::stats;
use tierkit_sim::trace::oracle_general::{next_access_vtimes, Convention, Record, RecordReader};
use tierkit_sim::trace::{NextAccess, OracleGeneralTrace};
use tierkit_sim::workload::{self, WorkloadSpec};
use tierkit_sim::SimError;

/// A fresh directory for this test's files.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tierkit-og-convention-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Records of `ids` (every `zero_size`-th one of size 0, 0 for none) with the 1-based
/// pointers libCacheSim's traceConv writes, less `shift` (1: 0-based).
fn records(ids: &[u64], zero_size: usize, shift: i64) -> Vec<Record> {
    let next = next_access_vtimes(ids);
    (0..)
        .zip(ids.iter().zip(next))
        .map(|(i, (&obj_id, next))| Record {
            clock_time: i as u32,
            obj_id,
            obj_size: if zero_size > 0 && i % zero_size == 0 { 0 } else { 4096 },
            next_access_vtime: if next == -1 { next } else { next - shift },
        })
        .collect()
}

fn write(path: &Path, records: &[Record]) {
    std::fs::write(path, records.iter().flat_map(|r| r.to_bytes()).collect::<Vec<u8>>()).unwrap();
}

fn spec(path: &Path) -> WorkloadSpec {
    WorkloadSpec::new("trace", 1, 1, 1).with("path", path.display())
}

/// The page stream of the `trace` workload of `spec`.
fn pages(spec: &WorkloadSpec) -> Vec<u64> {
    let mut wl = workload::build(spec).unwrap();
    let (mut all, mut buf) = (Vec::new(), Vec::new());
    loop {
        buf.clear();
        if wl.fill(&mut buf, 1000) == 0 {
            return all;
        }
        all.extend(buf.iter().map(|a| a.page));
    }
}

/// Dense ids, in order of first appearance, of the non-zero-size records.
fn dense(records: &[Record]) -> Vec<u64> {
    let mut map = HashMap::new();
    records
        .iter()
        .filter(|r| r.obj_size != 0)
        .map(|r| {
            let fresh = map.len() as u64;
            *map.entry(r.obj_id).or_insert(fresh)
        })
        .collect()
}

fn simulate(path: &Path, subject: &str) -> RunResult {
    run(&RunSpec::new(spec(path), (1, 8)), Subject::Named(subject.into()), &mut |_| {}).unwrap()
}

/// `trace info`'s reading of the file: its convention, or the error.
fn info_convention(path: &Path) -> Result<Convention, SimError> {
    let mut reader = RecordReader::open(path)?;
    stats(&mut reader, "t")?;
    Ok(reader.convention())
}

#[test]
fn a_zero_based_file_simulates_like_its_one_based_twin() {
    let dir = scratch("twins");
    let path = dir.join("t.oracleGeneral.bin");
    // Skewed: most requests go to few of 3,000 objects; every 97th record has size 0.
    let mut rng = Rng::new(16);
    let ids: Vec<u64> = (0..40_000)
        .map(|_| {
            let hot = 1 + rng.below(3_000);
            rng.below(hot) * 4099
        })
        .collect();
    let one_based = records(&ids, 97, 0);
    let zero_based = records(&ids, 97, 1);
    assert_eq!(one_based[0].next_access_vtime, zero_based[0].next_access_vtime + 1);

    // Same path for both, so that the results (which name it) can be compared whole.
    let mut results = Vec::new();
    for (records, convention) in [(&one_based, Convention::OneBased), (&zero_based, Convention::ZeroBased)] {
        write(&path, records);
        let info = *OracleGeneralTrace::open(&path, u64::MAX, NextAccess::Check).unwrap().info();
        assert_eq!(info.convention, Some(convention));
        assert_eq!(pages(&spec(&path)), dense(records), "{convention}");
        assert_eq!(info_convention(&path).unwrap(), convention);
        results.push((info.followed, simulate(&path, "lru"), simulate(&path, "oracle")));
    }
    let (one, zero) = (&results[0], &results[1]);
    assert!(one.0 > 30_000, "repeats follow their pointers: {}", one.0);
    assert_eq!(zero.0, one.0, "the 0-based pointers are followed as often");
    assert_eq!(zero.1, one.1, "lru");
    assert_eq!(zero.2, one.2, "oracle");
    assert!(one.2.fast_hit_ratio > one.1.fast_hit_ratio, "the oracle ran: {:?}", (&one.2, &one.1));

    // next_access=ignore still replays it, and a limit before any repeat leaves the
    // convention undetermined (the pointers are checked under either, not followed).
    write(&path, &zero_based);
    assert_eq!(pages(&spec(&path).with("next_access", "ignore")), dense(&zero_based));
    let first_repeat = ids.iter().enumerate().position(|(i, id)| ids[..i].contains(id)).unwrap() as u64;
    let wl = OracleGeneralTrace::open(&path, first_repeat - 1, NextAccess::Check).unwrap();
    assert_eq!((wl.info().convention, wl.info().followed), (Some(Convention::Undetermined), 0));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_file_that_fits_neither_convention_is_refused_naming_the_record() {
    let dir = scratch("neither");
    let path = dir.join("neither.bin");
    // A B A C B A: A (record 0) is next requested by record 2, so its pointer must be 3
    // or 2; 4 is neither (record 3 requests C, record 4 B).
    let ids = [10, 20, 10, 30, 20, 10];
    let mut bad = records(&ids, 0, 0);
    bad[0].next_access_vtime = 4;
    write(&path, &bad);
    for e in [workload::build(&spec(&path)).err().unwrap(), info_convention(&path).unwrap_err()] {
        assert!(matches!(&e, SimError::File { at, .. } if at == "offset 0"), "{e:?}");
        let e = e.to_string();
        assert!(e.contains("neither.bin") && e.contains("record 0: next_access_vtime 4"), "{e}");
        assert!(e.contains("expected 3 (1-based") && e.contains("or 2 (0-based)"), "{e}");
    }
    assert_eq!(pages(&spec(&path).with("next_access", "ignore")), [0, 1, 0, 2, 1, 0]);

    // Counting from 1 at first (record 0 points at record 1), then from 0: record 2 (B)
    // points at record 4 under 0-based, at record 3 (C) under the file's 1-based.
    let ids = [10, 10, 20, 30, 20];
    let mut mixed = records(&ids, 0, 0);
    mixed[2].next_access_vtime -= 1;
    write(&path, &mixed);
    let e = workload::build(&spec(&path)).err().unwrap();
    assert!(matches!(&e, SimError::File { at, .. } if at == "offset 72"), "{e:?}");
    let e = e.to_string();
    assert!(e.contains("record 3") && e.contains("object 20") && e.contains("record 0"), "{e}");
    assert!(e.contains("next_access=ignore"), "{e}");
    assert_eq!(pages(&spec(&path).with("next_access", "ignore")), [0, 0, 1, 2, 1]);

    // A pointer to the record itself fits neither, wherever it is.
    let mut itself = records(&ids, 0, 0);
    itself[3].next_access_vtime = 3;
    write(&path, &itself);
    for e in [workload::build(&spec(&path)).err().unwrap(), info_convention(&path).unwrap_err()] {
        let e = e.to_string();
        assert!(e.contains("offset 72") && e.contains("record 3: next_access_vtime 3"), "{e}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn trace_info_reports_the_convention() {
    let dir = scratch("info");
    let path = dir.join("t.bin");
    let ids = [1, 2, 3, 1, 2, 1];
    for (records, want, text) in [
        (records(&ids, 0, 0), Convention::OneBased, "1-based (libCacheSim traceConv)"),
        (records(&ids, 0, 1), Convention::ZeroBased, "0-based"),
        (records(&[1, 2, 3], 0, 0), Convention::Absent, "absent (all -1)"),
    ] {
        write(&path, &records);
        let got = info_convention(&path).unwrap();
        assert_eq!((got, got.to_string().as_str()), (want, text));
    }
    // Pointers all past the end (a cut trace): nothing tells the conventions apart.
    let mut cut = records(&[1, 2, 1, 2], 0, 0);
    cut.truncate(2);
    write(&path, &cut);
    assert_eq!(info_convention(&path).unwrap(), Convention::Undetermined);
    assert!(Convention::Undetermined.to_string().starts_with("undetermined"));
    std::fs::remove_dir_all(dir).unwrap();
}
