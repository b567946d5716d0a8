//! `tierkit record`: the LLC filter end to end on a lackey fixture, a real valgrind run
//! when valgrind is installed, and the perf refusal on machines without memory sampling.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn tierkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tierkit")).args(args).output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tierkit-record-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// `trace info --json` of the trace at `path`.
fn info(path: &Path) -> serde_json::Value {
    let out = tierkit(&["trace", "info", "--json", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn lackey_fixture_keeps_only_llc_misses_and_writebacks() {
    // A 2-set, 2-way LLC (256 B). Lines of pages 1, 2, 3 all map to set 0.
    let log = tmp("fixture.lackey");
    std::fs::write(
        &log,
        "==123== Lackey, an example Valgrind tool\n\
         I  04001e90,3\n\
         \x20S 00001000,8\n\
         \x20L 00001008,8\n\
         \x20L 00002000,4\n\
         I  04001e93,5\n\
         \x20L 00003000,4\n\
         \x20M 00001010,4\n\
         \x20L 00002000,4\n\
         ==123== \n",
    )
    .unwrap();
    let out_path = tmp("fixture.tkt");
    let out = tierkit(&[
        "record",
        "--from",
        log.to_str().unwrap(),
        "--llc",
        "256B",
        "--llc-ways",
        "2",
        "-o",
        out_path.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    // S 1000 miss; L 1008 hit; L 2000 miss; L 3000 miss evicts page 1's dirty line
    // (write-back); M 1010 miss evicts 2000 (clean); L 2000 miss evicts 3000 (clean).
    assert!(stdout.contains("instructions skipped: 2"), "{stdout}");
    assert!(stdout.contains("loads: 4  stores: 1  modifies: 1"), "{stdout}");
    assert!(stdout.contains("1 hits, 5 misses, 1 dirty write-backs"), "{stdout}");
    assert!(stdout.contains("kept 6 memory-level accesses on 3 pages"), "{stdout}");
    let i = info(&out_path);
    assert_eq!(i["accesses"], 6, "{i}");
    assert_eq!(i["pages"], 3, "{i}");
}

#[test]
fn bad_lackey_line_names_the_line() {
    let log = tmp("bad.lackey");
    std::fs::write(&log, "I  04001e90,3\n L 1000,4\n X nonsense\n").unwrap();
    let out = tierkit(&["record", "--from", log.to_str().unwrap(), "-o", tmp("bad.tkt").to_str().unwrap()]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("line 3") && err.contains("nonsense"), "{err}");
}

#[test]
fn bad_llc_geometry_is_refused() {
    let out = tierkit(&["record", "--llc", "1000B", "--llc-ways", "4", "--", "true"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("multiple of 256"), "{}", text(&out.stderr));
}

#[test]
fn valgrind_records_a_real_program() {
    if Command::new("valgrind").arg("--version").output().is_err() {
        eprintln!("valgrind is not installed: skipped");
        return;
    }
    let out_path = tmp("ls.tkt");
    let out = tierkit(&["record", "--via", "valgrind", "-o", out_path.to_str().unwrap(), "--", "ls", "/"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("bin"), "ls output missing: {stdout}");
    assert!(stdout.contains("command exited with status 0"), "{stdout}");
    let i = info(&out_path);
    assert!(i["pages"].as_u64().unwrap() > 10, "{i}");
    // The exit status of the command comes back.
    let out = tierkit(&["record", "-o", out_path.to_str().unwrap(), "--", "sh", "-c", "exit 3"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out.stdout).contains("command exited with status 3"));
}

#[test]
fn perf_without_memory_sampling_says_why() {
    let has_pmu = Path::new("/sys/bus/event_source/devices/cpu/events/mem-loads").exists()
        || Path::new("/sys/bus/event_source/devices/cpu_core/events/mem-loads").exists()
        || Path::new("/sys/bus/event_source/devices/ibs_op/type").exists();
    if has_pmu {
        eprintln!("this machine's PMU samples memory: skipped");
        return;
    }
    let out = tierkit(&["record", "--via", "perf", "-o", tmp("perf.tkt").to_str().unwrap(), "--", "true"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("perf mem not available here because"), "{err}");
}

#[test]
fn damon_flags_are_refused_with_another_via() {
    for flags in [["--stride", "4"], ["--aggregation", "200"], ["--duration", "3"]] {
        let out = tierkit(&["record", "--via", "valgrind", flags[0], flags[1], "--", "true"]);
        assert!(!out.status.success());
        let err = text(&out.stderr);
        assert!(err.contains(&format!("{} goes with --via damon", flags[0])), "{err}");
    }
}

#[test]
fn damon_interval_outside_its_range_is_refused() {
    let out = tierkit(&["record", "--via", "damon", "--aggregation", "5", "--", "true"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("10..=10000"), "{}", text(&out.stderr));
}
