//! Traces that carry each access's MLP class: a `chase-stream` run written as a native
//! trace (as `tierkit trace write` writes it) replays as the generator runs, for ALTO and
//! for its count-ranked self, and unlike the same trace with its classes stripped; a
//! corrupt class byte is refused at its offset; CSV's `mlp` column round-trips.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use tierkit_core::policies::{AltoParams, AltoPolicy, PolicySetup};
use tierkit_sim::engine::{run, RunSpec, Subject};
use tierkit_sim::machine::capacities;
use tierkit_sim::model::MlpClass;
use tierkit_sim::result::RunResult;
use tierkit_sim::trace::native::{NativeReader, FLAG_CLASSES, HEADER_BYTES};
use tierkit_sim::trace::write_workload::write_native;
use tierkit_sim::trace::{self, Format, NativeWriter, PageReader};
use tierkit_sim::workload::{self, Access, WorkloadSpec};

/// A fresh directory for this test's files.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tierkit-mlp-class-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every access of the workload `spec`.
fn drain(spec: &WorkloadSpec) -> Vec<Access> {
    let mut wl = workload::build(spec).unwrap();
    let mut out = Vec::new();
    while wl.try_fill(&mut out, 1 << 16).unwrap() > 0 {}
    out
}

/// The `trace` workload replaying `path`.
fn replay(path: &Path) -> WorkloadSpec {
    WorkloadSpec::new("trace", 1, 1, 1).with("path", path.display())
}

/// The run of ALTO (ranking by stall when `weigh_stalls`, else by sample counts) on
/// `workload` at 1:16; the fast tier is sized for `pages`.
fn alto(workload: WorkloadSpec, pages: u64, weigh_stalls: bool) -> RunResult {
    let spec = RunSpec::new(workload, (1, 16));
    let setup = PolicySetup { fast_pages: capacities(2, pages, spec.ratio)[0], pages };
    let policy = AltoPolicy::new(AltoParams { weigh_stalls, ..Default::default() }, &setup).unwrap();
    run(&spec, Subject::Policy(Box::new(policy)), &mut |_| {}).unwrap()
}

/// Copies the native trace `from` to `to` without its classes.
fn strip_classes(from: &Path, to: &Path) {
    let mut r = NativeReader::open(from).unwrap();
    let mut w = NativeWriter::create(to, r.records_stores()).unwrap();
    while let Some(a) = r.next_access().unwrap() {
        w.push(a).unwrap();
    }
    assert!(!w.finish().unwrap().classes);
}

#[test]
fn a_written_chase_stream_replays_as_the_generator_and_its_classes_matter() {
    let dir = scratch("replay");
    let (pages, accesses) = (20_000, 3_000_000);
    let generator = WorkloadSpec::new("chase-stream", pages, accesses, 7);
    let classed = dir.join("cs.tkt");
    let (header, written_pages) = write_native(&generator, &classed).unwrap();
    assert!(header.classes && header.writes, "{header:?}");
    assert_eq!((header.version, header.accesses, written_pages), (4, accesses, pages));

    // The replay is the generator's stream, its pages renumbered in order of first
    // appearance, each access at word 0, its class kept.
    let want = drain(&generator);
    let got = drain(&replay(&classed));
    assert_eq!(got.len(), want.len());
    let mut ids: HashMap<u64, u64> = HashMap::new();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let fresh = ids.len() as u64;
        let id = *ids.entry(w.page).or_insert(fresh);
        let expected = Access { page: id, word: 0, write: w.write, class: w.class };
        assert_eq!(*g, expected, "access {i}");
    }
    assert_eq!(ids.len() as u64, pages, "every page is touched: the fast tier is sized alike");
    let count = |class| got.iter().filter(|a| a.class == class).count() as f64 / accesses as f64;
    assert!(count(MlpClass::Dependent) > 0.25 && count(MlpClass::Streaming) > 0.55, "both classes are there");

    // Runs: the generator's and the replay's agree to within what the renumbering moves
    // (the address order of the initial placement and of scans) and the words (all 0 in
    // a replay); the replay of the stripped trace, every access at `app.mlp`, does not.
    let stripped = dir.join("stripped.tkt");
    strip_classes(&classed, &stripped);
    assert!(drain(&replay(&stripped)).iter().all(|a| a.class == MlpClass::Default));
    let mut lines = Vec::new();
    for weigh_stalls in [true, false] {
        let g = alto(generator.clone(), pages, weigh_stalls);
        let t = alto(replay(&classed), pages, weigh_stalls);
        let s = alto(replay(&stripped), pages, weigh_stalls);
        let row = |r: &RunResult| format!("{:.4e} {:.4}", r.throughput, r.fast_hit_ratio);
        println!("weigh_stalls={weigh_stalls}: generator {}, trace {}, stripped {}", row(&g), row(&t), row(&s));
        if (t.throughput / g.throughput - 1.0).abs() > THROUGHPUT_BOUND
            || (t.fast_hit_ratio - g.fast_hit_ratio).abs() > HIT_BOUND
        {
            lines.push(format!("weigh_stalls={weigh_stalls}: trace {} vs generator {}", row(&t), row(&g)));
        }
        if (s.throughput / t.throughput - 1.0).abs() < 3.0 * THROUGHPUT_BOUND {
            lines.push(format!("weigh_stalls={weigh_stalls}: stripped {} as fast as classed {}", row(&s), row(&t)));
        }
        if weigh_stalls && (s.fast_hit_ratio - t.fast_hit_ratio).abs() < 3.0 * HIT_BOUND {
            lines.push(format!("alto keeps the same pages fast without classes: {} vs {}", row(&s), row(&t)));
        }
    }
    assert!(lines.is_empty(), "{lines:#?}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// How far a replay's throughput may stray from its generator's, relatively (measured
/// with this test's seed: 0.4% for both rankings).
const THROUGHPUT_BOUND: f64 = 0.01;

/// How far a replay's fast-tier hit ratio may stray from its generator's (measured with
/// this test's seed: 0.003 and 0.005).
const HIT_BOUND: f64 = 0.01;

#[test]
fn a_corrupt_class_byte_is_refused_at_its_offset() {
    let dir = scratch("corrupt");
    let path = dir.join("t.tkt");
    let records = [(7u64, MlpClass::Dependent), (8, MlpClass::Streaming), (7, MlpClass::Default)];
    let mut w =
        NativeWriter::with_fields(&path, trace::native::Fields { classes: true, ..Default::default() }).unwrap();
    for &(page, class) in &records {
        w.push_classed(trace::PageAccess::read(page), class).unwrap();
    }
    let h = w.finish().unwrap();
    assert_eq!((h.version, h.classes, h.writes), (4, true, false));
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(u16::from_le_bytes([bytes[10], bytes[11]]), FLAG_CLASSES);
    let mut r = trace::open(&path, None).unwrap();
    assert!(r.carries_classes());
    let mut read = Vec::new();
    while let Some((a, class)) = r.next_classed().unwrap() {
        read.push((a.page, class));
    }
    assert_eq!(read, records);

    // Three records of two bytes each: delta (zigzag varint), class. A frame this small
    // is stored raw, so its bytes can be edited in place once the checksum is dropped.
    let raw = raw_frame(&[0x0e, 1, 0x02, 2, 0x01, 3]);
    let mut file = bytes[..HEADER_BYTES].to_vec();
    file.extend(&raw);
    std::fs::write(&path, &file).unwrap();
    let e = trace::open(&path, None).and_then(|mut r| while_some(r.as_mut())).unwrap_err().to_string();
    let want = format!(
        "{}: offset {HEADER_BYTES}: record 2 (byte 4 of the frame starting here, decompressed): MLP class 3, \
         expected 0 (default), 1 (dependent) or 2 (streaming)",
        path.display()
    );
    assert_eq!(e, want);
    // The same file, cut before the last class byte.
    let mut cut = bytes[..HEADER_BYTES].to_vec();
    cut.extend(raw_frame(&[0x0e, 1, 0x02, 2, 0x01]));
    std::fs::write(&path, &cut).unwrap();
    let e = trace::open(&path, None).and_then(|mut r| while_some(r.as_mut())).unwrap_err().to_string();
    assert!(e.contains("record 2 (byte 4") && e.contains("ends before the record's MLP class"), "{e}");
    // Flag bit 2 belongs to version 4: a version 2 header with it is refused.
    let mut v2 = file.clone();
    v2[8] = 2;
    std::fs::write(&path, &v2).unwrap();
    let e = trace::open(&path, None).err().unwrap().to_string();
    assert!(e.contains("offset 10") && e.contains("unknown flags 0x0004 (version 2"), "{e}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Reads `r` to its end.
fn while_some(r: &mut dyn PageReader) -> Result<(), tierkit_sim::SimError> {
    while r.next_classed()?.is_some() {}
    Ok(())
}

/// A zstd frame (RFC 8878) holding `content` in one raw block, without a checksum.
fn raw_frame(content: &[u8]) -> Vec<u8> {
    // Magic; descriptor: single segment, 1-byte content size; the size; a last raw block
    // header (3 bytes: last = 1, type raw = 0, size << 3).
    let mut f = vec![0x28, 0xb5, 0x2f, 0xfd, 0x20, content.len() as u8];
    let block = 1 | (content.len() as u32) << 3;
    f.extend(&block.to_le_bytes()[..3]);
    f.extend(content);
    f
}

#[test]
fn csv_classes_round_trip_through_native() {
    let dir = scratch("csv");
    let csv = dir.join("t.csv");
    std::fs::write(&csv, "addr,op,mlp\n0x5000,w,dependent\n0x1000,r,Streaming\n0x5008,r,default\n0x9000,r,DEPENDENT\n")
        .unwrap();
    let want = [
        (5, true, MlpClass::Dependent),
        (1, false, MlpClass::Streaming),
        (5, false, MlpClass::Default),
        (9, false, MlpClass::Dependent),
    ];
    let read_all = |path: &Path| {
        let mut r = trace::open(path, None).unwrap();
        let mut out = Vec::new();
        while let Some((a, class)) = r.next_classed().unwrap() {
            out.push((a.page, a.write, class));
        }
        (out, r.carries_classes())
    };
    assert_eq!(read_all(&csv), (want.to_vec(), true));
    let native = dir.join("t.tkt");
    assert_eq!(trace::convert(trace::open(&csv, None).unwrap().as_mut(), &native, Format::Native).unwrap(), 4);
    assert_eq!(read_all(&native), (want.to_vec(), true));
    assert!(NativeReader::open(&native).unwrap().header().classes);
    // The replay gives the classes to the accesses; trace info counts them.
    let classes: Vec<MlpClass> = drain(&replay(&csv)).iter().map(|a| a.class).collect();
    assert_eq!(classes, want.map(|w| w.2));
    for path in [&csv, &native] {
        let s = trace::info::stats(trace::open(path, None).unwrap().as_mut(), "t").unwrap();
        assert_eq!(s.classes, Some([1, 2, 1]), "{}", path.display());
    }
    // Without the column: no classes, and none written.
    let plain = dir.join("plain.csv");
    std::fs::write(&plain, "page,op\n3,r\n4,w\n").unwrap();
    assert_eq!(trace::info::stats(trace::open(&plain, None).unwrap().as_mut(), "p").unwrap().classes, None);
    let copy = dir.join("plain.tkt");
    trace::convert(trace::open(&plain, None).unwrap().as_mut(), &copy, Format::Native).unwrap();
    let h = NativeReader::open(&copy).unwrap().header();
    assert_eq!((h.version, h.classes), (2, false));
    // A bad class names its line and field; a line without the field is refused too.
    for (text, want) in [
        ("page,mlp\n1,dependent\n2,chasing\n", "line 3: field 2 = \"chasing\": expected an MLP class"),
        ("page,mlp\n1,dependent\n2,1\n", "line 3: field 2 = \"1\": expected an MLP class"),
        ("page,op,mlp\n1,r\n", "line 2: 2 fields, expected at least 3"),
    ] {
        std::fs::write(&csv, text).unwrap();
        let e = trace::open(&csv, None).and_then(|mut r| while_some(r.as_mut())).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}: {want}", csv.display())), "{e}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn rounding_the_gaps_keeps_the_classes() {
    let dir = scratch("round");
    let (path, rounded) = (dir.join("t.tkt"), dir.join("r.tkt"));
    let fields = trace::native::Fields { writes: true, sample_every: Some(4), classes: true };
    let mut w = NativeWriter::with_fields(&path, fields).unwrap();
    let want: Vec<(u64, MlpClass)> = (0..500u64).map(|i| (i % 37, MlpClass::ALL[(i % 3) as usize])).collect();
    for &(page, class) in &want {
        w.push_classed(trace::PageAccess { page, write: page == 5, instructions: 100 + page }, class).unwrap();
    }
    w.finish().unwrap();
    trace::round_gaps::round_trace(&path, &rounded, Some(64)).unwrap();
    let mut r = NativeReader::open(&rounded).unwrap();
    let h = r.header();
    assert_eq!((h.version, h.classes, h.writes, h.sample_every), (4, true, true, 4));
    let (mut got, mut gaps) = (Vec::new(), Vec::new());
    while let Some((a, class)) = r.next_classed().unwrap() {
        got.push((a.page, class));
        gaps.push(a.instructions);
    }
    assert!(gaps[..gaps.len() - 1].iter().all(|g| g % 64 == 0), "rounded: {gaps:?}");
    assert_eq!(gaps.iter().sum::<u64>(), want.iter().map(|w| 100 + w.0).sum::<u64>());
    assert_eq!(got, want);
    std::fs::remove_dir_all(dir).unwrap();
}
