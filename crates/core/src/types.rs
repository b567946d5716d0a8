//! The small vocabulary every part of tierkit shares.

/// A page number: a virtual address divided by the 4 KiB base page size
/// (`addr >> 12`). Huge pages are named by their first base page.
/// `u64::MAX` is never a page (no address is that large).
pub type Page = u64;

/// Time in nanoseconds since the platform started (simulated or monotonic clock).
pub type Nanos = u64;

/// Base page size in bytes.
pub const PAGE_SIZE: u64 = 4096;

/// Base pages in one 2 MiB huge page.
pub const HUGE_PAGE_PAGES: u64 = 512;

/// Nanoseconds per second.
pub const SECOND: Nanos = 1_000_000_000;

/// Nanoseconds per millisecond.
pub const MILLISECOND: Nanos = 1_000_000;

/// A memory tier. Tier 0 is the fastest (local DRAM); higher numbers are slower
/// (CXL-attached or remote memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct TierId(pub u8);

impl TierId {
    /// The fastest tier.
    pub const FAST: TierId = TierId(0);

    /// Tier index, usable to index per-tier arrays.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl std::fmt::Display for TierId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "tier{}", self.0)
    }
}

/// What backs a page; TPP §5.4 places file and tmpfs pages on the slow tier first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum PageKind {
    /// Anonymous memory (heap, stack).
    #[default]
    Anon,
    /// Page cache of a regular file.
    File,
    /// Shared memory / tmpfs.
    Tmpfs,
}

/// A tier as the platform describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct TierInfo {
    /// Its id (position in [`crate::Memory::tiers`]).
    pub id: TierId,
    /// A human name: `"dram"`, `"cxl"`, `"node1"`.
    pub name: String,
    /// Capacity available to the managed process, in base pages.
    pub capacity_pages: u64,
    /// Unloaded read latency in ns, when known (simulator model, HMAT).
    pub unloaded_latency_ns: Option<f64>,
    /// Peak bandwidth in GB/s, when known.
    pub bandwidth_gbps: Option<f64>,
}
