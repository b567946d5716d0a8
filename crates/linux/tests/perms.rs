//! Permission checks against fixture /proc trees (see fixtures/perms/README.md) and
//! the live system.

use std::path::PathBuf;

use tierkit_linux::perms::{
    check_attach, read_perf_event_paranoid, read_ptrace_scope, what_is_missing, Cap, Caps, Need, PermError, Privileges,
};

fn tree(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/perms").join(name)
}

fn refusal(tree_name: &str, pid: u32) -> String {
    match check_attach(&tree(tree_name), pid) {
        Ok(()) => panic!("{tree_name}: pid {pid} was allowed"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn same_user_without_yama_restrictions_is_allowed() {
    check_attach(&tree("user_yama0"), 700).unwrap();
    check_attach(&tree("user_noyama"), 700).unwrap();
    assert_eq!(read_ptrace_scope(&tree("user_noyama")).unwrap(), None);
}

#[test]
fn another_users_process_needs_cap_sys_ptrace() {
    let msg = refusal("user_yama0", 800);
    assert!(msg.contains("pid 800 (rootd)"), "{msg}");
    assert!(msg.contains("runs as uid 0 and tierkit as uid 1000"), "{msg}");
    assert!(msg.contains("CAP_SYS_PTRACE"), "{msg}");
    // A saved uid of root counts: the process could regain root.
    let msg = refusal("user_yama0", 802);
    assert!(msg.contains("uid 1000 (real 1000, effective 1000, saved 0)"), "{msg}");
    // So does a set-group-id program.
    let msg = refusal("user_yama1", 801);
    assert!(msg.contains("runs as gid 50 (real 1000, effective 50, saved 50) and tierkit as gid 1000"), "{msg}");
    // Root with CAP_SYS_PTRACE may attach to anyone.
    check_attach(&tree("root_yama2"), 700).unwrap();
    check_attach(&tree("root_yama2"), 800).unwrap();
}

#[test]
fn yama_scope_1_allows_only_descendants() {
    let root = tree("user_yama1");
    assert_eq!(read_ptrace_scope(&root).unwrap(), Some(1));
    check_attach(&root, 600).unwrap();
    check_attach(&root, 601).unwrap();
    let msg = refusal("user_yama1", 700);
    assert!(msg.contains("kernel.yama.ptrace_scope=1"), "{msg}");
    assert!(msg.contains("tierkit run -- CMD"), "{msg}");
}

#[test]
fn yama_scope_2_needs_the_capability_even_for_children() {
    let msg = refusal("user_yama2", 600);
    assert!(msg.contains("kernel.yama.ptrace_scope=2"), "{msg}");
    assert!(msg.contains("CAP_SYS_PTRACE"), "{msg}");
    check_attach(&tree("root_yama2"), 700).unwrap();
}

#[test]
fn yama_scope_3_refuses_even_root() {
    let msg = refusal("root_yama3", 700);
    assert!(msg.contains("kernel.yama.ptrace_scope=3"), "{msg}");
    assert!(msg.contains("root included"), "{msg}");
}

#[test]
fn missing_and_exited_targets_are_named() {
    assert!(matches!(check_attach(&tree("user_yama1"), 999), Err(PermError::NoSuchProcess(999))));
    let msg = refusal("user_yama1", 900);
    assert!(msg.contains("process 900 (exited) has already exited"), "{msg}");
}

#[test]
fn an_unprivileged_user_is_told_every_missing_privilege() {
    let root = tree("user_yama1");
    let me = Privileges::of_self(&root).unwrap();
    assert_eq!(me, Privileges { euid: 1000, caps: Caps(0) });
    let paranoid = read_perf_event_paranoid(&root).unwrap().unwrap();
    assert_eq!(paranoid, 3);
    let wants = [
        Need::MoveOtherProcessPages,
        Need::AddressSampling { perf_event_paranoid: paranoid },
        Need::DamonSysfs,
        Need::KernelKnobs,
    ];
    let missing = what_is_missing(&me, &wants);
    assert_eq!(missing.len(), 4, "{missing:#?}");
    assert!(missing[0].starts_with("moving another process's pages needs CAP_SYS_NICE"), "{}", missing[0]);
    assert!(
        missing[1].starts_with("address sampling needs CAP_PERFMON or CAP_SYS_ADMIN (perf_event_paranoid=3"),
        "{}",
        missing[1]
    );
    assert!(missing[2].starts_with("DAMON sysfs needs root"), "{}", missing[2]);
    assert!(missing[3].contains("tiering knobs") && missing[3].ends_with("needs root"), "{}", missing[3]);
    // At paranoid 2 an unprivileged user may sample its own processes.
    assert!(what_is_missing(&me, &[Need::AddressSampling { perf_event_paranoid: 2 }]).is_empty());
}

#[test]
fn capabilities_without_root_cover_all_but_sysctls() {
    let caps = Caps([Cap::SYS_NICE, Cap::PERFMON, Cap::DAC_OVERRIDE].iter().fold(0, |m, c| m | 1 << c.0));
    let me = Privileges { euid: 1000, caps };
    let wants = [
        Need::MoveOtherProcessPages,
        Need::AddressSampling { perf_event_paranoid: 3 },
        Need::DamonSysfs,
        Need::KernelKnobs,
    ];
    let missing = what_is_missing(&me, &wants);
    assert_eq!(missing.len(), 1, "{missing:#?}");
    assert!(missing[0].contains("tiering knobs"));
    // CAP_SYS_ADMIN stands in for CAP_PERFMON on older kernels.
    let admin = Privileges { euid: 1000, caps: Caps(1 << Cap::SYS_ADMIN.0) };
    assert!(what_is_missing(&admin, &[Need::AddressSampling { perf_event_paranoid: 3 }]).is_empty());
    let root = Privileges::of_self(&tree("root_yama2")).unwrap();
    assert!(what_is_missing(&root, &wants).is_empty());
}

#[test]
fn live_system_self_and_child_are_attachable_and_a_reaped_pid_is_not() {
    let root = std::path::Path::new("/");
    check_attach(root, std::process::id()).unwrap();
    let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
    let pid = child.id();
    let result = check_attach(root, pid);
    child.kill().unwrap();
    child.wait().unwrap();
    // Yama 2 or 3 on the test machine would legitimately refuse; anything else must pass.
    if read_ptrace_scope(root).unwrap().unwrap_or(0) <= 1 {
        result.unwrap();
    }
    assert!(matches!(check_attach(root, pid), Err(PermError::NoSuchProcess(p)) if p == pid));
}
