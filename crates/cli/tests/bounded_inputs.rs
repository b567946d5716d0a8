//! A size no machine holds (`--pages`, `--accesses`) ends the command with a failure
//! status and one error line naming it, before anything is allocated or written, never
//! an aborted process.

mod common;

use common::tierkit;

/// Checks `args` fail with exit status 1 and the one line `Error: {input}: {what} needs ~...`.
fn refused(args: &[&str], input: &str, what: &str) {
    let (code, _, err) = tierkit(args);
    assert_eq!(code, Some(1), "{args:?}: exit status {code:?} (None: killed by a signal), stderr {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].starts_with(&format!("Error: {input}: {what} needs ~")), "{err}");
    assert!(lines[0].contains(", the machine has ") && lines[0].ends_with(" available"), "{err}");
}

#[test]
fn sizes_no_machine_holds_are_refused_naming_them() {
    if tierkit_sim::budget::available().is_none() {
        return; // Not Linux: nothing to check sizes against.
    }
    refused(
        &["sim", "--workload", "zipf", "--policy", "lru", "--pages", "100000000000"],
        "workload zipf: pages = 100000000000",
        "the run",
    );
    let out = std::env::temp_dir().join(format!("tierkit-bounded-{}.og", std::process::id()));
    let file = out.display().to_string();
    refused(
        &["trace", "write", "--workload", "zipf", "--accesses", "100000000000000", "-o", &file],
        "workload zipf: accesses = 100000000000000",
        "writing it as oracle-general",
    );
    assert!(!out.exists(), "nothing written");
}
