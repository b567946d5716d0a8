//! The committed corpus says what it holds: every trace in `corpus/` has the sidecar
//! `NAME.json` that `corpus/record.sh` writes, and the sidecar's counts are the trace
//! header's (records, distinct pages, instructions, sampling, bytes); every trace has the
//! script that re-records it (`corpus/programs/NAME.sh`), at least the 5M records the
//! corpus asks of a program, and a place in exactly one half of `corpus/split.json`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tierkit_sim::trace::native::NativeReader;

/// The fewest records a program's trace holds (issue 12: ≥ 5M records after warm-up).
const MIN_RECORDS: u64 = 5_000_000;

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../corpus")
}

fn traces(dir: &Path) -> Vec<PathBuf> {
    let mut traces: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "tktrace"))
        .collect();
    traces.sort();
    traces
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn uint(sidecar: &Value, key: &str, name: &str) -> u64 {
    sidecar[key].as_u64().unwrap_or_else(|| panic!("{name}.json: `{key}` is not a count: {}", sidecar[key]))
}

#[test]
fn every_trace_has_a_sidecar_that_matches_its_header() {
    let dir = corpus();
    let traces = traces(&dir);
    assert!(traces.len() >= 10, "corpus/ holds {} traces, expected the 10 or more recorded programs", traces.len());
    for path in &traces {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let sidecar = read_json(&path.with_extension("json"));
        let header = NativeReader::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).header();
        for key in ["program", "version", "command", "input", "start_marker"] {
            let text = sidecar[key].as_str().unwrap_or_else(|| panic!("{name}.json: no `{key}`"));
            assert!(!text.trim().is_empty(), "{name}.json: `{key}` is empty");
        }
        assert_eq!(sidecar["trace"].as_str(), Some(format!("{name}.tktrace").as_str()), "{name}.json: `trace`");
        for key in ["model", "size", "ways"] {
            assert!(!sidecar["llc"][key].is_null(), "{name}.json: no `llc.{key}`");
        }
        let records = uint(&sidecar, "records", &name);
        assert_eq!(records, header.accesses, "{name}: sidecar records vs trace header");
        assert!(records >= MIN_RECORDS, "{name}: {records} records, fewer than {MIN_RECORDS}");
        assert_eq!(uint(&sidecar, "pages", &name), header.pages, "{name}: sidecar pages vs trace header");
        assert_eq!(
            uint(&sidecar, "footprint_bytes", &name),
            header.pages * 4096,
            "{name}: footprint is the distinct pages' bytes"
        );
        assert_eq!(
            Some(uint(&sidecar, "instructions", &name)),
            header.instructions,
            "{name}: sidecar instructions vs the trace's clock"
        );
        assert_eq!(uint(&sidecar, "sample_every", &name), header.sample_every, "{name}: sampling");
        let bytes = std::fs::metadata(path).unwrap().len();
        assert_eq!(uint(&sidecar, "trace_bytes", &name), bytes, "{name}: sidecar bytes vs the file");
        let script = dir.join("programs").join(format!("{name}.sh"));
        assert!(script.is_file(), "{name}: no {} to re-record it", script.display());
    }
}

#[test]
fn every_trace_is_in_exactly_one_half_of_the_split() {
    let dir = corpus();
    let split = read_json(&dir.join("split.json"));
    let half = |key: &str| -> BTreeSet<String> {
        split[key]
            .as_array()
            .unwrap_or_else(|| panic!("split.json: no `{key}` list"))
            .iter()
            .map(|v| v.as_str().expect("split.json: names are strings").to_string())
            .collect()
    };
    let (tuning, held_out) = (half("tuning"), half("held-out"));
    let both: Vec<_> = tuning.intersection(&held_out).collect();
    assert!(both.is_empty(), "in both halves: {both:?}");
    let named: BTreeSet<String> = tuning.union(&held_out).cloned().collect();
    let recorded: BTreeSet<String> =
        traces(&dir).iter().map(|p| p.file_stem().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(named, recorded, "split.json must name every trace of corpus/ and nothing else");
}
