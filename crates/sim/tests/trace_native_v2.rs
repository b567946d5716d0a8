//! Native format version 2: the clock round-trips (across frames, and through
//! `convert`), version 1 files still read, and a header whose instruction total or
//! sample rate contradicts the records, or a cut file, is refused with the file and the
//! offset.

use std::path::{Path, PathBuf};

use tierkit_core::dist::Rng;
use tierkit_sim::trace::native::{NativeReader, BLOCK_ACCESSES, HEADER_BYTES};
use tierkit_sim::trace::{self, Format, NativeWriter, PageAccess, PageReader, TraceClock};
use tierkit_sim::SimError;

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tierkit-v2-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn read_all(path: &Path) -> Result<(Vec<PageAccess>, Option<TraceClock>), SimError> {
    let mut r = trace::open(path, None)?;
    let mut out = Vec::new();
    while let Some(a) = r.next_access()? {
        out.push(a);
    }
    Ok((out, r.clock()))
}

fn error_of(path: &Path) -> String {
    match read_all(path) {
        Ok((a, _)) => panic!("{} read {} accesses", path.display(), a.len()),
        Err(e) => e.to_string(),
    }
}

fn write_clocked(path: &Path, accesses: &[PageAccess], sample_every: u64) -> u64 {
    let mut w = NativeWriter::with_clock(path, true, sample_every).unwrap();
    for &a in accesses {
        w.push(a).unwrap();
    }
    let h = w.finish().unwrap();
    assert_eq!(h.clock(), Some(TraceClock { instructions: h.instructions.unwrap(), sample_every }));
    h.instructions.unwrap()
}

#[test]
fn the_clock_round_trips_across_frames_and_through_convert() {
    let dir = scratch("round");
    let path = dir.join("t.tkt");
    let mut rng = Rng::new(5);
    // Gaps of every varint length, 0 included, over more than one frame.
    let mut accesses: Vec<PageAccess> = [0, 1, 127, 128, 1 << 40, u64::MAX >> 8]
        .iter()
        .enumerate()
        .map(|(i, &g)| PageAccess { page: i as u64 * 1000, write: i % 2 == 0, instructions: g })
        .collect();
    for _ in 0..BLOCK_ACCESSES + 777 {
        accesses.push(PageAccess { page: rng.below(5000), write: rng.below(3) == 0, instructions: rng.below(600) });
    }
    let total = write_clocked(&path, &accesses, 16);
    assert_eq!(total, accesses.iter().map(|a| a.instructions).sum::<u64>());
    let (read, clock) = read_all(&path).unwrap();
    assert_eq!(clock, Some(TraceClock { instructions: total, sample_every: 16 }));
    assert!(read == accesses, "the records differ");
    // Native to native keeps the clock; oracleGeneral has none.
    let copy = dir.join("copy.tkt");
    let mut r = trace::open(&path, None).unwrap();
    assert_eq!(trace::convert(r.as_mut(), &copy, Format::Native).unwrap(), accesses.len() as u64);
    let (again, clock) = read_all(&copy).unwrap();
    assert_eq!(clock, Some(TraceClock { instructions: total, sample_every: 16 }));
    assert!(again == accesses, "convert changed the records");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_trace_without_clock_reads_zero_gaps_and_no_clock() {
    let dir = scratch("noclock");
    let path = dir.join("t.tkt");
    let mut w = NativeWriter::create(&path, true).unwrap();
    for p in [3u64, 9, 3] {
        w.push(PageAccess { page: p, write: p == 9, instructions: 50 }).unwrap();
    }
    let h = w.finish().unwrap();
    assert_eq!((h.version, h.instructions, h.sample_every), (2, None, 1));
    let (read, clock) = read_all(&path).unwrap();
    assert_eq!(clock, None);
    assert_eq!(read, [PageAccess::read(3), PageAccess::new(9, true), PageAccess::read(3)]);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn version_1_files_still_read() {
    // docs/TRACES.md's version 1 example: load 5, store 6, load 4.
    let v1: [u8; 51] = [
        0x54, 0x4b, 0x54, 0x52, 0x41, 0x43, 0x45, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x10, 0x00, 0x00, //
        0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x28, 0xb5, 0x2f, 0xfd, 0x04, 0x38, 0x31, 0x00, 0x00, 0x0a, 0x00, 0x02, 0x01, 0x03, 0x00, 0x25, //
        0xb9, 0x3b, 0x7f,
    ];
    let dir = scratch("v1");
    let path = dir.join("v1.tkt");
    std::fs::write(&path, v1).unwrap();
    assert_eq!(trace::detect(&path).unwrap(), Format::Native);
    let r = NativeReader::open(&path).unwrap();
    assert_eq!((r.header().version, r.header().sample_every, r.clock()), (1, 1, None));
    let (read, clock) = read_all(&path).unwrap();
    assert_eq!(clock, None);
    assert_eq!(read, [PageAccess::read(5), PageAccess::new(6, true), PageAccess::read(4)]);
    // A version 1 header with the clock's flag bit is refused: version 1 has no clock.
    let mut b = v1;
    b[10] = 3;
    std::fs::write(&path, b).unwrap();
    let e = error_of(&path);
    assert!(e.contains("offset 10") && e.contains("unknown flags 0x0003 (version 1"), "{e}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn header_counts_that_contradict_the_records_are_refused() {
    let dir = scratch("bad");
    let good = dir.join("good.tkt");
    let accesses: Vec<PageAccess> =
        (0..3000u64).map(|i| PageAccess { page: i % 97, write: i % 5 == 0, instructions: 10 + i % 7 }).collect();
    let total = write_clocked(&good, &accesses, 4);
    let bytes = std::fs::read(&good).unwrap();
    let name = dir.join("bad.tkt");
    let with = |edit: &dyn Fn(&mut Vec<u8>)| {
        let mut b = bytes.clone();
        edit(&mut b);
        std::fs::write(&name, &b).unwrap();
        error_of(&name)
    };
    let end = bytes.len();
    // One more instruction announced than the gaps hold: found at the end.
    let e = with(&|b| b[32..40].copy_from_slice(&(total + 1).to_le_bytes()));
    let want = format!(
        "offset {end}: corrupt: the header announces {} instructions, the 3000 records' gaps sum to {total}",
        total + 1
    );
    assert!(e.starts_with(&format!("{}: ", name.display())) && e.contains(&want), "{e}");
    // One fewer: found at the record whose gap passes it.
    let e = with(&|b| b[32..40].copy_from_slice(&(total - 1).to_le_bytes()));
    assert!(e.contains(&format!("offset {HEADER_BYTES}: record 2999")) && e.contains("takes the sum past"), "{e}");
    // A total without the clock's flag, a sample rate of 0, an unknown flag.
    let e = with(&|b| b[10] = 1);
    assert!(e.contains("offset 32") && e.contains(&format!("{total} instructions but no instruction gaps")), "{e}");
    let e = with(&|b| b[40..48].copy_from_slice(&0u64.to_le_bytes()));
    assert!(e.contains("offset 40") && e.contains("sample rate 0"), "{e}");
    let e = with(&|b| b[10] = 7);
    assert!(e.contains("offset 10") && e.contains("unknown flags 0x0007 (version 2"), "{e}");
    // Cut: in the header, in the payload.
    let e = with(&|b| b.truncate(40));
    assert!(e.contains("offset 40") && e.contains("truncated header: 40 of the 48 bytes"), "{e}");
    let e = with(&|b| b.truncate(end - 7));
    assert!(e.contains(&format!("offset {HEADER_BYTES}")) && e.contains("zstd frame"), "{e}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// A version 2 clocked file whose one frame holds `records` as they are.
fn raw_file(records: &[u8], accesses: u64, pages: u64, instructions: u64) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(b"TKTRACE\0");
    b.extend_from_slice(&2u16.to_le_bytes());
    b.extend_from_slice(&3u16.to_le_bytes());
    b.extend_from_slice(&4096u32.to_le_bytes());
    for v in [accesses, pages, instructions, 1] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&zstd::bulk::compress(records, 3).unwrap());
    b
}

#[test]
fn records_cut_inside_the_gap_are_named() {
    let dir = scratch("cut");
    let path = dir.join("cut.tkt");
    // Record 0: page +5, gap 300 (ac 02), load. Record 1: page +1, then the gap's
    // varint is cut (80 announces another byte).
    std::fs::write(&path, raw_file(&[0x0a, 0xac, 0x02, 0x00, 0x02, 0x80], 2, 2, 300)).unwrap();
    let e = error_of(&path);
    assert!(e.contains("record 1 (byte 4 of the frame") && e.contains("inside the instruction gap varint"), "{e}");
    // Record 1 ends after its page delta: no gap at all.
    std::fs::write(&path, raw_file(&[0x0a, 0xac, 0x02, 0x00, 0x02], 2, 2, 300)).unwrap();
    let e = error_of(&path);
    assert!(e.contains("record 1") && e.contains("ends before the record's instruction gap"), "{e}");
    // The same records whole read, with their gaps.
    std::fs::write(&path, raw_file(&[0x0a, 0xac, 0x02, 0x00, 0x02, 0x00, 0x01], 2, 2, 300)).unwrap();
    let (read, clock) = read_all(&path).unwrap();
    assert_eq!(read, [PageAccess { page: 5, write: false, instructions: 300 }, PageAccess::new(6, true)]);
    assert_eq!(clock, Some(TraceClock { instructions: 300, sample_every: 1 }));
    std::fs::remove_dir_all(dir).unwrap();
}
