//! Memory budgets: a size from user input or a file (a footprint in pages, a workload
//! option, a trace header's count) is checked against the memory the machine has
//! available before anything is allocated for it, so a value too large is an error
//! naming it rather than an aborted process.

use crate::SimError;

/// Bytes the machine can give new allocations without swapping: `MemAvailable` of
/// `/proc/meminfo`. `None` where that is unknown (not Linux, or no such line).
pub fn available() -> Option<u64> {
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
}
