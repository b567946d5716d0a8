//! The report page: tables as HTML, figures inline, CSS inline, no scripts and no
//! external resources.

use std::fmt::Write;

use anyhow::Result;

use super::input::ResultRow;
use super::Figure;

/// `s` with HTML's special characters escaped (for text and attribute values).
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The page's CSS.
pub const STYLE: &str = "body{font-family:sans-serif;margin:2em;color:#222;max-width:1100px}\
table{border-collapse:collapse;margin:1em 0;font-size:13px}\
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}\
th{background:#f0f0f0}td.name{text-align:left}\
figure{margin:1em 0}figcaption{font-size:13px;color:#555;max-width:760px}\
p.legend{font-size:13px;color:#555;margin-top:-0.5em}summary{cursor:pointer;color:#225}\
p.note{background:#fff8e0;border-left:4px solid #e0b000;padding:6px 10px;max-width:760px}";

/// One section of the page: a workload's table and its figures.
pub struct Section<'a> {
    /// Workload name.
    pub workload: &'a str,
    /// The workload's rows in input order.
    pub rows: Vec<&'a ResultRow>,
    /// Figures, in page order.
    pub figures: Vec<Figure>,
    /// Notes shown under the figures (e.g. runs without a timeline).
    pub notes: Vec<String>,
}

/// The whole page. `source` names the results file; `notes` go at the top.
pub fn page(source: &str, total_rows: usize, notes: &[String], sections: &[Section]) -> Result<String> {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>tierkit report: {s}</title><style>{STYLE}</style></head><body>\
         <h1>tierkit report</h1><p>{total_rows} results from <code>{s}</code> (<code>tierkit compare --json</code>). \
         Throughput is real misses per simulated second; <em>% local</em> is throughput as a percentage of all-local \
         (everything in the fast tier) on the same workload.</p>",
        s = esc(source),
    );
    for n in notes {
        let _ = write!(out, "<p class=\"note\">{}</p>", esc(n));
    }
    for s in sections {
        let _ = write!(out, "<section><h2>{}</h2>", esc(s.workload));
        summary(&mut out, &s.rows);
        let _ = write!(out, "<details><summary>All {} results of {}</summary>", s.rows.len(), esc(s.workload));
        table(&mut out, &s.rows);
        out.push_str("</details>");
        for f in &s.figures {
            let _ = write!(
                out,
                "<figure id=\"{}\">{}<figcaption>{}</figcaption></figure>",
                esc(&f.name),
                f.chart.svg()?,
                esc(&f.caption)
            );
        }
        for n in &s.notes {
            let _ = write!(out, "<p class=\"note\">{}</p>", esc(n));
        }
        out.push_str("</section>");
    }
    out.push_str("</body></html>\n");
    Ok(out)
}

/// Policies down, ratios (most constrained first) across: `% local (hit ratio)`, laid
/// out like FreqTier's Tables II–V.
fn summary(out: &mut String, rows: &[&ResultRow]) {
    let ratios = super::ratios(rows);
    let policies = super::distinct(rows.iter().map(|r| r.policy.as_str()));
    out.push_str("<table class=\"summary\"><thead><tr><th>policy</th>");
    for (f, s) in &ratios {
        let _ = write!(out, "<th>{f}:{s}</th>");
    }
    out.push_str("</tr></thead><tbody>");
    for p in policies {
        let _ = write!(out, "<tr class=\"policy\"><td class=\"name\">{}</td>", esc(p));
        for q in &ratios {
            match rows.iter().find(|r| r.policy == p && r.ratio == *q) {
                Some(r) => {
                    let _ = write!(out, "<td>{:.1}% ({:.2})</td>", r.pct_of_all_local, r.fast_hit_ratio);
                }
                None => out.push_str("<td></td>"),
            }
        }
        out.push_str("</tr>");
    }
    out.push_str(
        "</tbody></table><p class=\"legend\">Throughput as % of all-local, fast-tier hit ratio in parentheses.</p>",
    );
}

fn table(out: &mut String, rows: &[&ResultRow]) {
    out.push_str(
        "<table><thead><tr><th>ratio</th><th>policy</th><th>throughput</th><th>% local</th><th>% oracle</th>\
         <th>hit ratio</th><th>promoted</th><th>demoted</th><th>migrated MiB</th><th>tracking</th><th>cpu %</th></tr></thead><tbody>",
    );
    let opt = |v: Option<String>| v.unwrap_or_else(|| "–".into());
    for r in rows {
        let _ = write!(
            out,
            "<tr class=\"result\"><td class=\"name\">{}</td><td class=\"name\">{}</td><td>{:.3e}</td><td>{:.1}</td><td>{}</td>\
             <td>{:.3}</td><td>{}</td><td>{}</td><td>{:.2}</td><td>{}</td><td>{}</td></tr>",
            esc(&r.ratio_label()),
            esc(&r.policy),
            r.throughput,
            r.pct_of_all_local,
            opt(r.pct_of_oracle.map(|p| format!("{p:.1}"))),
            r.fast_hit_ratio,
            r.promotions,
            r.demotions,
            r.migrated_bytes as f64 / (1u64 << 20) as f64,
            opt(r.tracking_bytes.map(bytes)),
            opt(r.mechanism_cpu_pct.map(|c| format!("{c:.2}"))),
        );
    }
    out.push_str("</tbody></table>");
}

fn bytes(b: u64) -> String {
    match b {
        b if b < 1 << 10 => format!("{b} B"),
        b if b < 1 << 20 => format!("{:.1} KiB", b as f64 / 1024.0),
        b if b < 1 << 30 => format!("{:.1} MiB", b as f64 / (1 << 20) as f64),
        b => format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_markup_and_quotes() {
        assert_eq!(esc(r#"<a href="x">&'"#), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
    }

    #[test]
    fn byte_sizes_pick_a_binary_unit() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(3 << 19), "1.5 MiB");
    }
}
