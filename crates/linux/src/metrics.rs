//! Prometheus metrics: a small registry of counters and gauges rendered in the text
//! exposition format 0.0.4, a thread-safe handle the daemon updates and the
//! [`MetricsServer`](crate::metrics_server::MetricsServer) reads, and [`TierkitMetrics`],
//! the families tierkit itself exports.
//!
//! ```text
//! # HELP tierkit_samples_total Access samples received, by source.
//! # TYPE tierkit_samples_total counter
//! tierkit_samples_total{source="damon"} 1234
//! ```

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::selfstat::SelfUsage;

/// The `Content-Type` of a rendered registry.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What a metric family measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A total that only grows (reset only when the process restarts).
    Counter,
    /// A value that goes up and down.
    Gauge,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        }
    }
}

/// A misuse of the registry: always a programming error in the caller, reported
/// instead of panicking.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MetricsError {
    /// The name is not a valid Prometheus metric name.
    #[error("invalid metric name {0:?}: expected [a-zA-Z_:][a-zA-Z0-9_:]*")]
    InvalidName(String),
    /// A label name is invalid, reserved or repeated.
    #[error("invalid label name {label:?} on metric {metric}: expected [a-zA-Z_][a-zA-Z0-9_]*, not starting with __, each name once")]
    InvalidLabel {
        /// The metric.
        metric: String,
        /// The offending label name.
        label: String,
    },
    /// The family was already declared with another kind.
    #[error("metric {name} already declared as a {existing}, cannot redeclare it as a {requested}")]
    KindConflict {
        /// The metric.
        name: String,
        /// Kind it was declared with.
        existing: &'static str,
        /// Kind asked for now.
        requested: &'static str,
    },
    /// The family was never declared.
    #[error("metric {0} is not declared; declare it with Registry::declare first")]
    Undeclared(String),
    /// A counter would go down.
    #[error("counter {name} cannot decrease (from {from} to {to}); use a gauge for values that go down")]
    CounterDecrease {
        /// The metric.
        name: String,
        /// Current value.
        from: f64,
        /// Requested value.
        to: f64,
    },
}

/// Labels of one series, sorted by name: the key of a series within its family.
type LabelSet = Vec<(String, String)>;

#[derive(Clone, Debug)]
struct Family {
    name: String,
    help: String,
    kind: Kind,
    series: BTreeMap<LabelSet, f64>,
}

/// Named metric families, each with help text, a kind and any number of labelled
/// series, kept in declaration order. Not synchronised: share it through
/// [`SharedMetrics`].
#[derive(Clone, Debug, Default)]
pub struct Registry {
    families: Vec<Family>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Declares a family. Declaring an existing family again with the same kind updates
    /// its help text; with another kind it is an error.
    pub fn declare(&mut self, name: &str, kind: Kind, help: &str) -> Result<(), MetricsError> {
        if !valid_metric_name(name) {
            return Err(MetricsError::InvalidName(name.to_string()));
        }
        match self.families.iter_mut().find(|f| f.name == name) {
            Some(f) if f.kind != kind => Err(MetricsError::KindConflict {
                name: name.to_string(),
                existing: f.kind.as_str(),
                requested: kind.as_str(),
            }),
            Some(f) => {
                f.help = help.to_string();
                Ok(())
            }
            None => {
                self.families.push(Family {
                    name: name.to_string(),
                    help: help.to_string(),
                    kind,
                    series: BTreeMap::new(),
                });
                Ok(())
            }
        }
    }

    /// Adds `by` to the series `name{labels}` (created at 0). Counters refuse a negative
    /// `by`.
    pub fn add(&mut self, name: &str, labels: &[(&str, &str)], by: f64) -> Result<(), MetricsError> {
        let (family, key) = self.series_key(name, labels)?;
        let value = family.series.entry(key).or_insert(0.0);
        if family.kind == Kind::Counter && by < 0.0 {
            return Err(MetricsError::CounterDecrease { name: name.to_string(), from: *value, to: *value + by });
        }
        *value += by;
        Ok(())
    }

    /// Sets the series `name{labels}` to `value`. A counter may only be set to a value
    /// at least its current one (for totals read elsewhere, such as CPU seconds).
    pub fn set(&mut self, name: &str, labels: &[(&str, &str)], value: f64) -> Result<(), MetricsError> {
        let (family, key) = self.series_key(name, labels)?;
        let current = family.series.entry(key).or_insert(0.0);
        if family.kind == Kind::Counter && value < *current {
            return Err(MetricsError::CounterDecrease { name: name.to_string(), from: *current, to: value });
        }
        *current = value;
        Ok(())
    }

    /// Removes the series `name{labels}` (a gauge that is no longer known, such as a hit
    /// ratio without samples). Returns whether it existed.
    pub fn remove(&mut self, name: &str, labels: &[(&str, &str)]) -> Result<bool, MetricsError> {
        let (family, key) = self.series_key(name, labels)?;
        Ok(family.series.remove(&key).is_some())
    }

    /// The current value of `name{labels}`, if that series exists.
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let family = self.families.iter().find(|f| f.name == name)?;
        let mut key: LabelSet = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        key.sort();
        family.series.get(&key).copied()
    }

    /// Renders every family in the text exposition format 0.0.4: `# HELP` and `# TYPE`
    /// lines, then one line per series with escaped label values.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for f in &self.families {
            let _ = writeln!(out, "# HELP {} {}", f.name, escape_help(&f.help));
            let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind.as_str());
            for (labels, value) in &f.series {
                out.push_str(&f.name);
                if !labels.is_empty() {
                    out.push('{');
                    for (i, (k, v)) in labels.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        let _ = write!(out, "{k}=\"{}\"", escape_label_value(v));
                    }
                    out.push('}');
                }
                let _ = writeln!(out, " {}", format_value(*value));
            }
        }
        out
    }

    /// The family `name` and the canonical (validated, sorted) key of `labels`.
    fn series_key(&mut self, name: &str, labels: &[(&str, &str)]) -> Result<(&mut Family, LabelSet), MetricsError> {
        let family = self
            .families
            .iter_mut()
            .find(|f| f.name == name)
            .ok_or_else(|| MetricsError::Undeclared(name.to_string()))?;
        let mut key: LabelSet = Vec::with_capacity(labels.len());
        for (k, v) in labels {
            if !valid_label_name(k) || key.iter().any(|(seen, _)| seen == k) {
                return Err(MetricsError::InvalidLabel { metric: name.to_string(), label: k.to_string() });
            }
            key.push((k.to_string(), v.to_string()));
        }
        key.sort();
        Ok((family, key))
    }
}

fn valid_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn valid_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    !name.starts_with("__")
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Label values escape backslash, double quote and line feed.
fn escape_label_value(v: &str) -> Cow<'_, str> {
    if !v.contains(['\\', '"', '\n']) {
        return Cow::Borrowed(v);
    }
    Cow::Owned(v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n"))
}

/// Help text escapes backslash and line feed.
fn escape_help(v: &str) -> Cow<'_, str> {
    if !v.contains(['\\', '\n']) {
        return Cow::Borrowed(v);
    }
    Cow::Owned(v.replace('\\', "\\\\").replace('\n', "\\n"))
}

/// Sample values as Go's ParseFloat reads them: shortest round-trip decimal, `NaN`,
/// `+Inf`, `-Inf`.
fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_string()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.to_string()
    } else {
        v.to_string()
    }
}

/// A [`Registry`] behind `Arc<Mutex<..>>`: clones share one registry, so the daemon
/// updates it while the metrics server renders it.
#[derive(Clone, Debug, Default)]
pub struct SharedMetrics {
    inner: Arc<Mutex<Registry>>,
}

impl SharedMetrics {
    /// A handle to a new, empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `f` with the registry locked (several updates appear to readers at once).
    pub fn with<R>(&self, f: impl FnOnce(&mut Registry) -> R) -> R {
        f(&mut self.lock())
    }

    /// Renders the registry (see [`Registry::render`]).
    pub fn render(&self) -> String {
        self.lock().render()
    }

    /// A poisoned lock only means another thread panicked between two updates; every
    /// update leaves the registry valid, so keep serving it.
    fn lock(&self) -> MutexGuard<'_, Registry> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Direction of a page migration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// To a faster tier.
    Promote,
    /// To a slower tier.
    Demote,
}

const SAMPLES: &str = "tierkit_samples_total";
const LOST: &str = "tierkit_lost_samples_total";
const PROMOTED_PAGES: &str = "tierkit_promoted_pages_total";
const DEMOTED_PAGES: &str = "tierkit_demoted_pages_total";
const PROMOTED_BYTES: &str = "tierkit_promoted_bytes_total";
const DEMOTED_BYTES: &str = "tierkit_demoted_bytes_total";
const MOVE_ERRORS: &str = "tierkit_move_errors_total";
const HELD_BACK: &str = "tierkit_moves_held_back_pages_total";
const RESIDENCY: &str = "tierkit_fast_tier_residency_ratio";
const HIT_RATIO: &str = "tierkit_hit_ratio";
const CPU: &str = "tierkit_cpu_seconds_total";
const RSS: &str = "tierkit_rss_bytes";

const FAMILIES: [(&str, Kind, &str); 12] = [
    (SAMPLES, Kind::Counter, "Access samples received, by source."),
    (LOST, Kind::Counter, "Access samples the source reported lost (ring-buffer overflow, throttling)."),
    (PROMOTED_PAGES, Kind::Counter, "Base pages moved to a faster tier."),
    (DEMOTED_PAGES, Kind::Counter, "Base pages moved to a slower tier."),
    (PROMOTED_BYTES, Kind::Counter, "Bytes moved to a faster tier."),
    (DEMOTED_BYTES, Kind::Counter, "Bytes moved to a slower tier."),
    (MOVE_ERRORS, Kind::Counter, "Pages move_pages(2) failed to move, by errno."),
    (
        HELD_BACK,
        Kind::Counter,
        "Pages tierkit did not ask the kernel to move, by reason: no_room (no node of the destination tier had \
         room above its watermarks), cooling_down (refused earlier for a lasting reason, within its 30 s cool-down).",
    ),
    (RESIDENCY, Kind::Gauge, "Fraction of the target's resident pages in the fast tier."),
    (HIT_RATIO, Kind::Gauge, "Fraction of sampled accesses the fast tier served (absent when unknown)."),
    (CPU, Kind::Counter, "CPU time tierkit itself used, user plus system, in seconds."),
    (RSS, Kind::Gauge, "tierkit's own resident set size in bytes."),
];

/// The metrics tierkit exports, with typed update methods over a [`SharedMetrics`].
/// Clones share the same registry.
#[derive(Clone, Debug)]
pub struct TierkitMetrics {
    shared: SharedMetrics,
}

impl Default for TierkitMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl TierkitMetrics {
    /// A registry with every tierkit family declared, counters at zero.
    pub fn new() -> Self {
        let shared = SharedMetrics::new();
        shared.with(|r| {
            for (name, kind, help) in FAMILIES {
                r.declare(name, kind, help).expect("the built-in metric names are valid");
            }
            for name in [LOST, PROMOTED_PAGES, DEMOTED_PAGES, PROMOTED_BYTES, DEMOTED_BYTES, CPU] {
                r.add(name, &[], 0.0).expect("declared above");
            }
        });
        Self { shared }
    }

    /// The shared registry, for the metrics server.
    pub fn shared(&self) -> SharedMetrics {
        self.shared.clone()
    }

    /// Counts `n` samples from `source` (`"perf"`, `"damon"`, `"kernel"`, ...).
    pub fn add_samples(&self, source: &str, n: u64) {
        self.add(SAMPLES, &[("source", source)], n);
    }

    /// Counts `n` samples the source lost.
    pub fn add_lost_samples(&self, n: u64) {
        self.add(LOST, &[], n);
    }

    /// Counts `pages` base pages (`bytes` bytes) moved in `direction`.
    pub fn add_moved(&self, direction: Direction, pages: u64, bytes: u64) {
        let (p, b) = match direction {
            Direction::Promote => (PROMOTED_PAGES, PROMOTED_BYTES),
            Direction::Demote => (DEMOTED_PAGES, DEMOTED_BYTES),
        };
        self.shared.with(|r| {
            let _ = r.add(p, &[], pages as f64);
            let _ = r.add(b, &[], bytes as f64);
        });
    }

    /// Counts `n` pages that failed to move with `errno` (labelled by [`errno_name`]).
    pub fn add_move_errors(&self, errno: i32, n: u64) {
        self.add(MOVE_ERRORS, &[("errno", &errno_name(errno))], n);
    }

    /// Counts pages held back without a `move_pages(2)` call: `no_room` for lack of room
    /// on the destination tier, `cooling_down` after a lasting refusal.
    pub fn add_held_back(&self, no_room: u64, cooling_down: u64) {
        self.add(HELD_BACK, &[("reason", "no_room")], no_room);
        self.add(HELD_BACK, &[("reason", "cooling_down")], cooling_down);
    }

    /// Sets the fast-tier residency of the target (0..=1), or removes it when unknown.
    pub fn set_fast_tier_residency(&self, ratio: Option<f64>) {
        self.set_optional(RESIDENCY, ratio);
    }

    /// Sets the fast-tier hit ratio (0..=1), or removes it when unknown.
    pub fn set_hit_ratio(&self, ratio: Option<f64>) {
        self.set_optional(HIT_RATIO, ratio);
    }

    /// Publishes tierkit's own CPU time and RSS. A CPU reading below the published one
    /// (impossible for one process) is ignored.
    pub fn set_self_usage(&self, usage: &SelfUsage) {
        self.shared.with(|r| {
            let _ = r.set(CPU, &[], usage.cpu.as_secs_f64());
            let _ = r.set(RSS, &[], usage.rss_bytes as f64);
        });
    }

    /// Renders the registry (see [`Registry::render`]).
    pub fn render(&self) -> String {
        self.shared.render()
    }

    /// `add` on a declared family with valid labels and a non-negative amount cannot
    /// fail.
    fn add(&self, name: &str, labels: &[(&str, &str)], n: u64) {
        self.shared.with(|r| {
            let _ = r.add(name, labels, n as f64);
        });
    }

    fn set_optional(&self, name: &str, value: Option<f64>) {
        self.shared.with(|r| {
            let _ = match value {
                Some(v) => r.set(name, &[], v).map(drop),
                None => r.remove(name, &[]).map(drop),
            };
        });
    }
}

/// The symbolic name of `errno` (`"ENOMEM"`), or its number (`"135"`) for one outside
/// the table.
pub fn errno_name(errno: i32) -> Cow<'static, str> {
    crate::sys::errno_symbol(errno).map_or_else(|| Cow::Owned(errno.to_string()), Cow::Borrowed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_validated() {
        assert!(valid_metric_name("tierkit_x:y_total"));
        assert!(!valid_metric_name("1abc"));
        assert!(!valid_metric_name(""));
        assert!(!valid_metric_name("a-b"));
        assert!(valid_label_name("errno"));
        assert!(!valid_label_name("__reserved"));
        assert!(!valid_label_name("a:b"));
    }

    #[test]
    fn special_values_use_prometheus_spelling() {
        assert_eq!(format_value(f64::NAN), "NaN");
        assert_eq!(format_value(f64::INFINITY), "+Inf");
        assert_eq!(format_value(f64::NEG_INFINITY), "-Inf");
        assert_eq!(format_value(42.0), "42");
        assert_eq!(format_value(0.25), "0.25");
    }
}
