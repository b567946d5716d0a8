//! Reading what `tierkit compare` wrote: the `--json` document and the `--timeline`
//! CSVs, through their serde forms ([`tierkit_sim::compare::Results`], and the CSV
//! columns of [`crate::result_csv`]).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;
use tierkit_sim::compare::{Row, SCHEMA_VERSION};
use tierkit_sim::workload::WorkloadSpec;

/// One row of `tierkit compare --json` as the report uses it: one policy on one
/// workload at one ratio.
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
        tierkit_sim::result::ratio::text(self.ratio)
    }

    /// The file name `tierkit compare --timeline` gives this run's CSV.
    pub fn timeline_file(&self) -> String {
        crate::result_csv::timeline_file(&self.workload, self.ratio, &self.policy)
    }
}

impl From<&Row> for ResultRow {
    fn from(row: &Row) -> ResultRow {
        let r = &row.result;
        ResultRow {
            workload: r.workload.clone(),
            policy: r.policy.clone(),
            ratio: r.ratio,
            throughput: r.throughput,
            pct_of_all_local: row.pct_of_all_local,
            pct_of_oracle: Some(row.pct_of_oracle),
            fast_hit_ratio: r.fast_hit_ratio,
            promotions: r.promotions,
            demotions: r.demotions,
            migrated_bytes: r.migrated_bytes,
            tracking_bytes: Some(r.tracking_bytes),
            mechanism_cpu_pct: Some(r.mechanism_cpu_pct),
            stream: Some(WorkloadSpec {
                name: r.workload.clone(),
                pages: r.workload_pages,
                accesses: r.accesses,
                seed: r.seed,
                options: r.options.clone(),
            }),
        }
    }
}

/// A row of the unversioned array older versions of `tierkit compare --json` wrote
/// (schema version 1): the ratio as `[1, 16]`, and fields that came over time (and that
/// hand-written rows leave out) optional. The fields and their names are [`Row`]'s.
#[derive(Deserialize)]
struct UnversionedRow {
    workload: String,
    policy: String,
    #[serde(with = "tierkit_sim::result::ratio")]
    ratio: (u64, u64),
    throughput: f64,
    pct_of_all_local: f64,
    pct_of_oracle: Option<f64>,
    fast_hit_ratio: f64,
    promotions: u64,
    demotions: u64,
    migrated_bytes: u64,
    tracking_bytes: Option<u64>,
    mechanism_cpu_pct: Option<f64>,
    pages: Option<u64>,
    workload_pages: Option<u64>,
    accesses: Option<u64>,
    seed: Option<u64>,
    options: Option<BTreeMap<String, String>>,
}

impl UnversionedRow {
    /// The report's row: the stream spec from `seed`, `options`, `accesses` and
    /// `workload_pages` (the footprint asked for; `pages`, the one built, when absent),
    /// `None` when `seed` or `options` is missing.
    fn into_row(self) -> Result<ResultRow> {
        let stream = match (self.seed, self.options) {
            (Some(seed), Some(options)) => Some(WorkloadSpec {
                name: self.workload.clone(),
                pages: self.workload_pages.or(self.pages).context("seed and options without \"pages\"")?,
                accesses: self.accesses.context("seed and options without \"accesses\"")?,
                seed,
                options,
            }),
            _ => None,
        };
        Ok(ResultRow {
            workload: self.workload,
            policy: self.policy,
            ratio: self.ratio,
            throughput: self.throughput,
            pct_of_all_local: self.pct_of_all_local,
            pct_of_oracle: self.pct_of_oracle,
            fast_hit_ratio: self.fast_hit_ratio,
            promotions: self.promotions,
            demotions: self.demotions,
            migrated_bytes: self.migrated_bytes,
            tracking_bytes: self.tracking_bytes,
            mechanism_cpu_pct: self.mechanism_cpu_pct,
            stream,
        })
    }
}

/// What a results file holds.
#[derive(Debug)]
enum Document {
    /// The document of this version of the schema ([`SCHEMA_VERSION`]).
    Current(Vec<Row>),
    /// An older, unversioned array of rows.
    Unversioned(Vec<ResultRow>),
}

/// One interval of a run's timeline CSV: the columns the report draws, read by name.
#[derive(Clone, Debug, PartialEq, Deserialize)]
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
    Ok(match parse_document(text)? {
        Document::Current(rows) => rows.iter().map(ResultRow::from).collect(),
        Document::Unversioned(rows) => rows,
    })
}

/// `value` as a `T`, an error naming the field that does not fit (`options.alpha: ...`).
pub fn typed<T: DeserializeOwned>(value: Value) -> Result<T> {
    serde_path_to_error::deserialize(value).map_err(|e| match e.path().to_string().as_str() {
        "." => anyhow::anyhow!("{}", e.inner()),
        path => anyhow::anyhow!("field {path}: {}", e.inner()),
    })
}

fn parse_document(text: &str) -> Result<Document> {
    #[derive(Deserialize)]
    struct Version {
        schema_version: Option<Value>,
    }
    #[derive(Deserialize)]
    struct Envelope {
        rows: Vec<Value>,
    }
    let value: Value = serde_json::from_str(text).map_err(|e| anyhow::anyhow!("invalid JSON: {e}"))?;
    let shape = "expected the document `tierkit compare --json` writes, {\"schema_version\": N, \"rows\": [...]} \
                 (or the bare array of rows of a tierkit before schema version 2)";
    let rows = match value {
        Value::Array(rows) => {
            if rows.is_empty() {
                bail!("no rows (the array is empty)");
            }
            let rows = rows.into_iter().enumerate().map(|(i, r)| {
                typed::<UnversionedRow>(r).and_then(UnversionedRow::into_row).with_context(|| format!("row {}", i + 1))
            });
            return Ok(Document::Unversioned(rows.collect::<Result<_>>()?));
        }
        Value::Object(_) => {
            let version = match Version::deserialize(&value)?.schema_version {
                None => bail!("a JSON object without \"schema_version\": {shape}"),
                Some(v) => v,
            };
            if version.as_u64() != Some(SCHEMA_VERSION.into()) {
                bail!(
                    "schema_version {version} is not one this tierkit reads: it reads version {SCHEMA_VERSION} \
                     (and the unversioned arrays of older versions); was it written by a newer tierkit?"
                );
            }
            typed::<Envelope>(value)?.rows
        }
        _ => bail!("{shape}"),
    };
    if rows.is_empty() {
        bail!("no rows (\"rows\" is empty)");
    }
    let rows = rows.into_iter().enumerate().map(|(i, r)| typed::<Row>(r).with_context(|| format!("row {}", i + 1)));
    Ok(Document::Current(rows.collect::<Result<_>>()?))
}

/// Reads one timeline CSV of `tierkit compare --timeline`; errors name the file and line.
pub fn read_timeline(path: &Path) -> Result<Vec<Interval>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?;
    parse_timeline(&text)
        .map_err(|e| anyhow::anyhow!("{}: not a `tierkit compare --timeline` CSV: {e:#}", path.display()))
}

fn parse_timeline(text: &str) -> Result<Vec<Interval>> {
    let mut reader = csv::ReaderBuilder::new().trim(csv::Trim::All).from_reader(text.as_bytes());
    let headers = reader.headers().context("line 1")?.clone();
    if headers.is_empty() {
        bail!("line 1: empty file, expected a header");
    }
    for name in ["fast_hit_ratio", "migrated_bytes"] {
        if !headers.iter().any(|h| h == name) {
            bail!("line 1: no column {name:?}");
        }
    }
    let mut out = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| match e.position() {
            Some(p) => anyhow::anyhow!("line {}: {}", p.line(), csv_reason(&e)),
            None => anyhow::anyhow!("{e}"),
        })?;
        let line = record.position().map_or(0, |p| p.line());
        let interval: Interval = record.deserialize(Some(&headers)).map_err(|e| match e.kind() {
            csv::ErrorKind::Deserialize { err, .. } => {
                let column = err.field().and_then(|f| headers.get(f as usize)).unwrap_or("?");
                let cell = err.field().and_then(|f| record.get(f as usize)).unwrap_or("");
                anyhow::anyhow!("line {line}: {column} {cell:?}: {}", err.kind())
            }
            _ => anyhow::anyhow!("line {line}: {e}"),
        })?;
        if !(0.0..=1.0).contains(&interval.fast_hit_ratio) {
            bail!("line {line}: fast_hit_ratio {} is not in 0..1", interval.fast_hit_ratio);
        }
        out.push(interval);
    }
    Ok(out)
}

/// What is wrong with a line, without the position `csv` puts first.
fn csv_reason(e: &csv::Error) -> String {
    match e.kind() {
        csv::ErrorKind::UnequalLengths { expected_len, len, .. } => {
            format!("{len} cells where the header has {expected_len}")
        }
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tierkit_sim::compare::{compare, Grid};

    const ROW: &str = r#"{"workload":"zipf","policy":"tpp","ratio":[1,16],"throughput":2.5e8,
        "pct_of_all_local":71.5,"fast_hit_ratio":0.5,"promotions":3,"demotions":2,"migrated_bytes":20480}"#;

    /// Real rows of a small grid, with their timelines.
    fn real_rows() -> Vec<Row> {
        let grid = Grid {
            seed: 3,
            ..Grid::new(
                vec![WorkloadSpec::new("zipf", 2000, 30_000, 4).with("alpha", 0.8)],
                vec![(1, 16), (1, 4)],
                vec!["all-local".into(), "tpp".into()],
            )
        };
        let mut rows = compare(&grid, 1, &|_, _, _| {}).unwrap();
        rows[2].result.access_count_ratio = Some(0.8125);
        rows
    }

    #[test]
    fn the_json_of_a_real_run_reads_back_equal() {
        let rows = real_rows();
        let mut out = Vec::new();
        crate::compare_cmd::write_json(&mut out, &rows).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("\"schema_version\": 2") && text.contains("\"ratio\": \"1:16\""), "{text}");
        assert!(!text.contains("timeline"), "timelines are the --timeline CSVs");
        let Document::Current(back) = parse_document(&text).unwrap() else { panic!("read as unversioned") };
        let without_timelines: Vec<Row> = rows
            .iter()
            .map(|r| {
                let mut r = r.clone();
                r.result.timeline.clear();
                r
            })
            .collect();
        assert_eq!(back, without_timelines);
        // The report's rows: everything known, the stream rebuildable.
        let report = parse_results(&text).unwrap();
        assert_eq!(report[1].ratio_label(), "1:16");
        assert_eq!(report[1].stream, Some(WorkloadSpec::new("zipf", 2000, 30_000, 4).with("alpha", "0.8")));
        assert_eq!(report[1].tracking_bytes, Some(rows[1].result.tracking_bytes));
    }

    #[test]
    fn an_unknown_schema_version_is_refused_by_name() {
        let text = format!(r#"{{"schema_version": 3, "rows": [{}]}}"#, ROW.replace("[1,16]", "\"1:16\""));
        let err = format!("{:#}", parse_results(&text).unwrap_err());
        assert!(err.contains("schema_version 3 is not one this tierkit reads: it reads version 2"), "{err}");
        let err = format!("{:#}", parse_results(r#"{"schema_version": "2", "rows": []}"#).unwrap_err());
        assert!(err.contains(r#"schema_version "2" is not one"#), "{err}");
        let err = format!("{:#}", parse_results(r#"{"rows": []}"#).unwrap_err());
        assert!(err.contains("without \"schema_version\""), "{err}");
        let err = format!("{:#}", parse_results(r#"{"schema_version": 2, "rows": []}"#).unwrap_err());
        assert!(err.contains("no rows"), "{err}");
        // A versioned row is whole: a field missing is named with its row.
        let err = format!("{:#}", parse_results(&format!(r#"{{"schema_version": 2, "rows": [{ROW}]}}"#)).unwrap_err());
        assert!(err.contains("row 1: missing field `pct_of_oracle`"), "{err}");
    }

    #[test]
    fn unversioned_rows_parse_with_optional_fields_absent() {
        let rows = parse_results(&format!("[{ROW}]")).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].ratio, (1, 16), "the old [1, 16] form");
        assert_eq!(rows[0].pct_of_oracle, None);
        assert_eq!(rows[0].timeline_file(), "zipf_1-16_tpp.csv");
        assert_eq!(rows[0].stream, None, "no seed and options: the stream cannot be rebuilt");
        let typed = parse_results(&format!("[{}]", ROW.replace("[1,16]", "\"1:16\""))).unwrap();
        assert_eq!(typed, rows, "either form of the ratio");
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
        assert!(
            err.contains("row 2: field options.alpha: invalid type: floating point `0.8`, expected a string"),
            "{err}"
        );
    }

    #[test]
    fn bad_rows_name_the_row_and_field() {
        let err = format!("{:#}", parse_results(&format!("[{ROW}, {{\"workload\":\"x\"}}]")).unwrap_err());
        assert!(err.contains("row 2: missing field `policy`"), "{err}");
        let err = format!("{:#}", parse_results(&format!("[{}]", ROW.replace("[1,16]", "[1,0]"))).unwrap_err());
        assert!(err.contains("row 1: field ratio: ratio [fast, slow] must hold two whole numbers"), "{err}");
        let err = format!("{:#}", parse_results(&format!("[{}]", ROW.replace("[1,16]", "\"1/16\""))).unwrap_err());
        assert!(err.contains("row 1: field ratio: ratio \"1/16\": expected FAST:SLOW, like 1:16"), "{err}");
        let err = format!("{:#}", parse_results("[1,").unwrap_err());
        assert!(err.contains("line 1"), "{err}");
        assert!(format!("{:#}", parse_results("[]").unwrap_err()).contains("empty"));
        assert!(format!("{:#}", parse_results("7").unwrap_err()).contains("\"schema_version\": N"));
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
        assert!(err.contains("line 3: fast_hit_ratio 1.5 is not in 0..1"), "{err}");
        let err = format!("{:#}", parse_timeline("fast_hit_ratio,migrated_bytes\n0.5,1\nx,1\n").unwrap_err());
        assert!(err.contains("line 3: fast_hit_ratio \"x\": "), "{err}");
        let err = format!("{:#}", parse_timeline("fast_hit_ratio,migrated_bytes\n0.5,1\n0.5\n").unwrap_err());
        assert!(err.contains("line 3: 1 cells where the header has 2"), "{err}");
        assert!(format!("{:#}", parse_timeline("a,b\n").unwrap_err()).contains("fast_hit_ratio"));
        assert!(format!("{:#}", parse_timeline("").unwrap_err()).contains("empty file"));
    }

    #[test]
    fn a_real_timeline_reads_back_through_the_csv_the_cli_writes() {
        for row in real_rows() {
            let t = &row.result.timeline;
            let mut out = Vec::new();
            crate::result_csv::write_timeline(&mut out, t).unwrap();
            let back = parse_timeline(&String::from_utf8(out).unwrap()).unwrap();
            let want: Vec<Interval> = t
                .iter()
                .map(|p| Interval { fast_hit_ratio: p.fast_hit_ratio, migrated_bytes: p.migrated_bytes })
                .collect();
            assert_eq!(back, want);
        }
    }
}
