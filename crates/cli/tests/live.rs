//! `tierkit run`, `attach` and `profile` as built, on this host: the perf page-fault
//! source and the clear_refs profiler only (DAMON and the tiering knobs are exercised in
//! the QEMU guest, tests/vm).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

fn state_dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("tierkit-live-test-{}-{name}", std::process::id()))
}

fn tierkit(name: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tierkit"));
    cmd.args(args).env("TIERKIT_STATE_DIR", state_dir(name)).env_remove("RUST_BACKTRACE");
    cmd
}

fn run(name: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let Output { status, stdout, stderr } = tierkit(name, args).output().unwrap();
    (status.code(), String::from_utf8(stdout).unwrap(), String::from_utf8(stderr).unwrap())
}

/// The `key=value` line after `tierkit: summary`.
fn fields(stderr: &str) -> String {
    let mut lines = stderr.lines().skip_while(|l| *l != "tierkit: summary");
    assert_eq!(lines.next(), Some("tierkit: summary"), "no summary block in:\n{stderr}");
    lines.next().and_then(|l| l.strip_prefix("tierkit: ")).unwrap_or("").to_string()
}

fn has(fields: &str, want: &str) -> bool {
    fields.split(' ').any(|f| f == want)
}

#[test]
fn run_with_a_duration_ends_with_a_summary() {
    let args = ["run", "--dry-run", "--source", "perf", "--duration", "2", "--", "sleep", "5"];
    let (code, _, err) = run("duration", &args);
    assert_eq!(code, Some(0), "{err}");
    let f = fields(&err);
    for want in
        ["ended=duration", "promoted_pages=0", "demoted_pages=0", "move_errors=0", "dry_run=true", "source=perf"]
    {
        assert!(has(&f, want), "{want} in {f}");
    }
    assert!(err.contains("tierkit: managing pid") && err.contains("policy tierkit"), "{err}");
    assert!(err.contains("would have moved 0 pages"), "{err}");
}

#[test]
fn run_exits_with_the_commands_exit_code() {
    let (code, _, err) = run("exit3", &["run", "--source", "perf", "--", "sh", "-c", "exit 3"]);
    assert_eq!(code, Some(3), "{err}");
    let f = fields(&err);
    assert!(has(&f, "ended=target-exited") && has(&f, "exit_code=3"), "{f}");
    let (code, _, err) = run("killed", &["run", "--source", "perf", "--", "sh", "-c", "sleep 0.3; kill -9 $$"]);
    assert_eq!(code, Some(128 + 9), "{err}");
    assert!(err.contains("was killed by SIGKILL"), "{err}");
    let (code, _, err) = run("missing", &["run", "--source", "perf", "--", "/no/such/program"]);
    assert_eq!(code, Some(127), "{err}");
    assert!(err.contains("command not found: /no/such/program"), "{err}");
}

#[test]
fn attach_to_a_missing_process_fails_clearly() {
    let (code, _, err) = run("attach", &["attach", "999999999"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("cannot attach to pid 999999999"), "{err}");
    assert!(err.contains("no process with pid 999999999"), "{err}");
}

#[test]
fn bad_usage_exits_2() {
    for args in [
        &["run", "--source", "pebs", "--", "true"][..],
        &["run", "--source", "perf"][..],
        &["profile", "--duration", "1"][..],
        &["profile", "--interval", "1", "--", "true"][..],
        &["attach", "--max-mbps", "0", "1"][..],
        &["attach", "--cpu-budget", "101", "1"][..],
        &["attach", "--cpu-budget", "-1", "1"][..],
        &["run", "--cpu-budget", "two", "--", "true"][..],
        &["move", "--to", "dram", "1"][..],
        &["move", "1"][..],
        &["move", "--to", "fast", "--range", "0x2000-0x1000", "1"][..],
    ] {
        let (code, _, err) = run("usage", args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
    }
    let (_, _, err) = run("usage", &["attach", "--cpu-budget", "101", "1"]);
    assert!(err.contains("expected a percentage from 0 to 100"), "{err}");
    let (code, _, err) = run("usage", &["run", "--source", "perf", "--metrics", "256.0.0.1:1", "--", "true"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("--metrics 256.0.0.1:1: cannot listen there"), "{err}");
    let (code, _, err) = run("usage", &["run", "--source", "perf", "--policy", "nope", "--", "true"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("unknown policy \"nope\""), "{err}");
}

/// Reads tierkit's stderr until a line starting with `prefix`; returns all lines read.
fn read_until(child: &mut Child, prefix: &str) -> (BufReader<std::process::ChildStderr>, String) {
    let mut reader = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0, "tierkit ended before {prefix:?}:\n{seen}");
        seen.push_str(&line);
        if line.starts_with(prefix) {
            return (reader, seen);
        }
    }
}

#[test]
fn sigterm_to_tierkit_prints_the_summary() {
    let mut child =
        tierkit("sigterm", &["run", "--source", "perf", "--", "sleep", "3"]).stderr(Stdio::piped()).spawn().unwrap();
    let (mut reader, mut seen) = read_until(&mut child, "tierkit: managing pid");
    // SAFETY: signalling the tierkit this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    reader.read_to_string(&mut seen).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{seen}");
    assert!(has(&fields(&seen), "ended=signal"), "{seen}");
    assert!(seen.contains("stopped by SIGTERM (tierkit does not signal the target)"), "{seen}");
}

#[test]
fn metrics_are_served_while_running() {
    let args = ["run", "--source", "perf", "--metrics", "127.0.0.1:0", "--duration", "3", "--", "sleep", "4"];
    let mut child = tierkit("metrics", &args).stderr(Stdio::piped()).spawn().unwrap();
    let (mut reader, mut seen) = read_until(&mut child, "tierkit: metrics at http://");
    let addr =
        seen.lines().last().unwrap().trim_start_matches("tierkit: metrics at http://").trim_end_matches("/metrics");
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    stream.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
    let mut page = String::new();
    stream.read_to_string(&mut page).unwrap();
    for family in ["tierkit_promoted_pages_total 0", "tierkit_fast_tier_residency_ratio", "tierkit_cpu_seconds_total"] {
        assert!(page.contains(family), "{family} in:\n{page}");
    }
    reader.read_to_string(&mut seen).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0), "{seen}");
    assert!(has(&fields(&seen), "ended=duration"), "{seen}");
}

/// A shell that grows a 1 MiB string, then counts for a few seconds.
const BUSY: &str = "i=0; s=x; while [ $i -lt 20 ]; do s=\"$s$s\"; i=$((i+1)); done; \
                    i=0; while [ $i -lt 3000000 ]; do i=$((i+1)); done";

#[test]
fn profile_prints_heat_per_mapping() {
    let args = ["profile", "--source", "refs", "--duration", "2", "--interval", "250", "--", "sh", "-c", BUSY];
    let (code, out, err) = run("profile", &args);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("tierkit profile: pid ") && out.contains("refs (clear_refs + smaps Referenced)"), "{out}");
    let heap: Vec<&str> = out.lines().filter(|l| l.contains(" [heap] ")).collect();
    assert!(!heap.is_empty(), "{out}");
    for line in &heap {
        assert!(line.contains("hot ") && line.contains("warm ") && line.contains("cold ") && line.contains('%'));
    }
    assert!(out.lines().filter(|l| l.contains("] all mappings")).count() >= 2, "{out}");
    assert!(out.lines().last().unwrap().starts_with("tierkit profile: ended="), "{out}");
}

#[test]
fn profile_json_has_fractions_that_add_up() {
    let args =
        ["profile", "--json", "--source", "refs", "--duration", "1", "--interval", "200", "--", "sh", "-c", BUSY];
    let (code, out, err) = run("profile-json", &args);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["method"], "refs");
    assert_eq!(v["interval_ms"], 200);
    let snapshots = v["snapshots"].as_array().unwrap();
    assert!(!snapshots.is_empty(), "{out}");
    for s in snapshots {
        for m in std::iter::once(&s["total"]).chain(s["mappings"].as_array().unwrap()) {
            let sum: f64 = ["hot", "warm", "cold"].iter().map(|k| m[k].as_f64().unwrap()).sum();
            assert!((sum - 1.0).abs() < 1e-9, "{m}");
        }
    }
    assert!(snapshots.iter().any(|s| s["mappings"].as_array().unwrap().iter().any(|m| m["mapping"] == "[heap]")));
}
