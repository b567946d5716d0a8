//! The CSVs of `tierkit sim` and `tierkit compare`, written (and read) through the `csv`
//! crate with the serde form of the results: `--csv`, a line per row, and `--timeline`,
//! a file per run with a line per interval. Columns are named as the JSON's fields and
//! hold the same representation (the ratio as `1:16`, numbers unrounded, an absent
//! value empty).

use std::io::Write;

use anyhow::Result;
use serde::{Deserialize, Serialize};
use tierkit_sim::compare::Row;
use tierkit_sim::result::IntervalRecord;

/// A line of `--csv`: a row's headline fields, in its JSON's names and representation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SummaryRecord {
    /// [`tierkit_sim::result::RunResult::workload`].
    pub workload: String,
    /// The fast:slow ratio, `1:16`.
    #[serde(with = "tierkit_sim::result::ratio")]
    pub ratio: (u64, u64),
    /// Policy or reference name.
    pub policy: String,
    /// Real misses per simulated second.
    pub throughput: f64,
    /// Throughput as a percentage of all-local.
    pub pct_of_all_local: f64,
    /// Throughput as a percentage of the oracle.
    pub pct_of_oracle: f64,
    /// Fraction of accesses served by the fast tier.
    pub fast_hit_ratio: f64,
    /// Pages promoted.
    pub promotions: u64,
    /// Pages demoted.
    pub demotions: u64,
    /// Bytes migrated.
    pub migrated_bytes: u64,
    /// Peak bytes of the policy's metadata.
    pub tracking_bytes: u64,
    /// Tiering CPU as a percentage of the application's.
    pub mechanism_cpu_pct: f64,
    /// M5's access-count ratio, when measured (empty otherwise).
    pub access_count_ratio: Option<f64>,
}

impl From<&Row> for SummaryRecord {
    fn from(r: &Row) -> SummaryRecord {
        let x = &r.result;
        SummaryRecord {
            workload: x.workload.clone(),
            ratio: x.ratio,
            policy: x.policy.clone(),
            throughput: x.throughput,
            pct_of_all_local: r.pct_of_all_local,
            pct_of_oracle: r.pct_of_oracle,
            fast_hit_ratio: x.fast_hit_ratio,
            promotions: x.promotions,
            demotions: x.demotions,
            migrated_bytes: x.migrated_bytes,
            tracking_bytes: x.tracking_bytes,
            mechanism_cpu_pct: x.mechanism_cpu_pct,
            access_count_ratio: x.access_count_ratio,
        }
    }
}

/// Writes `rows` as `--csv`: a header, then a line per row.
pub fn write_summary(out: impl Write, rows: &[Row]) -> Result<()> {
    let mut w = csv::Writer::from_writer(out);
    for r in rows {
        w.serialize(SummaryRecord::from(r))?;
    }
    w.flush()?;
    Ok(())
}

/// The name of a run's `--timeline` CSV: `WORKLOAD_FAST-SLOW_POLICY.csv`.
pub fn timeline_file(workload: &str, ratio: (u64, u64), policy: &str) -> String {
    format!("{workload}_{}-{}_{policy}.csv", ratio.0, ratio.1)
}

/// The columns of a timeline CSV of `tiers` tiers: [`IntervalRecord`]'s fields in order,
/// its `latency_ns` spread over `latency_ns_tier0`, `latency_ns_tier1`, ...
///
/// Written by hand because the CSV form of a record cannot name its columns itself: the
/// `csv` crate derives headers only from structs of scalars, and one column per tier
/// (a count known at run time) is a sequence. The records themselves go through serde
/// (the crate writes a sequence field as consecutive cells), and
/// `timeline_columns_follow_the_record` checks the two stay in step.
pub fn timeline_header(tiers: usize) -> Vec<String> {
    let mut h: Vec<String> = ["end_ns", "accesses", "throughput", "fast_hit_ratio"].map(String::from).to_vec();
    h.extend((0..tiers).map(|t| format!("latency_ns_tier{t}")));
    h.extend(["promotions", "demotions", "migrated_bytes", "access_count_ratio"].map(String::from));
    h
}

/// Writes a run's timeline as CSV: the header, then a line per interval.
pub fn write_timeline(out: impl Write, points: &[IntervalRecord]) -> Result<()> {
    let mut w = csv::WriterBuilder::new().has_headers(false).from_writer(out);
    w.write_record(timeline_header(points.first().map_or(0, |t| t.latency_ns.len())))?;
    for p in points {
        w.serialize(p)?;
    }
    w.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tierkit_sim::compare::{compare, Grid};
    use tierkit_sim::workload::WorkloadSpec;

    /// Two real rows (with timelines); the first given an access-count ratio (as a run
    /// with promotions to measure would have), the second none.
    fn rows() -> Vec<Row> {
        let grid =
            Grid::new(vec![WorkloadSpec::new("zipf", 2000, 40_000, 4)], vec![(1, 8)], vec!["lru".into(), "tpp".into()]);
        let mut rows = compare(&grid, 1, &|_, _, _| {}).unwrap();
        rows[0].result.access_count_ratio = Some(0.8125);
        rows[0].result.timeline[3].access_count_ratio = Some(1.0 / 3.0);
        rows
    }

    /// Reads a timeline CSV back into records (the whole of each).
    fn read_timeline(text: &str) -> Vec<IntervalRecord> {
        #[derive(Deserialize)]
        struct Scalars {
            end_ns: f64,
            accesses: u64,
            throughput: f64,
            fast_hit_ratio: f64,
            promotions: u64,
            demotions: u64,
            migrated_bytes: u64,
            access_count_ratio: Option<f64>,
        }
        let mut r = csv::Reader::from_reader(text.as_bytes());
        let headers = r.headers().unwrap().clone();
        let tiers: Vec<usize> =
            headers.iter().enumerate().filter(|(_, h)| h.starts_with("latency_ns_tier")).map(|(i, _)| i).collect();
        r.records()
            .map(|rec| {
                let rec = rec.unwrap();
                let s: Scalars = rec.deserialize(Some(&headers)).unwrap();
                IntervalRecord {
                    end_ns: s.end_ns,
                    accesses: s.accesses,
                    throughput: s.throughput,
                    fast_hit_ratio: s.fast_hit_ratio,
                    latency_ns: tiers.iter().map(|&i| rec[i].parse().unwrap()).collect(),
                    promotions: s.promotions,
                    demotions: s.demotions,
                    migrated_bytes: s.migrated_bytes,
                    access_count_ratio: s.access_count_ratio,
                }
            })
            .collect()
    }

    #[test]
    fn the_summary_csv_round_trips_through_the_csv_crate() {
        let rows = rows();
        let mut out = Vec::new();
        write_summary(&mut out, &rows).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with(
            "workload,ratio,policy,throughput,pct_of_all_local,pct_of_oracle,fast_hit_ratio,promotions,demotions,\
             migrated_bytes,tracking_bytes,mechanism_cpu_pct,access_count_ratio\nzipf,1:8,lru,"
        ));
        let back: Vec<SummaryRecord> =
            csv::Reader::from_reader(text.as_bytes()).deserialize().collect::<Result<_, _>>().unwrap();
        assert_eq!(back, rows.iter().map(SummaryRecord::from).collect::<Vec<_>>());
        assert_eq!((back[0].access_count_ratio, back[1].access_count_ratio), (Some(0.8125), None));
    }

    #[test]
    fn timeline_columns_follow_the_record() {
        for row in rows() {
            let t = &row.result.timeline;
            assert!(t.len() > 10);
            let mut out = Vec::new();
            write_timeline(&mut out, t).unwrap();
            let text = String::from_utf8(out).unwrap();
            assert!(text.starts_with(
                "end_ns,accesses,throughput,fast_hit_ratio,latency_ns_tier0,latency_ns_tier1,promotions,demotions,\
                 migrated_bytes,access_count_ratio\n"
            ));
            // Every line has the header's cells, and reading them back gives the records.
            assert_eq!(read_timeline(&text), *t);
        }
    }
}
