//! `tierkit report` as a user runs it: on the output of `tierkit compare`, and on bad
//! input.

use std::path::{Path, PathBuf};
use std::process::Command;

fn tierkit(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tierkit")).args(args).envs(env.iter().copied()).output().unwrap();
    (out.status.success(), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tierkit-report-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Runs a small comparison: 2 workloads x 2 ratios x 3 policies; returns the JSON path
/// and the timeline directory.
fn compare(dir: &Path) -> (PathBuf, PathBuf, usize) {
    let timeline = dir.join("timeline");
    let (ok, json, err) = tierkit(
        &[
            "compare",
            "--workload",
            "zipf,hotset-shift",
            "--ratios",
            "1:16,1:8",
            "--policies",
            "all-local,oracle,tpp",
            "--pages",
            "2000",
            "--accesses",
            "60000",
            "--json",
            "--timeline",
            s(&timeline),
        ],
        &[],
    );
    assert!(ok, "{err}");
    let rows = serde_json::from_str::<serde_json::Value>(&json).unwrap().as_array().unwrap().len();
    let path = dir.join("results.json");
    std::fs::write(&path, json).unwrap();
    (path, timeline, rows)
}

fn assert_self_contained(html: &str) {
    for bad in ["http://", "https://", "src=", "href=", "<script", "<link", "@import", "url("] {
        assert!(!html.contains(bad), "page refers outside itself ({bad})");
    }
}

#[test]
fn report_has_a_row_per_result_and_every_figure_with_timelines() {
    let dir = scratch("full");
    let (json, timeline, rows) = compare(&dir);
    assert_eq!(rows, 2 * 2 * 3);
    let page = dir.join("report.html");
    let (ok, _, err) = tierkit(&["report", s(&json), "-o", s(&page), "--timeline", s(&timeline)], &[]);
    assert!(ok, "{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert_eq!(html.matches("<tr class=\"result\">").count(), rows);
    // Per workload: throughput vs ratio; per workload and ratio: hit ratio, migration, heat map.
    assert_eq!(html.matches("<svg").count(), 2 + 2 * 2 * 3, "{html}");
    assert_eq!(html.matches("class=\"figure heat-map\"").count(), 4);
    assert_eq!(html.matches("</svg>").count(), html.matches("<svg").count());
    for title in ["zipf: throughput vs fast:slow ratio", "hotset-shift 1:8: migration traffic over time"] {
        assert!(html.contains(title), "{title} missing");
    }
    // A heat map row per policy, a cell per interval of its timeline.
    let intervals = std::fs::read_to_string(timeline.join("zipf_1-16_tpp.csv")).unwrap().lines().count() - 1;
    assert!(intervals > 10);
    assert_eq!(html.matches("class=\"cell\"").count(), 4 * 3 * intervals);
    assert!(!html.contains("No timelines given"));
    assert_self_contained(&html);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_without_timelines_the_page_says_so_and_draws_only_the_ratio_figures() {
    let dir = scratch("no-timeline");
    let json = dir.join("r.json");
    let row = |policy: &str, ratio: &str, pct: f64| {
        format!(
            r#"{{"workload":"w<1>","policy":"{policy}","ratio":{ratio},"throughput":1.5e8,"pct_of_all_local":{pct},
            "fast_hit_ratio":0.5,"promotions":1,"demotions":2,"migrated_bytes":12288}}"#
        )
    };
    let rows = [row("all-local", "[1,16]", 100.0), row("lru", "[1,4]", 88.6), row("lru", "[1,16]", 61.4)];
    std::fs::write(&json, format!("[{}]", rows.join(","))).unwrap();
    let page = dir.join("out.html");
    let (ok, _, err) = tierkit(&["report", s(&json), "-o", s(&page)], &[]);
    assert!(ok, "{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("No timelines given"), "{html}");
    assert_eq!(html.matches("<svg").count(), 1);
    assert_eq!(html.matches("<tr class=\"result\">").count(), 3);
    assert!(html.contains("<td>61.4</td>"), "{html}");
    // The summary: a row per policy, ratios across from the most constrained.
    assert_eq!(html.matches("<tr class=\"policy\">").count(), 2);
    assert!(html.contains("lru</td><td>61.4% (0.50)</td><td>88.6% (0.50)</td></tr>"), "{html}");
    assert!(html.contains("all-local</td><td>100.0% (0.50)</td><td></td></tr>"), "{html}");
    assert!(html.contains("<h2>w&lt;1&gt;</h2>"), "names are escaped");
    // lru has two points and all-local one: one line with markers each.
    assert_eq!(html.matches("<circle").count(), 3);
    // The most constrained ratio comes first on the x axis.
    assert!(html.find(">1:16</text>").unwrap() < html.find(">1:4</text>").unwrap());
    assert_self_contained(&html);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_bad_input_gives_one_error_naming_the_file() {
    let dir = scratch("bad");
    let cases = [
        ("not-json.json", "this is not JSON", "invalid JSON"),
        ("empty.json", "[]", "empty"),
        ("object.json", r#"{"rows":[]}"#, "JSON array"),
        (
            "short-row.json",
            r#"[{"workload":"zipf","policy":"tpp","ratio":[1,16]}]"#,
            "row 1: missing number field \"throughput\"",
        ),
        ("bad-ratio.json", r#"[{"workload":"zipf","policy":"tpp","ratio":"1:16"}]"#, "ratio"),
    ];
    for (name, text, why) in cases {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let page = dir.join(format!("{name}.html"));
        let (ok, _, err) =
            tierkit(&["report", s(&path), "-o", s(&page)], &[("RUST_BACKTRACE", "0"), ("RUST_LIB_BACKTRACE", "0")]);
        assert!(!ok, "{name} accepted");
        assert!(err.contains(s(&path)) && err.contains(why), "{name}: {err}");
        assert_eq!(err.matches("Error:").count(), 1, "{err}");
        assert!(!page.exists(), "{name}: a page was written");
    }
    let (ok, _, err) = tierkit(&["report", s(&dir.join("missing.json")), "-o", "x.html"], &[]);
    assert!(!ok && err.contains("missing.json: cannot read"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_timeline_directory_must_match_the_results() {
    let dir = scratch("timeline-mismatch");
    let (json, _, _) = compare(&dir);
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (ok, _, err) = tierkit(&["report", s(&json), "-o", s(&dir.join("r.html")), "--timeline", s(&empty)], &[]);
    assert!(
        !ok && err.contains("no CSV for any of the 12 results") && err.contains("zipf_1-16_all-local.csv"),
        "{err}"
    );
    // A damaged CSV is named with its line.
    let partial = dir.join("partial");
    std::fs::create_dir_all(&partial).unwrap();
    std::fs::write(partial.join("zipf_1-16_tpp.csv"), "end_ns,fast_hit_ratio,migrated_bytes\n1,0.5,0\n2,x,0\n")
        .unwrap();
    let (ok, _, err) = tierkit(&["report", s(&json), "-o", s(&dir.join("r.html")), "--timeline", s(&partial)], &[]);
    assert!(!ok && err.contains("zipf_1-16_tpp.csv") && err.contains("line 3"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_png_needs_chromium_and_writes_a_png_per_figure_when_it_is_there() {
    let dir = scratch("png");
    let (json, _, _) = compare(&dir);
    let out = dir.join("figs");
    let (ok, _, err) =
        tierkit(&["report", s(&json), "--png", s(&out)], &[("TIERKIT_CHROMIUM", "/nonexistent/chromium")]);
    assert!(!ok && err.contains("--png") && err.contains("/nonexistent/chromium"), "{err}");
    if !Path::new("/usr/bin/chromium").exists() {
        eprintln!("chromium not installed: the PNG output itself is checked by `make report-check`");
        return;
    }
    let (ok, _, err) = tierkit(&["report", s(&json), "--png", s(&out)], &[]);
    assert!(ok, "{err}");
    for name in ["zipf_throughput", "hotset-shift_throughput"] {
        let png = std::fs::read(out.join(format!("{name}.png"))).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{name}.png is not a PNG");
        let svg = std::fs::read_to_string(out.join(format!("{name}.svg"))).unwrap();
        assert!(svg.contains("xmlns=\"http://www.w3.org/2000/svg\""));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
