//! [`LiveProcess`]: a running process's memory as a [`tierkit_core::Memory`].
//!
//! Placement comes from a cache that [`LiveProcess::refresh`] rebuilds: the process's
//! mappings (`/proc/PID/maps`), which of their pages are present (`/proc/PID/pagemap`,
//! read in 32768-page `pread`s), which are transparent huge pages (`/proc/kpageflags`,
//! root only) and the node of each present page (`move_pages(2)` with no destination, in
//! batches of 16384). Between refreshes the cache is updated by every migration, so
//! policies see their own moves at once.
//!
//! Free pages per tier ([`Memory::free_pages`]) are the tier's *room*: what its nodes can
//! take above the kernel's watermarks and reserves plus a margin
//! ([`crate::topology::zoneinfo`]), re-read by [`LiveProcess::refresh_free`] and adjusted
//! by every move. Moves never take a node below it, nor its free pages the allocator
//! counts below the low watermarks (the buddy room), and pages the kernel refuses for a
//! lasting reason are not retried for a while (the `cooling` submodule); the `migrate`
//! submodule says what one `migrate` call does.

mod cooling;
mod migrate;
mod placement;

use std::path::Path;
use std::time::{Duration, Instant};

use tierkit_core::{Memory, MoveStatus, Nanos, Page, PageKind, Resident, ScanCursor, TierId, TierInfo, PAGE_SIZE};

use crate::memory::pacing::MovePacer;
use crate::memory::procfs::{read_maps, KPageFlags, Mapping, Pagemap, PagemapEntry, ProcError};
use crate::sys::{self, Errno};
use crate::topology::{Topology, TopologyError};
use cooling::Cooling;
use placement::{Placement, Slot, ABSENT, MAX_NODES};

/// Pages per pagemap `pread` (256 KiB of entries; a multiple of 512 so huge pages never
/// straddle two reads).
const PAGEMAP_CHUNK: u64 = 32768;
/// Pages per `move_pages` location query.
const QUERY_BATCH: usize = 16384;

/// Why a live process could not be opened or refreshed.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// The process exited (or is a zombie with no memory left).
    #[error("process {pid} is gone")]
    Gone {
        /// The process.
        pid: u32,
    },
    /// Its procfs files could not be read.
    #[error(transparent)]
    Proc(ProcError),
    /// The nodes' meminfo or `/proc/zoneinfo` could not be re-read.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// The kernel refused to say where the pages are.
    #[error(
        "cannot ask the kernel where process {pid}'s pages are (move_pages): {errno}; this needs \
         ptrace access to the process (same user, or CAP_SYS_PTRACE)"
    )]
    Query {
        /// The process.
        pid: u32,
        /// What `move_pages` returned.
        errno: Errno,
    },
    /// More memory nodes than the placement cache can name.
    #[error("the topology has {0} nodes with memory; tierkit handles at most 127")]
    TooManyNodes(usize),
}

impl From<ProcError> for ProcessError {
    fn from(e: ProcError) -> Self {
        match e {
            ProcError::Gone { pid, .. } => Self::Gone { pid },
            e => Self::Proc(e),
        }
    }
}

/// What one [`LiveProcess::refresh`] found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RefreshStats {
    /// Mappings whose pages are tiered.
    pub mappings: usize,
    /// Resident base pages found.
    pub resident_pages: u64,
    /// Of those, base pages in transparent huge pages.
    pub huge_pages: u64,
    /// Present pages the kernel placed on no known memory node, or could not locate
    /// (the shared zero page, pages being migrated): left out.
    pub unplaced_pages: u64,
}

/// Pages [`LiveProcess`] refused to move without asking the kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeldBack {
    /// Units no node of the destination tier had room for.
    pub no_room: u64,
    /// Units the kernel refused for a lasting reason (`EACCES`, `EFAULT`, `EINVAL`),
    /// asked again within their 30 s cool-down; the kernel's refusal was counted once,
    /// when it was made.
    pub cooling: u64,
}

/// A running process whose pages tierkit places, implementing [`Memory`].
#[derive(Debug)]
pub struct LiveProcess {
    pid: u32,
    topology: Topology,
    tiers: Vec<TierInfo>,
    start: Instant,
    mappings: Vec<Mapping>,
    placement: Placement,
    pagemap: Pagemap,
    kpageflags: Option<KPageFlags>,
    /// Node index by node id (`None` for nodes without memory).
    node_index: Vec<Option<u8>>,
    /// Node id by node index.
    node_ids: Vec<u32>,
    pacer: MovePacer,
    cooling: Cooling,
    held: HeldBack,
    gone: bool,
    /// When the nodes' free memory was last read.
    free_read: Instant,
}

impl LiveProcess {
    /// Opens process `pid` (its `/proc/PID/pagemap`) and reads where its pages are.
    pub fn open(pid: u32, topology: &Topology) -> Result<Self, ProcessError> {
        let memory_nodes: Vec<(u32, TierId)> =
            topology.nodes.iter().filter_map(|n| Some((n.id, TierId(n.tier?)))).collect();
        if memory_nodes.len() > MAX_NODES {
            return Err(ProcessError::TooManyNodes(memory_nodes.len()));
        }
        let max_id = memory_nodes.iter().map(|&(id, _)| id as usize).max().unwrap_or(0);
        let mut node_index = vec![None; max_id + 1];
        for (i, &(id, _)) in memory_nodes.iter().enumerate() {
            node_index[id as usize] = Some(i as u8);
        }
        let root = Path::new("/");
        let mut live = Self {
            pid,
            tiers: topology.tier_infos(),
            topology: topology.clone(),
            start: Instant::now(),
            mappings: Vec::new(),
            placement: Placement { node_tier: memory_nodes.iter().map(|&(_, t)| t).collect(), ..Placement::default() },
            pagemap: Pagemap::open(root, pid)?,
            kpageflags: KPageFlags::open(root),
            node_index,
            node_ids: memory_nodes.iter().map(|&(id, _)| id).collect(),
            pacer: MovePacer::default(),
            cooling: Cooling::default(),
            held: HeldBack::default(),
            gone: false,
            free_read: Instant::now(),
        };
        live.refresh()?;
        Ok(live)
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// True once the process was seen gone (a refresh or a move found it exited); from
    /// then on every move reports `NotResident` and every refresh fails.
    pub fn gone(&self) -> bool {
        self.gone
    }

    /// The topology, with free memory and room as of the last refresh and the moves since.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// Its mappings as of the last refresh.
    pub fn mappings(&self) -> &[Mapping] {
        &self.mappings
    }

    /// Whether huge pages are detected (`/proc/kpageflags` and PFNs are readable: root).
    pub fn detects_huge_pages(&self) -> bool {
        self.kpageflags.is_some()
    }

    /// The kind of memory `page` belongs to, when it was resident at the last refresh.
    pub fn page_kind(&self, page: Page) -> Option<PageKind> {
        self.placement.kind_of(page)
    }

    /// Resident base pages per tier (index = tier id), from the placement cache.
    pub fn resident_by_tier(&self) -> Vec<u64> {
        let mut by_tier = vec![0; self.tiers.len()];
        for (n, pages) in self.placement.pages_per_node().into_iter().enumerate() {
            by_tier[self.placement.node_tier[n].index()] += pages;
        }
        by_tier
    }

    /// Resident base pages per tier of up to `max_units` resident units spread over the
    /// whole process, located afresh (one `move_pages` query; no maps or pagemap read):
    /// where the pages are now when something else moved them since the last
    /// [`LiveProcess::refresh`] (the kernel's tiering). The cache takes the new locations.
    pub fn sample_by_tier(&mut self, max_units: usize) -> Result<Vec<u64>, ProcessError> {
        if self.gone {
            return Err(ProcessError::Gone { pid: self.pid });
        }
        let mut cache = std::mem::take(&mut self.placement);
        let slots = cache.spread(max_units);
        let mut query = Query { slots: slots.clone(), ..Query::default() };
        let located = self.locate(&mut query, &mut cache, &mut RefreshStats::default());
        let by_tier = cache.pages_per_tier(&slots, self.tiers.len());
        self.placement = cache;
        match located {
            Ok(()) => Ok(by_tier),
            Err(ProcessError::Gone { .. }) => Err(self.mark_gone()),
            Err(e) => Err(e),
        }
    }

    /// The move pacer (batch size, bandwidth allowance, back-off, per-errno counts).
    pub fn pacer(&self) -> &MovePacer {
        &self.pacer
    }

    /// Pages refused without a system call so far (the kernel's own refusals are the
    /// pacer's per-errno counts).
    pub fn held_back(&self) -> HeldBack {
        self.held
    }

    /// The move pacer, to read its allowance or replace its configuration.
    pub fn pacer_mut(&mut self) -> &mut MovePacer {
        &mut self.pacer
    }

    /// Re-reads the nodes' free memory and room (cheap: one small file per node and
    /// `/proc/zoneinfo`), replacing the estimates the moves since the last read made.
    pub fn refresh_free(&mut self) -> Result<(), ProcessError> {
        self.topology.refresh_memory()?;
        self.tiers = self.topology.tier_infos();
        self.free_read = Instant::now();
        Ok(())
    }

    /// How long ago the nodes' free memory was last read.
    pub fn free_age(&self) -> Duration {
        self.free_read.elapsed()
    }

    fn mark_gone(&mut self) -> ProcessError {
        self.gone = true;
        ProcessError::Gone { pid: self.pid }
    }

    /// Rebuilds the placement cache from the process's maps, pagemap and the kernel's
    /// page locations, re-reads free memory, and forgets the cool-downs that ended or
    /// that the new placement shows to be over.
    pub fn refresh(&mut self) -> Result<RefreshStats, ProcessError> {
        if self.gone {
            return Err(ProcessError::Gone { pid: self.pid });
        }
        let result = self.rebuild();
        if let Err(ProcessError::Gone { .. }) = result {
            return Err(self.mark_gone());
        }
        let stats = result?;
        // A page refused as unmapped or the zero page that now sits on a node was
        // written or mapped again since: it may be moved. Sharing cannot be seen here.
        let (now, placement) = (self.now(), &self.placement);
        self.cooling.retain(now, |page, errno| errno == libc::EACCES || placement.tier_of(page).is_none());
        self.refresh_free()?;
        Ok(stats)
    }

    fn rebuild(&mut self) -> Result<RefreshStats, ProcessError> {
        let mappings = read_maps(Path::new("/"), self.pid)?;
        if mappings.is_empty() {
            return Err(ProcessError::Gone { pid: self.pid });
        }
        let mut cache = Placement { node_tier: self.placement.node_tier.clone(), ..Placement::default() };
        let mut query = Query::default();
        let mut stats = RefreshStats::default();
        let mut entries: Vec<PagemapEntry> = Vec::with_capacity(PAGEMAP_CHUNK as usize);
        for m in mappings.iter().filter(|m| m.tierable()) {
            stats.mappings += 1;
            let (kind, pages) = (m.page_kind(), m.pages());
            let mut start = pages.start;
            while start < pages.end {
                let end = pages.end.min((start / PAGEMAP_CHUNK + 1) * PAGEMAP_CHUNK);
                entries.clear();
                self.pagemap.read(start, (end - start) as usize, &mut entries)?;
                let mut i = 0;
                while i < entries.len() {
                    if !entries[i].present() {
                        i += 1;
                        continue;
                    }
                    let page = start + i as u64;
                    let weight = if self.huge_at(page, &entries[i..]) { HUGE_PAGE } else { 1 };
                    let slot = Slot { index: cache.state.len(), unit: page, weight };
                    for p in page..page + weight {
                        cache.push(p, kind, ABSENT);
                    }
                    query.slots.push(slot);
                    if query.slots.len() >= QUERY_BATCH {
                        self.locate(&mut query, &mut cache, &mut stats)?;
                    }
                    i += weight as usize;
                }
                start = end;
            }
        }
        self.locate(&mut query, &mut cache, &mut stats)?;
        self.mappings = mappings;
        self.placement = cache;
        Ok(stats)
    }

    /// Whether `page` (whose entry heads `entries`) starts a transparent huge page: 2 MiB
    /// aligned, its frame a THP head, and 512 present pages on consecutive frames.
    fn huge_at(&self, page: Page, entries: &[PagemapEntry]) -> bool {
        let (Some(kpf), Some(pfn)) = (&self.kpageflags, entries[0].pfn()) else { return false };
        page.is_multiple_of(HUGE_PAGE)
            && pfn.is_multiple_of(HUGE_PAGE)
            && entries.len() >= HUGE_PAGE as usize
            && entries[..HUGE_PAGE as usize].iter().zip(pfn..).all(|(e, f)| e.pfn() == Some(f))
            && kpf.thp_head(pfn)
    }

    /// Asks the kernel for the node of every queued unit and records it in `cache`.
    fn locate(
        &mut self,
        query: &mut Query,
        cache: &mut Placement,
        stats: &mut RefreshStats,
    ) -> Result<(), ProcessError> {
        if query.slots.is_empty() {
            return Ok(());
        }
        query.addrs.clear();
        query.addrs.extend(query.slots.iter().map(|s| (s.unit * PAGE_SIZE) as usize));
        query.status.clear();
        query.status.resize(query.slots.len(), 0);
        match sys::move_pages(self.pid as libc::pid_t, &query.addrs, None, &mut query.status, 0) {
            // EINVAL: no address space left (exiting, or a zombie not reaped yet).
            Err(Errno(libc::ESRCH | libc::EINVAL)) => return Err(ProcessError::Gone { pid: self.pid }),
            Err(errno) => return Err(ProcessError::Query { pid: self.pid, errno }),
            Ok(_) => {}
        }
        for (slot, &status) in query.slots.iter().zip(&query.status) {
            let node = self.index_of_node(status);
            cache.set(*slot, node);
            match node {
                Some(_) if slot.weight > 1 => stats.huge_pages += slot.weight,
                Some(_) => {}
                None => stats.unplaced_pages += slot.weight,
            }
            stats.resident_pages += if node.is_some() { slot.weight } else { 0 };
        }
        query.slots.clear();
        Ok(())
    }

    /// The node index of a `move_pages` status naming a node (`None` for errors and
    /// nodes without memory).
    fn index_of_node(&self, status: i32) -> Option<usize> {
        let id = usize::try_from(status).ok()?;
        self.node_index.get(id).copied().flatten().map(usize::from)
    }
}

/// Base pages in a huge page.
const HUGE_PAGE: u64 = tierkit_core::HUGE_PAGE_PAGES;

/// Scratch buffers of a location query.
#[derive(Default)]
struct Query {
    slots: Vec<Slot>,
    addrs: Vec<usize>,
    status: Vec<i32>,
}

impl Memory for LiveProcess {
    /// Time since [`LiveProcess::open`] on the monotonic clock.
    fn now(&self) -> Nanos {
        self.start.elapsed().as_nanos() as Nanos
    }

    fn tiers(&self) -> &[TierInfo] {
        &self.tiers
    }

    /// The tier's room: base pages its nodes can take above the kernel's watermarks,
    /// reserves and tierkit's margin, as last read and adjusted by the moves since.
    fn free_pages(&self, tier: TierId) -> u64 {
        self.topology.room_pages(tier)
    }

    fn tier_of(&self, page: Page) -> Option<TierId> {
        self.placement.tier_of(page)
    }

    fn scan(&self, cursor: &mut ScanCursor, max: usize, out: &mut Vec<Resident>) -> usize {
        let start = cursor.next;
        let mut n = 0;
        for r in self.placement.units_from(start).take(max) {
            out.push(r);
            cursor.next = r.page + 1;
            n += 1;
        }
        if n < max && self.placement.units_from(0).next().is_some() {
            cursor.passes += 1;
            cursor.next = 0;
            for r in self.placement.units_from(0).take_while(|r| r.page < start).take(max - n) {
                out.push(r);
                cursor.next = r.page + 1;
                n += 1;
            }
        }
        n
    }

    fn migrate(&mut self, pages: &[Page], to: TierId, out: &mut Vec<MoveStatus>) {
        self.migrate_pages(pages, to, out);
    }
}
