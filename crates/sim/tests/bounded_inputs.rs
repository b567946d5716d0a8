//! Sizes from user input and files are bounded by the machine's memory, and traces that
//! change under a run end it with an error: a footprint no machine holds is one error
//! naming the pages, a native header announcing an absurd page count is refused when
//! the file is opened, and a native, CSV or lackey trace cut while it is replayed ends
//! the stream with an error naming the file and where, never a panic.

use std::path::{Path, PathBuf};

use tierkit_core::dist::Rng;
use tierkit_sim::engine::{run, RunSpec, Subject};
use tierkit_sim::trace::{self, NativeWriter, PageAccess};
use tierkit_sim::workload::{Workload, WorkloadSpec};
use tierkit_sim::{budget, SimError};

/// A fresh directory for this test's files.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tierkit-bounded-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The `trace` workload replaying `path`.
fn trace_spec(path: &Path) -> WorkloadSpec {
    WorkloadSpec::new("trace", 1, 1, 1).with("path", path.display())
}

/// Writes `accesses` loads of pseudo-random pages below `pages` as a native trace.
fn native(path: &Path, accesses: u64, pages: u64) {
    let mut rng = Rng::new(3);
    let mut w = NativeWriter::create(path, false).unwrap();
    for _ in 0..accesses {
        w.push(PageAccess::read(rng.below(pages))).unwrap();
    }
    w.finish().unwrap();
}

/// Cuts the file at `path` to `len` bytes in place (the same file, as a run holds it).
fn cut(path: &Path, len: u64) {
    std::fs::OpenOptions::new().write(true).open(path).unwrap().set_len(len).unwrap();
}

/// Reads `wl` to its end, returning the error that ended it, if any.
fn drain(wl: &mut dyn Workload) -> Result<u64, SimError> {
    let (mut buf, mut total) = (Vec::new(), 0);
    loop {
        buf.clear();
        match wl.try_fill(&mut buf, 1000)? {
            0 => return Ok(total),
            n => total += n as u64,
        }
    }
}

#[test]
fn a_footprint_no_machine_holds_is_one_error_naming_the_pages() {
    if budget::available().is_none() {
        return; // Not Linux: nothing to check sizes against.
    }
    let spec = RunSpec::new(WorkloadSpec::new("zipf", 100_000_000_000, 1000, 1), (1, 16));
    for subject in ["lru", "oracle", "all-local"] {
        let e = run(&spec, Subject::Named(subject.into()), &mut |_| {}).unwrap_err();
        assert!(matches!(e, SimError::TooLarge { .. }), "{subject}: {e:?}");
        let e = e.to_string();
        assert!(e.starts_with("workload zipf: pages = 100000000000: the run needs ~11.6 TiB, the machine has "), "{e}");
        assert!(e.ends_with(" available") && e.lines().count() == 1, "{e}");
    }
    // The same footprint at a size machines hold runs.
    let small = RunSpec::new(WorkloadSpec::new("zipf", 1000, 1000, 1), (1, 16));
    assert_eq!(run(&small, Subject::Named("lru".into()), &mut |_| {}).unwrap().accesses, 1000);
}

#[test]
fn a_native_header_announcing_absurd_pages_is_refused_at_open() {
    if budget::available().is_none() {
        return;
    }
    let dir = scratch("header");
    let path = dir.join("absurd.tktrace");
    native(&path, 100, 10);
    let mut bytes = std::fs::read(&path).unwrap();
    // Consistent counts (no more pages than accesses), but 2^50 of each.
    bytes[16..24].copy_from_slice(&(1u64 << 50).to_le_bytes());
    bytes[24..32].copy_from_slice(&(1u64 << 50).to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let want = format!(
        "{}: offset 24: header of 1125899906842624 distinct pages: the map of them that reading keeps needs ~32.0 PiB, the machine has ",
        path.display()
    );
    // Refused before reading the payload (which would end with a count mismatch).
    let e = trace::build(&trace_spec(&path)).err().unwrap();
    assert!(matches!(e, SimError::TooLarge { .. }) && e.to_string().starts_with(&want), "{e}");
    let e = trace::open(&path, None).err().unwrap().to_string();
    assert!(e.starts_with(&want), "{e}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_native_trace_cut_while_a_run_reads_it_ends_the_run_with_an_error() {
    let dir = scratch("run");
    let path = dir.join("cut.tktrace");
    // Three frames (of 1 Mi records, about 1 MB each: random pages do not compress); the
    // cut is in the second, which the run reaches after its first chunk.
    native(&path, 2_100_000, 64);
    let len = std::fs::metadata(&path).unwrap().len();
    let spec = RunSpec::new(trace_spec(&path), (1, 16));
    let mut cuts = 0;
    let e = run(&spec, Subject::Named("lru".into()), &mut |_| {
        if cuts == 0 {
            cut(&path, len - len / 4);
            cuts += 1;
        }
    })
    .unwrap_err();
    assert_eq!(cuts, 1);
    let SimError::File { file, at, message } = &e else { panic!("{e:?}") };
    assert_eq!(file, &path.display().to_string());
    let offset: u64 = at.strip_prefix("offset ").and_then(|o| o.parse().ok()).unwrap_or_else(|| panic!("{e}"));
    assert!(offset > 48 && offset < len - len / 4, "the second frame's start: {e}");
    assert!(message.contains("truncated"), "{e}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn traces_cut_before_replaying_end_the_stream_with_an_error_naming_the_file() {
    let dir = scratch("formats");
    let native_path = dir.join("cut.tktrace");
    native(&native_path, 5000, 300);
    let csv: String = (0..5000).map(|i| format!("{},r\n", i % 300 * 7)).collect();
    let lackey: String = (0..5000).map(|i| format!(" L {:x},8\n", (i % 300) << 12)).collect();
    let (csv_path, lackey_path) = (dir.join("cut.csv"), dir.join("cut.lackey"));
    std::fs::write(&csv_path, &csv).unwrap();
    std::fs::write(&lackey_path, &lackey).unwrap();
    // CSV cut after a whole line: the stream ends at the access the line would have been;
    // lackey cut inside a line: the reader refuses that line as truncated.
    let csv_cut = csv[..csv.len() / 2].rfind('\n').unwrap() + 1;
    let lackey_cut = lackey[..lackey.len() / 2].rfind('\n').unwrap() + 4;
    let cases = [
        (&native_path, std::fs::metadata(&native_path).unwrap().len() - 9, "offset 48".to_string()),
        (&csv_path, csv_cut as u64, format!("access {}", csv[..csv_cut].lines().count())),
        (&lackey_path, lackey_cut as u64, format!("line {}", lackey[..lackey_cut].lines().count())),
    ];
    for (path, at, where_) in cases {
        let mut wl = trace::build(&trace_spec(path)).unwrap();
        assert_eq!(wl.len(), 5000, "{}", path.display());
        cut(path, at);
        let e = drain(wl.as_mut()).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}: {where_}: ", path.display())), "{e}");
        assert!(wl.take_error().is_none(), "reported once");
        assert_eq!(drain(wl.as_mut()).unwrap(), 0, "the stream ended at the error");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn an_oracle_general_trace_cut_or_changed_while_replayed_ends_with_an_error() {
    use std::io::{Seek, SeekFrom, Write};

    let dir = scratch("oracle-general");
    let path = dir.join("cut.oracleGeneral.bin");
    // 150,000 records (3.6 MB). The run's first chunk reads the first 65,536 records (one
    // 1.5 MiB read); the cut, 10 bytes into record 100,000, is met in the third read.
    let mut rng = Rng::new(5);
    trace::write_oracle_general(&path, (0..150_000).map(|_| rng.below(5000))).unwrap();
    let spec = RunSpec::new(trace_spec(&path), (1, 16));
    let mut cuts = 0;
    let e = run(&spec, Subject::Named("lru".into()), &mut |done| {
        if cuts == 0 {
            assert!(done < 65_536, "the cut is after the first read: {done}");
            cut(&path, 100_000 * 24 + 10);
            cuts += 1;
        }
    })
    .unwrap_err();
    assert_eq!(cuts, 1);
    let SimError::File { file, at, message } = &e else { panic!("{e:?}") };
    assert_eq!(file, &path.display().to_string());
    assert_eq!(at, "offset 2400000", "the partial record: {e}");
    assert!(message.contains("shorter") && message.contains("changed while being replayed"), "{e}");

    // An object rewritten in place (record 500 of 1,000 distinct objects) ends the stream
    // there: the 500 requests before it, then the error, once.
    let path = dir.join("changed.oracleGeneral.bin");
    trace::write_oracle_general(&path, 0..1000).unwrap();
    let mut wl = trace::build(&trace_spec(&path)).unwrap();
    assert_eq!(wl.len(), 1000);
    let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.seek(SeekFrom::Start(500 * 24 + 4)).unwrap();
    f.write_all(&999_999u64.to_le_bytes()).unwrap();
    drop(f);
    let mut buf = Vec::new();
    assert_eq!(wl.fill(&mut buf, 2000), 500);
    assert_eq!(buf.iter().map(|a| a.page).collect::<Vec<_>>(), (0..500).collect::<Vec<_>>());
    let e = wl.take_error().expect("an error ended the stream").to_string();
    let want = format!("{}: offset 12000: object 999999 was not in the trace when it was opened", path.display());
    assert!(e.starts_with(&want), "{e}");
    assert!(wl.take_error().is_none(), "reported once");
    assert_eq!(drain(wl.as_mut()).unwrap(), 0, "the stream ended at the error");
    std::fs::remove_dir_all(dir).unwrap();
}
