//! Machine parameters, presets and overrides.
//!
//! Every modeled cost is a named field here with its source. A configuration starts from
//! a preset (`cxl`, `cxl-slow`, `numa`), may be overlaid with a TOML file (same field
//! names, any subset), and then with `key=value` overrides using dotted paths
//! (`tiers.1.latency_ns=200`, `app.threads=8`). Unknown fields and ill-typed values are
//! errors naming the field.

use serde::{Deserialize, Serialize};

use super::latency::LatencyCurve;
use crate::error::SimError;

/// One memory tier (capacities are set per run from the fast:slow ratio).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierModel {
    /// Name in reports.
    pub name: String,
    /// Unloaded read latency, ns.
    pub latency_ns: f64,
    /// Peak bandwidth, GB/s (10^9 bytes per second).
    pub bandwidth_gbps: f64,
    /// Background (antagonist) traffic on this tier, GB/s, competing with the
    /// application and with migrations (Colloid §2's memory antagonist).
    #[serde(default)]
    pub background_gbps: f64,
}

/// The application: threads issuing last-level-cache misses.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppModel {
    /// Threads (cores) running the application. Colloid §2 runs GUPS on 15 cores;
    /// HybridTier §5.1 uses a 16-core socket.
    pub threads: u32,
    /// Misses in flight per thread (memory-level parallelism). Colloid §3.1: per-core
    /// throughput is N·64/L for N in-flight requests; ~10 line-fill buffers per core on
    /// the Xeons of the papers, of which random-access code keeps a few busy: 4.
    pub mlp: f64,
    /// Misses in flight per thread for a dependent load chain (pointer chasing: each
    /// address comes from the previous load, class [`MlpClass::Dependent`]): 1, the
    /// unloaded case of Colloid §3.1 (footnote 1: one request in flight) and the random
    /// pointer chase of SOAR/ALTO's microbenchmark (OSDI'25, `src/microbenchmark`).
    #[serde(default = "default_mlp_dependent")]
    pub mlp_dependent: f64,
    /// Misses in flight per thread for independent streaming loads (sequential scans,
    /// class [`MlpClass::Streaming`]): 10, every line-fill buffer of the papers' Xeons
    /// busy (Colloid §3.1: N is bounded by the line-fill buffers; Colloid §5.1, Fig. 8, measures
    /// 2.82x the in-flight misses per core for sequential 4 KiB objects as for random
    /// 64 B ones, 4 x 2.82 = 11, beyond the ~10 buffers).
    #[serde(default = "default_mlp_streaming")]
    pub mlp_streaming: f64,
    /// Compute time per miss per thread, ns (work between misses). 20 ns: a
    /// memory-bound workload (the papers' choice of workloads).
    pub compute_ns: f64,
    /// Time per instruction of a traced program's one thread, ns, for traces that carry
    /// their instruction counts (the trace's own clock): 0.4 ns, a 2.5 GHz core at one
    /// instruction per cycle, the IPC warehouse-scale programs reach (Kanev et al.,
    /// "Profiling a warehouse-scale computer", ISCA'15, §5).
    #[serde(default = "default_ns_per_instruction")]
    pub ns_per_instruction: f64,
}

fn default_ns_per_instruction() -> f64 {
    0.4
}

fn default_mlp_dependent() -> f64 {
    1.0
}

fn default_mlp_streaming() -> f64 {
    10.0
}

/// How a miss overlaps with its thread's other misses: which of the application's
/// memory-level parallelism figures its latency is divided by ([`AppModel::mlp_of`]).
/// Generators set it per access; a trace record carries one where its format has the
/// field (native flag bit 2, a CSV `mlp` column) and is `Default` otherwise.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum MlpClass {
    /// The application's own parallelism, `app.mlp`.
    #[default]
    Default,
    /// A dependent load chain (pointer chasing), `app.mlp_dependent`.
    Dependent,
    /// Independent streaming loads, `app.mlp_streaming`.
    Streaming,
}

impl MlpClass {
    /// Every class, in the order of their codes (0, 1, 2).
    pub const ALL: [MlpClass; 3] = [MlpClass::Default, MlpClass::Dependent, MlpClass::Streaming];

    /// Its name in traces and reports: `default`, `dependent` or `streaming`.
    pub fn name(self) -> &'static str {
        match self {
            MlpClass::Default => "default",
            MlpClass::Dependent => "dependent",
            MlpClass::Streaming => "streaming",
        }
    }

    /// The class named `name` (any case), if one is.
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name().eq_ignore_ascii_case(name))
    }

    /// The class whose code (its position in [`MlpClass::ALL`]) is `code`, if one is.
    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.get(code as usize).copied()
    }

    /// Counts a miss of this class served by `tier` in `classed` (dependent, streaming);
    /// a miss of the default class is counted by the total alone.
    #[inline]
    pub(crate) fn count(self, classed: &mut [Vec<u64>; 2], tier: usize) {
        if self != Self::Default {
            classed[self as usize - 1][tier] += 1;
        }
    }
}

impl AppModel {
    /// Misses in flight per thread for a miss of `class`.
    #[inline]
    pub fn mlp_of(&self, class: MlpClass) -> f64 {
        match class {
            MlpClass::Default => self.mlp,
            MlpClass::Dependent => self.mlp_dependent,
            MlpClass::Streaming => self.mlp_streaming,
        }
    }
}

/// Migration costs (the data movement itself is charged as bandwidth: 4 KiB read on the
/// source tier + 4 KiB written on the destination per page).
///
/// Non-exclusive tiering (NOMAD, OSDI '24; on when the policy asks for it) reuses these:
/// a transactional promotion's copy takes `cpu_ns_per_page` per page, its pages copied
/// one after another, and its commit needs a second round of TLB shootdowns
/// (`cpu_ns_per_call` once more per call). Its two own costs are the fields below.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigrationModel {
    /// CPU per migrated page, ns: allocation, unmap, copy loop, remap. M5 §7.2 measures
    /// ~54 µs per migration end to end on its FPGA CXL setup; kernel `move_pages` on
    /// DRAM/NUMA costs a few µs per 4 KiB page: 5 µs.
    pub cpu_ns_per_page: f64,
    /// CPU per `move_pages` call, ns: syscall entry, TLB-shootdown IPIs: 20 µs.
    pub cpu_ns_per_call: f64,
    /// Pages per `move_pages` call (FreqTier/HybridTier batch their migrations).
    pub batch_pages: u64,
    /// Migration rate limit, bytes/s. Linux's numa_balancing_promote_rate_limit_MBps
    /// default is 65536 MB/s.
    pub max_bytes_per_sec: f64,
    /// CPU per page demoted by remapping it to its valid shadow copy (non-exclusive
    /// tiering), ns: unmap, PTE update and freeing the fast page, with no allocation and
    /// no copy. NOMAD gives no figure (§3 counts such a demotion as no migration); tierkit
    /// takes the PTE work of one minor fault, `mechanisms.hint_fault_ns`: 1.5 µs.
    #[serde(default = "default_remap_ns_per_page")]
    pub remap_ns_per_page: f64,
    /// Stall of the write-protection fault that drops a page's shadow at its first write
    /// (NOMAD maps shadowed pages read-only), ns: a minor fault, as
    /// `mechanisms.hint_fault_ns`: 1.5 µs.
    #[serde(default = "default_write_protect_fault_ns")]
    pub write_protect_fault_ns: f64,
}

fn default_remap_ns_per_page() -> f64 {
    1_500.0
}

fn default_write_protect_fault_ns() -> f64 {
    1_500.0
}

/// CPU cost of each tracking mechanism, charged to the run (to the application's cores:
/// the tiering thread or kernel work competes with it).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MechanismCosts {
    /// Per PEBS/IBS sample: drained from the perf ring buffer and handed to the policy.
    /// MEMTIS bounds its sampling at 3% CPU; ~200 ns per sample including the policy's
    /// own update is the order its design assumes.
    pub sample_ns: f64,
    /// Per NUMA hint fault: trap, fault handling, PTE restore. 1.5 µs (minor fault plus
    /// NUMA hinting work in Linux).
    pub hint_fault_ns: f64,
    /// Per PTE changed by the hint-fault scanner (change_prot_numa) or checked by an
    /// accessed-bit scan: 30 ns.
    pub pte_ns: f64,
    /// Per region checked by a DAMON-style scan per sampling interval: 100 ns.
    pub region_check_ns: f64,
    /// Per device top-K query (M5 HPT/HWT read over CXL.io MMIO): 2 µs.
    pub device_query_ns: f64,
}

/// A whole machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineConfig {
    /// Preset name or "custom".
    pub name: String,
    /// Tiers, fastest first (tier 0 = local DRAM).
    pub tiers: Vec<TierModel>,
    /// Loaded-latency curve shared by all tiers.
    pub curve: LatencyCurve,
    /// The application.
    pub app: AppModel,
    /// Migration costs.
    pub migration: MigrationModel,
    /// Mechanism costs.
    pub mechanisms: MechanismCosts,
    /// First touch allocates on the fast tier until its free pages fall to this fraction
    /// of its capacity, then on the slow tier (Linux's zone low watermark; TPP §5.3
    /// decouples it from the demotion watermark): 0.01.
    pub alloc_watermark: f64,
}

/// Names of the presets.
pub const PRESETS: &[&str] = &["cxl", "cxl-slow", "numa"];

impl MachineConfig {
    /// A preset by name; an unknown name lists the presets.
    pub fn preset(name: &str) -> Result<Self, SimError> {
        let (dram, slow) = match name {
            // HybridTier §5.1: emulated CXL with 124 ns idle latency and 34 GB/s; local
            // DDR4 on a 16-core Xeon 4314 (8 channels DDR4-2666: ~85 ns, ~120 GB/s
            // measured by MLC on such sockets).
            "cxl" => (tier("dram", 85.0, 120.0), tier("cxl", 124.0, 34.0)),
            // FreqTier §VI CXL-2: the remote node reduced to one DDR4 channel (25.6 GB/s
            // peak, ~70% reachable: 18 GB/s) with slow-CXL latency (DESIGN: 170-250 ns;
            // FreqTier Fig. 8 plots the measured values): 190 ns.
            "cxl-slow" => (tier("dram", 85.0, 120.0), tier("cxl", 190.0, 18.0)),
            // Colloid §2.1: local 70 ns, remote socket 135 ns; 8 channels DDR4-3200
            // (205 GB/s theoretical) locally, a UPI link (75 GB/s) to the remote socket.
            "numa" => (tier("local", 70.0, 205.0), tier("remote", 135.0, 75.0)),
            _ => return Err(SimError::unknown("machine preset", name, PRESETS.iter().copied())),
        };
        Ok(Self {
            name: name.to_string(),
            tiers: vec![dram, slow],
            curve: LatencyCurve::default(),
            app: AppModel {
                threads: 16,
                mlp: 4.0,
                mlp_dependent: default_mlp_dependent(),
                mlp_streaming: default_mlp_streaming(),
                compute_ns: 20.0,
                ns_per_instruction: default_ns_per_instruction(),
            },
            migration: MigrationModel {
                cpu_ns_per_page: 5_000.0,
                cpu_ns_per_call: 20_000.0,
                batch_pages: 512,
                max_bytes_per_sec: 65_536.0 * 1e6,
                remap_ns_per_page: default_remap_ns_per_page(),
                write_protect_fault_ns: default_write_protect_fault_ns(),
            },
            mechanisms: MechanismCosts {
                sample_ns: 200.0,
                hint_fault_ns: 1_500.0,
                pte_ns: 30.0,
                region_check_ns: 100.0,
                device_query_ns: 2_000.0,
            },
            alloc_watermark: 0.01,
        })
    }

    /// Overlays the TOML `text` (any subset of the fields) read from `file`.
    pub fn merge_toml(&self, text: &str, file: &str) -> Result<Self, SimError> {
        let overlay: toml::Table = text.parse().map_err(|e: toml::de::Error| SimError::File {
            file: file.to_string(),
            at: e.span().map_or("TOML".to_string(), |s| format!("byte {}", s.start)),
            message: e.message().to_string(),
        })?;
        let mut base = self.to_table();
        merge(&mut base, overlay);
        Self::from_table(base, file)
    }

    /// Applies one `dotted.path=value` override (`tiers.1.latency_ns=200`).
    pub fn set(&self, assignment: &str) -> Result<Self, SimError> {
        let bad = |msg: &str| SimError::bad_option("machine", assignment, assignment, msg.to_string());
        let (path, value) = assignment.split_once('=').ok_or_else(|| bad("KEY=VALUE, like app.threads=8"))?;
        let value: toml::Value = match format!("v = {}", value.trim()).parse::<toml::Table>() {
            Ok(mut t) => t.remove("v").expect("parsed key"),
            Err(_) => toml::Value::String(value.trim().to_string()),
        };
        let mut base = toml::Value::Table(self.to_table());
        let mut at = &mut base;
        let keys: Vec<&str> = path.trim().split('.').collect();
        for (i, key) in keys.iter().enumerate() {
            let last = i + 1 == keys.len();
            at = match at {
                toml::Value::Table(t) if t.contains_key(*key) => {
                    let slot = t.get_mut(*key).expect("checked");
                    if last {
                        *slot = value.clone();
                    }
                    slot
                }
                toml::Value::Array(a) => {
                    let len = a.len();
                    match key.parse::<usize>().ok().and_then(|n| a.get_mut(n)) {
                        Some(slot) => {
                            if last {
                                *slot = value.clone();
                            }
                            slot
                        }
                        None => return Err(bad(&format!("an index below {len} for {:?}", keys[..i].join(".")))),
                    }
                }
                _ => return Err(bad(&format!("a known field; {:?} is not one", keys[..=i].join(".")))),
            };
        }
        match base {
            toml::Value::Table(t) => Self::from_table(t, "--set"),
            _ => unreachable!("the config serializes to a table"),
        }
    }

    fn to_table(&self) -> toml::Table {
        toml::Table::try_from(self).expect("a MachineConfig always serializes")
    }

    fn from_table(table: toml::Table, file: &str) -> Result<Self, SimError> {
        // Re-read the merged document so a type error quotes the offending `key = value`.
        let text = toml::to_string(&table).expect("a TOML table always serializes");
        let cfg: Self = toml::from_str(&text).map_err(|e: toml::de::Error| SimError::File {
            file: file.to_string(),
            at: "machine configuration".to_string(),
            message: e.to_string().replace('\n', " ").split_whitespace().collect::<Vec<_>>().join(" "),
        })?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks every field's range.
    pub fn validate(&self) -> Result<(), SimError> {
        let bad = |k: &str, v: f64, e: &str| Err(SimError::bad_option("machine", k, v, e.to_string()));
        if self.tiers.len() < 2 || self.tiers.len() > 8 {
            return bad("tiers", self.tiers.len() as f64, "2 to 8 tiers");
        }
        for (i, t) in self.tiers.iter().enumerate() {
            if !(t.latency_ns > 0.0 && t.latency_ns.is_finite()) {
                return bad(&format!("tiers.{i}.latency_ns"), t.latency_ns, "a positive latency");
            }
            if !(t.bandwidth_gbps > 0.0 && t.bandwidth_gbps.is_finite()) {
                return bad(&format!("tiers.{i}.bandwidth_gbps"), t.bandwidth_gbps, "a positive bandwidth");
            }
            if !(t.background_gbps >= 0.0 && t.background_gbps < t.bandwidth_gbps) {
                return bad(&format!("tiers.{i}.background_gbps"), t.background_gbps, "0 <= background < bandwidth");
            }
        }
        if self.app.threads == 0 {
            return bad("app.threads", 0.0, "at least 1 thread");
        }
        for (k, v) in [
            ("app.mlp", self.app.mlp),
            ("app.mlp_dependent", self.app.mlp_dependent),
            ("app.mlp_streaming", self.app.mlp_streaming),
        ] {
            if !(v >= 1.0 && v.is_finite()) {
                return bad(k, v, "at least 1 miss in flight");
            }
        }
        if !(self.app.compute_ns >= 0.0 && self.app.compute_ns.is_finite()) {
            return bad("app.compute_ns", self.app.compute_ns, "a non-negative time");
        }
        if !(self.app.ns_per_instruction > 0.0 && self.app.ns_per_instruction.is_finite()) {
            return bad("app.ns_per_instruction", self.app.ns_per_instruction, "a positive time");
        }
        if !(self.curve.u_max > 0.0 && self.curve.u_max < 1.0 && self.curve.a >= 0.0 && self.curve.b > 0.0) {
            return bad("curve.u_max", self.curve.u_max, "0 < u_max < 1, a >= 0, b > 0");
        }
        let m = &self.migration;
        let rate_ok = m.max_bytes_per_sec > 0.0; // false for NaN too
        if m.batch_pages == 0 || !rate_ok || m.cpu_ns_per_page < 0.0 || m.cpu_ns_per_call < 0.0 {
            return bad("migration", m.batch_pages as f64, "batch_pages >= 1, max_bytes_per_sec > 0, costs >= 0");
        }
        let c = &self.mechanisms;
        for (k, v) in [
            ("migration.remap_ns_per_page", m.remap_ns_per_page),
            ("migration.write_protect_fault_ns", m.write_protect_fault_ns),
            ("mechanisms.sample_ns", c.sample_ns),
            ("mechanisms.hint_fault_ns", c.hint_fault_ns),
            ("mechanisms.pte_ns", c.pte_ns),
            ("mechanisms.region_check_ns", c.region_check_ns),
            ("mechanisms.device_query_ns", c.device_query_ns),
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                return bad(k, v, "a non-negative cost");
            }
        }
        if !(0.0..0.5).contains(&self.alloc_watermark) {
            return bad("alloc_watermark", self.alloc_watermark, "a fraction in [0, 0.5)");
        }
        Ok(())
    }
}

fn tier(name: &str, latency_ns: f64, bandwidth_gbps: f64) -> TierModel {
    TierModel { name: name.to_string(), latency_ns, bandwidth_gbps, background_gbps: 0.0 }
}

/// Recursively overlays `top` on `base` (tables merge, everything else replaces).
fn merge(base: &mut toml::Table, top: toml::Table) {
    for (k, v) in top {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(t)) => merge(b, t),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_carry_the_papers_numbers() {
        let cxl = MachineConfig::preset("cxl").unwrap();
        assert_eq!((cxl.tiers[1].latency_ns, cxl.tiers[1].bandwidth_gbps), (124.0, 34.0));
        let numa = MachineConfig::preset("numa").unwrap();
        assert_eq!((numa.tiers[0].latency_ns, numa.tiers[1].latency_ns), (70.0, 135.0));
        let e = MachineConfig::preset("dram-only").unwrap_err().to_string();
        assert!(e.contains("cxl-slow") && e.contains("dram-only"), "{e}");
    }

    #[test]
    fn toml_and_set_override_named_fields() {
        let base = MachineConfig::preset("cxl").unwrap();
        let m = base.merge_toml("[app]\nthreads = 4\n[[tiers]]\nname='a'\nlatency_ns=1\nbandwidth_gbps=2\n[[tiers]]\nname='b'\nlatency_ns=3\nbandwidth_gbps=4\n", "m.toml").unwrap();
        assert_eq!(m.app.threads, 4);
        assert_eq!(m.app.mlp, base.app.mlp, "untouched fields keep the preset");
        assert_eq!(m.tiers[1].latency_ns, 3.0);
        let m = base.set("tiers.1.latency_ns=200").unwrap().set("tiers.0.background_gbps = 60").unwrap();
        assert_eq!((m.tiers[1].latency_ns, m.tiers[0].background_gbps), (200.0, 60.0));
        for bad in [
            "app.thread=3",
            "tiers.5.latency_ns=1",
            "app.threads=0",
            "app.threads='x'",
            "nonsense",
            "app.mlp_dependent=0.5",
        ] {
            assert!(base.set(bad).is_err(), "{bad} accepted");
        }
        let e = base.merge_toml("[app]\nthreadz = 4\n", "m.toml").unwrap_err().to_string();
        assert!(e.contains("m.toml") && e.contains("threadz"), "{e}");
        let e = base.merge_toml("[app\n", "m.toml").unwrap_err().to_string();
        assert!(e.contains("m.toml") && e.contains("byte"), "{e}");
    }
}
