//! What tierkit prints while it runs and when it stops: the periodic one-line status
//! and the multi-line exit summary. Pure formatting over plain structs the daemon
//! fills in; the unit helpers ([`format_bytes`], [`format_count`], [`format_duration`],
//! [`format_percent`]) are shared with other reports.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use crate::memory::process::HeldBack;
use crate::metrics::errno_name;
use crate::signals::signal_name;
use crate::target::TargetExit;

/// The numbers of one status line; counts cover the interval since the previous line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StatusLine {
    /// Time since tierkit started managing the target.
    pub elapsed: Duration,
    /// Time since the previous status line.
    pub interval: Duration,
    /// Samples received in the interval.
    pub samples: u64,
    /// Samples lost in the interval.
    pub lost: u64,
    /// Pages promoted in the interval.
    pub promoted_pages: u64,
    /// Pages demoted in the interval.
    pub demoted_pages: u64,
    /// Fraction (0..=1) of the target's resident pages in the fast tier, if measured.
    pub fast_residency: Option<f64>,
    /// Fraction (0..=1) of sampled accesses the fast tier served, if known.
    pub hit_ratio: Option<f64>,
    /// tierkit's CPU use over the interval, percent of one core.
    pub cpu_percent: f64,
    /// tierkit's resident set size in bytes.
    pub rss_bytes: u64,
}

/// One status line, for example
/// `[1m05s] 1,234 samples/s, lost 3 | promoted 512, demoted 1,024 pages | fast tier 83.4% | hit 91.2% | cpu 0.8% | rss 12.3 MiB`.
/// Unknown residency and hit ratio are left out.
pub fn format_status_line(s: &StatusLine) -> String {
    let secs = s.interval.as_secs_f64();
    let rate = if secs > 0.0 { s.samples as f64 / secs } else { 0.0 };
    let mut out = format!(
        "[{}] {} samples/s, lost {} | promoted {}, demoted {} pages",
        format_duration(s.elapsed),
        format_rate(rate),
        format_count(s.lost),
        format_count(s.promoted_pages),
        format_count(s.demoted_pages),
    );
    if let Some(r) = s.fast_residency {
        let _ = write!(out, " | fast tier {}", format_percent(r));
    }
    if let Some(h) = s.hit_ratio {
        let _ = write!(out, " | hit {}", format_percent(h));
    }
    let _ = write!(out, " | cpu {:.1}% | rss {}", s.cpu_percent, format_bytes(s.rss_bytes));
    out
}

/// The outcome of restoring one kernel knob tierkit changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnobRestore {
    /// The knob (`kernel.numa_balancing` or a path).
    pub knob: String,
    /// The value it was restored (or should have been restored) to.
    pub value: String,
    /// Why restoring failed; `None` when it was restored.
    pub error: Option<String>,
}

/// Why tierkit stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The target ended.
    TargetExited {
        /// Its pid.
        pid: u32,
        /// How it ended.
        exit: TargetExit,
    },
    /// tierkit received a signal (SIGINT, SIGTERM, SIGHUP).
    Signal(i32),
    /// tierkit stopped on an error.
    Error(String),
}

/// Totals for the exit summary.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// How long tierkit managed the target.
    pub elapsed: Duration,
    /// Whether it only decided (`--dry-run`) and moved nothing.
    pub dry_run: bool,
    /// Samples received.
    pub samples: u64,
    /// Samples lost.
    pub lost: u64,
    /// Pages promoted (in a dry run: that would have been).
    pub promoted_pages: u64,
    /// Bytes promoted.
    pub promoted_bytes: u64,
    /// Pages demoted (in a dry run: that would have been).
    pub demoted_pages: u64,
    /// Bytes demoted.
    pub demoted_bytes: u64,
    /// Pages that failed to move, by errno.
    pub move_errors: BTreeMap<i32, u64>,
    /// `move_pages(2)` calls made to move pages, and the pages passed to them (a huge
    /// page counts once).
    pub move_calls: (u64, u64),
    /// Pages refused without asking the kernel.
    pub held_back: HeldBack,
    /// Last measured fast-tier residency of the target (0..=1).
    pub fast_residency: Option<f64>,
    /// Fast-tier hit ratio (0..=1), if known.
    pub hit_ratio: Option<f64>,
    /// tierkit's total CPU time.
    pub cpu: Duration,
    /// The CPU time of the kdamond thread working for tierkit (DAMON sources), when
    /// measured.
    pub kdamond_cpu: Option<Duration>,
    /// The daemon loop's CPU time by phase ([`crate::run::phases`]); empty when no
    /// loop ran.
    pub cpu_split: Vec<(&'static str, Duration)>,
    /// Rebuilds of the process view (maps, pagemap and a location query of every page).
    pub view_rebuilds: u64,
    /// tierkit's resident set size at the end, bytes.
    pub rss_bytes: u64,
    /// Every knob tierkit changed and whether it was put back; empty when none.
    pub knobs: Vec<KnobRestore>,
    /// Why tierkit stopped.
    pub ending: Ending,
}

/// The exit summary, one fact per line:
///
/// ```text
/// tierkit summary after 1m05s
///   ended:     target (pid 1234) exited with code 0
///   samples:   123,456 (lost 12, 0.0%)
///   promoted:  1,024 pages (4.0 MiB)
///   demoted:   2,048 pages (8.0 MiB)
///   errors:    ENOMEM 12 pages, EBUSY 3 pages
///   placement: fast tier 83.4% of resident pages, hit ratio 91.2%
///   own cost:  cpu 1.23 s (1.9% of a core), rss 12.3 MiB
///   cpu split: source 0.80 s, policy 0.20 s, moves 0.15 s, view 0.05 s, publish 0.03 s
///   knobs:     kernel.numa_balancing restored to 0
/// ```
pub fn format_summary(s: &Summary) -> String {
    let mut out = format!("tierkit summary after {}", format_duration(s.elapsed));
    if s.dry_run {
        out.push_str(" (dry run: decided only, no page was moved)");
    }
    out.push('\n');
    let mut line = |label: &str, text: &str| {
        let label = if label.is_empty() { String::new() } else { format!("{label}:") };
        let _ = writeln!(out, "  {label:<11}{text}");
    };
    line("ended", &format_ending(&s.ending));
    let lost_pct = if s.samples + s.lost > 0 { s.lost as f64 / (s.samples + s.lost) as f64 } else { 0.0 };
    line(
        "samples",
        &format!("{} (lost {}, {})", format_count(s.samples), format_count(s.lost), format_percent(lost_pct)),
    );
    let would = if s.dry_run { "would have moved " } else { "" };
    line("promoted", &format!("{would}{} ({})", pages(s.promoted_pages), format_bytes(s.promoted_bytes)));
    line("demoted", &format!("{would}{} ({})", pages(s.demoted_pages), format_bytes(s.demoted_bytes)));
    let errors = if s.move_errors.is_empty() {
        "none".to_string()
    } else {
        let mut by_count: Vec<(&i32, &u64)> = s.move_errors.iter().collect();
        by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let parts: Vec<String> = by_count.iter().map(|(e, n)| format!("{} {}", errno_label(**e), pages(**n))).collect();
        parts.join(", ")
    };
    line("errors", &errors);
    if s.move_calls.0 > 0 {
        let (calls, sent) = s.move_calls;
        line("calls", &format!("{} move_pages calls for {}", format_count(calls), pages(sent)));
    }
    let HeldBack { no_room, cooling } = s.held_back;
    if no_room + cooling > 0 {
        let text = format!(
            "{} (no room on the destination tier), {} (refused earlier, cooling down)",
            pages(no_room),
            pages(cooling)
        );
        line("held back", &text);
    }
    let placement = match (s.fast_residency, s.hit_ratio) {
        (None, None) => "not measured".to_string(),
        (r, h) => {
            let r = r.map(|r| format!("fast tier {} of resident pages", format_percent(r)));
            let h = h.map(|h| format!("hit ratio {}", format_percent(h)));
            r.into_iter().chain(h).collect::<Vec<_>>().join(", ")
        }
    };
    line("placement", &placement);
    let secs = s.elapsed.as_secs_f64();
    let core = if secs > 0.0 { s.cpu.as_secs_f64() / secs } else { 0.0 };
    line(
        "own cost",
        &format!(
            "cpu {:.2} s ({} of a core), rss {}",
            s.cpu.as_secs_f64(),
            format_percent(core),
            format_bytes(s.rss_bytes)
        ),
    );
    if let Some(k) = s.kdamond_cpu {
        let core = if secs > 0.0 { k.as_secs_f64() / secs } else { 0.0 };
        line("kdamond", &format!("cpu {:.2} s ({} of a core)", k.as_secs_f64(), format_percent(core)));
    }
    if s.cpu_split.iter().any(|(_, d)| !d.is_zero()) {
        let parts: Vec<String> = s.cpu_split.iter().map(|(n, d)| format!("{n} {:.2} s", d.as_secs_f64())).collect();
        line("cpu split", &parts.join(", "));
    }
    if s.knobs.is_empty() {
        line("knobs", "none changed");
    }
    for (i, k) in s.knobs.iter().enumerate() {
        let text = match &k.error {
            None => format!("{} restored to {}", k.knob, k.value),
            Some(e) => format!("FAILED to restore {} to {}: {e}; set it back by hand", k.knob, k.value),
        };
        line(if i == 0 { "knobs" } else { "" }, &text);
    }
    out
}

/// How tierkit ended, as a sentence fragment.
fn format_ending(e: &Ending) -> String {
    match e {
        Ending::TargetExited { pid, exit: TargetExit::Code(code) } => {
            format!("target (pid {pid}) exited with code {code}")
        }
        Ending::TargetExited { pid, exit: TargetExit::Signal { signal, core_dumped } } => format!(
            "target (pid {pid}) was killed by {}{}",
            signal_name(*signal),
            if *core_dumped { " (core dumped)" } else { "" }
        ),
        Ending::TargetExited { pid, exit: TargetExit::Unknown } => {
            format!("target (pid {pid}) exited (not tierkit's child: exit status unknown)")
        }
        Ending::Signal(sig) => format!("stopped by {} (tierkit does not signal the target)", signal_name(*sig)),
        Ending::Error(msg) => format!("stopped by an error: {msg}"),
    }
}

/// `errno`'s symbolic name, or `errno N` outside the table.
fn errno_label(errno: i32) -> String {
    let name = errno_name(errno);
    if name.starts_with('E') {
        name.into_owned()
    } else {
        format!("errno {errno}")
    }
}

/// `1 page`, `1,024 pages`.
fn pages(n: u64) -> String {
    format!("{} page{}", format_count(n), if n == 1 { "" } else { "s" })
}

/// Bytes in binary units: `512 B`, `4.0 KiB`, `12.3 MiB`, `1.5 GiB`, `2.0 TiB`.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// A count with thousands separators: `1,234,567`.
pub fn format_count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// A rate: one decimal below 100 (`12.5`), whole and grouped above (`1,234`).
fn format_rate(r: f64) -> String {
    if r < 100.0 {
        format!("{r:.1}")
    } else {
        format_count(r.round() as u64)
    }
}

/// A fraction (0..=1) as a percentage with one decimal: `0.834` → `83.4%`.
pub fn format_percent(fraction: f64) -> String {
    format!("{:.1}%", fraction * 100.0)
}

/// A duration: `12.3s` under a minute, `4m05s` under an hour, then `1h02m05s`.
pub fn format_duration(d: Duration) -> String {
    let secs = d.as_secs();
    if secs < 60 {
        format!("{:.1}s", d.as_secs_f64())
    } else if secs < 3600 {
        format!("{}m{:02}s", secs / 60, secs % 60)
    } else {
        format!("{}h{:02}m{:02}s", secs / 3600, secs % 3600 / 60, secs % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(4096), "4.0 KiB");
        assert_eq!(format_bytes(12_897_485), "12.3 MiB");
        assert_eq!(format_bytes(3 << 29), "1.5 GiB");
        assert_eq!(format_bytes(5 << 40), "5.0 TiB");
        assert_eq!(format_count(0), "0");
        assert_eq!(format_count(999), "999");
        assert_eq!(format_count(1000), "1,000");
        assert_eq!(format_count(1_234_567), "1,234,567");
        assert_eq!(format_percent(0.834), "83.4%");
        assert_eq!(format_duration(Duration::from_millis(12_340)), "12.3s");
        assert_eq!(format_duration(Duration::from_secs(245)), "4m05s");
        assert_eq!(format_duration(Duration::from_secs(3725)), "1h02m05s");
        assert_eq!(format_rate(12.46), "12.5");
        assert_eq!(format_rate(1234.4), "1,234");
    }

    #[test]
    fn status_line_shows_rates_pages_and_cost() {
        let s = StatusLine {
            elapsed: Duration::from_secs(65),
            interval: Duration::from_secs(2),
            samples: 2468,
            lost: 3,
            promoted_pages: 512,
            demoted_pages: 1024,
            fast_residency: Some(0.834),
            hit_ratio: None,
            cpu_percent: 0.84,
            rss_bytes: 12_897_485,
        };
        let line = format_status_line(&s);
        assert_eq!(
            line,
            "[1m05s] 1,234 samples/s, lost 3 | promoted 512, demoted 1,024 pages | fast tier 83.4% | cpu 0.8% | rss 12.3 MiB"
        );
        let known = format_status_line(&StatusLine { hit_ratio: Some(0.912), ..s });
        assert!(known.contains(" | hit 91.2% | "), "{known}");
    }

    fn summary() -> Summary {
        Summary {
            elapsed: Duration::from_secs(100),
            dry_run: false,
            samples: 123_456,
            lost: 0,
            promoted_pages: 1024,
            promoted_bytes: 4 << 20,
            demoted_pages: 2048,
            demoted_bytes: 8 << 20,
            move_errors: BTreeMap::from([(libc::EBUSY, 3), (libc::ENOMEM, 12), (4242, 1)]),
            move_calls: (12, 3100),
            held_back: HeldBack { no_room: 40, cooling: 1 },
            fast_residency: Some(0.5),
            hit_ratio: Some(0.912),
            cpu: Duration::from_millis(1500),
            kdamond_cpu: None,
            cpu_split: vec![("source", Duration::from_millis(900)), ("policy", Duration::from_millis(250))],
            view_rebuilds: 0,
            rss_bytes: 12 << 20,
            knobs: vec![
                KnobRestore { knob: "kernel.numa_balancing".into(), value: "0".into(), error: None },
                KnobRestore {
                    knob: "/sys/kernel/mm/numa/demotion_enabled".into(),
                    value: "false".into(),
                    error: Some("Permission denied".into()),
                },
            ],
            ending: Ending::TargetExited { pid: 1234, exit: TargetExit::Code(3) },
        }
    }

    #[test]
    fn summary_has_totals_errors_knobs_and_ending() {
        let text = format_summary(&summary());
        let expected = [
            "tierkit summary after 1m40s",
            "  ended:     target (pid 1234) exited with code 3",
            "  samples:   123,456 (lost 0, 0.0%)",
            "  promoted:  1,024 pages (4.0 MiB)",
            "  demoted:   2,048 pages (8.0 MiB)",
            "  errors:    ENOMEM 12 pages, EBUSY 3 pages, errno 4242 1 page",
            "  calls:     12 move_pages calls for 3,100 pages",
            "  held back: 40 pages (no room on the destination tier), 1 page (refused earlier, cooling down)",
            "  placement: fast tier 50.0% of resident pages, hit ratio 91.2%",
            "  own cost:  cpu 1.50 s (1.5% of a core), rss 12.0 MiB",
            "  cpu split: source 0.90 s, policy 0.25 s",
            "  knobs:     kernel.numa_balancing restored to 0",
            "             FAILED to restore /sys/kernel/mm/numa/demotion_enabled to false: Permission denied; set it \
             back by hand",
        ];
        assert_eq!(text.lines().collect::<Vec<_>>(), expected);
    }

    #[test]
    fn summary_endings_and_dry_run() {
        let mut s = summary();
        s.ending = Ending::Signal(libc::SIGTERM);
        s.dry_run = true;
        s.knobs.clear();
        s.move_errors.clear();
        s.fast_residency = None;
        s.hit_ratio = None;
        let text = format_summary(&s);
        assert!(text.starts_with("tierkit summary after 1m40s (dry run"), "{text}");
        assert!(text.contains("ended:     stopped by SIGTERM"), "{text}");
        assert!(text.contains("promoted:  would have moved 1,024 pages"), "{text}");
        assert!(text.contains("errors:    none"), "{text}");
        assert!(text.contains("placement: not measured"), "{text}");
        assert!(text.contains("knobs:     none changed"), "{text}");
        let killed =
            Ending::TargetExited { pid: 9, exit: TargetExit::Signal { signal: libc::SIGKILL, core_dumped: false } };
        assert_eq!(format_ending(&killed), "target (pid 9) was killed by SIGKILL");
        assert!(format_ending(&Ending::Error("boom".into())).contains("boom"));
    }
}
