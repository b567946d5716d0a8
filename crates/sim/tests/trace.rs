//! The `trace` workload (libCacheSim oracleGeneral files): the writer and the reader agree,
//! `next_access_vtime` follows libCacheSim's convention, bad files give errors naming the
//! file and offset, streams are deterministic, and no input makes the reader panic.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use tierkit_core::dist::Rng;
use tierkit_sim::trace::oracle_general::{next_access_vtimes, Record, NO_NEXT_ACCESS, RECORD_BYTES, WRITER_OBJ_SIZE};
use tierkit_sim::trace::{self, write_oracle_general, NextAccess, OracleGeneralTrace};
use tierkit_sim::workload::{self, Access, Workload, WorkloadSpec};
use tierkit_sim::SimError;

/// A fresh directory for this test's files.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tierkit-trace-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn spec(path: &Path) -> WorkloadSpec {
    // pages, accesses and seed are ignored by traces: give values that would be wrong.
    WorkloadSpec::new("trace", 1, 1, 99).with("path", path.display())
}

fn open(path: &Path) -> Result<Box<dyn Workload>, SimError> {
    trace::build(&spec(path))
}

fn err(path: &Path) -> String {
    match open(path) {
        Ok(w) => panic!("{} opened: {} requests", path.display(), w.len()),
        Err(e) => e.to_string(),
    }
}

/// Drains `wl` in chunks of `chunk`, checking the stream's invariants.
fn drain(wl: &mut dyn Workload, chunk: usize) -> Vec<u64> {
    let mut pages = Vec::new();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = wl.fill(&mut buf, chunk);
        assert_eq!(n, buf.len());
        assert!(n <= chunk);
        if n == 0 {
            break;
        }
        for a in &buf {
            assert!(a.page < wl.pages(), "page {} >= {}", a.page, wl.pages());
            assert_eq!(*a, Access::read(a.page), "reads of word 0");
        }
        pages.extend(buf.iter().map(|a| a.page));
    }
    assert_eq!(pages.len() as u64, wl.len(), "len() is the number of accesses produced");
    assert_eq!(wl.fill(&mut buf, chunk), 0, "stays exhausted");
    pages
}

/// Dense ids in order of first appearance.
fn dense(ids: &[u64]) -> Vec<u64> {
    let mut map = HashMap::new();
    ids.iter()
        .map(|id| {
            let n = map.len() as u64;
            *map.entry(*id).or_insert(n)
        })
        .collect()
}

fn write_records(path: &Path, records: &[Record]) {
    std::fs::write(path, records.iter().flat_map(|r| r.to_bytes()).collect::<Vec<u8>>()).unwrap();
}

fn records_of(path: &Path) -> Vec<Record> {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(bytes.len() % RECORD_BYTES, 0);
    bytes.chunks_exact(RECORD_BYTES).map(|c| Record::from_bytes(c.try_into().unwrap())).collect()
}

#[test]
fn round_trip_maps_objects_densely_in_order_of_first_appearance() {
    let dir = scratch("round-trip");
    let path = dir.join("small.oracleGeneral.bin");
    let ids = [10, 20, 10, 30, u64::MAX, 20, 0, 0, 10];
    write_oracle_general(&path, ids).unwrap();
    let mut wl = open(&path).unwrap();
    assert_eq!((wl.pages(), wl.len()), (5, 9));
    assert_eq!(wl.fill(&mut Vec::new(), 0), 0, "max 0 consumes nothing");
    assert_eq!(drain(wl.as_mut(), 4096), vec![0, 1, 0, 2, 3, 1, 4, 4, 0]);

    // A larger random trace, drained in odd chunk sizes across the 64Ki-record buffer.
    let mut rng = Rng::new(7);
    let ids: Vec<u64> = (0..200_000).map(|_| rng.below(5_000).wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
    let path = dir.join("random.oracleGeneral.bin");
    write_oracle_general(&path, ids.iter().copied()).unwrap();
    let want = dense(&ids);
    let info = *OracleGeneralTrace::open(&path, u64::MAX, NextAccess::Check).unwrap().info();
    assert_eq!((info.requests, info.objects, info.zero_size_skipped), (200_000, 5_000, 0));
    assert_eq!(info.followed, info.requests - info.objects, "every repeat follows the previous request's pointer");
    for chunk in [1, 7, 4096, 1 << 20] {
        let mut wl = open(&path).unwrap();
        assert_eq!(wl.pages(), *want.iter().max().unwrap() + 1);
        assert_eq!(drain(wl.as_mut(), chunk), want, "chunk {chunk}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn writer_follows_libcachesim_conventions() {
    let dir = scratch("writer");
    let path = dir.join("abacba.bin");
    // A B A C B A, by hand: A (request 1) is next requested at request 3, B (2) at 5,
    // A (3) at 6; C (4), B (5) and A (6) never again.
    write_oracle_general(&path, [0xA, 0xB, 0xA, 0xC, 0xB, 0xA]).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.len(), 6 * 24, "24-byte records, no header");
    assert_eq!(&bytes[..24], &[0, 0, 0, 0, 0xA, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0]);
    let records = records_of(&path);
    let next: Vec<i64> = records.iter().map(|r| r.next_access_vtime).collect();
    assert_eq!(next, [3, 5, 6, -1, -1, -1]);
    assert_eq!(records.iter().map(|r| r.clock_time).collect::<Vec<_>>(), [0, 1, 2, 3, 4, 5]);
    assert!(records.iter().all(|r| r.obj_size == WRITER_OBJ_SIZE));
    assert_eq!(next_access_vtimes(&[0xA, 0xB, 0xA, 0xC, 0xB, 0xA]), next);

    // On random traces: each next_access_vtime is the 1-based index of the next request
    // to the same object, found by brute force.
    let mut rng = Rng::new(11);
    for _ in 0..20 {
        let ids: Vec<u64> = (0..rng.below(300)).map(|_| rng.below(20)).collect();
        let got = next_access_vtimes(&ids);
        for (i, id) in ids.iter().enumerate() {
            let want = ids[i + 1..].iter().position(|x| x == id).map_or(NO_NEXT_ACCESS, |d| (i + d + 2) as i64);
            assert_eq!(got[i], want, "request {i} of {ids:?}");
        }
    }

    // Empty input writes an empty file.
    write_oracle_general(dir.join("empty.bin"), []).unwrap();
    assert_eq!(std::fs::metadata(dir.join("empty.bin")).unwrap().len(), 0);
    let e = write_oracle_general(dir.join("no-such-dir").join("x.bin"), [1]).unwrap_err().to_string();
    assert!(e.contains("no-such-dir"), "{e}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn same_spec_same_stream_and_limit_caps_it() {
    let dir = scratch("determinism");
    let path = dir.join("t.bin");
    let mut rng = Rng::new(3);
    let ids: Vec<u64> = (0..100_000).map(|_| rng.below(1 << 20)).collect();
    write_oracle_general(&path, ids.iter().copied()).unwrap();

    let spec = spec(&path);
    let (mut a, mut b) = (trace::build(&spec).unwrap(), trace::build(&spec).unwrap());
    assert_eq!((a.pages(), a.len()), (b.pages(), b.len()));
    let (mut xa, mut xb) = (Vec::new(), Vec::new());
    let mut total = 0u64;
    loop {
        xa.clear();
        xb.clear();
        let n = a.fill(&mut xa, 4096);
        assert_eq!(n, b.fill(&mut xb, 4096));
        assert_eq!(xa, xb, "same spec, same stream");
        if n == 0 {
            break;
        }
        total += n as u64;
    }
    assert_eq!(total, a.len());

    // limit: the first `limit` requests, and only their objects are pages.
    for limit in [1u64, 2, 1000, 99_999, 100_000, 1 << 40] {
        let mut wl = trace::build(&spec.clone().with("limit", limit)).unwrap();
        let n = limit.min(ids.len() as u64) as usize;
        let want = dense(&ids[..n]);
        assert_eq!(wl.len(), n as u64);
        assert_eq!(wl.pages(), want.iter().max().unwrap() + 1, "limit {limit}");
        assert_eq!(drain(wl.as_mut(), 333), want);
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn zero_size_records_are_skipped_like_libcachesim() {
    let dir = scratch("zero-size");
    let path = dir.join("t.bin");
    let r = |obj_id, obj_size| Record { clock_time: 0, obj_id, obj_size, next_access_vtime: -1 };
    write_records(&path, &[r(5, 0), r(6, 100), r(5, 0), r(7, 1), r(6, 0)]);
    let wl = OracleGeneralTrace::open(&path, u64::MAX, NextAccess::Check).unwrap();
    let info = *wl.info();
    assert_eq!((info.file_records, info.scanned_records, info.zero_size_skipped), (5, 5, 3));
    assert_eq!((info.requests, info.objects), (2, 2));
    let mut wl: Box<dyn Workload> = Box::new(wl);
    assert_eq!(drain(wl.as_mut(), 10), vec![0, 1], "object 5 only had 0-size requests: no page");

    write_records(&path, &[r(5, 0), r(6, 0)]);
    let e = err(&path);
    assert!(e.contains("t.bin") && e.contains("no requests") && e.contains("obj_size 0"), "{e}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_files_name_the_file_and_the_offset() {
    let dir = scratch("errors");

    let missing = dir.join("missing.bin");
    let e = open(&missing).err().unwrap();
    assert!(matches!(e, SimError::Io { .. }), "{e:?}");
    assert!(e.to_string().contains("missing.bin"), "{e}");

    let e = err(&dir);
    assert!(e.contains("tierkit-trace-") && e.contains("directory"), "{e}");

    let empty = dir.join("empty.bin");
    std::fs::write(&empty, []).unwrap();
    let e = err(&empty);
    assert!(e.contains("empty.bin") && e.contains("offset 0") && e.contains("empty file"), "{e}");

    let cut = dir.join("cut.bin");
    write_oracle_general(&cut, [1, 2, 3]).unwrap();
    let mut bytes = std::fs::read(&cut).unwrap();
    bytes.truncate(3 * 24 - 5);
    std::fs::write(&cut, &bytes).unwrap();
    let e = open(&cut).err().unwrap();
    assert!(matches!(&e, SimError::File { at, .. } if at == "offset 48"), "{e:?}");
    let e = e.to_string();
    assert!(e.contains("cut.bin") && e.contains("truncated: 19 trailing bytes at offset 48"), "{e}");

    let short = dir.join("short.bin");
    std::fs::write(&short, [0u8; 5]).unwrap();
    let e = err(&short);
    assert!(e.contains("short.bin") && e.contains("truncated: 5 trailing bytes at offset 0"), "{e}");

    // A record whose next access is not later: named by its offset.
    let bad = dir.join("bad.bin");
    let r = |next_access_vtime| Record { clock_time: 0, obj_id: 1, obj_size: 1, next_access_vtime };
    for (next, at) in [(-2, 48), (3, 48), (0, 48), (i64::MIN, 48)] {
        write_records(&bad, &[r(2), r(3), r(next), r(-1)]);
        let e = open(&bad).err().unwrap();
        assert!(matches!(&e, SimError::File { at: a, .. } if *a == format!("offset {at}")), "{e:?}");
        let e = e.to_string();
        assert!(e.contains("bad.bin") && e.contains("record 2") && e.contains(&format!("{next}")), "{e}");
    }
    // None may be -1 or i64::MAX; past the end is allowed (traces cut with head -c).
    write_records(&bad, &[r(2), r(i64::MAX), r(1 << 50), r(-1)]);
    assert_eq!(open(&bad).unwrap().len(), 4);

    // Compressed and lcs traces are recognised.
    let zst = dir.join("t.oracleGeneral.zst");
    std::fs::write(&zst, [0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3]).unwrap();
    let e = err(&zst);
    assert!(e.contains("t.oracleGeneral.zst") && e.contains("zstd") && e.contains("truncated"), "{e}");
    let lcs = dir.join("t.lcs");
    let mut header = 0x1234_5678_9abc_def0u64.to_le_bytes().to_vec();
    header.resize(1024 + 24, 0);
    std::fs::write(&lcs, &header).unwrap();
    let e = err(&lcs);
    assert!(e.contains("t.lcs") && e.contains("lcs") && e.contains("offset 1032"), "{e}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Files counting `next_access_vtime` from 0 (another convention) are read. Short files
/// whose first repeat is immediate (the 0-based pointer is the record itself, counted the
/// 1-based way) or comes after other requests (the record before the next request, counted
/// the 1-based way) replay like their 1-based twins, every repeat following its pointer,
/// under every `limit` (some too short to detect the convention) and with
/// `next_access=ignore`.
#[test]
fn a_zero_based_next_access_convention_is_read() {
    use tierkit_sim::trace::oracle_general::Convention;

    let dir = scratch("zero-based");
    let (one_path, zero_path) = (dir.join("one-based.bin"), dir.join("zero-based.bin"));
    let counted_from = |ids: &[u64], first: i64| -> Vec<Record> {
        next_access_vtimes(ids)
            .iter()
            .zip(ids)
            .enumerate()
            .map(|(i, (&next, &obj_id))| Record {
                clock_time: i as u32,
                obj_id,
                obj_size: 4096,
                next_access_vtime: if next == NO_NEXT_ACCESS { next } else { next - 1 + first },
            })
            .collect()
    };
    for ids in [&[1, 1, 2, 3, 2, 1, 3, 3][..], &[1, 2, 1, 3, 2, 1]] {
        let one = counted_from(ids, 1);
        write_records(&one_path, &one);
        write_records(&zero_path, &counted_from(ids, 0));
        let repeats = (ids.len() - ids.iter().collect::<std::collections::HashSet<_>>().len()) as u64;
        let infos = [(&one_path, Convention::OneBased), (&zero_path, Convention::ZeroBased)].map(|(path, want)| {
            let info = *OracleGeneralTrace::open(path, u64::MAX, NextAccess::Check).unwrap().info();
            assert_eq!(info.convention, Some(want), "{ids:?}");
            assert_eq!(info.followed, repeats, "{ids:?} {want}: every repeat follows its pointer");
            info
        });
        assert_eq!(
            (infos[1].requests, infos[1].objects, infos[1].followed),
            (infos[0].requests, infos[0].objects, infos[0].followed),
            "{ids:?}"
        );
        for limit in 1..=ids.len() {
            let limited = |path: &Path| spec(path).with("limit", limit);
            let zero = drain(trace::build(&limited(&zero_path)).unwrap().as_mut(), 3);
            assert_eq!(zero, dense(&ids[..limit]), "{ids:?} limit {limit}");
            assert_eq!(zero, drain(trace::build(&limited(&one_path)).unwrap().as_mut(), 3), "{ids:?} limit {limit}");
        }
        let mut wl = trace::build(&spec(&zero_path).with("next_access", "ignore")).unwrap();
        assert_eq!(drain(wl.as_mut(), 3), dense(ids));
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn options_are_checked() {
    let e = trace::build(&WorkloadSpec::new("trace", 1, 1, 1)).err().unwrap().to_string();
    assert!(e.contains("path") && e.contains("required"), "{e}");
    let e = trace::build(&WorkloadSpec::new("trace", 1, 1, 1).with("path", "")).err().unwrap().to_string();
    assert!(e.contains("path"), "{e}");
    let e = trace::build(&WorkloadSpec::new("trace", 1, 1, 1).with("path", "x").with("colour", "red"))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("colour") && e.contains("path, limit, next_access"), "{e}");
    let e = trace::build(&WorkloadSpec::new("trace", 1, 1, 1).with("path", "x").with("next_access", "trust"))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("next_access") && e.contains("trust") && e.contains("check or ignore"), "{e}");
    for limit in ["0", "-1", "many"] {
        let e = trace::build(&WorkloadSpec::new("trace", 1, 1, 1).with("path", "x").with("limit", limit))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("limit") && e.contains(limit), "{e}");
    }
}

/// Random files (random bytes of random lengths, and valid traces with random damage)
/// give an error or a well-formed stream, never a panic.
#[test]
fn random_files_never_panic() {
    let dir = scratch("fuzz");
    let path = dir.join("fuzz.bin");
    let mut rng = Rng::new(2024);
    let (mut opened, mut refused) = (0, 0);
    for case in 0..600 {
        let bytes: Vec<u8> = if case % 2 == 0 {
            // Raw bytes; half the lengths are whole records.
            let records = rng.below(40) as usize;
            let len = if rng.below(2) == 0 { records * RECORD_BYTES } else { rng.below(1000) as usize };
            (0..len).map(|_| rng.next_u64() as u8).collect()
        } else {
            // Plausible records (small ids, some 0 sizes, right next_access_vtime
            // mixed with none, i64::MAX and garbage), then a few flipped bytes and maybe
            // a cut.
            let ids: Vec<u64> = (0..1 + rng.below(60)).map(|_| rng.below(8)).collect();
            let next = next_access_vtimes(&ids);
            let mut bytes: Vec<u8> = ids
                .iter()
                .zip(next)
                .enumerate()
                .flat_map(|(i, (&obj_id, next))| {
                    let next_access_vtime = match rng.below(40) {
                        0 => rng.next_u64() as i64,
                        1 => next + rng.below(3) as i64 - 1,
                        2 => i as i64 + rng.below(4) as i64, // previous, itself, next, ...
                        3..=5 => i64::MAX,
                        6..=9 => -1,
                        _ => next,
                    };
                    let obj_size = if rng.below(5) == 0 { 0 } else { rng.next_u64() as u32 };
                    Record { clock_time: rng.next_u64() as u32, obj_id, obj_size, next_access_vtime }.to_bytes()
                })
                .collect();
            for _ in 0..rng.below(4).saturating_sub(1) {
                let at = rng.below(bytes.len() as u64) as usize;
                bytes[at] = rng.next_u64() as u8;
            }
            if rng.below(4) == 0 {
                bytes.truncate(rng.below(bytes.len() as u64 + 1) as usize);
            }
            bytes
        };
        std::fs::write(&path, &bytes).unwrap();
        let limit = if rng.below(3) == 0 { 1 + rng.below(30) } else { u64::MAX };
        let next_access = if rng.below(4) == 0 { "ignore" } else { "check" };
        match trace::build(&spec(&path).with("limit", limit).with("next_access", next_access)) {
            Ok(mut wl) => {
                opened += 1;
                assert!(bytes.len().is_multiple_of(RECORD_BYTES) && !bytes.is_empty());
                assert!(wl.pages() >= 1 && wl.pages() <= wl.len() && wl.len() <= limit);
                let pages = drain(wl.as_mut(), 1 + rng.below(50) as usize);
                assert_eq!(*pages.iter().max().unwrap() + 1, wl.pages());
            }
            Err(e) => {
                refused += 1;
                let text = e.to_string();
                assert!(next_access == "check" || !text.contains("next_access_vtime"), "case {case}: {text}");
                assert!(text.contains("fuzz.bin"), "case {case}: {text}");
                if let SimError::File { at, .. } = &e {
                    let offset: u64 = at.strip_prefix("offset ").expect("an offset").parse().unwrap();
                    assert!(
                        offset <= bytes.len() as u64 && offset.is_multiple_of(RECORD_BYTES as u64),
                        "case {case}: {text}"
                    );
                }
            }
        }
    }
    assert!(opened > 50 && refused > 50, "both paths exercised: {opened} opened, {refused} refused");
    std::fs::remove_dir_all(dir).unwrap();
}

/// `trace` is a registered workload.
#[test]
fn registered_as_trace() {
    let dir = scratch("registry");
    let path = dir.join("t.bin");
    write_oracle_general(&path, [4, 4, 5]).unwrap();
    let wl = workload::build(&spec(&path)).unwrap();
    assert_eq!((wl.pages(), wl.len()), (2, 3));
    assert!(workload::REGISTRY.iter().any(|r| r.name == "trace"));
    std::fs::remove_dir_all(dir).unwrap();
}
