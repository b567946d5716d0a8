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
    let doc = serde_json::from_str::<serde_json::Value>(&json).unwrap();
    assert_eq!(doc["schema_version"], 2);
    let rows = doc["rows"].as_array().unwrap().len();
    let path = dir.join("results.json");
    std::fs::write(&path, json).unwrap();
    (path, timeline, rows)
}

/// The `<figure>` element with id `id` in `html`.
fn figure<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html.find(&format!("<figure id=\"{id}\">")).unwrap_or_else(|| panic!("no figure {id}"));
    let len = html[start..].find("</figure>").unwrap();
    &html[start..start + len]
}

/// The cells of a page-hotness map, from the hover text of its rectangles (one per run of
/// cells of one colour in a row, listing each cell's count): (page range, start of the
/// time bin in % of the run, accesses).
fn hotness_cells(map: &str) -> Vec<(&str, f64, u64)> {
    let mut cells = Vec::new();
    for tip in map.split("<title>pages ").skip(1) {
        let (pages, rest) = tip.split_once(", run ").unwrap();
        let (from, rest) = rest.split_once("%-").unwrap();
        let counts = rest.split_once(": ").unwrap().1.split_once(" accesses</title>").unwrap().0;
        let from: f64 = from.parse().unwrap();
        for (k, n) in counts.split(", ").enumerate() {
            cells.push((pages, from + 2.0 * k as f64, n.parse().unwrap()));
        }
    }
    cells
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
    // Per workload: throughput vs ratio and page hotness; per workload and ratio: hit
    // ratio, migration, hit ratio per interval.
    assert_eq!(html.matches("<svg").count(), 2 * 2 + 2 * 2 * 3, "{html}");
    assert_eq!(html.matches("class=\"figure heat-map\"").count(), 2 + 4);
    assert_eq!(html.matches("</svg>").count(), html.matches("<svg").count());
    for title in [
        "zipf: throughput vs fast:slow ratio",
        "hotset-shift 1:8: migration traffic over time",
        "zipf 1:16: fast-tier hit ratio per interval",
    ] {
        assert!(html.contains(title), "{title} missing");
    }
    // Page hotness: 64 page ranges x 50 time bins per workload, every access counted once.
    let mut moved = Vec::new();
    for w in ["zipf", "hotset-shift"] {
        let map = figure(&html, &format!("{w}_page-hotness"));
        assert!(map.contains(&format!("{w}: page hotness over time")) && map.contains("Page hotness: accesses"));
        let cells = hotness_cells(map);
        assert_eq!(cells.len(), 64 * 50, "every cell's count is in some rectangle's hover text");
        assert!(map.matches("class=\"cell\"").count() < 64 * 50, "cells of one colour share a rectangle");
        assert_eq!(cells.iter().map(|c| c.2).sum::<u64>(), 60_000, "{w}");
        // How much the accesses per page range change from the first half to the second.
        let mut halves = std::collections::BTreeMap::<&str, [i64; 2]>::new();
        for (pages, from, n) in &cells {
            halves.entry(pages).or_default()[usize::from(*from >= 50.0)] += *n as i64;
        }
        moved.push(halves.values().map(|[a, b]| (a - b).abs()).sum::<i64>());
    }
    // hotset-shift's hot set moves at half-time; Zipf's stays put.
    assert!(moved[1] > 3 * moved[0], "moved between halves: zipf {}, hotset-shift {}", moved[0], moved[1]);
    assert!(!html.contains("No page-hotness map"));
    // Per interval: a heat map row per policy, a cell per interval of its timeline.
    let intervals = std::fs::read_to_string(timeline.join("zipf_1-16_tpp.csv")).unwrap().lines().count() - 1;
    assert!(intervals > 10);
    let interval_values: usize = html
        .split("intervals ")
        .skip(1)
        .filter_map(|t| t.split_once(" hit ratio</title>"))
        .map(|(head, _)| head.split_once(": ").map_or(0, |(_, v)| v.split(", ").count()))
        .sum();
    assert_eq!(interval_values, 4 * 3 * intervals, "a value per interval of every run");
    assert!(!html.contains("No timelines given"));
    // Every line chart has each policy's line and legend entry.
    for id in ["zipf_throughput", "hotset-shift_1-8_hit-ratio", "zipf_1-16_migration"] {
        let chart = figure(&html, id);
        assert!(chart.contains("class=\"figure line-chart\""), "{id}");
        assert_eq!(
            chart.matches("stroke-width=\"2\" points=").count(),
            2 * 3,
            "{id}: a line and a legend key per policy"
        );
        for policy in ["all-local", "oracle", "tpp"] {
            assert!(chart.contains(&format!(">{policy}</text>")), "{id}: no legend entry for {policy}");
        }
    }
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
    // Rows of an older compare, without seed and options: no page hotness, one note.
    assert_eq!(html.matches("No page-hotness map").count(), 1, "{html}");
    assert!(html.contains("No page-hotness map for w&lt;1&gt;: the rows do not say how the workload was built"));
    assert!(!html.contains("page-hotness\""));
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
fn report_of_a_replayed_trace_whose_file_is_gone_notes_it_instead_of_a_page_hotness_map() {
    let dir = scratch("gone-trace");
    let json = dir.join("r.json");
    let gone = dir.join("gone.csv");
    let row = format!(
        r#"[{{"workload":"trace","policy":"lru","ratio":[1,8],"throughput":1e8,"pct_of_all_local":70.0,
        "fast_hit_ratio":0.5,"promotions":1,"demotions":2,"migrated_bytes":12288,"pages":100,"accesses":1000,
        "seed":1,"options":{{"path":"{}"}}}}]"#,
        s(&gone)
    );
    std::fs::write(&json, row).unwrap();
    let page = dir.join("out.html");
    let (ok, _, err) = tierkit(&["report", s(&json), "-o", s(&page)], &[]);
    assert!(ok, "{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains(&format!("No page-hotness map for trace: its trace file {} is gone", s(&gone))), "{html}");
    assert!(!html.contains("page-hotness\""));
    assert_eq!(html.matches("<svg").count(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_bad_input_gives_one_error_naming_the_file() {
    let dir = scratch("bad");
    let cases = [
        ("not-json.json", "this is not JSON", "invalid JSON"),
        ("empty.json", "[]", "empty"),
        ("object.json", r#"{"rows":[]}"#, "a JSON object without \"schema_version\""),
        ("future.json", r#"{"schema_version":3,"rows":[]}"#, "schema_version 3 is not one this tierkit reads"),
        (
            "short-row.json",
            r#"[{"workload":"zipf","policy":"tpp","ratio":[1,16]}]"#,
            "row 1: missing field `throughput`",
        ),
        (
            "bad-ratio.json",
            r#"[{"workload":"zipf","policy":"tpp","ratio":"1/16"}]"#,
            "ratio \"1/16\": expected FAST:SLOW",
        ),
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

/// Width, height, bit depth and colour type of a PNG, read from its IHDR chunk.
fn png_header(png: &[u8]) -> (u32, u32, u8, u8) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    assert_eq!(&png[12..16], b"IHDR");
    let be = |i: usize| u32::from_be_bytes(png[i..i + 4].try_into().unwrap());
    (be(16), be(20), png[24], png[25])
}

#[test]
fn report_png_writes_an_svg_and_a_png_per_figure() {
    let dir = scratch("png");
    let (json, timeline, _) = compare(&dir);
    let out = dir.join("figs");
    let (ok, _, err) = tierkit(&["report", s(&json), "--png", s(&out), "--timeline", s(&timeline)], &[]);
    assert!(ok, "{err}");
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter_map(|n| n.strip_suffix(".png").map(str::to_string))
        .collect();
    names.sort();
    assert_eq!(names.len(), 2 * 2 + 2 * 2 * 3, "{names:?}");
    for name in &names {
        let png = std::fs::read(out.join(format!("{name}.png"))).unwrap();
        // 760 x 380, 8-bit RGB, and decodable.
        assert_eq!(png_header(&png), (760, 380, 8, 2), "{name}.png");
        let mut reader = png::Decoder::new(std::io::Cursor::new(&png)).read_info().unwrap();
        let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
        reader.next_frame(&mut pixels).unwrap();
        let colours: std::collections::BTreeSet<&[u8]> = pixels.chunks(3).collect();
        assert!(colours.len() > 20, "{name}.png has {} colours: nothing drawn?", colours.len());
        let svg = std::fs::read_to_string(out.join(format!("{name}.svg"))).unwrap();
        assert!(svg.starts_with("<?xml") && svg.contains("<svg xmlns=\"http://www.w3.org/2000/svg\""), "{name}");
    }
    let svg = std::fs::read_to_string(out.join("zipf_throughput.svg")).unwrap();
    for policy in ["all-local", "oracle", "tpp"] {
        assert!(svg.contains(&format!(">{policy}</text>")), "no legend entry for {policy}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_png_without_its_font_names_the_package_to_install() {
    let dir = scratch("png-font");
    let json = dir.join("r.json");
    let row = r#"[{"workload":"w","policy":"lru","ratio":[1,8],"throughput":1e8,"pct_of_all_local":70.0,
        "fast_hit_ratio":0.5,"promotions":1,"demotions":2,"migrated_bytes":12288}]"#;
    std::fs::write(&json, row).unwrap();
    let out = dir.join("figs");
    let (ok, _, err) = tierkit(
        &["report", s(&json), "--png", s(&out)],
        &[("TIERKIT_FONT_DIR", "/nonexistent/fonts"), ("RUST_BACKTRACE", "0"), ("RUST_LIB_BACKTRACE", "0")],
    );
    assert!(!ok, "drew PNGs without a font");
    assert!(
        err.contains("fonts-dejavu-core")
            && err.contains("/nonexistent/fonts/DejaVuSans.ttf")
            && !err.contains("panicked"),
        "{err}"
    );
    assert_eq!(err.matches("Error:").count(), 1, "{err}");
    assert!(!out.exists(), "the directory was made before the font was found");
    // The page itself needs no font.
    let page = dir.join("r.html");
    let (ok, _, err) = tierkit(&["report", s(&json), "-o", s(&page)], &[("TIERKIT_FONT_DIR", "/nonexistent/fonts")]);
    assert!(ok && std::fs::read_to_string(&page).unwrap().contains("class=\"figure line-chart\""), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The answer of `tierkit advise --json` on a small Zipf trace (3 sizes, tierkit and lru,
/// a 30% target), placed in a corpus of one program.
fn advise(dir: &Path) -> (PathBuf, serde_json::Value) {
    let corpus = dir.join("corpus");
    std::fs::create_dir_all(&corpus).unwrap();
    let trace = dir.join("zipf.tkt");
    for (path, seed) in [(trace.clone(), "1"), (corpus.join("kv.tktrace"), "2")] {
        let (ok, _, err) = tierkit(
            &[
                "trace",
                "write",
                "--workload",
                "zipf",
                "--pages",
                "4000",
                "--accesses",
                "200000",
                "--seed",
                seed,
                "-o",
                s(&path),
            ],
            &[],
        );
        assert!(ok, "{err}");
    }
    std::fs::write(corpus.join("standins.toml"), "# no stand-in validated\n").unwrap();
    let (ok, json, err) = tierkit(
        &[
            "advise",
            "--trace",
            s(&trace),
            "--corpus",
            s(&corpus),
            "--policies",
            "tierkit,lru",
            "--ratios",
            "1:16,1:4,1:2",
            "--target",
            "30%",
            "--json",
        ],
        &[],
    );
    assert!(ok, "{err}");
    let path = dir.join("advice.json");
    std::fs::write(&path, &json).unwrap();
    (path, serde_json::from_str(&json).unwrap())
}

#[test]
fn report_of_an_advice_shows_the_answer_its_sizes_runs_and_slowdown_figure() {
    let dir = scratch("advice");
    let (json, answer) = advise(&dir);
    let page = dir.join("advice.html");
    let figs = dir.join("figs");
    let (ok, _, err) = tierkit(&["report", s(&json), "-o", s(&page), "--png", s(&figs)], &[]);
    assert!(ok, "{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    // The answer names the recommended size and its best policy.
    let rec = &answer["recommended"];
    let best = rec["best"].as_str().unwrap();
    let line =
        format!("keeps it within 30% of all-DRAM: {best} at {:.1}%", rec["best_pct_of_all_local"].as_f64().unwrap());
    assert!(html.contains(&line), "no answer line {line:?}");
    // A row per size, the recommended one marked; a row per run.
    let sizes = answer["sizes"].as_array().unwrap();
    assert_eq!(html.matches("<tr class=\"size").count(), sizes.len());
    let marked = format!("<tr class=\"size recommended\"><td class=\"name\">{}</td>", rec["ratio"].as_str().unwrap());
    assert_eq!(html.matches("<tr class=\"size recommended\"").count(), 1);
    assert!(html.contains(&marked), "the recommended size {} is not marked", rec["ratio"]);
    assert_eq!(html.matches("<tr class=\"run\">").count(), answer["runs"].as_array().unwrap().len());
    assert_eq!(answer["runs"].as_array().unwrap().len(), 3 * 3, "tierkit, lru and none at 3 sizes");
    // The class: nearest kv, not validated.
    assert!(html.contains("nearest kv of") && html.contains("No stand-in is validated for kv"), "no class line");
    // The figure: a line per drawn policy and the target, with their legend entries.
    let fig = figure(&html, "advice_slowdown");
    assert!(fig.contains("slowdown vs DRAM share per policy"), "title");
    let mut drawn: Vec<&str> =
        sizes.iter().flat_map(|s| [s["best"].as_str(), s["runner_up"].as_str()]).flatten().collect();
    drawn.extend(["none", "target 30%"]);
    drawn.sort();
    drawn.dedup();
    for name in &drawn {
        assert!(fig.contains(&format!(">{name}</text>")), "no legend entry for {name}");
    }
    // Each series: its line and its legend key, 2 px wide (axes and grid lines are 1 px).
    let lines = fig.split("<polyline ").skip(1).filter(|p| p.split('>').next().unwrap().contains("stroke-width=\"2\""));
    assert_eq!(lines.count(), 2 * drawn.len(), "{fig}");
    let png = std::fs::read(figs.join("advice_slowdown.png")).unwrap();
    assert_eq!(png_header(&png), (760, 380, 8, 2));

    // An answer has no timelines; a broken answer names its field.
    let (ok, _, err) = tierkit(&["report", s(&json), "-o", s(&page), "--timeline", s(&dir)], &[]);
    assert!(!ok && err.contains("is an answer of `tierkit advise`, which has no timelines"), "{err}");
    let broken = dir.join("broken.json");
    std::fs::write(&broken, std::fs::read_to_string(&json).unwrap().replace("\"dram_share\"", "\"share\"")).unwrap();
    let (ok, _, err) = tierkit(&["report", s(&broken), "-o", s(&page)], &[]);
    assert!(!ok, "a broken answer was rendered");
    assert!(
        err.contains("not the JSON of `tierkit advise --json`") && err.contains("missing field `dram_share`"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
