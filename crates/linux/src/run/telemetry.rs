//! [`Telemetry`] for the policy's ticks on a live process.
//!
//! What a live platform can honestly fill in:
//!
//! - `free_pages` and `capacity_pages` per tier: the nodes' `meminfo`, as the process
//!   view last read it (plus the moves since).
//! - `accesses` and `request_rate` per tier: only when samples stand for a known number
//!   of memory accesses — PEBS and IBS sample one access in `period`, so each sample on
//!   a tier counts `period` accesses there. Page-fault samples, DAMON regions and the
//!   kernel's tiering say nothing about access counts: these stay 0, which policies
//!   read as "unknown" (tierkit's cost-benefit gate then stays open).
//! - `latency_ns` and `occupancy`: never measured live (no uncore counters): 0.
//! - `mechanism_cpu_ns`: tierkit's own CPU time in the interval (every thread: sampling,
//!   policy, migration, metrics), from the kernel's per-process CPU clock. This is the
//!   part of the mechanism's cost a policy's sampling rate controls; the kdamond thread
//!   DAMON runs in is left out: it checks its regions every sampling interval whatever
//!   rate the policy asks for (its CPU time is in the status line and the metrics).

use tierkit_core::{Event, Memory, Nanos, Telemetry, TierId, TierStats, SECOND};

/// CPU time in ns consumed by process `pid` (`None`: tierkit itself), from its
/// `CLOCK_PROCESS_CPUTIME_ID`-style clock; `None` when the process is gone or the
/// clock cannot be read.
pub fn process_cpu_ns(pid: Option<i32>) -> Option<u64> {
    let clock = match pid {
        None => libc::CLOCK_PROCESS_CPUTIME_ID,
        Some(pid) => {
            let mut clock: libc::clockid_t = 0;
            // SAFETY: `clock` is a valid place for the clock id; the call only writes it.
            if unsafe { libc::clock_getcpuclockid(pid, &mut clock) } != 0 {
                return None;
            }
            clock
        }
    };
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return None;
    }
    Some(ts.tv_sec as u64 * SECOND + ts.tv_nsec as u64)
}

/// Builds a [`Telemetry`] at each tick from the events seen since the previous one.
#[derive(Clone, Debug, Default)]
pub struct TelemetryBuilder {
    /// Samples per tier since the last tick.
    sampled: Vec<u64>,
    /// Samples per tier over the whole run, for the hit ratio.
    sampled_total: Vec<u64>,
    /// Memory accesses one sample stands for, when the source knows it.
    accesses_per_sample: Option<u64>,
    last_tick: Nanos,
    last_cpu: u64,
}

impl TelemetryBuilder {
    /// A builder whose first interval starts at `now` (the platform clock);
    /// `accesses_per_sample` is the sampling period of a hardware memory sampler (PEBS,
    /// IBS), `None` for every other source.
    pub fn new(accesses_per_sample: Option<u64>, now: Nanos) -> Self {
        Self { accesses_per_sample, last_cpu: process_cpu_ns(None).unwrap_or(0), last_tick: now, ..Self::default() }
    }

    /// Counts the samples in `events` by the tier that served them.
    pub fn count(&mut self, events: &[Event]) {
        for e in events {
            if let Event::Sample { tier, .. } = *e {
                let i = tier.index();
                if self.sampled.len() <= i {
                    self.sampled.resize(i + 1, 0);
                    self.sampled_total.resize(i + 1, 0);
                }
                self.sampled[i] += 1;
                self.sampled_total[i] += 1;
            }
        }
    }

    /// The fraction of sampled memory accesses the fast tier served since the start:
    /// known only for hardware memory samplers.
    pub fn hit_ratio(&self) -> Option<f64> {
        self.accesses_per_sample?;
        let total: u64 = self.sampled_total.iter().sum();
        (total > 0).then(|| self.sampled_total.first().copied().unwrap_or(0) as f64 / total as f64)
    }

    /// The telemetry of the interval ending at `now` (the platform clock of `mem`), and
    /// starts the next interval.
    pub fn tick(&mut self, mem: &dyn Memory, now: Nanos) -> Telemetry {
        let interval = now.saturating_sub(self.last_tick);
        self.last_tick = now;
        let cpu = process_cpu_ns(None).unwrap_or(0);
        let mechanism_cpu_ns = cpu.saturating_sub(self.last_cpu);
        self.last_cpu = cpu;
        let tiers = mem
            .tiers()
            .iter()
            .map(|info| {
                let samples = self.sampled.get(info.id.index()).copied().unwrap_or(0);
                let accesses = self.accesses_per_sample.map_or(0, |per| samples.saturating_mul(per));
                TierStats {
                    tier: info.id,
                    accesses,
                    request_rate: if interval > 0 { accesses as f64 * SECOND as f64 / interval as f64 } else { 0.0 },
                    occupancy: 0.0,
                    latency_ns: 0.0,
                    free_pages: mem.free_pages(info.id),
                    capacity_pages: info.capacity_pages,
                }
            })
            .collect();
        self.sampled.iter_mut().for_each(|n| *n = 0);
        Telemetry { now, interval, tiers, mechanism_cpu_ns, app_cpu_ns: 0, aol_ns: None }
    }
}

/// The fraction of `resident` (base pages per tier) on the fast tier; `None` when
/// nothing is resident.
pub fn fast_residency(resident: &[u64]) -> Option<f64> {
    let total: u64 = resident.iter().sum();
    (total > 0).then(|| resident.get(TierId::FAST.index()).copied().unwrap_or(0) as f64 / total as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tierkit_core::{InMemory, MILLISECOND};

    fn sample(tier: u8) -> Event {
        Event::Sample { page: 1, tier: TierId(tier), word: None, write: false, time: 0, stall_ns: None }
    }

    #[test]
    fn hardware_samples_become_access_counts_and_a_hit_ratio() {
        let mut mem = InMemory::new(&[10, 20]).unwrap();
        mem.touch(1);
        let mut b = TelemetryBuilder::new(Some(1000), 0);
        b.count(&[sample(0), sample(0), sample(0), sample(1)]);
        let t = b.tick(&mem, 100 * MILLISECOND);
        assert_eq!(t.interval, 100 * MILLISECOND);
        assert_eq!((t.tiers[0].accesses, t.tiers[1].accesses), (3000, 1000));
        assert!((t.tiers[0].request_rate - 30_000.0).abs() < 1e-6);
        assert_eq!((t.tiers[0].free_pages, t.tiers[1].capacity_pages), (9, 20));
        assert_eq!(b.hit_ratio(), Some(0.75));
        let next = b.tick(&mem, 200 * MILLISECOND);
        assert_eq!(next.tiers[0].accesses, 0, "counts restart each interval");
        assert_eq!(b.hit_ratio(), Some(0.75), "the hit ratio covers the run");
    }

    #[test]
    fn other_sources_report_no_accesses_and_no_hit_ratio() {
        let mem = InMemory::new(&[10, 20]).unwrap();
        let mut b = TelemetryBuilder::new(None, 0);
        b.count(&[sample(0), sample(1)]);
        let t = b.tick(&mem, 5);
        assert!(t.tiers.iter().all(|s| s.accesses == 0 && s.request_rate == 0.0));
        assert_eq!(b.hit_ratio(), None);
        assert_eq!(fast_residency(&[3, 1]), Some(0.75));
        assert_eq!(fast_residency(&[0, 0]), None);
    }

    #[test]
    fn the_mechanisms_cpu_is_tierkits_own_cpu_time_in_the_interval() {
        let mem = InMemory::new(&[10, 20]).unwrap();
        let before = process_cpu_ns(None).unwrap();
        let mut b = TelemetryBuilder::new(None, 0);
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        let t = b.tick(&mem, 100 * MILLISECOND);
        let after = process_cpu_ns(None).unwrap();
        assert!(t.mechanism_cpu_ns > 0, "the work above took CPU time");
        assert!(t.mechanism_cpu_ns <= after - before + 1, "{} > {}", t.mechanism_cpu_ns, after - before);
    }

    #[test]
    fn own_cpu_time_is_readable_and_a_missing_process_is_none() {
        let before = process_cpu_ns(None).expect("own CPU clock");
        let mut x = 0u64;
        for i in 0..200_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(process_cpu_ns(None).unwrap() >= before);
        assert!(process_cpu_ns(Some(std::process::id() as i32)).is_some());
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        child.wait().unwrap();
        assert_eq!(process_cpu_ns(Some(pid)), None, "a reaped process has no clock");
    }
}
