//! `tierkit topology` on this host and on fixture sysfs trees (via `TIERKIT_SYSFS_ROOT`).

use std::path::PathBuf;
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../linux/tests/fixtures/topology").join(name)
}

fn topology(root: Option<&str>, args: &[&str]) -> (bool, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tierkit"));
    cmd.arg("topology").args(args).env_remove("TIERKIT_SYSFS_ROOT");
    if let Some(name) = root {
        cmd.env("TIERKIT_SYSFS_ROOT", fixture(name));
    }
    let out = cmd.output().unwrap();
    (out.status.success(), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn this_host_has_one_node_and_says_so() {
    let nodes = std::fs::read_to_string("/sys/devices/system/node/online").unwrap_or_default();
    let (ok, out, err) = topology(None, &[]);
    assert!(ok, "{err}");
    assert!(out.starts_with("node  class"), "{out}");
    if nodes.trim() == "0" {
        assert!(out.contains("one NUMA node: nothing to tier"), "{out}");
        let (ok, json, _) = topology(None, &["--json"]);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert!(ok && v["has_tiering"] == false && v["nodes"].as_array().unwrap().len() == 1, "{json}");
    }
}

#[test]
fn qemu_guest_reports_node1_as_the_slow_tier() {
    let (ok, out, err) = topology(Some("qemu-tier"), &[]);
    assert!(ok, "{err}");
    assert!(out.contains("tier 1 slow: node 1"), "{out}");
    let (_, json, _) = topology(Some("qemu-tier"), &["--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["has_tiering"], true);
    assert_eq!(v["nodes"][1]["class"], "slow");
    assert_eq!(v["nothing_to_tier"], serde_json::Value::Null);
}

#[test]
fn overrides_apply_and_bad_ones_are_named() {
    let (ok, out, err) = topology(Some("cxl-4node"), &["--fast", "0,1,2", "--slow", "3"]);
    assert!(ok, "{err}");
    assert!(out.contains("tier 0 fast: nodes 0-2") && out.contains("(as overridden)"), "{out}");
    let (ok, _, err) = topology(Some("cxl-4node"), &["--slow", "9"]);
    assert!(!ok && err.contains("--slow names node 9"), "{err}");
    let (ok, _, err) = topology(Some("cxl-4node"), &["--fast", "zero"]);
    assert!(!ok && err.contains("node list \"zero\""), "{err}");
}
