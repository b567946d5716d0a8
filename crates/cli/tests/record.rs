//! `tierkit record`: the LLC filter end to end on a lackey fixture; with valgrind (and
//! gcc for tierkit's tool) real recordings: the tool against lackey on a deterministic
//! walker (the same counts and records), the start marker, skipping, sampling,
//! `--max-records`, the fallback to lackey without gcc; bad flags; and the perf refusal
//! on machines without memory sampling.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tierkit_sim::trace::{self, PageAccess, TraceClock};

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

/// The records of the trace at `path` and its clock.
fn records(path: &Path) -> (Vec<PageAccess>, Option<TraceClock>) {
    let mut r = trace::open(path, None).unwrap();
    let mut v = Vec::new();
    while let Some(a) = r.next_access().unwrap() {
        v.push(a);
    }
    (v, r.clock())
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
    assert!(stdout.contains("recorder: lackey\ninstructions: 2\n"), "{stdout}");
    assert!(stdout.contains("loads: 4  stores: 1  modifies: 1"), "{stdout}");
    assert!(stdout.contains("1 hits, 5 misses, 1 dirty write-backs"), "{stdout}");
    assert!(stdout.contains("kept 6 memory-level accesses on 3 pages"), "{stdout}");
    let i = info(&out_path);
    assert_eq!(i["accesses"], 6, "{i}");
    assert_eq!(i["pages"], 3, "{i}");
    // The clock: S 1000 and L 2000 after the first I line, the write-back (L 3000's)
    // after the second, then the rest within it.
    let gaps: Vec<u64> = records(&out_path).0.iter().map(|a| a.instructions).collect();
    assert_eq!(gaps, [1, 0, 1, 0, 0, 0]);
    assert_eq!(i["instructions"], 2, "{i}");
    assert_eq!(i["sample_every"], 1, "{i}");
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
    let cache = tmp("ls-cache");
    let out = Command::new(env!("CARGO_BIN_EXE_tierkit"))
        .args(["record", "--via", "valgrind", "-o", out_path.to_str().unwrap(), "--", "ls", "/"])
        .env("XDG_CACHE_HOME", &cache)
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("bin"), "ls output missing: {stdout}");
    assert!(stdout.contains("command exited with status 0"), "{stdout}");
    let i = info(&out_path);
    assert!(i["pages"].as_u64().unwrap() > 10, "{i}");
    assert!(i["instructions"].as_u64().unwrap() > 10_000, "{i}");
    // With gcc, tierkit's tool was built into the cache and recorded.
    if stdout.contains("recorder: tk_record") {
        let dirs: Vec<PathBuf> = std::fs::read_dir(cache.join("tierkit")).unwrap().map(|e| e.unwrap().path()).collect();
        assert_eq!(dirs.len(), 1, "{dirs:?}");
        assert!(
            dirs[0].join("tk_record-amd64-linux").is_file() && dirs[0].join("vgpreload_core-amd64-linux.so").exists()
        );
    }
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

/// A deterministic walker: fills a 2 MiB array (the warm-up), writes the start marker
/// with write(2), then loads and stores pseudo-random elements, 150,000 times
/// (`finite!`) or forever (`forever`: an argument of the same length, so that both runs
/// lay out their stacks alike).
const WALKER: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
    size_t n = 1 << 18;
    unsigned long *a = malloc(n * sizeof *a), x = 1, sum = 0;
    for (size_t i = 0; i < n; i++) a[i] = i;
    if (write(1, "warm: TK_START\n", 15) != 15) return 1;
    int forever = argc > 1 && argv[1][1] == 'o';
    for (long r = 0; forever || r < 150000; r++) {
        x = x * 6364136223846793005UL + 1442695040888963407UL;
        size_t i = (x >> 20) % n;
        if (r & 1) a[i] += r; else sum += a[i];
    }
    printf("%lu\n", sum);
    return 0;
}
"#;

/// Whether valgrind and gcc are installed (the tool's tests need both).
fn have_toolchain() -> bool {
    let ok = |c: &str| Command::new(c).arg("--version").output().is_ok_and(|o| o.status.success());
    let have = ok("valgrind") && ok("gcc");
    if !have {
        eprintln!("valgrind or gcc is not installed: skipped");
    }
    have
}

/// The walker, compiled once per test run.
fn walker() -> &'static Path {
    static WALKER_BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    WALKER_BIN.get_or_init(|| {
        let src = tmp("walker.c");
        std::fs::write(&src, WALKER).unwrap();
        let bin = tmp("walker");
        let out = Command::new("gcc").args(["-O1", "-o"]).arg(&bin).arg(&src).output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        bin
    })
}

/// `tierkit record` with the tool's cache in this run's scratch directory.
fn record(flags: &[&str], out: &Path, cmd: &[&str]) -> Output {
    let mut args = vec!["record", "--llc", "256KiB", "--llc-ways", "8", "-o", out.to_str().unwrap()];
    args.extend_from_slice(flags);
    args.push("--");
    args.extend_from_slice(cmd);
    Command::new(env!("CARGO_BIN_EXE_tierkit")).args(&args).env("XDG_CACHE_HOME", tmp("cache")).output().unwrap()
}

/// Records the walker (`forever`: the endless one) with `flags`; returns the summary
/// and the trace's records and clock.
fn record_walker(flags: &[&str], name: &str, forever: bool) -> (String, Vec<PageAccess>, Option<TraceClock>) {
    let out_path = tmp(name);
    let bin = walker().to_str().unwrap();
    let out = record(flags, &out_path, &[bin, if forever { "forever" } else { "finite!" }]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{flags:?}: {stdout}{}", text(&out.stderr));
    let (r, clock) = records(&out_path);
    (stdout, r, clock)
}

/// The summary's lines from `instructions:` to the LLC's.
fn counts(summary: &str) -> String {
    summary
        .lines()
        .filter(|l| ["instructions:", "loads:", "LLC "].iter().any(|p| l.starts_with(p)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The LLC line's number before `what` (`hits`, `misses`, `dirty write-backs`).
fn llc_count(summary: &str, what: &str) -> u64 {
    let line = summary.lines().find(|l| l.starts_with("LLC ")).unwrap();
    let before = line.split(&format!(" {what}")).next().unwrap();
    before.rsplit(' ').next().unwrap().parse().unwrap()
}

/// The records of `full` made at instruction `from` or later, their gaps counted from
/// `from`: what a recording that starts there holds.
fn from_instruction(full: &[PageAccess], from: u64) -> Vec<PageAccess> {
    let (mut at, mut last) = (0u64, from);
    let mut out = Vec::new();
    for a in full {
        at += a.instructions;
        if at >= from {
            out.push(PageAccess { instructions: at - last, ..*a });
            last = at;
        }
    }
    out
}

#[test]
fn the_tool_counts_and_records_what_lackey_does() {
    if !have_toolchain() {
        return;
    }
    let (tool, tool_records, tool_clock) = record_walker(&[], "tool.tkt", false);
    let (lackey, lackey_records, lackey_clock) = record_walker(&["--lackey"], "lackey.tkt", false);
    assert!(tool.contains("recorder: tk_record") && lackey.contains("recorder: lackey"), "{tool}{lackey}");
    assert_eq!(counts(&tool), counts(&lackey), "{tool}\n{lackey}");
    // The walker's 2 MiB through a 256 KiB cache: every line misses, dirty lines go back.
    assert!(llc_count(&tool, "misses") > 32_768 + 100_000, "{tool}");
    assert!(llc_count(&tool, "dirty write-backs") > 32_768, "{tool}");
    assert_eq!(tool_records.len(), lackey_records.len());
    assert!(tool_records == lackey_records, "the records differ");
    assert_eq!(tool_clock, lackey_clock);
    let clock = tool_clock.unwrap();
    assert_eq!(clock.sample_every, 1);
    assert_eq!(clock.instructions, tool_records.iter().map(|a| a.instructions).sum::<u64>());

    // A 1-in-5 sample: the same accesses under both, the cache's counts unchanged.
    let (tool5, t5, c5) = record_walker(&["--sample-every", "5"], "tool5.tkt", false);
    let (lackey5, l5, _) = record_walker(&["--lackey", "--sample-every", "5"], "lackey5.tkt", false);
    assert_eq!(counts(&tool5), counts(&tool), "{tool5}");
    assert_eq!(counts(&lackey5), counts(&tool), "{lackey5}");
    assert!(t5 == l5, "the sampled records differ");
    assert_eq!(c5.unwrap().sample_every, 5);
    let (n, n5) = (tool_records.len() as f64, t5.len() as f64);
    assert!((n5 / n - 0.2).abs() < 0.02, "kept {n5} of {n}");
    assert!(tool5.contains(&format!("kept {} memory-level accesses (a 1-in-5 sample)", t5.len())), "{tool5}");
}

#[test]
fn start_marker_and_skip_drop_the_records_before_the_start() {
    if !have_toolchain() {
        return;
    }
    let (_, full, _) = record_walker(&[], "full.tkt", false);
    let (marked, after_marker, clock) = record_walker(&["--start-marker", "TK_START"], "marker.tkt", false);
    let from = |summary: &str| -> u64 {
        let at = summary.find("(records from instruction ").unwrap_or_else(|| panic!("{summary}"));
        summary[at + 26..].split(' ').next().unwrap().parse().unwrap()
    };
    let start = from(&marked);
    assert!(after_marker == from_instruction(&full, start), "the marker's trace is not the full one from {start}");
    // The warm-up (every line of the 2 MiB array missing once) is before the marker.
    assert!(full.len() - after_marker.len() >= 32_768, "{} of {}", after_marker.len(), full.len());
    assert_eq!(clock.unwrap().instructions, after_marker.iter().map(|a| a.instructions).sum::<u64>());
    // Skipping counts from the program's start, or from the marker.
    let (skipped, after_skip, _) = record_walker(&["--skip-instructions", "1000000"], "skip.tkt", false);
    assert_eq!(from(&skipped), 1_000_000, "{skipped}");
    assert!(after_skip == from_instruction(&full, 1_000_000));
    let (both, after_both, _) =
        record_walker(&["--start-marker", "TK_START", "--skip-instructions", "300000"], "both.tkt", false);
    assert_eq!(from(&both), start + 300_000, "{both}");
    assert!(after_both == from_instruction(&full, start + 300_000));
    // A marker the program never writes: the cache runs, nothing is written.
    let (never, none, _) = record_walker(&["--start-marker", "NEVER_WRITTEN"], "never.tkt", false);
    assert!(none.is_empty() && never.contains("the start was never reached"), "{never}");
}

#[test]
fn max_records_ends_the_program_and_keeps_a_complete_trace() {
    if !have_toolchain() {
        return;
    }
    let (_, full, _) = record_walker(&[], "prefix.tkt", false);
    for (flags, n) in [(vec!["--max-records", "5000"], 5000), (vec!["--lackey", "--max-records", "3000"], 3000)] {
        let (summary, kept, clock) = record_walker(&flags, "max.tkt", true);
        assert!(summary.contains(&format!("stopped the program at --max-records {n}")), "{summary}");
        assert!(!summary.contains("command exited"), "{summary}");
        assert_eq!(kept.len(), n);
        assert!(kept[..] == full[..n], "{flags:?}: not the run's first {n} records");
        assert_eq!(clock.unwrap().instructions, kept.iter().map(|a| a.instructions).sum::<u64>());
    }
}

#[test]
fn bad_recording_flags_say_what_is_wrong() {
    let log = tmp("flags.lackey");
    std::fs::write(&log, "I  04001e90,3\n").unwrap();
    let log = log.to_str().unwrap();
    let cases: [(&[&str], &str); 7] = [
        (&["record", "--sample-every", "0", "--", "true"], "--sample-every"),
        (&["record", "--skip-instructions", "lots", "--", "true"], "--skip-instructions"),
        (&["record", "--max-records", "0", "--", "true"], "--max-records"),
        (&["record", "--start-marker", "", "--", "true"], "--start-marker: the marker is empty"),
        (&["record", "--lackey", "--start-marker", "GO", "--", "true"], "it does not go with --lackey"),
        (&["record", "--from", log, "--start-marker", "GO"], "a lackey log does not hold what the program wrote"),
        (&["record", "--via", "perf", "--max-records", "9", "--", "true"], "--max-records goes with --via valgrind"),
    ];
    for (args, want) in cases {
        let out = tierkit(args);
        assert!(!out.status.success(), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn without_gcc_lackey_records_and_says_why() {
    let Ok(valgrind) = which("valgrind") else {
        eprintln!("valgrind is not installed: skipped");
        return;
    };
    // A PATH with valgrind and nothing else: no gcc.
    let bin = tmp("only-valgrind");
    std::fs::create_dir_all(&bin).unwrap();
    // Debian's valgrind is a script that runs valgrind.bin beside it.
    for name in ["valgrind", "valgrind.bin"] {
        let real = valgrind.with_file_name(name);
        if real.exists() {
            let _ = std::os::unix::fs::symlink(&real, bin.join(name));
        }
    }
    let run = |flags: &[&str]| {
        let mut args: Vec<String> = vec!["record".into(), "-o".into(), tmp("nogcc.tkt").to_str().unwrap().into()];
        args.extend(flags.iter().map(|s| s.to_string()));
        args.extend(["--".into(), "/bin/true".into()]);
        Command::new(env!("CARGO_BIN_EXE_tierkit"))
            .args(&args)
            .env("PATH", &bin)
            .env("XDG_CACHE_HOME", tmp("empty-cache"))
            .output()
            .unwrap()
    };
    let out = run(&[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stderr.contains(
            "note: recording with lackey (slower): tierkit's Valgrind tool is not available: gcc is not installed"
        ),
        "{stderr}"
    );
    assert!(stdout.contains("recorder: lackey"), "{stdout}");
    let out = run(&["--start-marker", "GO"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--start-marker needs tierkit's Valgrind tool, which is not available here: gcc")
    );
}

/// The path of `program` on PATH.
fn which(program: &str) -> Result<PathBuf, ()> {
    let path = std::env::var_os("PATH").ok_or(())?;
    std::env::split_paths(&path).map(|d| d.join(program)).find(|p| p.is_file()).ok_or(())
}

#[test]
fn forked_children_write_nothing_and_an_exec_ends_the_recording() {
    if !have_toolchain() {
        return;
    }
    // Each $(...) forks a subshell that runs and exits under Valgrind.
    let out_path = tmp("fork.tkt");
    let out = record(&[], &out_path, &["sh", "-c", "a=$(echo 1); b=$(echo 2); echo $a$b"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.starts_with("12\n") && stdout.contains("recorder: tk_record"), "{stdout}");
    let kept: usize = stdout.split("kept ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert_eq!(records(&out_path).0.len(), kept);
    // A program that execs another: recorded up to the exec, then the other runs on
    // (untraced) and its status comes back.
    let out = record(&[], &out_path, &["sh", "-c", "a=$(echo 1); exec sh -c 'echo $0; exit 4' $a"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{stdout}{}", text(&out.stderr));
    assert!(stdout.starts_with("1\n") && stdout.contains("command exited with status 4"), "{stdout}");
    let kept: usize = stdout.split("kept ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!(kept > 100 && records(&out_path).0.len() == kept, "{stdout}");
}
