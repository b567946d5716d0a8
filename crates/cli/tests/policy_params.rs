//! Policy parameters from the command line: `POLICY:KEY=VALUE` wherever a policy is
//! named, and `tierkit list --params POLICY`.

mod common;

use common::tierkit;
use tierkit_core::policies::{HybridTierParams, LedgerParams};

#[test]
fn list_params_prints_each_parameter_with_its_default_and_source() {
    let (code, out, err) = tierkit(&["list", "--params", "hybridtier"]);
    assert_eq!(code, Some(0), "{err}");
    let default = HybridTierParams::default().momentum_threshold;
    assert!(out.contains(&format!("\n  momentum_threshold = {default}\n")), "{out}");
    // The doc comment follows, wrapped: it names the paper the default comes from.
    let about = &out[out.find("momentum_threshold =").unwrap()..];
    let about = &about[..about[1..].find("\n\n").unwrap()];
    assert!(about.contains("HybridTier") || about.contains("§"), "{about}");

    let (code, out, _) = tierkit(&["list", "--params", "tierkit+colloid"]);
    assert_eq!(code, Some(0));
    assert!(out.contains(&format!("\n  ledger.memory_ticks = {}\n", LedgerParams::default().memory_ticks)), "{out}");
    assert!(out.contains("\n  colloid.delta = "), "Colloid's own under colloid.: {out}");

    let (code, out, _) = tierkit(&["list", "--params", "lru-cache"]);
    assert_eq!((code, out.trim()), (Some(0), "lru-cache has no parameters."));
    let (code, _, err) = tierkit(&["list", "--params", "hybridtire"]);
    assert!(code != Some(0) && err.contains("unknown policy \"hybridtire\"") && err.contains("hybridtier"), "{err}");
}

const SMALL: [&str; 6] = ["--workload", "zipf", "--pages", "4000", "--accesses", "400000"];

fn compare(policies: &str) -> (Option<i32>, String, String) {
    let args: Vec<&str> =
        ["compare", "--ratios", "1:16", "--csv", "--policies", policies].into_iter().chain(SMALL).collect();
    tierkit(&args)
}

#[test]
fn a_setting_changes_the_run_and_names_its_row() {
    let (code, out, err) = compare("tierkit,tierkit:sample_rate_hz=1000:ledger.memory_ticks=40");
    assert_eq!(code, Some(0), "{err}");
    let row = |name: &str| -> Vec<String> {
        let line = out.lines().find(|l| l.split(',').nth(2) == Some(name)).unwrap_or_else(|| panic!("{name}: {out}"));
        line.split(',').map(str::to_string).collect()
    };
    let (default, tuned) = (row("tierkit"), row("tierkit:sample_rate_hz=1000:ledger.memory_ticks=40"));
    // A hundredth of the samples: fewer pages reach the hot threshold.
    let promotions = |r: &[String]| -> u64 { r[7].parse().unwrap() };
    assert!(promotions(&tuned) < promotions(&default), "{default:?} vs {tuned:?}");
}

#[test]
fn bad_settings_are_refused_by_name() {
    for (spec, says) in [
        ("hybridtier:momentum_treshold=5", "invalid momentum_treshold = 5: expected a parameter: one of "),
        ("hybridtier:momentum_threshold=many", "invalid momentum_threshold = many: expected a whole number"),
        ("tierkit:ledger.memory_ticks=0", "invalid ledger = 0"),
        ("hemem+colloid:colloid.delta=2", "invalid colloid.delta = 2: expected 0 < delta < 1"),
        ("hemem:8", "invalid settings = \"8\""),
        ("lru-cache:rate=1", "lru-cache has no parameters"),
    ] {
        let (code, _, err) = compare(spec);
        assert!(code != Some(0) && err.contains(says), "{spec}: {err}");
    }
}

#[test]
fn a_closed_stdout_ends_a_printing_command_by_sigpipe_not_a_panic() {
    use std::os::unix::process::ExitStatusExt;
    // The reader is gone before the command starts: its first write meets a closed pipe,
    // as `tierkit list --params tierkit | head -1` does once head has exited.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tierkit"))
        .args(["list", "--params", "tierkit"])
        .stdout(writer)
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{:?}: {err}", out.status);
    assert!(!err.contains("panicked"), "{err}");
}
