//! What a run reports, and its one representation everywhere it is written: the
//! `--json` document (see [`crate::compare::Results`]), the `--csv` and `--timeline`
//! CSVs, and Python's dicts all use these field names, with the ratio as `"1:16"`
//! ([`ratio`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One point of a run's timeline (a fixed fraction of the run's accesses). In CSV (the
/// `--timeline` files) a record is one line, `latency_ns` spread over the columns
/// `latency_ns_tier0`, `latency_ns_tier1`, ...
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalRecord {
    /// Simulated time at the end of the interval, ns.
    pub end_ns: f64,
    /// Real misses in the interval (generated accesses × scale).
    pub accesses: u64,
    /// Real misses per second in the interval.
    pub throughput: f64,
    /// Fraction of the interval's accesses served by the fast tier.
    pub fast_hit_ratio: f64,
    /// Mean loaded latency per tier over the interval (access-weighted), ns.
    pub latency_ns: Vec<f64>,
    /// Pages promoted in the interval.
    pub promotions: u64,
    /// Pages demoted in the interval.
    pub demotions: u64,
    /// Bytes migrated in the interval (4 KiB per page copied).
    pub migrated_bytes: u64,
    /// M5 §4.1's access-count ratio of the interval's promotions (see `acr.rs`).
    pub access_count_ratio: Option<f64>,
}

/// The outcome of one simulation: the fields of a row of `tierkit compare --json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// Workload name.
    pub workload: String,
    /// Policy or reference name.
    pub policy: String,
    /// Machine preset / config name.
    pub machine: String,
    /// Fast:slow ratio; written `"1:16"` (see [`ratio`]).
    #[serde(with = "ratio")]
    pub ratio: (u64, u64),
    /// Pages of the footprint.
    pub pages: u64,
    /// The footprint the workload was asked for (its spec's pages, `--pages`): graph,
    /// matrix and cache workloads build a footprint (`pages`) that only approaches it.
    pub workload_pages: u64,
    /// Capacity of the fast tier in pages (a cache's size in cache mode).
    pub fast_pages: u64,
    /// Generated accesses simulated.
    pub accesses: u64,
    /// Real misses per generated access (a trace with its own clock: its sample rate).
    pub scale: u64,
    /// How the run's time was derived: the trace's own clock, or the scale with the
    /// machine's per-miss compute.
    pub time_base: String,
    /// The policy's settling time ([`tierkit_core::Policy::horizon`]), ns; 0 for a
    /// reference. A run shorter than this says little about the policy.
    pub horizon_ns: u64,
    /// Seed of the workload's stream: with `workload`, `workload_pages`, `accesses` and
    /// `options` it rebuilds the same stream.
    pub seed: u64,
    /// The workload's options (`KEY=VALUE`), as an object of strings.
    pub options: BTreeMap<String, String>,
    /// Simulated wall time, ns.
    pub wall_ns: f64,
    /// Real misses per simulated second.
    pub throughput: f64,
    /// Fraction of accesses served by the fast tier.
    pub fast_hit_ratio: f64,
    /// Fraction of accesses that found their page outside the fast tier, counting an
    /// access that first touches a page as a miss (a cache's miss ratio).
    pub miss_ratio: f64,
    /// Pages promoted.
    pub promotions: u64,
    /// Pages demoted.
    pub demotions: u64,
    /// Bytes migrated: 4 KiB per page copied (a demotion that remaps a page to its
    /// shadow copies none; an aborted transactional promotion did copy).
    pub migrated_bytes: u64,
    /// M5 §4.1's access-count ratio, averaged over intervals with promotions: how hot
    /// the promoted pages were relative to the true hottest slow-tier pages.
    pub access_count_ratio: Option<f64>,
    /// Of the accesses of the run's most accessed pages (as many as the fast tier
    /// holds), the share whose pages are on the fast tier at the run's end; measured
    /// only when asked for ([`crate::engine::RunSpec::measure_hot`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot_fast_residency: Option<f64>,
    /// Peak heap bytes of the policy's own metadata.
    pub tracking_bytes: u64,
    /// Tiering CPU time (sources, scans, migration), ns.
    pub mechanism_cpu_ns: f64,
    /// Tiering CPU as a percentage of the application's CPU time (threads × wall).
    pub mechanism_cpu_pct: f64,
    /// Per-interval timeline. Not part of a row's JSON (nor of Python's summary dict):
    /// it is written apart, as the run's `--timeline` CSV.
    #[serde(skip)]
    pub timeline: Vec<IntervalRecord>,
}

/// A fast:slow ratio's one representation: the text users type for `--ratios`,
/// `"1:16"`. Reading also takes the `[1, 16]` of rows written before the schema was
/// versioned.
pub mod ratio {
    use std::fmt;

    use serde::de::{self, SeqAccess, Visitor};
    use serde::{Deserializer, Serializer};

    /// `(fast, slow)` as `"fast:slow"`.
    pub fn text(ratio: (u64, u64)) -> String {
        format!("{}:{}", ratio.0, ratio.1)
    }

    /// A fast:slow ratio such as `1:16`, as `(fast, slow)`; both parts at least 1. The
    /// error names the text and what was expected.
    pub fn parse(text: &str) -> Result<(u64, u64), String> {
        let (f, s) = text.split_once(':').ok_or_else(|| format!("ratio {text:?}: expected FAST:SLOW, like 1:16"))?;
        let part = |p: &str, which: &str| -> Result<u64, String> {
            let v: u64 =
                p.trim().parse().map_err(|_| format!("ratio {text:?}: {which} part {p:?} is not a whole number"))?;
            if v == 0 {
                return Err(format!("ratio {text:?}: the {which} part must be at least 1"));
            }
            Ok(v)
        };
        Ok((part(f, "fast")?, part(s, "slow")?))
    }

    /// Writes `"fast:slow"`.
    pub fn serialize<S: Serializer>(ratio: &(u64, u64), s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{}:{}", ratio.0, ratio.1))
    }

    /// Reads `"fast:slow"`, or the older `[fast, slow]`.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<(u64, u64), D::Error> {
        d.deserialize_any(RatioVisitor)
    }

    struct RatioVisitor;

    impl<'de> Visitor<'de> for RatioVisitor {
        type Value = (u64, u64);

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a fast:slow ratio such as \"1:16\" (or the older [1, 16])")
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            parse(v).map_err(E::custom)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let bad =
                || de::Error::custom("ratio [fast, slow] must hold two whole numbers of at least 1, like [1, 16]");
            let fast: u64 = seq.next_element().map_err(|_| bad())?.ok_or_else(bad)?;
            let slow: u64 = seq.next_element().map_err(|_| bad())?.ok_or_else(bad)?;
            if fast == 0 || slow == 0 || seq.next_element::<de::IgnoredAny>()?.is_some() {
                return Err(bad());
            }
            Ok((fast, slow))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct R(#[serde(with = "ratio")] (u64, u64));

    #[test]
    fn a_ratio_is_written_as_typed_and_read_in_both_forms() {
        assert_eq!(serde_json::to_string(&R((1, 16))).unwrap(), r#""1:16""#);
        assert_eq!(serde_json::from_str::<R>(r#""1:16""#).unwrap(), R((1, 16)));
        assert_eq!(serde_json::from_str::<R>("[1, 16]").unwrap(), R((1, 16)), "rows before the schema version");
        for (bad, why) in [
            (r#""1:0""#, "the slow part must be at least 1"),
            (r#""16""#, "expected FAST:SLOW"),
            ("[1]", "two whole numbers"),
            ("[1, 2, 3]", "two whole numbers"),
            ("[0, 4]", "two whole numbers"),
            ("[1.5, 4]", "two whole numbers"),
            ("16", "a fast:slow ratio such as \"1:16\""),
        ] {
            let e = serde_json::from_str::<R>(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
