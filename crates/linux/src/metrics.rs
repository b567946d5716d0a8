//! Prometheus metrics through `prometheus-client` (the official Rust client): a shared
//! registry rendered in the text exposition format 0.0.4, which the daemon updates and
//! the [`MetricsServer`](crate::metrics_server::MetricsServer) reads, and
//! [`TierkitMetrics`], the families tierkit itself exports.
//!
//! ```text
//! # HELP tierkit_samples_total Access samples received, by source.
//! # TYPE tierkit_samples_total counter
//! tierkit_samples_total{source="damon"} 1234
//! ```
//!
//! Each update is atomic on its own; a scrape may fall between two of them (between a
//! move's pages and its bytes, say).

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once, PoisonError};
use std::time::Duration;

use prometheus_client::encoding::{prometheus_text, EncodeLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::selfstat::SelfUsage;

/// The `Content-Type` of a rendered registry.
pub const CONTENT_TYPE: &str = prometheus_text::CONTENT_TYPE;

/// A registry behind `Arc<Mutex<..>>`: clones share one registry, so the daemon adds
/// families to it while the metrics server renders it. The series themselves are
/// atomics that the metric handles update without the lock.
#[derive(Clone, Debug, Default)]
pub struct SharedMetrics {
    inner: Arc<Mutex<Registry>>,
}

impl SharedMetrics {
    /// A handle to a new, empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Renders every family in the text exposition format 0.0.4: `# HELP` and `# TYPE`
    /// lines, then one line per series with escaped label values.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_text::encode(&mut out, &self.lock());
        out
    }

    fn register(&self, name: &str, help: &str, metric: impl prometheus_client::registry::Metric) {
        self.lock().register(name, help, metric);
    }

    /// A poisoned lock only means another thread panicked while registering or
    /// rendering; neither leaves the registry half-changed, so keep serving it.
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

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceLabel {
    source: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrnoLabel {
    errno: Cow<'static, str>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: &'static str,
}

/// The key of a family's only series, for gauges whose series is absent while unknown.
type Unlabelled = [(&'static str, &'static str); 0];

/// A counter of seconds (or any non-negative total read elsewhere).
type SecondsCounter = Counter<f64, AtomicU64>;
/// A gauge that may be absent.
type OptionalGauge = Family<Unlabelled, Gauge<f64, AtomicU64>>;

/// The metrics tierkit exports, with typed update methods. Clones share the same
/// registry and series.
///
/// Counter names are registered without `_total`, and help texts without their final
/// full stop: prometheus-client adds both when it renders.
#[derive(Clone, Debug)]
pub struct TierkitMetrics {
    shared: SharedMetrics,
    samples: Family<SourceLabel, Counter>,
    lost: Counter,
    promoted_pages: Counter,
    demoted_pages: Counter,
    promoted_bytes: Counter,
    demoted_bytes: Counter,
    move_errors: Family<ErrnoLabel, Counter>,
    held_back: Family<ReasonLabel, Counter>,
    residency: OptionalGauge,
    hit_ratio: OptionalGauge,
    cpu: SecondsCounter,
    rss: Gauge,
    kdamond_cpu: SecondsCounter,
    kdamond_registered: Arc<Once>,
    poll_stretch: Gauge,
    poll_stretch_registered: Arc<Once>,
}

impl Default for TierkitMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl TierkitMetrics {
    /// A registry with every tierkit family registered, counters at zero.
    pub fn new() -> Self {
        let m = TierkitMetrics {
            shared: SharedMetrics::new(),
            samples: Family::default(),
            lost: Counter::default(),
            promoted_pages: Counter::default(),
            demoted_pages: Counter::default(),
            promoted_bytes: Counter::default(),
            demoted_bytes: Counter::default(),
            move_errors: Family::default(),
            held_back: Family::default(),
            residency: Family::default(),
            hit_ratio: Family::default(),
            cpu: SecondsCounter::default(),
            rss: Gauge::default(),
            kdamond_cpu: SecondsCounter::default(),
            kdamond_registered: Arc::new(Once::new()),
            poll_stretch: Gauge::default(),
            poll_stretch_registered: Arc::new(Once::new()),
        };
        let r = &m.shared;
        r.register("tierkit_samples", "Access samples received, by source", m.samples.clone());
        let lost = "Access samples the source reported lost (ring-buffer overflow, throttling)";
        r.register("tierkit_lost_samples", lost, m.lost.clone());
        r.register("tierkit_promoted_pages", "Base pages moved to a faster tier", m.promoted_pages.clone());
        r.register("tierkit_demoted_pages", "Base pages moved to a slower tier", m.demoted_pages.clone());
        r.register("tierkit_promoted_bytes", "Bytes moved to a faster tier", m.promoted_bytes.clone());
        r.register("tierkit_demoted_bytes", "Bytes moved to a slower tier", m.demoted_bytes.clone());
        r.register("tierkit_move_errors", "Pages move_pages(2) failed to move, by errno", m.move_errors.clone());
        let held_back = "Pages tierkit did not ask the kernel to move, by reason: no_room (no node of the \
                         destination tier had room above its watermarks), cooling_down (refused earlier for a \
                         lasting reason, within its 30 s cool-down)";
        r.register("tierkit_moves_held_back_pages", held_back, m.held_back.clone());
        let residency = "Fraction of the target's resident pages in the fast tier";
        r.register("tierkit_fast_tier_residency_ratio", residency, m.residency.clone());
        let hit_ratio = "Fraction of sampled accesses the fast tier served (absent when unknown)";
        r.register("tierkit_hit_ratio", hit_ratio, m.hit_ratio.clone());
        let cpu = "CPU time tierkit itself used, user plus system, in seconds";
        r.register("tierkit_cpu_seconds", cpu, m.cpu.clone());
        r.register("tierkit_rss_bytes", "tierkit's own resident set size in bytes", m.rss.clone());
        m
    }

    /// The shared registry, for the metrics server.
    pub fn shared(&self) -> SharedMetrics {
        self.shared.clone()
    }

    /// Counts `n` samples from `source` (`"perf"`, `"damon"`, `"kernel"`, ...).
    pub fn add_samples(&self, source: &str, n: u64) {
        self.samples.get_or_create(&SourceLabel { source: source.to_string() }).inc_by(n);
    }

    /// Counts `n` samples the source lost.
    pub fn add_lost_samples(&self, n: u64) {
        self.lost.inc_by(n);
    }

    /// Counts `pages` base pages (`bytes` bytes) moved in `direction`.
    pub fn add_moved(&self, direction: Direction, pages: u64, bytes: u64) {
        let (p, b) = match direction {
            Direction::Promote => (&self.promoted_pages, &self.promoted_bytes),
            Direction::Demote => (&self.demoted_pages, &self.demoted_bytes),
        };
        p.inc_by(pages);
        b.inc_by(bytes);
    }

    /// Counts `n` pages that failed to move with `errno` (labelled by [`errno_name`]).
    pub fn add_move_errors(&self, errno: i32, n: u64) {
        self.move_errors.get_or_create(&ErrnoLabel { errno: errno_name(errno) }).inc_by(n);
    }

    /// Counts pages held back without a `move_pages(2)` call: `no_room` for lack of room
    /// on the destination tier, `cooling_down` after a lasting refusal.
    pub fn add_held_back(&self, no_room: u64, cooling_down: u64) {
        self.held_back.get_or_create(&ReasonLabel { reason: "no_room" }).inc_by(no_room);
        self.held_back.get_or_create(&ReasonLabel { reason: "cooling_down" }).inc_by(cooling_down);
    }

    /// Sets the fast-tier residency of the target (0..=1), or removes it when unknown.
    pub fn set_fast_tier_residency(&self, ratio: Option<f64>) {
        set_optional(&self.residency, ratio);
    }

    /// Sets the fast-tier hit ratio (0..=1), or removes it when unknown.
    pub fn set_hit_ratio(&self, ratio: Option<f64>) {
        set_optional(&self.hit_ratio, ratio);
    }

    /// Publishes tierkit's own CPU time and RSS. A CPU reading below the published one
    /// (impossible for one process) is ignored.
    pub fn set_self_usage(&self, usage: &SelfUsage) {
        raise_to(&self.cpu, usage.cpu);
        self.rss.set(i64::try_from(usage.rss_bytes).unwrap_or(i64::MAX));
    }

    /// Adds `tierkit_kdamond_cpu_seconds_total` (at 0) to the registry, once: the CPU
    /// time of the kdamond monitoring the target (DAMON source only).
    pub fn add_kdamond_cpu(&self) {
        self.kdamond_registered.call_once(|| {
            let help = "CPU time of the kdamond kernel thread monitoring the target for tierkit, in seconds";
            self.shared.register("tierkit_kdamond_cpu_seconds", help, self.kdamond_cpu.clone());
        });
    }

    /// Publishes the kdamond's CPU time; a reading below the published one is ignored.
    pub fn set_kdamond_cpu(&self, cpu: Duration) {
        raise_to(&self.kdamond_cpu, cpu);
    }

    /// Adds `tierkit_poll_stretch` (at 1) to the registry, once: DAMON is polled every
    /// this many aggregation intervals (DAMON source under `--cpu-budget` only).
    pub fn add_poll_stretch(&self) {
        self.poll_stretch_registered.call_once(|| {
            self.poll_stretch.set(1);
            let help = "DAMON is polled every this many aggregation intervals (1: every one; more while \
                        tierkit's CPU exceeds --cpu-budget and the fast tier is not filling)";
            self.shared.register("tierkit_poll_stretch", help, self.poll_stretch.clone());
        });
    }

    /// Publishes the polls' stretch.
    pub fn set_poll_stretch(&self, stretch: u32) {
        self.poll_stretch.set(i64::from(stretch));
    }

    /// Renders the registry (see [`SharedMetrics::render`]).
    pub fn render(&self) -> String {
        self.shared.render()
    }
}

fn set_optional(gauge: &OptionalGauge, value: Option<f64>) {
    match value {
        Some(v) => {
            gauge.get_or_create(&[]).set(v);
        }
        None => {
            gauge.remove(&[]);
        }
    }
}

/// Raises a seconds counter to `total` if that is more than it holds. Non-negative
/// IEEE-754 doubles order as their bit patterns do, so `fetch_max` on the bits is an
/// atomic "keep the larger".
fn raise_to(counter: &SecondsCounter, total: Duration) {
    counter.inner().fetch_max(total.as_secs_f64().to_bits(), Ordering::SeqCst);
}

/// The symbolic name of `errno` (`"ENOMEM"`), or its number (`"135"`) for one outside
/// the table.
pub fn errno_name(errno: i32) -> Cow<'static, str> {
    crate::sys::errno_symbol(errno).map_or_else(|| Cow::Owned(errno.to_string()), Cow::Borrowed)
}
