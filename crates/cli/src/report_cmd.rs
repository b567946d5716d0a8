//! `tierkit report`: the rows of `tierkit compare --json` (and, optionally, the CSVs of
//! `--timeline DIR`) as one self-contained HTML page: a table per workload and figures as
//! inline SVG (no scripts, no external resources). `--png DIR` also writes each figure
//! as SVG and PNG; plotters draws both (the PNG's text needs Debian's fonts-dejavu-core).
//!
//! Figures per workload: throughput (% of all-local) against the fast:slow ratio per
//! policy, from the rows; a page-hotness heat map (accesses per range of page ids over
//! time, log-scaled), counted from the workload's stream rebuilt from the rows' `seed`,
//! `options` and sizes (rows of an older compare lack them: the page says so and draws
//! none; a replayed trace whose file is gone gets a note instead); with timelines, per
//! ratio, the fast-tier hit ratio over time, the migration traffic over time and the hit
//! ratio per interval as a heat map (one row per policy, one column per interval).
//! Without timelines the page says so and leaves those figures out.
//!
//! The answer of `tierkit advise --json` gets a page of its own ([`advice`]): the answer,
//! its table per DRAM size, its runs and the figure of slowdown against DRAM share.

mod advice;
mod chart;
mod hotness;
mod html;
mod input;
mod png;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;

use chart::{Chart, HeatMap, HeatRow, LineChart, Series, XAxis};
use input::{Interval, ResultRow};

/// Flags of `tierkit report`.
#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("out").required(true).multiple(true).args(["output", "png"])))]
pub struct ReportArgs {
    /// The JSON rows of `tierkit compare --json`, or the answer of `tierkit advise --json`.
    pub results: PathBuf,
    /// Write the HTML page to FILE.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write each figure as DIR/NAME.svg and DIR/NAME.png (the PNGs' text needs Debian's
    /// `fonts-dejavu-core`).
    #[arg(long, value_name = "DIR")]
    pub png: Option<PathBuf>,
    /// The `--timeline DIR` of the same comparison, for the figures over time: each
    /// policy's fast-tier hit ratio and migration traffic, and its hit ratio per interval
    /// as a heat map (the page-hotness map needs no timelines).
    #[arg(long, value_name = "DIR")]
    pub timeline: Option<PathBuf>,
}

/// One figure: a file-safe name, what it draws and a caption.
pub struct Figure {
    /// Name for the element id and the SVG and PNG files.
    pub name: String,
    /// The chart, drawn as SVG for the page and as SVG and PNG for `--png`.
    pub chart: Chart,
    /// Caption under it.
    pub caption: String,
}

/// Runs `tierkit report`.
pub fn run(a: ReportArgs) -> Result<()> {
    if let Some(adv) = advice::read(&a.results)? {
        return advice_report(&a, &adv);
    }
    let rows = input::read_results(&a.results)?;
    let timelines = match &a.timeline {
        Some(dir) => Some(read_timelines(dir, &rows)?),
        None => None,
    };
    let mut notes = Vec::new();
    if timelines.is_none() {
        notes.push(
            "No timelines given (run `tierkit compare --timeline DIR` and pass `--timeline DIR` here): \
             the hit-ratio and migration figures over time and the hit ratio per interval are left out."
                .to_string(),
        );
    }
    let unbuilt: Vec<&str> = workloads(&rows)
        .into_iter()
        .filter(|w| rows.iter().filter(|r| r.workload == *w).all(|r| r.stream.is_none()))
        .collect();
    if !unbuilt.is_empty() {
        notes.push(format!(
            "No page-hotness map for {}: the rows do not say how the workload was built (no seed and options: \
             JSON of an older `tierkit compare`; run it again to get them).",
            unbuilt.join(", ")
        ));
    }
    let sections: Vec<html::Section> =
        workloads(&rows).into_iter().map(|w| section(w, &rows, timelines.as_ref())).collect();
    if let Some(path) = &a.output {
        let page = html::page(&a.results.display().to_string(), rows.len(), &notes, &sections)?;
        std::fs::write(path, page).with_context(|| format!("{}: cannot write the report", path.display()))?;
    }
    if let Some(dir) = &a.png {
        let figures: Vec<&Figure> = sections.iter().flat_map(|s| &s.figures).collect();
        png::write_all(dir, &figures)?;
    }
    Ok(())
}

/// The page and figure of an answer of `tierkit advise --json`.
fn advice_report(a: &ReportArgs, adv: &tierkit_sim::advise::Advice) -> Result<()> {
    if let Some(dir) = &a.timeline {
        bail!(
            "--timeline {}: {} is an answer of `tierkit advise`, which has no timelines (they are \
             `tierkit compare --timeline`'s)",
            dir.display(),
            a.results.display()
        );
    }
    let figure = advice::figure(adv);
    if let Some(path) = &a.output {
        let page = advice::page(&a.results.display().to_string(), adv, &figure)?;
        std::fs::write(path, page).with_context(|| format!("{}: cannot write the report", path.display()))?;
    }
    if let Some(dir) = &a.png {
        png::write_all(dir, &[&figure])?;
    }
    Ok(())
}

/// Timelines keyed by the row's index; an error if the directory matches no row.
fn read_timelines(dir: &Path, rows: &[ResultRow]) -> Result<BTreeMap<usize, Vec<Interval>>> {
    if !dir.is_dir() {
        bail!("--timeline {}: not a directory", dir.display());
    }
    let mut out = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        let path = dir.join(r.timeline_file());
        if path.is_file() {
            out.insert(i, input::read_timeline(&path)?);
        }
    }
    if out.is_empty() {
        bail!(
            "--timeline {}: no CSV for any of the {} results (expected names like {})",
            dir.display(),
            rows.len(),
            rows[0].timeline_file()
        );
    }
    Ok(out)
}

fn workloads(rows: &[ResultRow]) -> Vec<&str> {
    let mut seen: Vec<&str> = Vec::new();
    for r in rows {
        if !seen.contains(&r.workload.as_str()) {
            seen.push(&r.workload);
        }
    }
    seen
}

/// A file-safe version of `s`.
fn slug(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).collect()
}

fn section<'a>(
    workload: &'a str,
    all: &'a [ResultRow],
    timelines: Option<&BTreeMap<usize, Vec<Interval>>>,
) -> html::Section<'a> {
    let idx: Vec<usize> = (0..all.len()).filter(|&i| all[i].workload == workload).collect();
    let rows: Vec<&ResultRow> = idx.iter().map(|&i| &all[i]).collect();
    let ratios = ratios(&rows);
    let policies = distinct(rows.iter().map(|r| r.policy.as_str()));
    let series = policies
        .iter()
        .map(|p| Series {
            name: p.to_string(),
            points: ratios
                .iter()
                .enumerate()
                .map(|(x, q)| {
                    (x as f64, rows.iter().find(|r| r.policy == *p && r.ratio == *q).map(|r| r.pct_of_all_local))
                })
                .collect(),
        })
        .collect();
    let chart = LineChart {
        title: format!("{workload}: throughput vs fast:slow ratio"),
        x_label: "fast:slow capacity".into(),
        y_label: "% of all-local throughput".into(),
        x_axis: XAxis::Categories(ratios.iter().map(|(f, s)| format!("{f}:{s}")).collect()),
        markers: true,
        series,
    };
    let mut figures = vec![Figure {
        name: format!("{}_throughput", slug(workload)),
        chart: Chart::Line(chart),
        caption: "Throughput of each policy as a percentage of all-local, per fast:slow capacity ratio.".into(),
    }];
    let mut notes = Vec::new();
    let streams: Vec<_> = rows.iter().filter_map(|r| r.stream.as_ref()).collect();
    if let Some(spec) = streams.first() {
        match hotness::figure(workload, spec) {
            Ok(f) => figures.push(f),
            Err(note) => notes.push(note),
        }
        if streams.iter().any(|s| s != spec) {
            notes.push(format!(
                "The rows of {workload} come from differently built streams (seeds, sizes or options): the \
                 page-hotness map shows the first row's."
            ));
        }
    }
    if let Some(t) = timelines {
        let missing: Vec<String> = idx.iter().filter(|i| !t.contains_key(i)).map(|&i| all[i].timeline_file()).collect();
        if !missing.is_empty() {
            notes.push(format!("No timeline CSV for {} run(s): {}.", missing.len(), missing.join(", ")));
        }
        for q in &ratios {
            let runs: Vec<(&str, &Vec<Interval>)> = idx
                .iter()
                .filter(|&&i| all[i].ratio == *q)
                .filter_map(|&i| t.get(&i).map(|v| (all[i].policy.as_str(), v)))
                .collect();
            if !runs.is_empty() {
                figures.extend(over_time(workload, *q, &runs));
            }
        }
    }
    html::Section { workload, rows, figures, notes }
}

/// The rows' distinct ratios from the most to the least constrained fast tier, as the
/// papers' tables order them.
fn ratios(rows: &[&ResultRow]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for r in rows {
        if !out.contains(&r.ratio) {
            out.push(r.ratio);
        }
    }
    out.sort_by(|a, b| (b.1 * a.0).cmp(&(a.1 * b.0)));
    out
}

fn distinct<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for s in items {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// The hit-ratio and migration charts and the hit ratio per interval of one workload at
/// one ratio.
fn over_time(workload: &str, ratio: (u64, u64), runs: &[(&str, &Vec<Interval>)]) -> Vec<Figure> {
    let label = format!("{workload} {}:{}", ratio.0, ratio.1);
    let stem = format!("{}_{}-{}", slug(workload), ratio.0, ratio.1);
    // Intervals cover equal shares of a run's accesses: x is the share done at its end.
    let line = |f: &dyn Fn(&Interval) -> f64| -> Vec<Series> {
        runs.iter()
            .map(|(p, t)| Series {
                name: p.to_string(),
                points: t
                    .iter()
                    .enumerate()
                    .map(|(i, v)| ((i + 1) as f64 * 100.0 / t.len() as f64, Some(f(v))))
                    .collect(),
            })
            .collect()
    };
    let hit = LineChart {
        title: format!("{label}: fast-tier hit ratio over time"),
        x_label: "% of the run's accesses".into(),
        y_label: "fast-tier hit ratio".into(),
        x_axis: XAxis::Numeric,
        markers: false,
        series: line(&|v| v.fast_hit_ratio),
    };
    let migration = LineChart {
        title: format!("{label}: migration traffic over time"),
        x_label: "% of the run's accesses".into(),
        y_label: "MiB migrated per interval".into(),
        x_axis: XAxis::Numeric,
        markers: false,
        series: line(&|v| v.migrated_bytes as f64 / (1u64 << 20) as f64),
    };
    let heat = HeatMap {
        title: format!("{label}: fast-tier hit ratio per interval"),
        x_label: "% of the run's accesses".into(),
        y_label: String::new(),
        value_label: "fast-tier hit ratio".into(),
        scale: ["1".into(), "0".into()],
        rows: runs
            .iter()
            .map(|(p, t)| HeatRow {
                label: p.to_string(),
                what: p.to_string(),
                cells: t.iter().map(|v| (v.fast_hit_ratio, format!("{:.3}", v.fast_hit_ratio))).collect(),
            })
            .collect(),
        columns: (1..=runs.iter().map(|(_, t)| t.len()).max().unwrap_or(0))
            .map(|i| (i.to_string(), i.to_string()))
            .collect(),
        column_noun: "intervals".into(),
        unit: "hit ratio".into(),
    };
    vec![
        Figure {
            name: format!("{stem}_hit-ratio"),
            chart: Chart::Line(hit),
            caption: "Share of each interval's accesses served by the fast tier.".into(),
        },
        Figure {
            name: format!("{stem}_migration"),
            chart: Chart::Line(migration),
            caption: "Bytes promoted plus demoted in each interval.".into(),
        },
        Figure {
            name: format!("{stem}_heat"),
            chart: Chart::Heat(heat),
            caption: "Hit ratio per interval: one row per policy, one cell per interval of its timeline, coloured \
                      by the share of the interval's accesses the fast tier served (how much of the hot set the \
                      policy held in DRAM then)."
                .into(),
        },
    ]
}
