//! Which perf sampling source works here, or why not.
//!
//! Tried in order for [`PerfKind::Auto`]: Intel PEBS load latency (`cpu/mem-loads`),
//! AMD IBS op (`ibs_op`), then software page faults, which carry the faulting address
//! and work everywhere perf events exist (virtual machines included). Each kind is
//! first planned from sysfs ([`plan`]), then checked against `perf_event_paranoid` and
//! the caller's capabilities ([`privilege_reason`]), then probed with a real
//! `perf_event_open(2)` on the target, so that every refusal comes back as a reason.
//!
//! Events are per thread (`pid = tid, cpu = -1`): that needs no privilege beyond
//! ptrace access to the target under `perf_event_paranoid` 2, samples only the target,
//! and gives each thread its own ring. `inherit` cannot be used with a per-thread ring
//! (the kernel refuses to mmap inherited `cpu = -1` events), so threads that appear
//! later are opened by [`super::PerfSource::refresh_threads`]. Per-CPU events
//! (`pid = -1`, samples of other processes filtered out) are the fallback for PMUs with
//! no per-task context, as AMD IBS on kernels before per-task IBS support.
//!
//! On hybrid Intel CPUs PEBS uses the `cpu_core` PMU: threads are sampled only while
//! they run on performance cores.

use std::fmt;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::str::FromStr;

use super::attr::{self, flag, PerfEventAttr, PERF_COUNT_SW_PAGE_FAULTS, PERF_TYPE_SOFTWARE};
use super::error::{open_hint, Errno, PerfError, Unavailable};
use super::pmu;
use super::record::{sample, SampleFormat};
use super::source::PerfConfig;

/// The sample fields every tierkit perf event asks for.
pub const SAMPLE_TYPE: u64 = sample::IP | sample::TID | sample::TIME | sample::ADDR | sample::WEIGHT | sample::DATA_SRC;

/// `CAP_SYS_ADMIN` and `CAP_PERFMON` bit numbers in `CapEff`.
const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;

/// Which perf event delivers address samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum PerfKind {
    /// The first of PEBS, IBS, page faults that works here.
    #[default]
    Auto,
    /// Intel PEBS load-latency sampling (`cpu/mem-loads/`).
    Pebs,
    /// AMD IBS op sampling (`ibs_op//`).
    Ibs,
    /// Software page-fault events with the faulting address: first touches, NUMA hint
    /// faults and other faults rather than cache misses, but available everywhere.
    PageFaults,
}

impl fmt::Display for PerfKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PerfKind::Auto => "perf address sampling",
            PerfKind::Pebs => "Intel PEBS load latency",
            PerfKind::Ibs => "AMD IBS op",
            PerfKind::PageFaults => "software page-fault sampling",
        })
    }
}

impl FromStr for PerfKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(PerfKind::Auto),
            "pebs" => Ok(PerfKind::Pebs),
            "ibs" => Ok(PerfKind::Ibs),
            "page-faults" | "pagefaults" => Ok(PerfKind::PageFaults),
            other => Err(format!("unknown perf event kind {other:?} (expected auto, pebs, ibs or page-faults)")),
        }
    }
}

/// How events cover the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Scope {
    /// Per thread, or per CPU when the PMU cannot count per task.
    #[default]
    Auto,
    /// One event per thread of the target (`pid = tid, cpu = -1`).
    Threads,
    /// One event per online CPU (`pid = -1`), other processes' samples dropped. Needs
    /// `CAP_PERFMON` or `perf_event_paranoid` ≤ 0.
    Cpus,
}

/// A concrete event to open: the result of detection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventSpec {
    /// PEBS, IBS or page faults (never `Auto`).
    pub kind: PerfKind,
    /// The PMU's sysfs name (`cpu`, `cpu_core`, `ibs_op`) or `software`.
    pub pmu: String,
    /// `perf_event_attr.type`.
    pub pmu_type: u32,
    /// `config`, `config1`, `config2`, `config3`.
    pub config: [u64; 4],
    /// Config of the `mem-loads-aux` event that must lead a load-latency event's group
    /// (Intel Sapphire Rapids and later), on the same PMU.
    pub aux_leader: Option<[u64; 4]>,
    /// `precise_ip` (0..=3).
    pub precise_ip: u8,
    /// Samples in kernel mode are excluded.
    pub exclude_kernel: bool,
    /// Samples in the hypervisor are excluded.
    pub exclude_hv: bool,
    /// One sample every `period` events.
    pub period: u64,
    /// Per thread or per CPU (`Auto` until the probe decides).
    pub scope: Scope,
}

impl fmt::Display for EventSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({} type {}, config {:#x}, config1 {:#x}, config2 {:#x}, precise_ip {}, period {}, {}{})",
            self.kind,
            self.pmu,
            self.pmu_type,
            self.config[0],
            self.config[1],
            self.config[2],
            self.precise_ip,
            self.period,
            if self.exclude_kernel { "user only" } else { "user and kernel" },
            match self.scope {
                Scope::Cpus => ", per CPU",
                _ => ", per thread",
            }
        )
    }
}

/// The event file descriptors of one thread or CPU: the sampling event, and the group
/// leader it needs, if any.
#[derive(Debug)]
pub struct EventFds {
    /// The sampling event (its ring buffer is mapped on this descriptor).
    pub event: OwnedFd,
    /// The `mem-loads-aux` group leader; enable and disable go through it.
    pub leader: Option<OwnedFd>,
}

impl EventFds {
    /// The descriptor that enables and disables the whole group.
    pub fn control(&self) -> &OwnedFd {
        self.leader.as_ref().unwrap_or(&self.event)
    }
}

impl EventSpec {
    /// The `perf_event_attr` of the sampling event (disabled unless it joins a group).
    pub fn attr(&self) -> PerfEventAttr {
        let mut a = PerfEventAttr::new(self.pmu_type, self.config);
        a.sample_period = self.period;
        a.sample_type = SAMPLE_TYPE;
        a.flags = flag::USE_CLOCKID | self.exclude_flags();
        if self.aux_leader.is_none() {
            a.flags |= flag::DISABLED;
        }
        a.set_precise_ip(self.precise_ip);
        a.clockid = libc::CLOCK_MONOTONIC;
        a
    }

    /// The counting (non-sampling) `mem-loads-aux` group leader, if the event needs one.
    fn leader_attr(&self) -> Option<PerfEventAttr> {
        let config = self.aux_leader?;
        let mut a = PerfEventAttr::new(self.pmu_type, config);
        a.flags = flag::DISABLED | self.exclude_flags();
        Some(a)
    }

    fn exclude_flags(&self) -> u64 {
        let mut f = 0;
        if self.exclude_kernel {
            f |= flag::EXCLUDE_KERNEL;
        }
        if self.exclude_hv {
            f |= flag::EXCLUDE_HV;
        }
        f
    }

    /// Opens the event (and its group leader) for thread `pid` on `cpu`, disabled.
    pub fn open(&self, pid: i32, cpu: i32) -> Result<EventFds, Errno> {
        let leader = match self.leader_attr() {
            Some(a) => Some(attr::perf_event_open(&a, pid, cpu, None)?),
            None => None,
        };
        let event = attr::perf_event_open(&self.attr(), pid, cpu, leader.as_ref())?;
        Ok(EventFds { event, leader })
    }
}

/// The sample format of [`SAMPLE_TYPE`].
pub fn sample_format() -> SampleFormat {
    SampleFormat::new(SAMPLE_TYPE).unwrap_or_else(|| unreachable!("SAMPLE_TYPE uses only supported bits"))
}

/// What the caller may do: `perf_event_paranoid` and whether it holds `CAP_PERFMON` or
/// `CAP_SYS_ADMIN`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Privilege {
    /// `/proc/sys/kernel/perf_event_paranoid`; `None` when the file is missing (a
    /// kernel without perf events).
    pub paranoid: Option<i32>,
    /// The effective capabilities include `CAP_PERFMON` or `CAP_SYS_ADMIN`.
    pub privileged: bool,
}

impl Privilege {
    /// Reads `<root>/proc/sys/kernel/perf_event_paranoid` and the `CapEff` line of
    /// `<root>/proc/self/status`. Unreadable capabilities count as unprivileged.
    pub fn read(root: &Path) -> Privilege {
        let paranoid = std::fs::read_to_string(root.join("proc/sys/kernel/perf_event_paranoid"))
            .ok()
            .and_then(|s| s.trim().parse().ok());
        let privileged = std::fs::read_to_string(root.join("proc/self/status"))
            .ok()
            .and_then(|s| crate::memory::procfs::parse_status(&s).ok())
            .is_some_and(|s| s.capeff & (1 << CAP_SYS_ADMIN | 1 << CAP_PERFMON) != 0);
        Privilege { paranoid, privileged }
    }
}

/// Why `spec` cannot be opened with `privilege`, or `None` if it can (as far as
/// `perf_event_paranoid` goes: ptrace access to the target is checked by the probe).
pub fn privilege_reason(spec: &EventSpec, privilege: &Privilege) -> Option<String> {
    let Some(p) = privilege.paranoid else {
        return Some(
            "this kernel has no perf events (/proc/sys/kernel/perf_event_paranoid is missing: \
             CONFIG_PERF_EVENTS is off)"
                .to_string(),
        );
    };
    if privilege.privileged {
        return None;
    }
    if p >= 3 {
        return Some(format!(
            "perf_event_paranoid is {p}, which forbids perf to unprivileged users: needs CAP_PERFMON or \
             CAP_SYS_ADMIN, or perf_event_paranoid 2 or lower"
        ));
    }
    if !spec.exclude_kernel && p >= 2 {
        return Some(format!(
            "the {} PMU cannot exclude kernel samples on this kernel and perf_event_paranoid is {p}: needs \
             CAP_PERFMON or CAP_SYS_ADMIN, or perf_event_paranoid 1 or lower",
            spec.pmu
        ));
    }
    if spec.scope == Scope::Cpus && p >= 1 {
        return Some(format!(
            "per-CPU sampling needs CAP_PERFMON or CAP_SYS_ADMIN, or perf_event_paranoid 0 or lower \
             (it is {p})"
        ));
    }
    None
}

fn devices(root: &Path) -> std::path::PathBuf {
    root.join("sys/bus/event_source/devices")
}

/// Plans `kind` from sysfs alone (no system calls): which PMU, which config. `kind`
/// must not be `Auto`.
pub fn plan(kind: PerfKind, cfg: &PerfConfig) -> Result<EventSpec, Unavailable> {
    let unavailable = |reason: String| Unavailable { kind, reason };
    let scope = cfg.scope;
    match kind {
        PerfKind::Auto => Err(unavailable("a concrete kind (pebs, ibs, page-faults) must be planned".into())),
        PerfKind::Pebs => plan_pebs(cfg).map_err(unavailable),
        PerfKind::Ibs => plan_ibs(cfg).map_err(unavailable),
        PerfKind::PageFaults => Ok(EventSpec {
            kind,
            pmu: "software".to_string(),
            pmu_type: PERF_TYPE_SOFTWARE,
            config: [PERF_COUNT_SW_PAGE_FAULTS, 0, 0, 0],
            aux_leader: None,
            precise_ip: 0,
            exclude_kernel: true,
            exclude_hv: true,
            period: cfg.period.unwrap_or(1).max(1),
            scope: if scope == Scope::Auto { Scope::Threads } else { scope },
        }),
    }
}

fn plan_pebs(cfg: &PerfConfig) -> Result<EventSpec, String> {
    let devices = devices(&cfg.root);
    let candidates = ["cpu", "cpu_core"];
    let Some(name) = candidates.iter().find(|n| devices.join(n).join("events/mem-loads").is_file()) else {
        return Err(if candidates.iter().any(|n| devices.join(n).is_dir()) {
            format!(
                "the core PMU has no mem-loads event ({} missing): not an Intel CPU with PEBS load latency",
                devices.join("cpu/events/mem-loads").display()
            )
        } else {
            format!(
                "there is no core PMU in sysfs ({} missing): a virtual machine without a virtual PMU, or a \
                 kernel without hardware perf support",
                devices.join("cpu").display()
            )
        });
    };
    let dir = devices.join(name);
    let pmu_type = pmu::read_type(&dir).map_err(|e| e.to_string())?;
    let mut terms = pmu::read_event(&dir, "mem-loads").map_err(|e| e.to_string())?;
    if let Some(ldlat) = cfg.load_latency {
        pmu::set_term(&mut terms, "ldlat", ldlat);
    }
    let config = pmu::encode(&dir, &terms).map_err(|e| e.to_string())?;
    let aux_leader = if dir.join("events/mem-loads-aux").is_file() {
        let aux = pmu::read_event(&dir, "mem-loads-aux").map_err(|e| e.to_string())?;
        Some(pmu::encode(&dir, &aux).map_err(|e| e.to_string())?)
    } else {
        None
    };
    Ok(EventSpec {
        kind: PerfKind::Pebs,
        pmu: name.to_string(),
        pmu_type,
        config,
        aux_leader,
        precise_ip: 3,
        exclude_kernel: true,
        exclude_hv: true,
        period: cfg.period.unwrap_or(10_007).max(1),
        scope: if cfg.scope == Scope::Auto { Scope::Threads } else { cfg.scope },
    })
}

fn plan_ibs(cfg: &PerfConfig) -> Result<EventSpec, String> {
    let dir = devices(&cfg.root).join("ibs_op");
    if !dir.join("type").is_file() {
        return Err(format!(
            "there is no ibs_op PMU in sysfs ({} missing): not an AMD CPU with IBS, or a virtual machine",
            dir.join("type").display()
        ));
    }
    let pmu_type = pmu::read_type(&dir).map_err(|e| e.to_string())?;
    let mut terms = Vec::new();
    // Count dispatched micro-ops rather than cycles: samples spread over instructions.
    if pmu::has_format(&dir, "cnt_ctl") {
        terms.push(("cnt_ctl".to_string(), 1));
    }
    // Kernels with the software filter can drop kernel samples; older ones cannot.
    let swfilt = pmu::has_format(&dir, "swfilt");
    if swfilt {
        terms.push(("swfilt".to_string(), 1));
    }
    let config = pmu::encode(&dir, &terms).map_err(|e| e.to_string())?;
    // IBS ignores the low four bits of the period; keep it a multiple of 16.
    let period = cfg.period.unwrap_or(65_536).max(256).next_multiple_of(16);
    Ok(EventSpec {
        kind: PerfKind::Ibs,
        pmu: "ibs_op".to_string(),
        pmu_type,
        config,
        aux_leader: None,
        precise_ip: 0,
        exclude_kernel: swfilt,
        exclude_hv: false,
        period,
        scope: cfg.scope,
    })
}

/// The outcome of detection: the event to open, and why earlier kinds were passed over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Detection {
    /// The event that opened on the target.
    pub spec: EventSpec,
    /// Kinds tried before it, each with its reason.
    pub skipped: Vec<Unavailable>,
}

/// Finds a perf event that samples addresses of process `pid`, trying `cfg.kind` (or,
/// for `Auto`, PEBS, IBS and page faults in turn). Every kind that fails leaves a reason;
/// if none works the error lists them all.
pub fn detect(pid: i32, cfg: &PerfConfig) -> Result<Detection, PerfError> {
    let kinds: &[PerfKind] = match cfg.kind {
        PerfKind::Auto => &[PerfKind::Pebs, PerfKind::Ibs, PerfKind::PageFaults],
        PerfKind::Pebs => &[PerfKind::Pebs],
        PerfKind::Ibs => &[PerfKind::Ibs],
        PerfKind::PageFaults => &[PerfKind::PageFaults],
    };
    let privilege = Privilege::read(&cfg.root);
    let mut skipped = Vec::new();
    for &kind in kinds {
        match plan(kind, cfg).and_then(|spec| probe(spec, pid, cfg, &privilege)) {
            Ok(spec) => return Ok(Detection { spec, skipped }),
            Err(reason) => skipped.push(reason),
        }
    }
    Err(PerfError::Unavailable(skipped))
}

/// Opens `spec` once on the target to learn whether the kernel accepts it, settling
/// `precise_ip` (the highest accepted, never below 1 for a precise event) and `scope`
/// (threads, else CPUs when the PMU refuses per-task events, for `Auto`).
fn probe(mut spec: EventSpec, pid: i32, cfg: &PerfConfig, privilege: &Privilege) -> Result<EventSpec, Unavailable> {
    let kind = spec.kind;
    let scopes: &[Scope] = match spec.scope {
        Scope::Auto => &[Scope::Threads, Scope::Cpus],
        Scope::Threads => &[Scope::Threads],
        Scope::Cpus => &[Scope::Cpus],
    };
    let highest = spec.precise_ip;
    let mut reasons = Vec::new();
    for &scope in scopes {
        spec.scope = scope;
        spec.precise_ip = highest;
        if let Some(reason) = privilege_reason(&spec, privilege) {
            reasons.push(reason);
            break;
        }
        let (target_pid, cpu) = match scope {
            Scope::Cpus => match first_online_cpu(&cfg.root) {
                Ok(cpu) => (-1, cpu),
                Err(e) => {
                    reasons.push(e.to_string());
                    break;
                }
            },
            _ => (pid, -1),
        };
        let mut refused = None;
        for precise in (highest.min(1)..=highest).rev() {
            spec.precise_ip = precise;
            match spec.open(target_pid, cpu) {
                Ok(_fds) => return Ok(spec),
                Err(errno) => {
                    refused = Some(errno);
                    if !matches!(errno.0, libc::EINVAL | libc::EOPNOTSUPP) {
                        break;
                    }
                }
            }
        }
        let Some(errno) = refused else { break };
        reasons.push(describe_open_failure(&spec, target_pid, cpu, errno, privilege));
        // A PMU without per-task support refuses thread events; only then try CPUs.
        if !matches!(errno.0, libc::EINVAL | libc::EOPNOTSUPP) {
            break;
        }
    }
    Err(Unavailable { kind, reason: reasons.join("; then ") })
}

fn describe_open_failure(spec: &EventSpec, pid: i32, cpu: i32, errno: Errno, privilege: &Privilege) -> String {
    let target = if pid >= 0 { format!("pid {pid}") } else { format!("cpu {cpu}") };
    format!(
        "perf_event_open of {} type {} config {:#x} precise_ip {} on {target} failed: {errno}: {}",
        spec.pmu,
        spec.pmu_type,
        spec.config[0],
        spec.precise_ip,
        open_hint(errno, privilege.paranoid)
    )
}

/// Online CPUs from `<root>/sys/devices/system/cpu/online` (`0-3,6`).
pub fn online_cpus(root: &Path) -> Result<Vec<i32>, PerfError> {
    let path = root.join("sys/devices/system/cpu/online");
    let text = std::fs::read_to_string(&path).map_err(|source| PerfError::Io { path: path.clone(), source })?;
    parse_cpu_list(&text).ok_or_else(|| PerfError::Parse { path, reason: format!("bad CPU list {:?}", text.trim()) })
}

fn first_online_cpu(root: &Path) -> Result<i32, PerfError> {
    let cpus = online_cpus(root)?;
    cpus.first().copied().ok_or_else(|| PerfError::Config("no CPU is online".to_string()))
}

/// Parses a kernel CPU list such as `0-3,6,8-9`.
pub fn parse_cpu_list(text: &str) -> Option<Vec<i32>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let (lo, hi): (i32, i32) = (lo.trim().parse().ok()?, hi.trim().parse().ok()?);
        if lo < 0 || lo > hi {
            return None;
        }
        cpus.extend(lo..=hi);
    }
    Some(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(exclude_kernel: bool, scope: Scope) -> EventSpec {
        EventSpec {
            kind: PerfKind::Ibs,
            pmu: "ibs_op".into(),
            pmu_type: 11,
            config: [0; 4],
            aux_leader: None,
            precise_ip: 0,
            exclude_kernel,
            exclude_hv: false,
            period: 65_536,
            scope,
        }
    }

    #[test]
    fn paranoid_levels_gate_kernel_and_cpu_sampling() {
        let user = |p| Privilege { paranoid: Some(p), privileged: false };
        assert_eq!(privilege_reason(&spec(true, Scope::Threads), &user(2)), None);
        let r = privilege_reason(&spec(false, Scope::Threads), &user(2)).unwrap();
        assert!(r.contains("cannot exclude kernel") && r.contains("CAP_PERFMON"), "{r}");
        assert_eq!(privilege_reason(&spec(false, Scope::Threads), &user(1)), None);
        let r = privilege_reason(&spec(true, Scope::Cpus), &user(1)).unwrap();
        assert!(r.contains("per-CPU") && r.contains("(it is 1)"), "{r}");
        assert_eq!(privilege_reason(&spec(true, Scope::Cpus), &user(0)), None);
        let r = privilege_reason(&spec(true, Scope::Threads), &user(3)).unwrap();
        assert!(r.contains("perf_event_paranoid is 3"), "{r}");
        let root = Privilege { paranoid: Some(3), privileged: true };
        assert_eq!(privilege_reason(&spec(false, Scope::Cpus), &root), None);
        let none = Privilege { paranoid: None, privileged: true };
        assert!(privilege_reason(&spec(true, Scope::Threads), &none).unwrap().contains("CONFIG_PERF_EVENTS"));
    }

    #[test]
    fn cpu_lists_parse() {
        assert_eq!(parse_cpu_list("0-3,6\n"), Some(vec![0, 1, 2, 3, 6]));
        assert_eq!(parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn kinds_parse_and_print() {
        assert_eq!("page-faults".parse::<PerfKind>(), Ok(PerfKind::PageFaults));
        assert!("cycles".parse::<PerfKind>().unwrap_err().contains("expected auto"));
        assert_eq!(PerfKind::Pebs.to_string(), "Intel PEBS load latency");
    }

    #[test]
    fn leader_groups_enable_through_the_leader() {
        let mut s = spec(true, Scope::Threads);
        assert_ne!(s.attr().flags & flag::DISABLED, 0, "a lone event starts disabled");
        s.aux_leader = Some([0x8203, 0, 0, 0]);
        assert_eq!(s.attr().flags & flag::DISABLED, 0, "a group member follows its leader");
        let leader = s.leader_attr().unwrap();
        assert_eq!(leader.sample_period, 0, "the aux leader only counts");
        assert_eq!((leader.flags >> flag::PRECISE_IP_SHIFT) & 3, 0, "PEBS needs sampling");
        assert_ne!(leader.flags & flag::DISABLED, 0);
        assert_eq!(s.attr().clockid, libc::CLOCK_MONOTONIC);
        assert_eq!(s.attr().sample_type, SAMPLE_TYPE);
    }
}
