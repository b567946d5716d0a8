//! The `tierkit` binary as a user runs it.

use std::process::Command;

fn tierkit(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tierkit")).args(args).output().unwrap();
    (out.status.success(), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn help_lists_the_subcommands() {
    let (ok, out, _) = tierkit(&["--help"]);
    assert!(ok);
    assert!(out.contains("sketches"), "{out}");
}

#[test]
fn sketches_reports_filters_far_below_per_page_metadata() {
    let (ok, out, err) = tierkit(&["sketches", "--fast", "1GiB", "--ratio", "1:16", "--json"]);
    assert!(ok, "{err}");
    let bytes = |name: &str| -> u64 {
        let at = out.find(&format!("\"structure\":\"{name}\"")).unwrap_or_else(|| panic!("{name} missing: {out}"));
        let rest = &out[at..];
        let v = &rest[rest.find("\"heap_bytes\":").unwrap() + 13..];
        v[..v.find(',').unwrap()].parse().unwrap()
    };
    // 1 GiB fast = 262144 pages x 20.43 counters x 4 bits.
    assert!((2_600_000..2_800_000).contains(&bytes("cbf")));
    // 17 GiB managed x 262144 pages/GiB x 16 B / load 3/4, rounded to a power of two.
    assert!(bytes("exact-map") >= 17 * 262_144 * 16);
    assert!(out.contains("\"managed_gib\":17"), "{out}");
    let (ok, table, _) = tierkit(&["sketches"]);
    assert!(ok && table.contains("per managed GiB") && table.contains("blocked-cbf"), "{table}");
}

#[test]
fn bad_sizes_and_ratios_are_named() {
    let (ok, _, err) = tierkit(&["sketches", "--ratio", "1-16"]);
    assert!(!ok && err.contains("ratio \"1-16\""), "{err}");
    let (ok, _, err) = tierkit(&["sketches", "--fast", "12 parsecs"]);
    assert!(!ok && err.contains("unknown unit"), "{err}");
}

const SMALL: [&str; 4] = ["--pages", "2000", "--accesses", "60000"];

fn with_small<'a>(args: &[&'a str]) -> Vec<&'a str> {
    args.iter().copied().chain(SMALL).collect()
}

#[test]
fn compare_prints_every_cell_relative_to_the_references() {
    let (ok, out, err) = tierkit(&with_small(&["compare", "--workload", "zipf,gups", "--ratios", "1:16,1:8", "--csv"]));
    assert!(ok, "{err}");
    // The progress bar is for terminals: piped stderr gets none of it.
    assert!(!err.contains(['\x1b', '\r']) && !err.contains("[#") && !err.contains("[-"), "{err:?}");
    let rows: Vec<Vec<&str>> = out.lines().skip(1).map(|l| l.split(',').collect()).collect();
    // 2 workloads x 2 ratios x (all-local + 12 default subjects).
    assert_eq!(rows.len(), 2 * 2 * 13, "{out}");
    for r in &rows {
        let pct_local: f64 = r[4].parse().unwrap();
        assert!(pct_local > 0.0 && pct_local <= 101.0, "{r:?}");
        let hundred = |cell: &str| (cell.parse::<f64>().unwrap() - 100.0).abs() < 1e-9;
        if r[2] == "oracle" {
            assert!(hundred(r[5]), "the oracle is 100% of itself: {r:?}");
        }
        if r[2] == "all-local" {
            assert!(hundred(r[4]), "{r:?}");
        }
        assert!(r[1].contains(':'), "the ratio as typed: {r:?}");
    }
    let (ok, table, _) = tierkit(&with_small(&["compare", "--workload", "zipf", "--ratios", "1:16"]));
    for name in
        ["%oracle", "static-oracle", "tierkit", "clock", "freqtier", "hybridtier", "tpp", "autonuma", "hemem", "memtis"]
    {
        assert!(ok && table.contains(name), "{name} missing: {table}");
    }
}

#[test]
fn the_compare_table_ends_with_a_summary_of_the_csv_rows_and_a_legend() {
    let args = ["compare", "--workload", "zipf,gups", "--ratios", "1:16,1:8", "--policies", "oracle,none,lru,tierkit"];
    let (ok, csv, err) = tierkit(&with_small(&[&args[..], &["--csv"]].concat()));
    assert!(ok, "{err}");
    let (ok, table, err) = tierkit(&with_small(&args));
    assert!(ok, "{err}");
    let summary = &table[table.find("Summary over 4 cells").unwrap_or_else(|| panic!("no summary: {table}"))..];
    // The same figures from the rows: per policy, the geometric mean of %oracle and the
    // cells where it is within 0.1 points of the best non-reference policy.
    let rows: Vec<(String, String, f64)> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|r| !["oracle", "all-local"].contains(&r[2]))
        .map(|r| (format!("{} {}", r[0], r[1]), r[2].to_string(), r[5].parse().unwrap()))
        .collect();
    for policy in ["none", "lru", "tierkit"] {
        let mine: Vec<&(String, String, f64)> = rows.iter().filter(|r| r.1 == policy).collect();
        let geomean = 100.0 * (mine.iter().map(|r| (r.2 / 100.0).ln()).sum::<f64>() / mine.len() as f64).exp();
        let won = mine.iter().filter(|m| rows.iter().filter(|r| r.0 == m.0).all(|r| m.2 >= r.2 - 0.1)).count();
        let line = summary.lines().find(|l| l.trim_start().starts_with(&format!("{policy} "))).unwrap();
        let fields: Vec<&str> = line.split_whitespace().collect();
        let printed: f64 = fields[1].parse().unwrap();
        assert!((printed - geomean).abs() <= 0.06, "{policy}: {printed} vs {geomean:.2} from the rows\n{summary}");
        assert_eq!(fields[2], format!("{won}/4"), "{policy}\n{summary}");
    }
    for column in ["%local", "%oracle", "hit", "promoted, demoted", "tracking, cpu%", "geomean %or", "cells won"] {
        assert!(summary.lines().any(|l| l.trim_start().starts_with(column)), "legend lacks {column}: {summary}");
    }
}

#[test]
fn rows_that_beat_the_hit_ratio_oracle_under_contention_are_marked() {
    let args =
        ["compare", "--workload", "gups", "--ratios", "1:8", "--policies", "oracle,none", "--antagonist", "0.65"];
    let (ok, table, err) = tierkit(&with_small(&args));
    assert!(ok, "{err}");
    let none: Vec<&str> =
        table.lines().find(|l| l.trim_start().starts_with("none ")).unwrap().split_whitespace().collect();
    let oracle = table.lines().find(|l| l.trim_start().starts_with("oracle ")).unwrap();
    assert!(none[2].ends_with('*') && none[2].trim_end_matches('*').parse::<f64>().unwrap() > 100.0, "{table}");
    assert!(!oracle.contains('*'), "{table}");
    assert!(table.contains("does not model contention"), "{table}");
}

#[test]
fn bench_times_every_subject_in_rounds_and_reports_the_runs_hit_ratio() {
    let (ok, out, err) = tierkit(&with_small(&["bench", "--policies", "none,lru", "--ratio", "1:8", "--repeat", "2"]));
    assert!(ok, "{err}");
    let line =
        |name: &str| out.lines().find(|l| l.trim_start().starts_with(name)).unwrap_or_else(|| panic!("{name}: {out}"));
    assert!(
        line("generate only").contains("(baseline, ") && line("generate only").ends_with(" over 2 rounds)"),
        "{out}"
    );
    // The hit ratio is the run's own: the same as `sim` reports for the same cell.
    let (ok, json, err) =
        tierkit(&with_small(&["sim", "--workload", "zipf", "--policy", "lru", "--ratio", "1:8", "--json"]));
    assert!(ok, "{err}");
    let rows: serde_json::Value = serde_json::from_str(&json).unwrap();
    let lru = rows["rows"].as_array().unwrap().iter().find(|r| r["policy"] == "lru").expect("the lru row");
    let hit = lru["fast_hit_ratio"].as_f64().unwrap();
    for name in ["none", "lru"] {
        let l = line(name);
        assert!(l.contains("x of baseline, ") && l.contains("x over 2 rounds; hit ratio "), "{l}");
    }
    assert!(line("lru").ends_with(&format!("hit ratio {hit:.3})")), "{out} against {hit}");
    let (ok, _, err) = tierkit(&with_small(&["bench", "--repeat", "0"]));
    assert!(!ok && err.contains("--repeat"), "{err}");
}

#[test]
fn sim_writes_json_and_a_timeline() {
    let dir = std::env::temp_dir().join(format!("tierkit-timeline-{}", std::process::id()));
    let d = dir.to_str().unwrap();
    let (ok, out, err) = tierkit(&with_small(&[
        "sim",
        "--workload",
        "zipf",
        "--policy",
        "lru",
        "--ratio",
        "1:8",
        "--json",
        "--timeline",
        d,
    ]));
    assert!(ok, "{err}");
    assert!(out.contains("\"policy\": \"lru\"") && out.contains("\"fast_hit_ratio\""), "{out}");
    assert!(out.contains("\"schema_version\": 2") && out.contains("\"ratio\": \"1:8\""), "{out}");
    let csv = std::fs::read_to_string(dir.join("zipf_1-8_lru.csv")).unwrap();
    assert_eq!(csv.lines().count(), 101, "header + 100 intervals");
    assert!(csv.starts_with("end_ns,accesses,throughput,fast_hit_ratio,latency_ns_tier0,latency_ns_tier1"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn machine_overrides_change_the_result() {
    let base = with_small(&["sim", "--workload", "zipf", "--policy", "all-local", "--csv"]);
    let thr = |extra: &[&str]| -> String {
        let mut args = base.clone();
        args.retain(|a| *a != "--csv");
        args.push("--json");
        args.extend_from_slice(extra);
        let (ok, out, err) = tierkit(&args);
        assert!(ok, "{err}");
        out.lines().find(|l| l.contains("\"throughput\"")).unwrap().to_string()
    };
    assert_ne!(thr(&[]), thr(&["--antagonist", "0.65"]));
    assert_ne!(thr(&[]), thr(&["--set", "tiers.0.latency_ns=200"]));
}

#[test]
fn bad_inputs_name_what_is_wrong() {
    let cases: &[(&[&str], &str)] = &[
        (&["compare", "--workload", "zipfian"], "unknown workload \"zipfian\"; valid: zipf, gups"),
        (&["compare", "--workload", "zipf", "--policies", "magic"], "unknown policy \"magic\""),
        (&["compare", "--machine", "dram"], "unknown machine preset \"dram\"; valid: cxl, cxl-slow, numa"),
        (&["compare", "--ratios", "1:0"], "ratio \"1:0\""),
        (&["sim", "--workload", "zipf", "--policy", "lru", "--set", "app.threads=0"], "app.threads"),
        (&["sim", "--workload", "zipf", "--policy", "lru", "--set", "app.turbo=1"], "app.turbo"),
        (&["sim", "--workload", "zipf", "--policy", "lru", "--opt", "alpha=-1"], "alpha"),
        (&["sim", "--workload", "zipf", "--policy", "lru", "--machine-file", "/nonexistent.toml"], "/nonexistent.toml"),
    ];
    for (args, want) in cases {
        let (ok, _, err) = tierkit(args);
        assert!(!ok && err.contains(want), "{args:?}: {err}");
    }
    let file = std::env::temp_dir().join(format!("tierkit-bad-{}.toml", std::process::id()));
    std::fs::write(&file, "[app]\nthreads = \"many\"\n").unwrap();
    let (ok, _, err) =
        tierkit(&["sim", "--workload", "zipf", "--policy", "lru", "--machine-file", file.to_str().unwrap()]);
    assert!(!ok && err.contains(file.to_str().unwrap()) && err.contains("threads"), "{err}");
    std::fs::remove_file(file).unwrap();
}

/// A trace written by `trace write`, converted to the native format, described by `trace
/// info` and replayed by `compare --trace`: the same rows as the workload it came from
/// replayed through `--workload trace --opt path=`.
#[test]
fn a_trace_is_written_converted_described_and_compared() {
    let dir = std::env::temp_dir().join(format!("tierkit-cli-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let og = dir.join("z.oracleGeneral");
    let native = dir.join("z.tkt");
    let (og, native) = (og.to_str().unwrap(), native.to_str().unwrap());
    let (ok, _, err) =
        tierkit(&["trace", "write", "--workload", "zipf", "--pages", "4096", "--accesses", "200000", "-o", og]);
    assert!(ok, "{err}");
    let (ok, _, err) = tierkit(&["trace", "convert", og, native, "--to", "native"]);
    assert!(ok, "{err}");
    let (ok, out, err) = tierkit(&["trace", "info", native, "--json"]);
    assert!(ok, "{err}");
    let info: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(info["accesses"], 200_000, "{out}");
    let run = |args: &[&str]| {
        let mut all = vec!["compare", "--policies", "none,lru", "--ratios", "1:8", "--json"];
        all.extend_from_slice(args);
        let (ok, out, err) = tierkit(&all);
        assert!(ok, "{err}");
        serde_json::from_str::<serde_json::Value>(&out).unwrap()
    };
    let by_flag = run(&["--trace", native]);
    let path = format!("path={native}");
    let by_workload = run(&["--workload", "trace", "--opt", &path]);
    assert_eq!(by_flag["rows"].as_array().unwrap().len(), 2);
    assert_eq!(by_flag, by_workload);
    let (ok, _, err) = tierkit(&["compare", "--trace", native, "--workload", "zipf"]);
    assert!(!ok && err.contains("cannot be used with"), "{err}");
    // The table says where the replay put the pages before their first access.
    let placement = |extra: &[&str]| {
        let mut all = vec!["compare", "--policies", "none", "--ratios", "1:8", "--trace", native];
        all.extend_from_slice(extra);
        let (ok, out, err) = tierkit(&all);
        assert!(ok, "{err}");
        out.lines().find(|l| l.starts_with("  placement: ")).map(str::to_string).unwrap_or_else(|| panic!("{out}"))
    };
    assert!(placement(&[]).contains("before the stream"), "{}", placement(&[]));
    assert!(placement(&["--no-prefault"]).contains("each page at its first access in the trace"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `trace write` keeps the MLP classes of a workload that sets them (chase-stream) and
/// writes none for one that does not; `trace info` counts them, or says there are none.
#[test]
fn trace_write_keeps_mlp_classes_and_info_counts_them() {
    let dir = std::env::temp_dir().join(format!("tierkit-cli-mlp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cs, z) = (dir.join("cs.tkt"), dir.join("z.tkt"));
    let (cs, z) = (cs.to_str().unwrap(), z.to_str().unwrap());
    for (workload, out) in [("chase-stream", cs), ("zipf", z)] {
        let args = ["trace", "write", "--workload", workload, "--pages", "1600", "--accesses", "40000"];
        let (ok, _, err) = tierkit(&[&args[..], &["--format", "native", "-o", out]].concat());
        assert!(ok, "{err}");
        assert_eq!(err.contains("with MLP classes"), workload == "chase-stream", "{err}");
    }
    let info = |path: &str| {
        let (ok, out, err) = tierkit(&["trace", "info", path, "--json"]);
        assert!(ok, "{err}");
        serde_json::from_str::<serde_json::Value>(&out).unwrap()
    };
    let classes = &info(cs)["mlp_classes"];
    let count = |name: &str| classes[name].as_u64().unwrap_or_else(|| panic!("{name}: {classes}"));
    let (default, dependent, streaming) = (count("default"), count("dependent"), count("streaming"));
    assert_eq!(default + dependent + streaming, 40_000, "{classes}");
    // chase-stream's shares: 30% chasing, 60% streaming, the rest cold.
    assert!((11_000..13_000).contains(&dependent) && (23_000..25_000).contains(&streaming), "{classes}");
    assert_eq!(info(z)["mlp_classes"], serde_json::Value::Null);
    let (ok, out, err) = tierkit(&["trace", "info", cs]);
    assert!(ok, "{err}");
    let line = format!("mlp classes           default {default}, dependent {dependent}, streaming {streaming}");
    assert!(out.contains(&line), "{out}");
    let (ok, out, err) = tierkit(&["trace", "info", z]);
    assert!(ok && out.contains("mlp classes           none (every access takes app.mlp)"), "{out}{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
