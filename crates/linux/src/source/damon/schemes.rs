//! DAMOS tiering: the kernel migrates by itself, with DAMON-based operation schemes
//! (`migrate_hot` and `migrate_cold` with a `target_nid`, Linux 6.11+), written through
//! DAMON's sysfs admin tree.
//!
//! Up to Linux 6.16 the kernel implements both actions for physical-address monitoring
//! only (the `paddr` operations: `damon_pa_migrate` in `mm/damon/paddr.c`; `vaddr`
//! applies them from Linux 6.17 on). So this is system-wide tiering per node, as the
//! kernel's own DAMON tiering sample (`samples/damon/mtier.c`) does: whatever process
//! the hot and cold memory belongs to.
//!
//! [`DamosTiering::start`] claims one kdamond ([`super::kdamond`]), gives it one `paddr`
//! context whose one target covers the fast and the slow node's physical ranges
//! ([`super::node_ranges`]), and these schemes, each kept to one node by `addr` filters
//! that exclude the other node's ranges:
//!
//! | # | action | on | access pattern | does |
//! | --- | --- | --- | --- | --- |
//! | 0 | `migrate_hot`, `target_nid` = fast | slow node | accessed ≥ `hot_min_accesses` per aggregation (at start 1) | promotes, only pages accessed since the last check (`young` filter, where the kernel has it: 6.10+) |
//! | 1 | `migrate_cold`, `target_nid` = slow | fast node | accessed ≤ `cold_max_accesses` (at start 0) | demotes, never a page accessed since the last check |
//! | 2.. | `stat` | fast node | accessed ≥ `e`, one scheme per rung `e` of the access ladder ([`access_ladder`]) | the fast node's access histogram |
//! | then | `stat` | slow node | the same | the slow node's |
//!
//! The access bounds of the migrations are [`Quotas`] fields, set with the byte quotas
//! ([`super::quota_tuner`] chooses them from the histogram).
//!
//! The migration schemes have byte quotas per second (`quotas/bytes` over a 1 s
//! `reset_interval_ms`, prioritized by access frequency and age as the sample does) and
//! watermarks on the machine's free memory (`free_mem_rate`): they stand still when
//! less than [`DamosOptions::min_free_permil`] of memory is free (a migration needs a
//! free page on its target node) or more than [`DamosOptions::max_free_permil`].
//! With [`DamosOptions::memcg`] both migrations carry a `memcg` filter that keeps them
//! to the pages charged to that memory cgroup ([`super::memcg`]). [`DamosTiering::set_quotas`] writes new quotas and
//! commits them to the running kdamond (`commit`); [`DamosTiering::stats`] reads every
//! scheme's `stats` (`update_schemes_stats`).
//!
//! Two rules of DAMOS quotas shape how a scheme is paused and started:
//! - A zero byte quota means "unlimited", so a paused scheme keeps a one-page quota and
//!   an access pattern no region matches (a minimum age no region reaches). It stays
//!   active: deactivating it by watermarks would stop its quota's charge windows.
//! - The quota is enforced only once the scheme's first charge window has begun; before,
//!   the effective quota (`quotas/effective_bytes`) reads 0 and DAMOS applies the action
//!   to whole regions of any size. (In the test guest, Linux 6.12, that lasted 1-2.5 s
//!   after a scheme became active, and one region of 100 MiB was promoted at once,
//!   driving the fast node to its min watermark and the target into the OOM killer.)
//!   So a migration scheme stays paused until the kernel reports a nonzero effective
//!   quota for it (`update_schemes_effective_quotas`).
//!
//! A `paddr` kdamond does not stop when a process exits: the caller ends it.

use std::ops::Range;
use std::path::{Path, PathBuf};

use super::kdamond::{write_nr, KdamondClaim};
use super::quota_tuner::{access_ladder, Quotas};
use super::sysfs::{DamonError, Unavailable};
use crate::sysfs_io::{self, SysfsError};

/// Where the daemon records the DAMOS source's kdamond claim by default.
pub const DEFAULT_STATE_FILE: &str = "/run/tierkit/damos.json";

/// Scheme indices (see the module documentation).
const PROMOTE: usize = 0;
const DEMOTE: usize = 1;
/// The first histogram scheme: the fast node's rungs, then the slow node's.
const HISTOGRAM: usize = 2;

/// The quota's reset interval: quotas are bytes per second.
const RESET_INTERVAL_MS: u64 = 1_000;

/// A paused scheme's quota, in bytes: one page (0 would mean unlimited).
const PAUSED_BYTES: u64 = 4096;

/// A paused scheme's minimum region age: no region reaches it.
const PAUSED_MIN_AGE: u64 = u32::MAX as u64;

/// What the DAMOS source sets up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DamosOptions {
    /// The node hot memory is promoted to.
    pub fast_node: u32,
    /// The node cold memory is demoted to.
    pub slow_node: u32,
    /// The fast node's physical ranges (sorted, disjoint).
    pub fast_ranges: Vec<Range<u64>>,
    /// The slow node's physical ranges (sorted, disjoint).
    pub slow_ranges: Vec<Range<u64>>,
    /// Sampling interval in µs.
    pub sample_us: u64,
    /// Aggregation interval in µs (also the schemes' apply interval).
    pub aggr_us: u64,
    /// Fewest regions DAMON keeps (at least 3).
    pub min_regions: u64,
    /// Most regions.
    pub max_regions: u64,
    /// The migration schemes stand still below this much free memory, machine-wide, in
    /// thousandths (the `low` watermark on `free_mem_rate`).
    pub min_free_permil: u64,
    /// They stand still above this much free memory, in thousandths (the `high` and
    /// `mid` watermarks); 1000: never.
    pub max_free_permil: u64,
    /// The memory cgroup the migrations are kept to, as the kernel names it (its path
    /// below the cgroup2 root, starting with `/`: [`super::memcg::kernel_path`]); `None`:
    /// every page of the two nodes.
    pub memcg: Option<String>,
    /// Where to record the claimed kdamond for recovery after a crash.
    pub state_file: Option<PathBuf>,
}

impl DamosOptions {
    /// The kernel's DAMON defaults (5 ms sampling, 100 ms aggregation) with `min_regions`
    /// to at least 1000 regions; migration stands still below 2% free memory
    /// machine-wide (a value chosen here: a migration needs a free page on its target
    /// node, and the kernel's own reclaim takes over near its watermarks) and never for
    /// too much free memory; no memory cgroup filter.
    pub fn new(fast: (u32, Vec<Range<u64>>), slow: (u32, Vec<Range<u64>>), min_regions: u64) -> Self {
        DamosOptions {
            fast_node: fast.0,
            slow_node: slow.0,
            fast_ranges: fast.1,
            slow_ranges: slow.1,
            sample_us: 5_000,
            aggr_us: 100_000,
            min_regions,
            max_regions: min_regions.max(1_000),
            min_free_permil: 20,
            max_free_permil: 1_000,
            memcg: None,
            state_file: None,
        }
    }
}

/// One scheme's `stats` directory (cumulative since the kdamond started).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchemeStats {
    /// Regions the action was tried on.
    pub nr_tried: u64,
    /// Their bytes.
    pub sz_tried: u64,
    /// Regions it was applied to (some bytes migrated).
    pub nr_applied: u64,
    /// Bytes the action was applied to: migrated bytes for the migration actions.
    pub sz_applied: u64,
    /// Times the quota was exceeded.
    pub qt_exceeds: u64,
}

/// Every scheme's stats.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DamosStats {
    /// `migrate_hot`.
    pub promote: SchemeStats,
    /// `migrate_cold`.
    pub demote: SchemeStats,
    /// Per rung of [`DamosTiering::ladder`], regions on the fast node accessed at least
    /// that often (`stat`).
    pub fast: Vec<SchemeStats>,
    /// The same on the slow node.
    pub slow: Vec<SchemeStats>,
}

/// The kernel's DAMOS tiering, running; see the [module documentation](self). Dropping
/// it turns the kdamond off and gives it back.
#[derive(Debug)]
pub struct DamosTiering {
    claim: KdamondClaim,
    opts: DamosOptions,
    young_filter: bool,
    /// The access frequencies the histogram schemes count at.
    ladder: Vec<u32>,
    /// The kernel reported nonzero effective quotas for both migration schemes.
    armed: bool,
}

impl DamosTiering {
    /// Claims a kdamond for tiering on behalf of process `pid` (recorded for recovery;
    /// `paddr` monitors the whole machine), sets up the schemes, the migrations paused,
    /// and turns it on. On failure the kdamond is given back before the error returns.
    pub fn start(root: &Path, pid: i32, opts: &DamosOptions) -> Result<DamosTiering, DamonError> {
        validate(opts)?;
        let claim = KdamondClaim::claim(root, pid, opts.state_file.as_deref())?;
        let ladder = access_ladder(u32::try_from(opts.aggr_us / opts.sample_us).unwrap_or(u32::MAX));
        let mut tiering = DamosTiering { claim, opts: opts.clone(), young_filter: false, ladder, armed: false };
        match tiering.configure() {
            Ok(()) => Ok(tiering),
            Err(cause) => Err(tiering.claim.give_back_after(cause)),
        }
    }

    /// The index of the claimed kdamond.
    pub fn kdamond(&self) -> usize {
        self.claim.index()
    }

    /// The kdamond kernel thread's pid while it runs.
    pub fn kdamond_pid(&self) -> Result<Option<i32>, DamonError> {
        self.claim.kdamond_pid()
    }

    /// Whether the migration schemes only move pages accessed (promotion) or not
    /// accessed (demotion) since the last check: the kernel had the `young` filter.
    pub fn young_filter(&self) -> bool {
        self.young_filter
    }

    /// The access frequencies (per aggregation interval) the histogram is kept at.
    pub fn ladder(&self) -> &[u32] {
        &self.ladder
    }

    /// The options it runs with.
    pub fn options(&self) -> &DamosOptions {
        &self.opts
    }

    /// Writes `quotas` (a quota of 0 pauses a scheme) and commits them to the running kdamond;
    /// returns the quotas in force: none until the kernel enforces quotas (see the
    /// module documentation). `Ok(None)` when the kdamond is off.
    pub fn set_quotas(&mut self, quotas: Quotas) -> Result<Option<Quotas>, DamonError> {
        if !self.armed {
            if !self.claim.command("update_schemes_effective_quotas")? {
                return Ok(None);
            }
            let effective = |index| {
                let path = self.scheme_dir(index).join("quotas/effective_bytes");
                sysfs_io::read_parsed::<u64>(&path, "a byte count")
            };
            self.armed = effective(PROMOTE)? > 0 && effective(DEMOTE)? > 0;
        }
        let quotas = if self.armed { quotas } else { Quotas::default() };
        self.write_quota(PROMOTE, quotas.promote, (quotas.hot_min_accesses, u32::MAX))?;
        self.write_quota(DEMOTE, quotas.demote, (0, quotas.cold_max_accesses))?;
        Ok(self.claim.command("commit")?.then_some(quotas))
    }

    /// Every scheme's stats, fresh from the kernel (`None`: the kdamond is off).
    pub fn stats(&self) -> Result<Option<DamosStats>, DamonError> {
        if !self.claim.is_on()? || !self.claim.command("update_schemes_stats")? {
            return Ok(None);
        }
        Ok(Some(DamosStats {
            promote: self.scheme_stats(PROMOTE)?,
            demote: self.scheme_stats(DEMOTE)?,
            fast: (0..self.ladder.len()).map(|k| self.scheme_stats(HISTOGRAM + k)).collect::<Result<_, _>>()?,
            slow: (0..self.ladder.len())
                .map(|k| self.scheme_stats(HISTOGRAM + self.ladder.len() + k))
                .collect::<Result<_, _>>()?,
        }))
    }

    /// Turns the kdamond off and gives it back as it was found; deletes the state file.
    pub fn stop(self) -> Result<(), DamonError> {
        self.claim.release()
    }

    fn scheme_dir(&self, index: usize) -> PathBuf {
        self.claim.context_dir().join(format!("schemes/{index}"))
    }

    fn scheme_stats(&self, index: usize) -> Result<SchemeStats, DamonError> {
        let dir = self.scheme_dir(index).join("stats");
        let read = |name: &str| sysfs_io::read_parsed::<u64>(&dir.join(name), "a count");
        Ok(SchemeStats {
            nr_tried: read("nr_tried")?,
            sz_tried: read("sz_tried")?,
            nr_applied: read("nr_applied")?,
            sz_applied: read("sz_applied")?,
            qt_exceeds: read("qt_exceeds")?,
        })
    }

    /// Sets a migration scheme's quota (0 pauses it: see the module documentation) and the
    /// bounds on its regions' accesses.
    fn write_quota(&self, index: usize, bytes_per_sec: u64, accesses: (u32, u32)) -> Result<(), DamonError> {
        let dir = self.scheme_dir(index);
        let (min_age, bytes) = if bytes_per_sec == 0 { (PAUSED_MIN_AGE, PAUSED_BYTES) } else { (0, bytes_per_sec) };
        sysfs_io::write_value(&dir.join("access_pattern/age/min"), &min_age.to_string())?;
        sysfs_io::write_value(&dir.join("access_pattern/nr_accesses/min"), &accesses.0.to_string())?;
        sysfs_io::write_value(&dir.join("access_pattern/nr_accesses/max"), &accesses.1.to_string())?;
        sysfs_io::write_value(&dir.join("quotas/bytes"), &bytes.to_string())?;
        Ok(())
    }

    /// How many schemes there are: the two migrations and the histogram of both nodes.
    fn schemes(&self) -> usize {
        HISTOGRAM + 2 * self.ladder.len()
    }

    fn configure(&mut self) -> Result<(), DamonError> {
        let contexts = self.claim.dir().join("contexts");
        let ctx = self.claim.context_dir();
        write_nr(&contexts.join("nr_contexts"), 1, &ctx)?;
        let avail = ctx.join("avail_operations");
        match sysfs_io::read_trimmed(&avail) {
            Ok(listed) if !listed.split_whitespace().any(|op| op == "paddr") => {
                return Err(Unavailable::NoPaddr { path: avail, listed }.into());
            }
            Ok(_) => {}
            Err(err) if err.is_not_found() => {} // Linux before 5.19 has no avail_operations.
            Err(err) => return Err(err.into()),
        }
        let ops = ctx.join("operations");
        if let Err(err) = sysfs_io::write_value(&ops, "paddr") {
            return Err(match err.errno() {
                Some(libc::EINVAL) => Unavailable::NoPaddr { path: ops, listed: "no paddr".to_owned() }.into(),
                _ => err.into(),
            });
        }
        let attrs = ctx.join("monitoring_attrs");
        let values = [
            ("intervals/sample_us", self.opts.sample_us),
            ("intervals/aggr_us", self.opts.aggr_us),
            ("intervals/update_us", self.opts.aggr_us * 10),
            ("nr_regions/min", self.opts.min_regions),
            ("nr_regions/max", self.opts.max_regions),
        ];
        for (file, value) in values {
            sysfs_io::write_value(&attrs.join(file), &value.to_string())?;
        }
        let targets = ctx.join("targets");
        write_nr(&targets.join("nr_targets"), 1, &targets.join("0"))?;
        // paddr ignores it; a recovery reads it to know the kdamond is tierkit's.
        sysfs_io::write_value(&targets.join("0/pid_target"), &self.claim.pid().to_string())?;
        let mut ranges: Vec<&Range<u64>> = self.opts.fast_ranges.iter().chain(&self.opts.slow_ranges).collect();
        ranges.sort_by_key(|r| r.start);
        let regions = targets.join("0/regions");
        write_nr(&regions.join("nr_regions"), ranges.len(), &regions.join("0"))?;
        for (i, r) in ranges.iter().enumerate() {
            let dir = regions.join(i.to_string());
            sysfs_io::write_value(&dir.join("start"), &r.start.to_string())?;
            sysfs_io::write_value(&dir.join("end"), &r.end.to_string())?;
        }
        let schemes = ctx.join("schemes");
        let n = self.schemes();
        write_nr(&schemes.join("nr_schemes"), n, &self.scheme_dir(n - 1))?;
        for index in 0..n {
            self.write_scheme(index)?;
        }
        let paused = Quotas::default();
        self.write_quota(PROMOTE, 0, (paused.hot_min_accesses, u32::MAX))?;
        self.write_quota(DEMOTE, 0, (0, paused.cold_max_accesses))?;
        self.claim
            .turn_on(format!("DAMOS tiering between nodes {} and {} (paddr)", self.opts.fast_node, self.opts.slow_node))
    }

    fn write_scheme(&mut self, index: usize) -> Result<(), DamonError> {
        let dir = self.scheme_dir(index);
        let nr_max = u64::from(u32::MAX);
        let start = Quotas::default();
        let (action, target_nid, nr_accesses) = match index {
            PROMOTE => ("migrate_hot", Some(self.opts.fast_node), (u64::from(start.hot_min_accesses), nr_max)),
            DEMOTE => ("migrate_cold", Some(self.opts.slow_node), (0, u64::from(start.cold_max_accesses))),
            _ => ("stat", None, (u64::from(self.ladder[(index - HISTOGRAM) % self.ladder.len()]), nr_max)),
        };
        let action_path = dir.join("action");
        if let Err(err) = sysfs_io::write_value(&action_path, action) {
            return Err(match err.errno() {
                Some(libc::EINVAL) => Unavailable::NoMigrateActions {
                    path: action_path,
                    detail: format!("the kernel refused the action {action:?}"),
                }
                .into(),
                _ => err.into(),
            });
        }
        if let Some(nid) = target_nid {
            let nid_path = dir.join("target_nid");
            if !nid_path.exists() {
                let detail = "schemes have no target_nid file".to_string();
                return Err(Unavailable::NoMigrateActions { path: nid_path, detail }.into());
            }
            sysfs_io::write_value(&nid_path, &nid.to_string())?;
        }
        sysfs_io::write_value(&dir.join("apply_interval_us"), "0")?; // the aggregation interval
        let bounds = [("sz", 4096, u64::MAX), ("nr_accesses", nr_accesses.0, nr_accesses.1), ("age", 0, nr_max)];
        let pattern = dir.join("access_pattern");
        for (name, min, max) in bounds {
            sysfs_io::write_value(&pattern.join(name).join("min"), &min.to_string())?;
            sysfs_io::write_value(&pattern.join(name).join("max"), &max.to_string())?;
        }
        // Quotas: none for the stat schemes; bytes per second for the migrations,
        // prioritized by access frequency and age, not size (as mtier.c does).
        let quota = dir.join("quotas");
        let quota_values = [
            ("ms", 0),
            ("bytes", 0),
            ("reset_interval_ms", RESET_INTERVAL_MS),
            ("weights/sz_permil", 0),
            ("weights/nr_accesses_permil", 100),
            ("weights/age_permil", 100),
        ];
        for (file, value) in quota_values {
            sysfs_io::write_value(&quota.join(file), &value.to_string())?;
        }
        // The migrations stand still below `min_free_permil` free memory; the stat
        // schemes always run.
        let marks = dir.join("watermarks");
        let (metric, low) =
            if target_nid.is_some() { ("free_mem_rate", self.opts.min_free_permil) } else { ("none", 0) };
        let high = if target_nid.is_some() { self.opts.max_free_permil } else { 1_000 };
        let values = [("interval_us", 1_000_000), ("high", high), ("mid", high), ("low", low)];
        sysfs_io::write_value(&marks.join("metric"), metric)?;
        for (file, value) in values {
            sysfs_io::write_value(&marks.join(file), &value.to_string())?;
        }
        self.write_filters(index)
    }

    /// `addr` filters excluding the other node's ranges; for the migrations first a
    /// `young` filter, when the kernel has it, then the `memcg` filter, when asked for.
    fn write_filters(&mut self, index: usize) -> Result<(), DamonError> {
        let on_fast = index == DEMOTE || (HISTOGRAM..HISTOGRAM + self.ladder.len()).contains(&index);
        let excluded = if on_fast { &self.opts.slow_ranges } else { &self.opts.fast_ranges };
        let filters = self.scheme_dir(index).join("filters");
        let nr_path = filters.join("nr_filters");
        let migrates = matches!(index, PROMOTE | DEMOTE);
        let memcg = self.opts.memcg.as_deref().filter(|_| migrates);
        if memcg.is_some() && !filters.is_dir() {
            let detail = "schemes have no filters directory".to_string();
            return Err(Unavailable::NoMemcgFilter { path: filters, detail }.into());
        }
        let always = excluded.len() + usize::from(memcg.is_some());
        write_nr(&nr_path, always + usize::from(migrates), &filters.join("0"))?;
        let mut next = 0;
        if migrates {
            match sysfs_io::write_value(&filters.join("0/type"), "young") {
                Ok(()) => {
                    // Promotion skips pages not accessed since the last check; demotion those accessed.
                    let matching = if index == PROMOTE { "N" } else { "Y" };
                    sysfs_io::write_value(&filters.join("0/matching"), matching)?;
                    next = 1;
                }
                // Linux before 6.10: no young filter; one filter fewer.
                Err(err) if err.errno() == Some(libc::EINVAL) => {
                    write_nr(&nr_path, always, &filters.join("0"))?;
                }
                Err(err) => return Err(err.into()),
            }
            self.young_filter = next == 1;
        }
        if let Some(path) = memcg {
            write_memcg_filter(&filters.join(next.to_string()), path)?;
            next += 1;
        }
        for (i, r) in excluded.iter().enumerate() {
            let dir = filters.join((next + i).to_string());
            sysfs_io::write_value(&dir.join("type"), "addr").map_err(filter_error(&dir))?;
            sysfs_io::write_value(&dir.join("matching"), "Y")?;
            sysfs_io::write_value(&dir.join("addr_start"), &r.start.to_string())?;
            sysfs_io::write_value(&dir.join("addr_end"), &r.end.to_string())?;
        }
        Ok(())
    }
}

/// A filter in `dir` that leaves out every page not charged to the memory cgroup `path`:
/// it matches what is *not* in the cgroup (`matching` N) and rejects it (`allow` N, where
/// the kernel has the file, 6.14+; before, every filter rejects what it matches).
fn write_memcg_filter(dir: &Path, path: &str) -> Result<(), DamonError> {
    let unavailable = |file: &str, detail: &str| -> DamonError {
        Unavailable::NoMemcgFilter { path: dir.join(file), detail: detail.to_string() }.into()
    };
    if !dir.join("memcg_path").exists() {
        return Err(unavailable("memcg_path", "filters have no memcg_path file"));
    }
    if let Err(err) = sysfs_io::write_value(&dir.join("type"), "memcg") {
        return Err(match err.errno() {
            Some(libc::EINVAL) => unavailable("type", "the kernel refused a memcg filter"),
            _ => err.into(),
        });
    }
    sysfs_io::write_value(&dir.join("memcg_path"), path)?;
    sysfs_io::write_value(&dir.join("matching"), "N")?;
    let allow = dir.join("allow");
    if allow.exists() {
        sysfs_io::write_value(&allow, "N")?;
    }
    Ok(())
}

/// A refused `addr` filter means DAMOS lacks address filters (Linux before 6.3).
fn filter_error(dir: &Path) -> impl Fn(SysfsError) -> DamonError + '_ {
    move |err| match err.errno() {
        Some(libc::EINVAL) => Unavailable::NoMigrateActions {
            path: dir.join("type"),
            detail: "the kernel refused an addr filter".to_string(),
        }
        .into(),
        _ => err.into(),
    }
}

/// Checks what the kernel would refuse only when the kdamond is turned on, and that
/// the nodes differ and have memory.
fn validate(opts: &DamosOptions) -> Result<(), DamonError> {
    let problem = if opts.fast_node == opts.slow_node {
        format!("the fast and the slow node are both node {}", opts.fast_node)
    } else if opts.fast_ranges.is_empty() || opts.slow_ranges.is_empty() {
        "a node has no physical ranges".to_string()
    } else if opts.sample_us == 0 || opts.sample_us > opts.aggr_us {
        format!("sample_us ({}) must be in 1..=aggr_us ({})", opts.sample_us, opts.aggr_us)
    } else if opts.min_regions < 3 || opts.min_regions > opts.max_regions {
        format!("regions {}..{} (at least 3, min <= max)", opts.min_regions, opts.max_regions)
    } else if opts.min_free_permil >= opts.max_free_permil || opts.max_free_permil > 1_000 {
        format!(
            "free-memory watermarks {}..{} permil (min below max, max at most 1000)",
            opts.min_free_permil, opts.max_free_permil
        )
    } else if opts.memcg.as_deref().is_some_and(|p| !p.starts_with('/')) {
        format!("memory cgroup {:?} does not start with /", opts.memcg.as_deref().unwrap_or_default())
    } else {
        let mut all: Vec<&Range<u64>> = opts.fast_ranges.iter().chain(&opts.slow_ranges).collect();
        all.sort_by_key(|r| r.start);
        match all.windows(2).find(|w| w[0].end > w[1].start) {
            Some(w) => format!(
                "physical ranges {:#x}..{:#x} and {:#x}..{:#x} overlap",
                w[0].start, w[0].end, w[1].start, w[1].end
            ),
            None => return Ok(()),
        }
    };
    Err(DamonError::InvalidOptions(problem))
}
