//! Permissions: may tierkit manage this process, and which privileges are missing for
//! what the user asked?
//!
//! [`check_attach`] refuses, with a message saying what to do, a target the caller could
//! not ptrace: the kernel's ptrace rules (same user and group, or `CAP_SYS_PTRACE`),
//! then Yama's `kernel.yama.ptrace_scope`, then the kernel itself by opening
//! `/proc/PID/mem` (which performs the ptrace-attach check, catching non-dumpable
//! targets and other user namespaces). [`what_is_missing`] explains which capability a
//! mechanism needs. Everything reads procfs under a root directory (`/` on a live
//! system) so tests run on fixture trees.
//!
//! Under `ptrace_scope=1`, a target that named tierkit as its tracer with
//! `prctl(PR_SET_PTRACER)` is still refused without `CAP_SYS_PTRACE`: that exception is
//! not visible in procfs.

use std::borrow::Cow;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Linux capability names by number (`capability.h`).
const CAP_NAMES: [&str; 41] = [
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_DAC_READ_SEARCH",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
    "CAP_NET_ADMIN",
    "CAP_NET_RAW",
    "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",
    "CAP_SYS_MODULE",
    "CAP_SYS_RAWIO",
    "CAP_SYS_CHROOT",
    "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",
    "CAP_SYS_ADMIN",
    "CAP_SYS_BOOT",
    "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",
    "CAP_SYS_TTY_CONFIG",
    "CAP_MKNOD",
    "CAP_LEASE",
    "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL",
    "CAP_SETFCAP",
    "CAP_MAC_OVERRIDE",
    "CAP_MAC_ADMIN",
    "CAP_SYSLOG",
    "CAP_WAKE_ALARM",
    "CAP_BLOCK_SUSPEND",
    "CAP_AUDIT_READ",
    "CAP_PERFMON",
    "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE",
];

/// One Linux capability, by number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cap(pub u8);

impl Cap {
    /// Bypass file permission checks (writing root-only sysfs files).
    pub const DAC_OVERRIDE: Cap = Cap(1);
    /// Trace any process.
    pub const SYS_PTRACE: Cap = Cap(19);
    /// Administration, including perf sampling on kernels before 5.8.
    pub const SYS_ADMIN: Cap = Cap(21);
    /// Move pages shared with other processes (`MPOL_MF_MOVE_ALL`).
    pub const SYS_NICE: Cap = Cap(23);
    /// Performance monitoring (perf events).
    pub const PERFMON: Cap = Cap(38);

    /// The capability's name (`"CAP_SYS_NICE"`), or `"CAP_N"` for one newer than the
    /// table.
    pub fn name(self) -> Cow<'static, str> {
        match CAP_NAMES.get(self.0 as usize) {
            Some(name) => Cow::Borrowed(name),
            None => Cow::Owned(format!("CAP_{}", self.0)),
        }
    }
}

impl fmt::Display for Cap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// A capability set as the 64-bit mask in `/proc/PID/status` (`CapEff`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Caps(pub u64);

impl Caps {
    /// Parses the hexadecimal mask of a `CapEff:` line.
    pub fn parse_hex(hex: &str) -> Option<Caps> {
        u64::from_str_radix(hex.trim(), 16).ok().map(Caps)
    }

    /// Whether `cap` is in the set.
    pub fn has(self, cap: Cap) -> bool {
        cap.0 < 64 && self.0 & (1 << cap.0) != 0
    }

    /// The capabilities in the set, in number order.
    pub fn iter(self) -> impl Iterator<Item = Cap> {
        (0..64u8).map(Cap).filter(move |&c| self.has(c))
    }
}

impl fmt::Display for Caps {
    /// Comma-separated names, or `none`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return f.write_str("none");
        }
        for (i, cap) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(&cap.name())?;
        }
        Ok(())
    }
}

/// Why tierkit may not manage a process, or could not find out.
#[derive(Debug, thiserror::Error)]
pub enum PermError {
    /// No such process.
    #[error("no process with pid {0} (it never existed or has exited)")]
    NoSuchProcess(u32),
    /// The process is a zombie.
    #[error("process {pid} ({name}) has already exited; nothing to tier")]
    Exited {
        /// The pid.
        pid: u32,
        /// Its command name.
        name: String,
    },
    /// The target runs as another user or group.
    #[error(
        "cannot attach to pid {pid} ({name}): it runs as {kind} {target} and tierkit as {kind} {caller}; \
         managing another user's process needs CAP_SYS_PTRACE (run tierkit as root, or as the target's user)"
    )]
    DifferentUser {
        /// The pid.
        pid: u32,
        /// Its command name.
        name: String,
        /// `"uid"` or `"gid"`.
        kind: &'static str,
        /// The target's real/effective/saved ids, formatted.
        target: String,
        /// tierkit's real id.
        caller: u32,
    },
    /// Yama's ptrace scope forbids the attach.
    #[error("cannot attach to pid {pid} ({name}): kernel.yama.ptrace_scope={scope}: {why}")]
    Yama {
        /// The pid.
        pid: u32,
        /// Its command name.
        name: String,
        /// The scope.
        scope: u8,
        /// What the scope allows and what to do.
        why: &'static str,
    },
    /// The kernel refused ptrace access although the ids match.
    #[error(
        "cannot attach to pid {pid} ({name}): the kernel refused ptrace access to {path} ({source}); the process \
         may be non-dumpable (setuid/setgid, or prctl(PR_SET_DUMPABLE, 0)) or in another user namespace; \
         run tierkit with CAP_SYS_PTRACE"
    )]
    KernelRefused {
        /// The pid.
        pid: u32,
        /// Its command name.
        name: String,
        /// The file whose opening was refused.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// A procfs file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// A procfs file had an unexpected shape.
    #[error("cannot parse {path}: {what}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What was missing or malformed.
        what: String,
    },
}

/// The identity lines of `/proc/PID/status`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcCreds {
    /// Command name (`Name:`).
    pub name: String,
    /// State letter (`State:`), `Z` for a zombie.
    pub state: char,
    /// Process id (`Pid:`).
    pub pid: u32,
    /// Parent's pid (`PPid:`), 0 for none.
    pub ppid: u32,
    /// Real, effective, saved and filesystem uid (`Uid:`).
    pub uids: [u32; 4],
    /// Real, effective, saved and filesystem gid (`Gid:`).
    pub gids: [u32; 4],
    /// Effective capabilities (`CapEff:`).
    pub cap_eff: Caps,
}

impl ProcCreds {
    /// Reads `ROOT/proc/WHO/status`, where `who` is a pid or `"self"`. A missing file
    /// is [`PermError::NoSuchProcess`] (with pid 0 for `self`).
    pub fn read(root: &Path, who: &str) -> Result<ProcCreds, PermError> {
        let path = root.join("proc").join(who).join("status");
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ESRCH)) => {
                return Err(PermError::NoSuchProcess(who.parse().unwrap_or(0)))
            }
            Err(source) => return Err(PermError::Read { path, source }),
        };
        Self::parse(&text).map_err(|what| PermError::Parse { path, what })
    }

    /// The identity lines, parsed by procfs-core.
    fn parse(text: &str) -> Result<ProcCreds, String> {
        let s = crate::memory::procfs::parse_status(text)?;
        let id = |n: i32, what: &str| u32::try_from(n).map_err(|_| format!("negative {what} {n}"));
        Ok(ProcCreds {
            state: s.state.chars().next().ok_or_else(|| "an empty State line".to_string())?,
            pid: id(s.pid, "Pid")?,
            ppid: id(s.ppid, "PPid")?,
            uids: [s.ruid, s.euid, s.suid, s.fuid],
            gids: [s.rgid, s.egid, s.sgid, s.fgid],
            cap_eff: Caps(s.capeff),
            name: s.name,
        })
    }
}

/// `kernel.yama.ptrace_scope` from `ROOT/proc/sys/kernel/yama/ptrace_scope`; `None`
/// when the kernel has no Yama (classic ptrace rules apply).
pub fn read_ptrace_scope(root: &Path) -> Result<Option<u8>, PermError> {
    read_sysctl(&root.join("proc/sys/kernel/yama/ptrace_scope"))
}

/// `kernel.perf_event_paranoid` from `ROOT/proc/sys/kernel/perf_event_paranoid`;
/// `None` when the kernel has no perf events.
pub fn read_perf_event_paranoid(root: &Path) -> Result<Option<i32>, PermError> {
    read_sysctl(&root.join("proc/sys/kernel/perf_event_paranoid"))
}

fn read_sysctl<T: std::str::FromStr>(path: &Path) -> Result<Option<T>, PermError> {
    match fs::read_to_string(path) {
        Ok(text) => text
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| PermError::Parse { path: path.to_path_buf(), what: "a number".into() }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(PermError::Read { path: path.to_path_buf(), source }),
    }
}

/// Checks that the calling process (`ROOT/proc/self`) could ptrace `target_pid`, the
/// precondition for reading its page map, moving its pages and sampling it:
///
/// 1. the target exists and has not exited;
/// 2. tierkit's real uid and gid equal the target's real, effective and saved ones, or
///    tierkit has `CAP_SYS_PTRACE` (the kernel's `ptrace_may_access`);
/// 3. Yama's `ptrace_scope`: 0 no restriction, 1 only descendants without
///    `CAP_SYS_PTRACE`, 2 only with `CAP_SYS_PTRACE`, 3 nobody;
/// 4. the kernel lets tierkit open `/proc/PID/mem` (read-only, nothing is read).
pub fn check_attach(root: &Path, target_pid: u32) -> Result<(), PermError> {
    let caller = ProcCreds::read(root, "self")?;
    let target = ProcCreds::read(root, &target_pid.to_string()).map_err(|e| match e {
        PermError::NoSuchProcess(_) => PermError::NoSuchProcess(target_pid),
        other => other,
    })?;
    let (pid, name) = (target_pid, target.name.clone());
    if matches!(target.state, 'Z' | 'X') {
        return Err(PermError::Exited { pid, name });
    }
    if target.pid == caller.pid {
        // The kernel always lets a process access itself.
        return Ok(());
    }
    let can_ptrace_any = caller.cap_eff.has(Cap::SYS_PTRACE);
    if !can_ptrace_any {
        for (kind, caller_id, ids) in [("uid", caller.uids[0], target.uids), ("gid", caller.gids[0], target.gids)] {
            if ids[..3].iter().any(|&id| id != caller_id) {
                let target = if ids[0] == ids[1] && ids[1] == ids[2] {
                    ids[0].to_string()
                } else {
                    format!("{} (real {}, effective {}, saved {})", ids[1], ids[0], ids[1], ids[2])
                };
                return Err(PermError::DifferentUser { pid, name, kind, target, caller: caller_id });
            }
        }
    }
    let yama = |scope, why| Err(PermError::Yama { pid, name: name.clone(), scope, why });
    match read_ptrace_scope(root)? {
        None | Some(0) => {}
        Some(1) if can_ptrace_any || is_descendant(root, &target, caller.pid) => {}
        Some(1) => {
            return yama(
                1,
                "only a process's ancestors may trace it without CAP_SYS_PTRACE; run tierkit as root, start the \
                 program under tierkit (`tierkit run -- CMD`), or set kernel.yama.ptrace_scope=0",
            )
        }
        Some(2) if can_ptrace_any => {}
        Some(2) => return yama(2, "only processes with CAP_SYS_PTRACE may trace; run tierkit as root"),
        Some(scope) => {
            return yama(scope, "ptrace attach is disabled for everyone, root included, until the next reboot")
        }
    }
    let mem = root.join("proc").join(target_pid.to_string()).join("mem");
    match fs::File::open(&mem) {
        Ok(_) => Ok(()),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM)) => {
            Err(PermError::KernelRefused { pid, name, path: mem, source: e })
        }
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ESRCH)) => {
            Err(PermError::NoSuchProcess(pid))
        }
        Err(source) => Err(PermError::Read { path: mem, source }),
    }
}

/// Whether `ancestor` is on `target`'s parent chain. Unreadable links end the walk.
fn is_descendant(root: &Path, target: &ProcCreds, ancestor: u32) -> bool {
    let mut ppid = target.ppid;
    // Bounded: a pid chain is never longer than the pid space, and a fixture could loop.
    for _ in 0..4096 {
        if ppid == ancestor {
            return true;
        }
        if ppid <= 1 {
            return false;
        }
        match ProcCreds::read(root, &ppid.to_string()) {
            Ok(parent) => ppid = parent.ppid,
            Err(_) => return false,
        }
    }
    false
}

/// tierkit's own privileges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Privileges {
    /// Effective uid (0 = root).
    pub euid: u32,
    /// Effective capabilities.
    pub caps: Caps,
}

impl Privileges {
    /// Reads them from `ROOT/proc/self/status`.
    pub fn of_self(root: &Path) -> Result<Privileges, PermError> {
        let me = ProcCreds::read(root, "self")?;
        Ok(Privileges { euid: me.uids[1], caps: me.cap_eff })
    }
}

/// A mechanism that needs privilege.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// `move_pages(2)` on another process, including pages it shares with others
    /// (`MPOL_MF_MOVE_ALL`).
    MoveOtherProcessPages,
    /// Per-process, user-space `perf_event_open` address sampling, under this
    /// `kernel.perf_event_paranoid`.
    AddressSampling {
        /// The sysctl's value ([`read_perf_event_paranoid`]).
        perf_event_paranoid: i32,
    },
    /// Writing DAMON's sysfs interface (`/sys/kernel/mm/damon/admin`, root-only files).
    DamonSysfs,
    /// Writing the kernel's tiering knobs (`kernel.numa_balancing`,
    /// `/sys/kernel/mm/numa/demotion_enabled`).
    KernelKnobs,
}

/// One message per entry of `wants` that `me` lacks the privilege for, saying what is
/// missing; empty when everything is allowed.
pub fn what_is_missing(me: &Privileges, wants: &[Need]) -> Vec<String> {
    wants.iter().filter_map(|need| missing(me, *need)).collect()
}

fn missing(me: &Privileges, need: Need) -> Option<String> {
    let root = me.euid == 0;
    match need {
        Need::MoveOtherProcessPages if !me.caps.has(Cap::SYS_NICE) => Some(
            "moving another process's pages needs CAP_SYS_NICE for the pages it shares with other processes \
             (move_pages MPOL_MF_MOVE_ALL); without it only its private pages move"
                .to_string(),
        ),
        // Unprivileged per-process user-space sampling is allowed up to 2; Debian and
        // Android kernels use 3 to forbid unprivileged perf_event_open altogether.
        Need::AddressSampling { perf_event_paranoid }
            if perf_event_paranoid > 2 && !me.caps.has(Cap::PERFMON) && !me.caps.has(Cap::SYS_ADMIN) =>
        {
            Some(format!(
                "address sampling needs CAP_PERFMON or CAP_SYS_ADMIN (perf_event_paranoid={perf_event_paranoid}; \
                 as root, `sysctl kernel.perf_event_paranoid=2` allows sampling your own processes)"
            ))
        }
        Need::DamonSysfs if !root && !me.caps.has(Cap::DAC_OVERRIDE) => {
            Some("DAMON sysfs needs root (/sys/kernel/mm/damon/admin is writable only by root)".to_string())
        }
        // sysctl files check the effective uid itself, not capabilities.
        Need::KernelKnobs if !root => Some(
            "changing the kernel's tiering knobs (kernel.numa_balancing, /sys/kernel/mm/numa/demotion_enabled) \
             needs root"
                .to_string(),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_parse() {
        let text = "Name:\tmy prog\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t7\nNgid:\t0\nPid:\t7\nPPid:\t1\n\
                    TracerPid:\t0\nUid:\t1000\t0\t0\t0\nGid:\t100\t100\t100\t100\nFDSize:\t64\nGroups:\t100\n\
                    Threads:\t1\nSigQ:\t0/63419\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n\
                    SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\nSigCgt:\t0000000000000000\n\
                    CapInh:\t0000000000000000\nCapPrm:\t0000000000800000\nCapEff:\t0000000000800000\n";
        let c = ProcCreds::parse(text).unwrap();
        assert_eq!(c.name, "my prog");
        assert_eq!((c.state, c.pid, c.ppid), ('S', 7, 1));
        assert_eq!(c.uids, [1000, 0, 0, 0]);
        assert_eq!(c.gids, [100; 4]);
        assert!(c.cap_eff.has(Cap::SYS_NICE));
        assert!(!c.cap_eff.has(Cap::SYS_PTRACE));
        let err = ProcCreds::parse("Name:\tx\nState:\tR\nPid:\t1\nPPid:\t0\n").unwrap_err();
        assert!(err.contains("a field is missing"), "{err}");
        let err = ProcCreds::parse(&text.replace("Uid:\t1000", "Uid:\tme")).unwrap_err();
        assert!(err.contains("\"me\""), "the crate names the bad value: {err}");
    }

    #[test]
    fn own_status_reads_through_procfs_core() {
        let me = ProcCreds::read(Path::new("/"), "self").unwrap();
        assert_eq!(me.pid, std::process::id());
        // SAFETY: getuid has no preconditions.
        assert_eq!(me.uids[0], unsafe { libc::getuid() });
        assert!(me.state == 'R' || me.state == 'S', "{me:?}");
        assert_eq!(me.ppid, std::os::unix::process::parent_id());
    }

    #[test]
    fn caps_name_themselves() {
        assert_eq!(Caps(0).to_string(), "none");
        assert_eq!(Caps((1 << 19) | (1 << 38)).to_string(), "CAP_SYS_PTRACE,CAP_PERFMON");
        assert_eq!(Cap(50).name(), "CAP_50");
        assert_eq!(Caps::parse_hex("000001ffffffffff").unwrap().iter().count(), 41);
        assert_eq!(Caps::parse_hex("zz"), None);
    }
}
