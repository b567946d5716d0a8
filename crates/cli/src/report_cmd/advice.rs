//! `tierkit report` of what `tierkit advise --json` wrote: the answer and its confidence
//! as `advise` prints them, the table per DRAM size, every run, and the figure of
//! slowdown against DRAM share per policy.

use std::fmt::Write;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::Value;
use tierkit_sim::advise::Advice;

use super::chart::{Chart, LineChart, Series, XAxis};
use super::html::{esc, STYLE};
use super::Figure;
use crate::advise_cmd::{answer_line, class_line, confidence_line, mib, pct};

/// The answer in `path` when it is the JSON of `tierkit advise --json` (an object with
/// `target_slowdown_pct`); `None` for anything else, which the rows' reader judges.
pub fn read(path: &Path) -> Result<Option<Advice>> {
    let Ok(text) = std::fs::read_to_string(path) else { return Ok(None) };
    let Ok(value) = serde_json::from_str::<Value>(&text) else { return Ok(None) };
    if value.get("target_slowdown_pct").is_none() {
        return Ok(None);
    }
    let advice: Advice = super::input::typed(value)
        .with_context(|| format!("{}: not the JSON of `tierkit advise --json`", path.display()))?;
    if advice.sizes.is_empty() {
        anyhow::bail!("{}: an answer of `tierkit advise --json` without sizes", path.display());
    }
    Ok(Some(advice))
}

/// The policies the figure draws: the best and the runner-up at some size, and `none`
/// (every policy's line would crowd the legend; the table of runs has them all).
fn drawn(adv: &Advice) -> Vec<String> {
    let mut names: Vec<String> =
        adv.sizes.iter().flat_map(|s| [Some(s.best.clone()), s.runner_up.clone()]).flatten().collect();
    names.push("none".into());
    names.sort();
    names.dedup();
    names.retain(|p| adv.runs.iter().any(|r| &r.policy == p));
    names
}

/// Slowdown against all-DRAM per policy, against the DRAM share; the target as a line.
pub fn figure(adv: &Advice) -> Figure {
    let share = |ratio: &str| adv.sizes.iter().find(|s| s.ratio == ratio).map(|s| s.dram_share * 100.0);
    let mut series: Vec<Series> = drawn(adv)
        .into_iter()
        .map(|p| Series {
            points: adv
                .runs
                .iter()
                .filter(|r| r.policy == p)
                .filter_map(|r| share(&r.ratio).map(|x| (x, Some(100.0 - r.pct_of_all_local))))
                .collect(),
            name: p,
        })
        .collect();
    for s in &mut series {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let xs: Vec<f64> = adv.sizes.iter().map(|s| s.dram_share * 100.0).collect();
    series.push(Series {
        name: format!("target {}%", adv.target_slowdown_pct),
        points: xs.iter().map(|&x| (x, Some(adv.target_slowdown_pct))).collect(),
    });
    let chart = LineChart {
        title: "slowdown vs DRAM share per policy".into(),
        x_label: "DRAM share of the footprint (%)".into(),
        y_label: "slowdown against all-DRAM (%)".into(),
        x_axis: XAxis::Numeric,
        markers: true,
        series,
    };
    Figure {
        name: "advice_slowdown".into(),
        chart: Chart::Line(chart),
        caption: format!(
            "Slowdown against all-DRAM (100% minus the throughput as % of all-DRAM) of the best and runner-up \
             policy at each size and of none, against the share of the footprint in DRAM; the flat line is the \
             target, {}%. The table of runs has every policy.",
            adv.target_slowdown_pct
        ),
    }
}

/// The page of an answer; `source` names the file it was read from.
pub fn page(source: &str, adv: &Advice, figure: &Figure) -> Result<String> {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>tierkit advise: {t}</title>\
         <style>{STYLE}</style></head><body><h1>tierkit advise</h1><p>The answer for <code>{t}</code> ({b}), from \
         <code>{s}</code> (<code>tierkit advise --json</code>).</p><p class=\"answer\"><strong>{a}</strong></p>",
        t = esc(&adv.trace),
        b = esc(&adv.time_base),
        s = esc(source),
        a = esc(&answer_line(adv)),
    );
    out.push_str(
        "<table class=\"sizes\"><thead><tr><th>ratio</th><th>DRAM</th><th>DRAM bytes</th><th>best</th>\
         <th>% local</th><th>runner-up</th><th>vs 2nd</th><th>vs none</th></tr></thead><tbody>",
    );
    let points = |m: Option<f64>| m.map_or("–".to_string(), |m| format!("{m:+.1}"));
    for s in &adv.sizes {
        let recommended = adv.recommended.as_ref().is_some_and(|r| r.ratio == s.ratio);
        let _ = write!(
            out,
            "<tr class=\"size{}\"><td class=\"name\">{}</td><td>{}</td><td>{}</td><td class=\"name\">{}</td>\
             <td>{:.1}</td><td class=\"name\">{}</td><td>{}</td><td>{}</td></tr>",
            if recommended { " recommended" } else { "" },
            esc(&s.ratio),
            pct(s.dram_share),
            mib(s.dram_bytes),
            esc(&s.best),
            s.best_pct_of_all_local,
            esc(s.runner_up.as_deref().unwrap_or("–")),
            points(s.margin_over_runner_up),
            points(s.margin_over_none),
        );
    }
    out.push_str(
        "</tbody></table><p class=\"legend\">% local: the best policy's throughput as % of all-DRAM; vs 2nd and \
         vs none: the points it leads the runner-up and not migrating by.</p>",
    );
    let _ = write!(
        out,
        "<figure id=\"{}\">{}<figcaption>{}</figcaption></figure>",
        esc(&figure.name),
        figure.chart.svg()?,
        esc(&figure.caption)
    );
    let _ = write!(
        out,
        "<p class=\"confidence\">{}</p><p class=\"class\">{}</p>",
        esc(&confidence_line(adv)),
        esc(&class_line(adv.class.as_ref()))
    );
    let _ = write!(
        out,
        "<details><summary>All {} runs</summary><table><thead><tr><th>ratio</th><th>policy</th><th>% local</th>\
         <th>hit ratio</th><th>promoted/s</th><th>demoted/s</th></tr></thead><tbody>",
        adv.runs.len()
    );
    for r in &adv.runs {
        let _ = write!(
            out,
            "<tr class=\"run\"><td class=\"name\">{}</td><td class=\"name\">{}</td><td>{:.1}</td><td>{:.3}</td>\
             <td>{:.0}</td><td>{:.0}</td></tr>",
            esc(&r.ratio),
            esc(&r.policy),
            r.pct_of_all_local,
            r.fast_hit_ratio,
            r.promotions_per_s,
            r.demotions_per_s
        );
    }
    out.push_str("</tbody></table></details></body></html>\n");
    Ok(out)
}
