//! Reading what `tierkit compare` wrote: the `--json` rows and the `--timeline` CSVs.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde_json::Value;
use tierkit_sim::workload::WorkloadSpec;

/// One row of `tierkit compare --json`: one policy on one workload at one ratio.
#[derive(Clone, Debug, PartialEq)]
pub struct ResultRow {
    /// Workload name.
    pub workload: String,
    /// Policy or reference name.
    pub policy: String,
    /// Fast:slow capacity ratio.
    pub ratio: (u64, u64),
    /// Real misses per simulated second.
    pub throughput: f64,
    /// Throughput as a percentage of all-local.
    pub pct_of_all_local: f64,
    /// Throughput as a percentage of the oracle, when the row has it.
    pub pct_of_oracle: Option<f64>,
    /// Fraction of accesses served by the fast tier.
    pub fast_hit_ratio: f64,
    /// Pages promoted.
    pub promotions: u64,
    /// Pages demoted.
    pub demotions: u64,
    /// Bytes migrated.
    pub migrated_bytes: u64,
    /// Peak bytes of the policy's metadata, when the row has it.
    pub tracking_bytes: Option<u64>,
    /// Tiering CPU as a percentage of the application's, when the row has it.
    pub mechanism_cpu_pct: Option<f64>,
    /// How the workload's stream was built, when the row says (rows of an older
    /// `tierkit compare` have no `seed` and `options`).
    pub stream: Option<WorkloadSpec>,
}

impl ResultRow {
    /// The ratio as `fast:slow`.
    pub fn ratio_label(&self) -> String {
        format!("{}:{}", self.ratio.0, self.ratio.1)
    }

    /// The file name `tierkit compare --timeline` gives this run's CSV.
    pub fn timeline_file(&self) -> String {
        format!("{}_{}-{}_{}.csv", self.workload, self.ratio.0, self.ratio.1, self.policy)
    }
}

/// One interval of a run's timeline CSV.
#[derive(Clone, Debug, PartialEq)]
pub struct Interval {
    /// Fraction of the interval's accesses served by the fast tier.
    pub fast_hit_ratio: f64,
    /// Bytes migrated in the interval.
    pub migrated_bytes: u64,
}

/// Reads the rows of `tierkit compare --json` from `path`; every error names the file.
pub fn read_results(path: &Path) -> Result<Vec<ResultRow>> {
    let bytes = std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
    let not_rows =
        |why: String| anyhow::anyhow!("{}: not the JSON rows of `tierkit compare --json`: {why}", path.display());
    let text = String::from_utf8(bytes)
        .map_err(|e| not_rows(format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to())))?;
    parse_results(&text)
        .map_err(|e| anyhow::anyhow!("{}: not the JSON rows of `tierkit compare --json`: {e:#}", path.display()))
}

fn parse_results(text: &str) -> Result<Vec<ResultRow>> {
    let value: Value = serde_json::from_str(text).map_err(|e| anyhow::anyhow!("invalid JSON: {e}"))?;
    let Value::Array(rows) = value else { bail!("expected a JSON array of rows at the top level") };
    if rows.is_empty() {
        bail!("no rows (the array is empty)");
    }
    rows.iter().enumerate().map(|(i, r)| parse_row(r).with_context(|| format!("row {}", i + 1))).collect()
}

fn parse_row(v: &Value) -> Result<ResultRow> {
    let Value::Object(o) = v else { bail!("expected an object") };
    let text = |k: &str| -> Result<String> {
        o.get(k).and_then(Value::as_str).map(String::from).with_context(|| format!("missing text field {k:?}"))
    };
    let float = |k: &str| -> Result<f64> {
        o.get(k).and_then(Value::as_f64).with_context(|| format!("missing number field {k:?}"))
    };
    let int = |k: &str| -> Result<u64> {
        o.get(k).and_then(Value::as_u64).with_context(|| format!("missing whole-number field {k:?}"))
    };
    let ratio = match o.get("ratio").and_then(Value::as_array).map(|a| a.as_slice()) {
        Some([f, s]) => match (f.as_u64(), s.as_u64()) {
            (Some(f), Some(s)) if f > 0 && s > 0 => (f, s),
            _ => bail!("field \"ratio\" must hold two positive whole numbers, like [1, 16]"),
        },
        _ => bail!("missing field \"ratio\" ([fast, slow])"),
    };
    Ok(ResultRow {
        workload: text("workload")?,
        policy: text("policy")?,
        ratio,
        throughput: float("throughput")?,
        pct_of_all_local: float("pct_of_all_local")?,
        pct_of_oracle: o.get("pct_of_oracle").and_then(Value::as_f64),
        fast_hit_ratio: float("fast_hit_ratio")?,
        promotions: int("promotions")?,
        demotions: int("demotions")?,
        migrated_bytes: int("migrated_bytes")?,
        tracking_bytes: o.get("tracking_bytes").and_then(Value::as_u64),
        mechanism_cpu_pct: o.get("mechanism_cpu_pct").and_then(Value::as_f64),
        stream: stream(o, &text("workload")?)?,
    })
}

/// The spec that rebuilds the row's workload stream: from `seed`, `options`, `accesses`
/// and `workload_pages` (the footprint asked for; `pages`, the one built, when absent).
/// `None` when `seed` or `options` is missing; malformed ones are an error.
fn stream(o: &serde_json::Map<String, Value>, workload: &str) -> Result<Option<WorkloadSpec>> {
    let (Some(seed), Some(options)) = (o.get("seed"), o.get("options")) else { return Ok(None) };
    let seed = seed.as_u64().context("field \"seed\" must be a whole number")?;
    let Value::Object(options) = options else { bail!("field \"options\" must be an object of strings") };
    let options = options
        .iter()
        .map(|(k, v)| match v {
            Value::String(v) => Ok((k.clone(), v.clone())),
            _ => bail!("field \"options\": option {k:?} must be a string, not {v}"),
        })
        .collect::<Result<BTreeMap<String, String>>>()?;
    let whole = |k: &str| o.get(k).and_then(Value::as_u64);
    let pages = whole("workload_pages").or(whole("pages")).context("seed and options without \"pages\"")?;
    let accesses = whole("accesses").context("seed and options without \"accesses\"")?;
    Ok(Some(WorkloadSpec { name: workload.to_string(), pages, accesses, seed, options }))
}

/// Reads one timeline CSV of `tierkit compare --timeline`; errors name the file and line.
pub fn read_timeline(path: &Path) -> Result<Vec<Interval>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?;
    parse_timeline(&text)
        .map_err(|e| anyhow::anyhow!("{}: not a `tierkit compare --timeline` CSV: {e:#}", path.display()))
}

fn parse_timeline(text: &str) -> Result<Vec<Interval>> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().context("line 1: empty file, expected a header")?.split(',').collect();
    let column = |name: &str| {
        header.iter().position(|h| h.trim() == name).with_context(|| format!("line 1: no column {name:?}"))
    };
    let (hit, migrated) = (column("fast_hit_ratio")?, column("migrated_bytes")?);
    let mut out = Vec::new();
    for (i, line) in lines.enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let cells: Vec<&str> = line.split(',').collect();
        let cell = |c: usize| cells.get(c).map(|s| s.trim()).unwrap_or("");
        let at = || format!("line {}", i + 2);
        out.push(Interval {
            fast_hit_ratio: cell(hit)
                .parse()
                .ok()
                .filter(|h: &f64| (0.0..=1.0).contains(h))
                .with_context(|| format!("{}: fast_hit_ratio {:?} is not a number in 0..1", at(), cell(hit)))?,
            migrated_bytes: cell(migrated)
                .parse()
                .with_context(|| format!("{}: migrated_bytes {:?} is not a whole number", at(), cell(migrated)))?,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROW: &str = r#"{"workload":"zipf","policy":"tpp","ratio":[1,16],"throughput":2.5e8,
        "pct_of_all_local":71.5,"fast_hit_ratio":0.5,"promotions":3,"demotions":2,"migrated_bytes":20480}"#;

    #[test]
    fn rows_parse_with_optional_fields_absent() {
        let rows = parse_results(&format!("[{ROW}]")).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].ratio, (1, 16));
        assert_eq!(rows[0].pct_of_oracle, None);
        assert_eq!(rows[0].timeline_file(), "zipf_1-16_tpp.csv");
        assert_eq!(rows[0].stream, None, "no seed and options: the stream cannot be rebuilt");
    }

    #[test]
    fn seed_and_options_give_the_stream_spec_with_the_pages_asked_for() {
        let row = ROW
            .replace('}', r#","pages":1190,"workload_pages":2000,"accesses":500,"seed":3,"options":{"alpha":"0.8"}}"#);
        let spec = parse_results(&format!("[{row}]")).unwrap()[0].stream.clone().unwrap();
        assert_eq!(spec, WorkloadSpec::new("zipf", 2000, 500, 3).with("alpha", "0.8"));
        // Without workload_pages (hand-written rows) the built footprint stands in.
        let row = ROW.replace('}', r#","pages":1190,"accesses":500,"seed":3,"options":{}}"#);
        assert_eq!(parse_results(&format!("[{row}]")).unwrap()[0].stream.as_ref().unwrap().pages, 1190);
        let bad = ROW.replace('}', r#","pages":1,"accesses":5,"seed":3,"options":{"alpha":0.8}}"#);
        let err = format!("{:#}", parse_results(&format!("[{ROW},{bad}]")).unwrap_err());
        assert!(err.contains("row 2") && err.contains("\"alpha\" must be a string"), "{err}");
    }

    #[test]
    fn bad_rows_name_the_row_and_field() {
        let err = format!("{:#}", parse_results(&format!("[{ROW}, {{\"workload\":\"x\"}}]")).unwrap_err());
        assert!(err.contains("row 2") && err.contains("ratio"), "{err}");
        let err = format!("{:#}", parse_results("[1,").unwrap_err());
        assert!(err.contains("line 1"), "{err}");
        assert!(format!("{:#}", parse_results("[]").unwrap_err()).contains("empty"));
    }

    #[test]
    fn a_binary_file_is_named_as_not_the_rows_expected() {
        let path = std::env::temp_dir().join(format!("tierkit-report-binary-{}.json", std::process::id()));
        std::fs::write(&path, b"[\xff\xfe]").unwrap();
        let err = format!("{:#}", read_results(&path).unwrap_err());
        std::fs::remove_file(&path).unwrap();
        assert!(err.contains("not the JSON rows of `tierkit compare --json`: not UTF-8 text (byte 1)"), "{err}");
    }

    #[test]
    fn timelines_read_by_header_and_name_bad_lines() {
        let ok = "end_ns,fast_hit_ratio,migrated_bytes\n1,0.25,4096\n2,1.0,0\n";
        let t = parse_timeline(ok).unwrap();
        assert_eq!(
            t,
            vec![
                Interval { fast_hit_ratio: 0.25, migrated_bytes: 4096 },
                Interval { fast_hit_ratio: 1.0, migrated_bytes: 0 }
            ]
        );
        let err = format!("{:#}", parse_timeline("fast_hit_ratio,migrated_bytes\n0.5,1\n1.5,1\n").unwrap_err());
        assert!(err.contains("line 3"), "{err}");
        assert!(format!("{:#}", parse_timeline("a,b\n").unwrap_err()).contains("fast_hit_ratio"));
    }
}
