//! Memory budgets: a size from user input or a file (a footprint in pages, a workload
//! option, a trace header's count) is checked against the memory the machine has
//! available before anything is allocated for it, so a value too large is an error
//! naming it rather than an aborted process.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::SimError;

/// The most [`available`] reports, whatever the machine has ([`cap`]).
static CAP: AtomicU64 = AtomicU64::new(u64::MAX);

/// Makes [`available`] report at most `bytes` for the rest of the process, so that a
/// harness standing for a smaller machine (a fuzz target under a memory limit) has
/// sizes beyond it refused as they would be there.
pub fn cap(bytes: u64) {
    CAP.store(bytes, Ordering::Relaxed);
}

/// Bytes the machine can give new allocations without swapping: `MemAvailable` of
/// `/proc/meminfo`, at most the [`cap`]. `None` where that is unknown (not Linux, or no
/// such line) and no cap is set.
pub fn available() -> Option<u64> {
    capped(mem_available(), CAP.load(Ordering::Relaxed))
}

/// What is available under `cap` when the machine has `machine` (`u64::MAX`: no cap).
fn capped(machine: Option<u64>, cap: u64) -> Option<u64> {
    match machine {
        Some(bytes) => Some(bytes.min(cap)),
        None => (cap < u64::MAX).then_some(cap),
    }
}

fn mem_available() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find_map(|l| l.strip_prefix("MemAvailable:"))?;
    line.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()?.checked_mul(1024)
}

/// Fails with [`SimError::TooLarge`] when `need` bytes are more than [`available`]:
/// `input` names the value asking for them (e.g. "workload zipf: pages = 100000000000")
/// and `what` what they are for (e.g. "the run"). Where the available memory is unknown
/// nothing is refused.
pub fn check(need: u128, input: impl FnOnce() -> String, what: &str) -> Result<(), SimError> {
    match available() {
        Some(available) if need > u128::from(available) => {
            Err(SimError::TooLarge { input: input(), what: what.to_string(), need, available })
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_no_machine_holds_is_refused_naming_the_input() {
        if available().is_none() {
            return; // Nothing to compare with: nothing is refused.
        }
        let e = check(1 << 100, || "workload zipf: pages = 7".into(), "the run").unwrap_err().to_string();
        assert!(e.starts_with("workload zipf: pages = 7: the run needs ~"), "{e}");
        assert!(e.contains(" EiB, the machine has ") && e.ends_with(" available"), "{e}");
        assert!(check(1, || unreachable!("only an error names the input"), "the run").is_ok());
    }

    #[test]
    fn a_cap_lowers_what_is_available_and_stands_in_for_an_unknown_machine() {
        assert_eq!(capped(Some(8 << 30), 1 << 20), Some(1 << 20));
        assert_eq!(capped(Some(1 << 10), 1 << 20), Some(1 << 10));
        assert_eq!(capped(None, 1 << 20), Some(1 << 20));
        assert_eq!(capped(Some(8 << 30), u64::MAX), Some(8 << 30));
        assert_eq!(capped(None, u64::MAX), None);
    }
}
