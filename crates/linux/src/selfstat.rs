//! tierkit's own cost: CPU time from `/proc/self/stat` and resident memory from
//! `/proc/self/status`, and a [`CpuMeter`] turning two CPU readings into a percentage
//! of one core.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::memory::procfs::{parse_stat, parse_status};

/// A procfs file about tierkit itself could not be read or parsed.
#[derive(Debug, thiserror::Error)]
pub enum SelfStatError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file did not have the expected shape.
    #[error("cannot parse {path}: {what}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What was missing or malformed.
        what: String,
    },
}

/// tierkit's resource usage at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SelfUsage {
    /// User plus system CPU time since the process started.
    pub cpu: Duration,
    /// Resident set size in bytes (`VmRSS`).
    pub rss_bytes: u64,
}

impl SelfUsage {
    /// Reads `ROOT/proc/self/stat` and `ROOT/proc/self/status` (`root` is `/` on a live
    /// system).
    pub fn read(root: &Path) -> Result<Self, SelfStatError> {
        Ok(Self { cpu: cpu_time(root)?, rss_bytes: rss_bytes(root)? })
    }
}

/// User plus system CPU time of the calling process, from `ROOT/proc/self/stat` (in
/// clock ticks, converted with `sysconf(_SC_CLK_TCK)`).
pub fn cpu_time(root: &Path) -> Result<Duration, SelfStatError> {
    let path = root.join("proc/self/stat");
    let text = read(&path)?;
    let ticks = parse_cpu_ticks(&text).map_err(|what| SelfStatError::Parse { path, what })?;
    Ok(ticks_to_duration(ticks, clock_ticks_per_second()))
}

/// Resident set size of the calling process in bytes, from `VmRSS` in
/// `ROOT/proc/self/status`.
pub fn rss_bytes(root: &Path) -> Result<u64, SelfStatError> {
    let path = root.join("proc/self/status");
    let text = read(&path)?;
    parse_vm_rss(&text).map_err(|what| SelfStatError::Parse { path, what })
}

fn read(path: &Path) -> Result<String, SelfStatError> {
    fs::read_to_string(path).map_err(|source| SelfStatError::Read { path: path.to_path_buf(), source })
}

/// `utime + stime` (fields 14 and 15) of a `/proc/PID/stat` line, parsed by procfs-core.
fn parse_cpu_ticks(stat: &str) -> Result<u64, String> {
    let stat = parse_stat(stat)?;
    stat.utime.checked_add(stat.stime).ok_or_else(|| "utime + stime overflows".to_string())
}

/// `VmRSS:   1234 kB` → bytes, parsed by procfs-core.
fn parse_vm_rss(status: &str) -> Result<u64, String> {
    let kib = parse_status(status)?.vmrss.ok_or_else(|| "no VmRSS line (a kernel thread?)".to_string())?;
    kib.checked_mul(1024).ok_or_else(|| "VmRSS overflows".to_string())
}

fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf has no preconditions; it returns -1 for an unknown name.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    // Linux reports USER_HZ, 100 on every architecture tierkit runs on.
    u64::try_from(hz).ok().filter(|&hz| hz > 0).unwrap_or(100)
}

fn ticks_to_duration(ticks: u64, hz: u64) -> Duration {
    Duration::from_secs(ticks / hz) + Duration::from_nanos((ticks % hz) * 1_000_000_000 / hz)
}

/// Percent of one core used between successive CPU-time readings.
#[derive(Clone, Copy, Debug)]
pub struct CpuMeter {
    wall: Instant,
    cpu: Duration,
}

impl CpuMeter {
    /// A meter starting now from the CPU time `cpu` (for example [`SelfUsage::cpu`]).
    pub fn new(cpu: Duration) -> Self {
        Self { wall: Instant::now(), cpu }
    }

    /// The CPU time used since the previous reading as a percentage of the wall time
    /// that passed (100 = one core busy), then starts a new interval at `cpu`.
    pub fn update(&mut self, cpu: Duration) -> f64 {
        self.update_at(Instant::now(), cpu)
    }

    fn update_at(&mut self, now: Instant, cpu: Duration) -> f64 {
        let wall = now.saturating_duration_since(self.wall);
        let used = cpu.saturating_sub(self.cpu);
        self.wall = now;
        self.cpu = cpu;
        if wall.is_zero() {
            0.0
        } else {
            used.as_secs_f64() / wall.as_secs_f64() * 100.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `/proc/PID/stat` line of a 6.x kernel (52 fields), the command name holding
    /// spaces and parentheses.
    const STAT: &str = "4242 (a) b (c) R 1 4242 4242 0 -1 4194304 100 0 0 0 250 37 0 0 20 0 1 0 12345 1000 200 \
                        18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0";

    #[test]
    fn stat_fields_are_counted_after_the_last_parenthesis() {
        assert_eq!(parse_cpu_ticks(STAT), Ok(287));
        assert!(parse_cpu_ticks("4242 (x) R 1 2").unwrap_err().contains("missing"));
        assert_eq!(parse_cpu_ticks("no parenthesis"), Err("no command name in parentheses".to_string()));
        // Shapes procfs-core would slice out of bounds are refused before it sees them.
        assert!(parse_cpu_ticks("(x) R").is_err());
        assert!(parse_cpu_ticks("1 (x)").is_err());
        assert!(parse_cpu_ticks("1 (x)R 1").is_err());
    }

    #[test]
    fn vm_rss_is_read_in_kib() {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let with = |rss: &str| {
            let kept = status.lines().filter(|l| !l.starts_with("VmRSS:")).collect::<Vec<_>>().join("\n");
            format!("{kept}\n{rss}")
        };
        assert_eq!(parse_vm_rss(&with("VmRSS:\t    2048 kB\n")), Ok(2 << 20));
        assert!(parse_vm_rss(&with("")).unwrap_err().contains("no VmRSS"), "a kernel thread has none");
        assert!(parse_vm_rss(&with("VmRSS: many kB\n")).unwrap_err().contains("many"));
    }

    #[test]
    fn ticks_convert_exactly() {
        assert_eq!(ticks_to_duration(250, 100), Duration::from_millis(2500));
        assert_eq!(ticks_to_duration(3, 1000), Duration::from_millis(3));
    }

    #[test]
    fn meter_divides_cpu_by_wall_time() {
        let start = Instant::now();
        let mut m = CpuMeter { wall: start, cpu: Duration::from_secs(1) };
        let pct = m.update_at(start + Duration::from_secs(4), Duration::from_secs(2));
        assert!((pct - 25.0).abs() < 1e-9, "{pct}");
        // The same instant again: no time passed, nothing to divide.
        assert_eq!(m.update_at(start + Duration::from_secs(4), Duration::from_secs(3)), 0.0);
    }

    #[test]
    fn own_cpu_time_grows_while_burning_and_rss_is_positive() {
        let root = Path::new("/");
        let before = cpu_time(root).unwrap();
        // Burn until the clock-tick counter moves; bounded so a broken reader fails
        // instead of spinning forever.
        let mut x = 0u64;
        let mut after = before;
        for round in 0..20_000u64 {
            for i in 0..100_000u64 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i ^ round));
            }
            after = cpu_time(root).unwrap();
            if after > before {
                break;
            }
        }
        assert!(after > before, "CPU time did not grow: {before:?} -> {after:?} (x={x})");
        let usage = SelfUsage::read(root).unwrap();
        assert!(usage.rss_bytes > 0);
        assert!(usage.cpu >= after);
    }
}
