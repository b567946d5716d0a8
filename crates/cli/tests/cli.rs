//! The `tierkit` binary as a user runs it.

use std::process::Command;

fn tierkit(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tierkit")).args(args).output().unwrap();
    (out.status.success(), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn help_lists_the_subcommands() {
    let (ok, out, _) = tierkit(&["--help"]);
    assert!(ok);
    assert!(out.contains("sketches"), "{out}");
}

#[test]
fn sketches_reports_filters_far_below_per_page_metadata() {
    let (ok, out, err) = tierkit(&["sketches", "--fast", "1GiB", "--ratio", "1:16", "--json"]);
    assert!(ok, "{err}");
    let bytes = |name: &str| -> u64 {
        let at = out.find(&format!("\"structure\":\"{name}\"")).unwrap_or_else(|| panic!("{name} missing: {out}"));
        let rest = &out[at..];
        let v = &rest[rest.find("\"heap_bytes\":").unwrap() + 13..];
        v[..v.find(',').unwrap()].parse().unwrap()
    };
    // 1 GiB fast = 262144 pages x 20.43 counters x 4 bits.
    assert!((2_600_000..2_800_000).contains(&bytes("cbf")));
    // 17 GiB managed x 262144 pages/GiB x 16 B / load 3/4, rounded to a power of two.
    assert!(bytes("exact-map") >= 17 * 262_144 * 16);
    assert!(out.contains("\"managed_gib\":17"), "{out}");
    let (ok, table, _) = tierkit(&["sketches"]);
    assert!(ok && table.contains("per managed GiB") && table.contains("blocked-cbf"), "{table}");
}

#[test]
fn bad_sizes_and_ratios_are_named() {
    let (ok, _, err) = tierkit(&["sketches", "--ratio", "1-16"]);
    assert!(!ok && err.contains("ratio \"1-16\""), "{err}");
    let (ok, _, err) = tierkit(&["sketches", "--fast", "12 parsecs"]);
    assert!(!ok && err.contains("unknown unit"), "{err}");
}
