//! How a live run ended and the summary block printed at exit.
//!
//! The block starts with the line `tierkit: summary`, then one machine-readable line of
//! `key=value` fields (scripts and the VM tests grep these), then the human summary of
//! [`crate::status::format_summary`]:
//!
//! ```text
//! tierkit: summary
//! tierkit: ended=target-exited promoted_pages=512 demoted_pages=1024 move_errors=3 samples=81234 lost=0 dry_run=false source=damon policy=tierkit exit_code=0
//! tierkit summary after 12.3s
//!   ended:     target (pid 1234) exited with code 0
//!   ...
//! ```
//!
//! With `--source kernel` the field line ends with `knobs=restored`, or
//! `knobs=FAILED <knob>: <error>; …` when a knob could not be put back.

use std::time::Duration;

use crate::status::{format_duration, format_summary, Ending, Summary};
use crate::target::{Target, TargetExit};

/// Why the daemon stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ended {
    /// The target exited.
    TargetExited(TargetExit),
    /// tierkit received this signal.
    Signal(i32),
    /// `--duration` elapsed.
    Duration(Duration),
    /// A fatal error.
    Error(String),
}

impl Ended {
    /// The `ended=` value: `target-exited`, `signal`, `duration` or `error`.
    pub fn name(&self) -> &'static str {
        match self {
            Ended::TargetExited(_) => "target-exited",
            Ended::Signal(_) => "signal",
            Ended::Duration(_) => "duration",
            Ended::Error(_) => "error",
        }
    }

    /// The exit code of a target tierkit started and saw end: its code, or 128 + the
    /// signal that killed it; `None` otherwise.
    pub fn exit_code(&self) -> Option<i32> {
        match self {
            Ended::TargetExited(TargetExit::Code(code)) => Some(*code),
            Ended::TargetExited(TargetExit::Signal { signal, .. }) => Some(128 + signal),
            _ => None,
        }
    }

    /// The target's end, once it is gone (waiting up to a second to reap it).
    pub fn target_gone(target: &mut Target) -> Ended {
        Ended::TargetExited(target.wait_timeout(Duration::from_secs(1)).unwrap_or(TargetExit::Unknown))
    }
}

/// Everything known when a live run ends.
#[derive(Clone, Debug)]
pub struct Report {
    /// Why it stopped.
    pub ended: Ended,
    /// The totals, in the form [`format_summary`] prints.
    pub summary: Summary,
    /// The source's name (`damon`, `perf`, `kernel`), `None` when the run ended before
    /// one was opened.
    pub source: Option<&'static str>,
    /// The policy's name (`None` with the kernel source, or before one was built).
    pub policy: Option<String>,
    /// The target's pid.
    pub pid: u32,
    /// Whether the kernel's knobs were changed (kernel source): then the summary carries
    /// `knobs=`.
    pub changed_knobs: bool,
}

/// Marker standing for a duration ending inside [`Ending::Error`], which has no
/// variant of its own for it; replaced in the rendered text.
const DURATION_MARK: &str = "\u{1}duration\u{1}";

/// The [`Ending`] [`format_summary`] shows for `ended`.
pub fn ending_of(ended: &Ended, pid: u32) -> Ending {
    match ended {
        Ended::TargetExited(exit) => Ending::TargetExited { pid, exit: *exit },
        Ended::Signal(sig) => Ending::Signal(*sig),
        Ended::Duration(_) => Ending::Error(DURATION_MARK.to_string()),
        Ended::Error(msg) => Ending::Error(msg.clone()),
    }
}

impl Report {
    /// The exit code of the target, when tierkit started it and saw it end:
    /// its code, or 128 + the signal that killed it.
    pub fn target_exit_code(&self) -> Option<i32> {
        self.ended.exit_code()
    }

    /// The `key=value` line of the summary block.
    pub fn fields(&self) -> String {
        let s = &self.summary;
        let mut line = format!(
            "ended={} promoted_pages={} demoted_pages={} move_errors={} samples={} lost={} dry_run={}",
            self.ended.name(),
            s.promoted_pages,
            s.demoted_pages,
            s.move_errors.values().sum::<u64>(),
            s.samples,
            s.lost,
            s.dry_run,
        );
        if let Some(source) = self.source {
            line.push_str(&format!(" source={source}"));
        }
        if let Some(policy) = &self.policy {
            line.push_str(&format!(" policy={policy}"));
        }
        if let Some(code) = self.target_exit_code() {
            line.push_str(&format!(" exit_code={code}"));
        }
        if let Ended::Signal(sig) = self.ended {
            line.push_str(&format!(" signal={sig}"));
        }
        if s.move_calls.0 > 0 {
            line.push_str(&format!(" move_calls={} pages_sent={}", s.move_calls.0, s.move_calls.1));
        }
        let held = s.held_back;
        if held.no_room + held.cooling > 0 {
            line.push_str(&format!(" held_back_no_room={} held_back_cooling={}", held.no_room, held.cooling));
        }
        if let Some(k) = s.kdamond_cpu {
            line.push_str(&format!(" kdamond_cpu_ms={}", k.as_millis()));
        }
        for (name, spent) in &s.cpu_split {
            line.push_str(&format!(" cpu_ms_{name}={}", spent.as_millis()));
        }
        if s.view_rebuilds > 0 {
            line.push_str(&format!(" view_rebuilds={}", s.view_rebuilds));
        }
        if self.changed_knobs {
            let failed: Vec<String> = s
                .knobs
                .iter()
                .filter_map(|k| k.error.as_ref().map(|e| format!("{}: {}", k.knob, e.replace('\n', " "))))
                .collect();
            if failed.is_empty() {
                line.push_str(" knobs=restored");
            } else {
                line.push_str(&format!(" knobs=FAILED {}", failed.join("; ")));
            }
        }
        line
    }

    /// The whole summary block, ending with a newline.
    pub fn render(&self) -> String {
        let mut human = format_summary(&self.summary);
        if let Ended::Duration(d) = self.ended {
            let text = format!("the --duration of {} elapsed (the target keeps running)", format_duration(d));
            human = human.replace(&format!("stopped by an error: {DURATION_MARK}"), &text);
        }
        format!("tierkit: summary\ntierkit: {}\n{human}", self.fields())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::KnobRestore;
    use std::collections::BTreeMap;

    fn report(ended: Ended, knobs: Vec<KnobRestore>) -> Report {
        let summary = Summary {
            elapsed: Duration::from_secs(2),
            dry_run: true,
            samples: 10,
            lost: 1,
            promoted_pages: 3,
            promoted_bytes: 3 * 4096,
            demoted_pages: 4,
            demoted_bytes: 4 * 4096,
            move_errors: BTreeMap::from([(libc::ENOMEM, 2), (libc::EBUSY, 5)]),
            move_calls: (0, 0),
            held_back: crate::memory::process::HeldBack::default(),
            fast_residency: Some(0.5),
            hit_ratio: None,
            cpu: Duration::from_millis(20),
            kdamond_cpu: None,
            cpu_split: Vec::new(),
            view_rebuilds: 0,
            rss_bytes: 1 << 20,
            knobs,
            ending: ending_of(&ended, 42),
        };
        Report {
            changed_knobs: !summary.knobs.is_empty(),
            ended,
            summary,
            source: Some("perf"),
            policy: Some("tierkit".into()),
            pid: 42,
        }
    }

    #[test]
    fn the_block_starts_with_the_contract_lines() {
        let r = report(Ended::Duration(Duration::from_secs(2)), Vec::new());
        let text = r.render();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("tierkit: summary"));
        let fields = lines.next().unwrap();
        for want in ["ended=duration", "promoted_pages=3", "demoted_pages=4", "move_errors=7", "samples=10", "lost=1"] {
            assert!(fields.split(' ').any(|f| f == want), "{want} in {fields}");
        }
        assert!(!fields.contains("knobs=") && !fields.contains("exit_code="), "{fields}");
        assert!(text.contains("the --duration of 2.0s elapsed"), "{text}");
        assert!(!text.contains("stopped by an error"), "{text}");
        assert_eq!(r.target_exit_code(), None);
    }

    #[test]
    fn exit_codes_signals_and_knobs() {
        let killed = report(Ended::TargetExited(TargetExit::Signal { signal: 9, core_dumped: false }), Vec::new());
        assert_eq!(killed.target_exit_code(), Some(137));
        assert!(killed.fields().contains("ended=target-exited") && killed.fields().contains("exit_code=137"));
        let restored = KnobRestore { knob: "numa_balancing".into(), value: "0".into(), error: None };
        let ok = report(Ended::Signal(libc::SIGTERM), vec![restored.clone()]);
        assert!(ok.fields().ends_with("signal=15 knobs=restored"), "{}", ok.fields());
        let failed =
            KnobRestore { knob: "demotion_enabled".into(), value: "false".into(), error: Some("EPERM".into()) };
        let bad = report(Ended::Error("boom".into()), vec![restored, failed]);
        assert!(bad.fields().ends_with("knobs=FAILED demotion_enabled: EPERM"), "{}", bad.fields());
        assert!(bad.render().contains("stopped by an error: boom"));
    }
}
