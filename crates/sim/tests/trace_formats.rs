//! Trace formats: the native format round-trips (also through oracleGeneral), every
//! reader yields the pages its input names, formats are detected, bad inputs give one
//! error naming the file and the offset or line, `trace info` statistics match traces
//! of known shape, and the `trace` workload replays any format.

use std::path::{Path, PathBuf};

use tierkit_core::dist::Rng;
use tierkit_sim::trace::info::stats;
use tierkit_sim::trace::native::{NativeReader, BLOCK_ACCESSES, HEADER_BYTES};
use tierkit_sim::trace::{self, Format, NativeWriter, PageAccess, PageReader};
use tierkit_sim::workload::{self, Access, WorkloadSpec};
use tierkit_sim::SimError;

/// A fresh directory for this test's files.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tierkit-formats-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn read_all(reader: &mut dyn PageReader) -> Result<Vec<PageAccess>, SimError> {
    let mut out = Vec::new();
    while let Some(a) = reader.next_access()? {
        out.push(a);
    }
    Ok(out)
}

fn read_path(path: &Path, format: Option<Format>) -> Result<Vec<PageAccess>, SimError> {
    read_all(trace::open(path, format)?.as_mut())
}

fn write_native(path: &Path, accesses: &[PageAccess], writes: bool) {
    let mut w = NativeWriter::create(path, writes).unwrap();
    for &a in accesses {
        w.push(a).unwrap();
    }
    w.finish().unwrap();
}

/// The error of reading `path` (opening or reading), as text; panics if it reads.
fn error_of(path: &Path, format: Option<Format>) -> String {
    match read_path(path, format) {
        Ok(a) => panic!("{} read {} accesses", path.display(), a.len()),
        Err(e) => e.to_string(),
    }
}

fn pages(accesses: &[PageAccess]) -> Vec<u64> {
    accesses.iter().map(|a| a.page).collect()
}

#[test]
fn native_round_trips_any_page_sequence_across_frames() {
    let dir = scratch("native");
    let path = dir.join("t.tkt");
    let mut rng = Rng::new(3);
    // Extremes, big jumps both ways, runs, and more than one frame.
    let mut accesses: Vec<PageAccess> =
        [0, u64::MAX, 0, 1, u64::MAX - 1, 1 << 63, 5, 5, 5].map(|p| PageAccess::new(p, p % 2 == 1)).to_vec();
    for i in 0..BLOCK_ACCESSES as u64 + 12_345 {
        let page = if i % 3 == 0 { rng.next_u64() } else { i / 7 };
        accesses.push(PageAccess::new(page, rng.below(4) == 0));
    }
    write_native(&path, &accesses, true);
    let mut r = NativeReader::open(&path).unwrap();
    let h = r.header();
    assert_eq!(h.accesses, accesses.len() as u64);
    assert!(h.writes);
    let distinct: std::collections::HashSet<u64> = accesses.iter().map(|a| a.page).collect();
    assert_eq!(h.pages, distinct.len() as u64);
    assert_eq!(read_all(&mut r).unwrap(), accesses);
    assert_eq!(trace::detect(&path).unwrap(), Format::Native);

    // Without store flags every access reads back as a load.
    write_native(&path, &accesses[..1000], false);
    let back = read_path(&path, None).unwrap();
    assert_eq!(pages(&back), pages(&accesses[..1000]));
    assert!(back.iter().all(|a| !a.write));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn native_to_oracle_general_and_back_keeps_the_page_sequence() {
    let dir = scratch("convert");
    let (a, og, b) = (dir.join("a.tkt"), dir.join("a.og"), dir.join("b.tkt"));
    let mut rng = Rng::new(11);
    let accesses: Vec<PageAccess> = (0..50_000).map(|_| PageAccess::read(rng.below(3000) * 4099 + 7)).collect();
    write_native(&a, &accesses, false);
    let n = trace::convert(trace::open(&a, None).unwrap().as_mut(), &og, Format::OracleGeneral).unwrap();
    assert_eq!(n, 50_000);
    assert_eq!(std::fs::metadata(&og).unwrap().len(), 50_000 * 24);
    assert_eq!(trace::detect(&og).unwrap(), Format::OracleGeneral);
    trace::convert(trace::open(&og, None).unwrap().as_mut(), &b, Format::Native).unwrap();
    assert_eq!(read_path(&b, None).unwrap(), accesses);
    assert!(!NativeReader::open(&b).unwrap().header().writes, "oracleGeneral has no stores to keep");
    let e = trace::convert(trace::open(&a, None).unwrap().as_mut(), dir.join("c.csv"), Format::Csv).err().unwrap();
    assert!(e.to_string().contains("native or oracle-general"), "{e}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_native_files_name_the_offset() {
    let dir = scratch("native-bad");
    let good = dir.join("good.tkt");
    let accesses: Vec<PageAccess> = (0..20_000u64).map(|i| PageAccess::read(i * i % 1013)).collect();
    write_native(&good, &accesses, false);
    let bytes = std::fs::read(&good).unwrap();
    let bad = dir.join("bad.tkt");
    let with = |edit: &dyn Fn(&mut Vec<u8>)| {
        let mut b = bytes.clone();
        edit(&mut b);
        std::fs::write(&bad, &b).unwrap();
        error_of(&bad, Some(Format::Native))
    };

    let e = with(&|b| b[0] = b'X');
    assert!(e.contains("bad.tkt: offset 0") && e.contains("magic"), "{e}");
    let e = with(&|b| b[8] = 3);
    assert!(e.contains("offset 8") && e.contains("unsupported native trace version 3"), "{e}");
    let e = with(&|b| b[10] = 4);
    assert!(e.contains("offset 10") && e.contains("unknown flags"), "{e}");
    let e = with(&|b| b[13] = 0x20);
    assert!(e.contains("offset 12") && e.contains("page size 8192"), "{e}");
    let e = with(&|b| b.truncate(20));
    assert!(e.contains("offset 20") && e.contains("truncated header"), "{e}");
    // The payload cut: the frame is named by where it starts.
    let e = with(&|b| b.truncate(b.len() - 10));
    assert!(e.contains(&format!("offset {HEADER_BYTES}")) && e.contains("zstd frame"), "{e}");
    // The header announcing more or fewer accesses than the payload holds.
    let e = with(&|b| b[16..24].copy_from_slice(&20_001u64.to_le_bytes()));
    assert!(e.contains("truncated") && e.contains("announces 20001") && e.contains("after 20000"), "{e}");
    let e = with(&|b| b[16..24].copy_from_slice(&19_999u64.to_le_bytes()));
    assert!(e.contains("record 19999") && e.contains("more records than the 19999"), "{e}");
    // Garbage after the frame.
    let e = with(&|b| b.extend_from_slice(b"junk"));
    assert!(e.contains(&format!("offset {}", bytes.len())) && e.contains("zstd frame"), "{e}");
    // Random damage anywhere: an error naming the file, or a stream, never a panic.
    let mut rng = Rng::new(9);
    for _ in 0..300 {
        let mut b = bytes.clone();
        for _ in 0..1 + rng.below(4) {
            let i = HEADER_BYTES + rng.below((b.len() - HEADER_BYTES) as u64) as usize;
            b[i] ^= 1 << rng.below(8);
        }
        std::fs::write(&bad, &b).unwrap();
        if let Err(e) = read_path(&bad, Some(Format::Native)) {
            let e = e.to_string();
            assert!(e.contains("bad.tkt: offset "), "{e}");
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// Writes `text` to `dir/name` and returns the path.
fn fixture(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn r(page: u64) -> PageAccess {
    PageAccess::read(page)
}

fn w(page: u64) -> PageAccess {
    PageAccess::new(page, true)
}

#[test]
fn text_readers_yield_the_pages_their_lines_name() {
    let dir = scratch("text");
    let lackey = fixture(
        &dir,
        "lackey.txt",
        "==4242== Lackey, an example Valgrind tool\n==4242== Command: ./a.out\nI  04000000,3\n S 7ff000398,8\n \
         L 04016f58,8\nI  04000003,2\n M 0421e310,4\n L 04016fff,2\n==4242== Counted 1 call to main()\n",
    );
    assert_eq!(trace::detect(&lackey).unwrap(), Format::Lackey);
    assert_eq!(read_path(&lackey, None).unwrap(), [w(0x7ff000), r(0x4016), w(0x421e), r(0x4016)]);

    let pin = fixture(&dir, "pinatrace.out", "0x7f1b2c3d4e5f: R 0x7ffd12345678\n0x401000: W 0x601040\n#eof\n");
    assert_eq!(trace::detect(&pin).unwrap(), Format::Pinatrace);
    assert_eq!(read_path(&pin, None).unwrap(), [r(0x7ffd12345), w(0x601)]);

    let perf = fixture(
        &dir,
        "perf.txt",
        "# ========\n# captured on: Sun Nov 22\n# ========\n#\n  stream  4711 [002] 81234.567890:      1 \
         cpu/mem-loads,ldlat=30/P:     7f12a4c01040\n  stream  4711 [002] 81234.567999: cpu/mem-stores/P: \
         0x601fff  ip 401123\n",
    );
    assert_eq!(trace::detect(&perf).unwrap(), Format::PerfScript);
    assert_eq!(read_path(&perf, None).unwrap(), [r(0x7f12a4c01), w(0x601)]);

    let plain = fixture(&dir, "plain.csv", "# pages\n12\n0x10,w\n12,read\n\n7,1\n");
    assert_eq!(trace::detect(&plain).unwrap(), Format::Csv);
    assert_eq!(read_path(&plain, None).unwrap(), [r(12), w(16), r(12), w(7)]);
    let headed = fixture(&dir, "headed.csv", "time,address,op\n1,0x7000,load\n2,8192,STORE\n3,4095,r\n");
    assert_eq!(read_path(&headed, None).unwrap(), [r(7), w(2), r(0)]);

    let damo = fixture(
        &dir,
        "damo.json",
        r#"[{"kdamond_idx": 0, "context_idx": 0, "target_id": 0, "snapshots": [
             {"start_time": "100", "end_time": "200", "regions": [
               {"start": "0", "end": "0x21000", "nr_accesses": {"samples": 2, "percent": 10}, "age": {}},
               {"start": 40960, "end": 45056, "nr_accesses": 3},
               {"start": "0x100000", "end": "0x200000", "nr_accesses": 0}]},
             {"start_time": "200", "end_time": "300", "regions": [
               {"start": "1,048,576", "end": "1,056,768", "nr_accesses": {"samples": "1"}}]}]}]"#,
    );
    assert_eq!(trace::detect(&damo).unwrap(), Format::Damo);
    // Pages take turns over 16 snapshots, each written with its region's count. Snapshot
    // 0 (turn 0): pages 0, 16 and 32 of the first region twice each; page 10 is not in
    // turn 0, the idle region yields nothing. Snapshot 1 (turn 1): page 257 of 256..258.
    let mut got = pages(&read_path(&damo, None).unwrap());
    got[..6].sort_unstable();
    assert_eq!(got, [0, 0, 16, 16, 32, 32, 257]);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_text_lines_are_named_by_line() {
    let dir = scratch("text-bad");
    let cases: [(&str, &str, Format, &[&str]); 8] = [
        ("l.txt", "==1== hi\n L 1000,8\n X 1000,8\n", Format::Lackey, &["line 3", "` L addr,size`"]),
        ("l2.txt", " L 1000,8\n L zz,8\n", Format::Lackey, &["line 2", "hexadecimal"]),
        ("p.out", "0x1: R 0x2000\n0x1: Q 0x2000\n", Format::Pinatrace, &["line 2", "`ip: R addr`"]),
        ("s.txt", " a 1 [0] 1.5: cycles: 1000\n a 1 [0] 1.6: cycles:\n", Format::PerfScript, &["line 2", "address"]),
        ("c.csv", "1\n2\nthree\n", Format::Csv, &["line 3", "page number"]),
        ("c2.csv", "page,op\n1,r\n2,x\n", Format::Csv, &["line 3", "operation"]),
        ("c3.csv", "time,size\n1,2\n", Format::Csv, &["line 1", "no column `page`"]),
        ("c4.csv", "1\n\u{0}\u{ff}\n", Format::Csv, &["line 2"]),
    ];
    for (name, text, format, wants) in cases {
        let path = dir.join(name);
        std::fs::write(&path, text.as_bytes()).unwrap();
        let e = error_of(&path, Some(format));
        assert!(e.contains(name), "{e}");
        for want in wants {
            assert!(e.contains(want), "{name}: {e}");
        }
    }
    std::fs::write(dir.join("bin.csv"), [b'1', b'\n', 0xff, 0xfe, b'\n']).unwrap();
    assert!(error_of(&dir.join("bin.csv"), Some(Format::Csv)).contains("line 2: not text"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_damo_json_names_the_offset() {
    let dir = scratch("damo-bad");
    let cases: [(&str, &str); 6] = [
        (r#"[{"regions": [{"start": 1, "end": 9}]}]"#, "offset 14: region without `nr_accesses`"),
        (r#"[{"regions": [{"start": 9, "end": 1, "nr_accesses": 1}]}]"#, "offset 14: region end 1 is not after"),
        (r#"[{"regions": [{"start": "x", "end": 1, "nr_accesses": 1}]}]"#, "offset 24: region `start`"),
        (r#"[{"regions": [{"start": 1,"#, "truncated JSON"),
        (r#"[{"snapshots": []}]"#, "offset 0: no DAMON snapshot"),
        (r#"{"regions": []} x"#, "offset 16: trailing data"),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let path = fixture(&dir, &format!("d{i}.json"), text);
        let e = error_of(&path, None);
        assert!(e.contains(&format!("d{i}.json")) && e.contains(want), "{e}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// Found by the `trace_damo` fuzz target (fuzz/, docs/FUZZING.md): regions whose pages
/// times `nr_accesses` stand for more samples than memory holds were generated whole
/// (the first, 256 pages x 20,561,768, asked for 2.6 GB); they are refused by name.
#[test]
fn damo_snapshots_standing_for_too_many_samples_are_refused() {
    let dir = scratch("damo-huge");
    let fuzzed = r#"[{"aonkdmd_idx": 0, "context_next_idx": 0, "target_id": 0, "snapshots": [
             {"start_time": "100", "end_time": "200", "regions": [
               {"start": "0", "end": "0x21000", "nr_accesses": {"samples": 2, "percent": 10}, "age": {}},
               {"start": 40960, "end": 45056, "nr_accesses": 3},
               {"start": "0x100000", "end": "0x200000", "nr_accesses": "2,0561768", "nr_accesses": {"samples": "1"}}]}]}]"#;
    let whole_space = r#"{"regions": [{"start": 0, "end": "0xffffffffffffffff", "nr_accesses": 1}]}"#;
    for (name, text, at) in [("fuzzed.json", fuzzed, "offset 139"), ("space.json", whole_space, "offset 12")] {
        let path = fixture(&dir, name, text);
        let e = error_of(&path, None);
        assert!(e.contains(name) && e.contains(at) && e.contains("page samples in one snapshot"), "{e}");
    }
    // The bound: 2^21 pages (8 GiB) found accessed 256 times stand for 2^21 / 16 x 256 =
    // MAX_SNAPSHOT_SAMPLES samples and open; one more page's turn does not.
    assert_eq!(trace::damo::MAX_SNAPSHOT_SAMPLES, (1 << 21) / 16 * 256);
    let at = fixture(&dir, "at.json", r#"{"regions": [{"start": 0, "end": "0x200000000", "nr_accesses": 256}]}"#);
    assert!(trace::open(&at, None).is_ok());
    let above = fixture(&dir, "above.json", r#"{"regions": [{"start": 0, "end": "0x200001000", "nr_accesses": 256}]}"#);
    assert!(trace::open(&above, None).is_err());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn unknown_and_empty_files_are_refused() {
    let dir = scratch("unknown");
    let empty = fixture(&dir, "empty", "");
    let e = trace::detect(&empty).err().unwrap().to_string();
    assert!(e.contains("empty") && e.contains("offset 0"), "{e}");
    // Binary that is not native falls back to oracleGeneral, whose length check names
    // the partial record.
    std::fs::write(dir.join("blob"), [0u8, 1, 2, 3, 4, 5, 6, 7, 8, 9, 200]).unwrap();
    assert_eq!(trace::detect(dir.join("blob")).unwrap(), Format::OracleGeneral);
    let e = error_of(&dir.join("blob"), None);
    assert!(e.contains("blob: offset 0") && e.contains("truncated: 11 trailing bytes"), "{e}");
    // Text in no known shape is tried as CSV, which names the line.
    let prose = fixture(&dir, "prose.txt", "hello world\n");
    let e = error_of(&prose, None);
    assert!(e.contains("prose.txt: line 1") && e.contains("no column `page`"), "{e}");
    let e = Format::parse("vtune").err().unwrap().to_string();
    assert!(e.contains("vtune") && e.contains("native, oracle-general"), "{e}");
    std::fs::remove_dir_all(dir).unwrap();
}

fn drain(spec: &WorkloadSpec) -> Vec<Access> {
    let mut wl = workload::build(spec).unwrap();
    let (mut all, mut buf) = (Vec::new(), Vec::new());
    loop {
        buf.clear();
        if wl.fill(&mut buf, 1 << 14) == 0 {
            break;
        }
        assert!(buf.iter().all(|a| a.page < wl.pages()));
        all.extend_from_slice(&buf);
    }
    assert_eq!(all.len() as u64, wl.len());
    all
}

#[test]
fn info_fits_zipf_alpha_of_generated_traces() {
    let dir = scratch("info");
    let path = dir.join("z.tkt");
    for alpha in [0.7, 0.99, 1.2] {
        let accesses = drain(&WorkloadSpec::new("zipf", 100_000, 2_000_000, 5).with("alpha", alpha));
        write_native(&path, &accesses.iter().map(|a| PageAccess::read(a.page)).collect::<Vec<_>>(), false);
        let s = stats(trace::open(&path, None).unwrap().as_mut(), "z").unwrap();
        assert_eq!(s.accesses, 2_000_000);
        let fit = s.zipf_alpha.unwrap();
        assert!((fit - alpha).abs() < 0.06, "alpha {alpha}: fitted {fit}");
        assert!(s.top1_share > s.top10_share / 10.0 * 2.0, "skewed: {s:?}");
    }
    // Uniform over 1,000 pages: no skew, about 10% of accesses in 10% of pages.
    let mut rng = Rng::new(1);
    let uniform: Vec<PageAccess> = (0..1_000_000).map(|_| PageAccess::read(rng.below(1000))).collect();
    write_native(&path, &uniform, false);
    let s = stats(trace::open(&path, None).unwrap().as_mut(), "u").unwrap();
    assert!(s.zipf_alpha.unwrap() < 0.05, "{s:?}");
    assert!((s.top10_share - 0.1).abs() < 0.01, "{s:?}");
    assert_eq!(s.pages, 1000);
    assert_eq!(s.footprint_bytes, 1000 * 4096);
    // A uniform stream over n pages re-accesses a page after ~n - 1 others at the median
    // (the stack distance of uniform re-references is close to n ln 2 ... n): between.
    let d = s.median_reuse_distance.unwrap();
    assert!((500..1000).contains(&d), "{d}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn info_counts_reuse_and_hot_shares_exactly() {
    let dir = scratch("info-exact");
    let path = fixture(&dir, "t.csv", "");
    // 200 pages: page 0 gets 801 accesses, pages 1..=199 one each, page 1 a store.
    let mut text = String::from("page,op\n");
    for p in 0..200 {
        text += &format!("{p},{}\n", if p == 1 { "w" } else { "r" });
    }
    for _ in 0..800 {
        text += "0,r\n";
    }
    std::fs::write(&path, text).unwrap();
    let s = stats(trace::open(&path, None).unwrap().as_mut(), "t").unwrap();
    assert_eq!((s.accesses, s.pages, s.writes), (1000, 200, 1));
    assert!((s.reuse_fraction - 0.8).abs() < 1e-12);
    // Top 1% = 2 pages: 801 + 1; top 10% = 20 pages: 801 + 19.
    assert!((s.top1_share - 0.802).abs() < 1e-12, "{s:?}");
    assert!((s.top10_share - 0.820).abs() < 1e-12, "{s:?}");
    // The first re-access of page 0 has 199 other pages between; the other 799 none.
    assert_eq!(s.median_reuse_distance, Some(0));
    assert_eq!(s.zipf_alpha, None, "only one page above the noise floor");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn trace_workload_replays_every_format_by_detection() {
    let dir = scratch("workload");
    let csv = fixture(&dir, "t.csv", "addr,op\n0x5000,w\n0x1000,r\n0x5008,r\n0x9000,r\n");
    let spec = WorkloadSpec::new("trace", 1, 1, 1).with("path", csv.display());
    let got = drain(&spec);
    let want = [(0, true), (1, false), (0, false), (2, false)];
    assert_eq!(got.iter().map(|a| (a.page, a.write)).collect::<Vec<_>>(), want);
    assert_eq!(workload::build(&spec.clone().with("limit", 2)).unwrap().len(), 2);
    assert_eq!(workload::build(&spec).unwrap().pages(), 3);

    // Native and oracleGeneral copies replay the same page stream.
    let native = dir.join("t.tkt");
    trace::convert(trace::open(&csv, None).unwrap().as_mut(), &native, Format::Native).unwrap();
    let og = dir.join("t.og");
    trace::convert(trace::open(&csv, None).unwrap().as_mut(), &og, Format::OracleGeneral).unwrap();
    for path in [&native, &og] {
        let again = drain(&WorkloadSpec::new("trace", 1, 1, 1).with("path", path.display()));
        assert_eq!(again.iter().map(|a| a.page).collect::<Vec<_>>(), [0, 1, 0, 2], "{}", path.display());
    }
    // The native copy keeps the CSV's store.
    assert!(NativeReader::open(&native).unwrap().header().writes);
    let again = drain(&WorkloadSpec::new("trace", 1, 1, 1).with("path", native.display()));
    assert_eq!(again.iter().map(|a| (a.page, a.write)).collect::<Vec<_>>(), want);
    // An explicit format overrides detection; next_access is for oracleGeneral only.
    let e = workload::build(&spec.clone().with("format", "lackey")).err().unwrap().to_string();
    assert!(e.contains("t.csv: line 1"), "{e}");
    let e = workload::build(&spec.clone().with("format", "vtune")).err().unwrap().to_string();
    assert!(e.contains("format") && e.contains("vtune"), "{e}");
    let e = workload::build(&spec.clone().with("next_access", "ignore")).err().unwrap().to_string();
    assert!(e.contains("next_access") && e.contains("oracle-general"), "{e}");
    let empty = fixture(&dir, "empty.csv", "# nothing\n");
    let e = workload::build(&WorkloadSpec::new("trace", 1, 1, 1).with("path", empty.display())).err().unwrap();
    assert!(e.to_string().contains("no accesses"), "{e}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Damaged text and JSON inputs (bytes flipped, cut anywhere) give an error naming the
/// file and a line or offset, or a stream of accesses, never a panic.
#[test]
fn damaged_text_inputs_never_panic() {
    let dir = scratch("fuzz");
    let samples: [(Format, &str); 5] = [
        (Format::Lackey, "==1== x\nI  0400,3\n S 7ff000398,8\n L 04016f58,8\n M 0421e310,4\n"),
        (Format::Pinatrace, "0x7f1b2c3d4e5f: R 0x7ffd12345678\n0x401000: W 0x601040\n#eof\n"),
        (Format::PerfScript, " a 1 [0] 1.5: 1 cpu/mem-loads/P: 7f12a4c01040\n a 1 [0] 1.6: mem-stores: 0x10\n"),
        (Format::Csv, "time,address,op\n1,0x7000,load\n2,8192,STORE\n"),
        (
            Format::Damo,
            r#"[{"snapshots": [{"regions": [{"start": "0", "end": "20480", "nr_accesses": {"samples": 2}},
               {"start": 40960, "end": 45056, "nr_accesses": 3}]}]}]"#,
        ),
    ];
    const SPECIAL: &[u8] = b" ,:\n{}[]\"0xX-";
    let path = dir.join("damaged");
    let mut rng = Rng::new(21);
    for (format, text) in samples {
        assert!(!read_path(&fixture(&dir, "damaged", text), Some(format)).unwrap().is_empty());
        for _ in 0..400 {
            let mut b = text.as_bytes().to_vec();
            for _ in 0..1 + rng.below(3) {
                let i = rng.below(b.len() as u64) as usize;
                match rng.below(3) {
                    0 => b[i] ^= 1 << rng.below(8),
                    1 => b.truncate(i),
                    _ => b[i] = SPECIAL[rng.below(SPECIAL.len() as u64) as usize],
                }
                if b.is_empty() {
                    break;
                }
            }
            std::fs::write(&path, &b).unwrap();
            if let Err(e) = read_path(&path, Some(format)) {
                let e = e.to_string();
                assert!(e.contains("damaged: line ") || e.contains("damaged: offset "), "{}: {e}", format.name());
            }
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}
