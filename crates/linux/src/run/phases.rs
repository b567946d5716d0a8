//! Where tierkit's own CPU time goes: the daemon loop's thread CPU time split by phase,
//! printed in the summary (`cpu split:`) so an operator sees what a run's cost is made
//! of (reading the source, the policy, moving pages, rebuilding the process view,
//! publishing status and metrics).

use std::time::Duration;

/// A phase of the daemon loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Reading the source (DAMON's regions, perf ring buffers, vmstat) into events.
    Source,
    /// The policy: events, ticks and plans.
    Policy,
    /// `move_pages(2)` calls and their accounting.
    Moves,
    /// Rebuilding the process view (maps, pagemap, node queries) and the free room.
    View,
    /// Status lines, gauges and self usage.
    Publish,
}

impl Phase {
    /// Every phase, in the order the summary lists them.
    pub const ALL: [Phase; 5] = [Phase::Source, Phase::Policy, Phase::Moves, Phase::View, Phase::Publish];

    /// The phase's name in the summary.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Source => "source",
            Phase::Policy => "policy",
            Phase::Moves => "moves",
            Phase::View => "view",
            Phase::Publish => "publish",
        }
    }
}

/// The calling thread's CPU time (ns); 0 if the clock cannot be read.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Thread CPU time per phase.
#[derive(Clone, Debug, Default)]
pub struct PhaseMeter {
    spent: [u64; 5],
}

impl PhaseMeter {
    /// Runs `f`, charging the thread CPU time it takes to `phase`.
    pub fn measure<T>(&mut self, phase: Phase, f: impl FnOnce() -> T) -> T {
        self.measure_cost(phase, f).0
    }

    /// Runs `f`, charging the thread CPU time it takes to `phase`, and returns that time
    /// with its result (a cost in CPU time does not grow while the thread waits for a
    /// core, as a wall-clock one does on a busy machine).
    pub fn measure_cost<T>(&mut self, phase: Phase, f: impl FnOnce() -> T) -> (T, Duration) {
        let began = thread_cpu_ns();
        let out = f();
        let spent = thread_cpu_ns().saturating_sub(began);
        self.charge(phase, spent);
        (out, Duration::from_nanos(spent))
    }

    /// Charges `ns` of CPU time to `phase`.
    pub fn charge(&mut self, phase: Phase, ns: u64) {
        self.spent[phase as usize] += ns;
    }

    /// The time charged to each phase, in [`Phase::ALL`] order.
    pub fn split(&self) -> Vec<(&'static str, Duration)> {
        Phase::ALL.iter().map(|&p| (p.name(), Duration::from_nanos(self.spent[p as usize]))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_the_measured_phase_only() {
        let mut meter = PhaseMeter::default();
        let sum = meter.measure(Phase::Policy, || (0..3_000_000u64).fold(0u64, |a, x| a.wrapping_add(x * x)));
        assert_ne!(sum, 0);
        let split = meter.split();
        assert_eq!(split.iter().map(|(n, _)| *n).collect::<Vec<_>>(), ["source", "policy", "moves", "view", "publish"]);
        assert!(split[1].1 > Duration::ZERO, "the busy loop's CPU time was not charged: {split:?}");
        assert!(split.iter().enumerate().all(|(i, (_, d))| i == 1 || d.is_zero()), "{split:?}");
        meter.charge(Phase::Moves, 5);
        assert_eq!(meter.split()[2].1, Duration::from_nanos(5));
    }
}
