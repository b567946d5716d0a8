//! NUMA nodes, memory tiers and which nodes are fast or slow.
//!
//! [`Topology::discover`] reads `sys/devices/system/node` and
//! `sys/devices/virtual/memory_tiering` under a root directory (`/` on a live system, a
//! fixture tree in tests) and classifies every node with memory:
//!
//! - **fast**: nodes with CPUs in the fastest kernel memory tier that has CPU nodes
//!   (lower memory-tier ids are faster: the id is the node's abstract distance / 128);
//! - **slow**: CPU-less memory nodes (how CXL memory appears) and nodes in slower memory
//!   tiers. Slow nodes are grouped by kernel memory tier, slowest last.
//!
//! tierkit tiers are those groups, fastest first: [`TierId`] 0 is the fast group.
//! [`TopologyOverrides`] replace the automatic choice.
//!
//! How many pages each node can still take ([`Node::room_pages`]) comes from
//! `proc/zoneinfo` under the same root: free pages above the kernel's watermarks and
//! reserves, less a margin (see [`zoneinfo`] for the formula and why).

mod classify;
mod display;
mod sysfs;
pub mod zoneinfo;

use std::path::{Path, PathBuf};

use serde::Serialize;
use tierkit_core::{TierId, TierInfo, PAGE_SIZE};

pub use classify::TopologyOverrides;
pub use sysfs::parse_list;
pub use zoneinfo::ZoneTotals;

/// Why the topology could not be read or an override was refused.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// A sysfs file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A sysfs file held something unexpected.
    #[error("cannot parse {path}: expected {expected}, found {found:?}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the file should hold.
        expected: &'static str,
        /// The start of what it held.
        found: String,
    },
    /// No NUMA node directory: the kernel was built without `CONFIG_NUMA`.
    #[error("no NUMA nodes under {0}: this kernel has no NUMA support, so there is nothing to tier")]
    NoNuma(PathBuf),
    /// An override names a node that is not online.
    #[error("--{flag} names node {node}, which is not an online NUMA node (online: {online})")]
    UnknownNode {
        /// `fast` or `slow`.
        flag: &'static str,
        /// The node.
        node: u32,
        /// The online nodes, as a list.
        online: String,
    },
    /// An override names a node without memory.
    #[error("--{flag} names node {node}, which has no memory; only nodes with memory can hold pages")]
    NoMemory {
        /// `fast` or `slow`.
        flag: &'static str,
        /// The node.
        node: u32,
    },
    /// A node is both fast and slow.
    #[error("node {0} is in both --fast and --slow; a node belongs to one tier")]
    Overlap(u32),
    /// Both lists were given and a memory node is in neither.
    #[error("node {0} has memory but is in neither --fast nor --slow; list it in one of them")]
    Uncovered(u32),
    /// The overrides leave no fast node.
    #[error("no fast node left: --fast must name at least one node with memory")]
    EmptyFast,
}

/// How tierkit uses a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeClass {
    /// Fast memory: hot pages go here.
    Fast,
    /// Slow memory (CXL-like): cold pages go here.
    Slow,
    /// No memory (a CPU-only node): holds no pages.
    Memoryless,
}

impl NodeClass {
    /// `"fast"`, `"slow"` or `"memoryless"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Fast => "fast",
            Self::Slow => "slow",
            Self::Memoryless => "memoryless",
        }
    }
}

/// HMAT access attributes of a memory node as seen from its best initiators
/// (`nodeN/accessK/initiators/`). Latencies in ns, bandwidths in MB/s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Access {
    /// Read latency, ns.
    pub read_latency_ns: Option<u64>,
    /// Write latency, ns.
    pub write_latency_ns: Option<u64>,
    /// Read bandwidth, MB/s.
    pub read_bandwidth_mbps: Option<u64>,
    /// Write bandwidth, MB/s.
    pub write_bandwidth_mbps: Option<u64>,
}

/// One online NUMA node.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Node {
    /// Node id.
    pub id: u32,
    /// Its CPUs (empty for a CPU-less node).
    pub cpus: Vec<u32>,
    /// Whether the kernel lists it in `has_cpu`.
    pub has_cpu: bool,
    /// `MemTotal` in KiB (0 for a memoryless node).
    pub mem_total_kib: u64,
    /// `MemFree` in KiB when last read.
    pub mem_free_kib: u64,
    /// Its zones' counts from `/proc/zoneinfo` when last read (`None` when the file does
    /// not describe it).
    pub zones: Option<ZoneTotals>,
    /// Base pages it can take before its free memory reaches the kernel's high watermarks
    /// and reserves plus a margin ([`zoneinfo`]); negative when it is already below. As
    /// last read, adjusted by the moves since ([`Node::adjust_headroom`]).
    pub headroom_pages: i64,
    /// Base pages moves may bring onto it before its free pages, the per-CPU lists left
    /// out, reach the kernel's low watermarks and reserves ([`zoneinfo`]'s buddy room); as
    /// last read, adjusted by the moves since. Only moves are bounded by it.
    pub buddy_room_pages: i64,
    /// The kernel memory tier holding it (`memory_tierN`), when the kernel has tiers.
    pub memory_tier: Option<u32>,
    /// NUMA distance to every node of [`Topology::nodes`], in the same order.
    pub distances: Vec<u32>,
    /// HMAT attributes from any initiator (`access0`), when present.
    pub access0: Option<Access>,
    /// HMAT attributes from CPU initiators (`access1`), when present.
    pub access1: Option<Access>,
    /// Fast, slow or memoryless.
    pub class: NodeClass,
    /// The tierkit tier index it belongs to (`None` for memoryless nodes).
    pub tier: Option<u8>,
}

impl Node {
    /// HMAT attributes as CPUs see them: `access1`, else `access0`.
    pub fn hmat(&self) -> Option<&Access> {
        self.access1.as_ref().or(self.access0.as_ref())
    }

    /// Base pages it can still take (its headroom, 0 when below): what a policy is told
    /// is free.
    pub fn room_pages(&self) -> u64 {
        self.headroom_pages.max(0) as u64
    }

    /// Base pages that may still be moved onto it: its headroom, and no more than its
    /// buddy room (0 when either is used up).
    pub fn move_room_pages(&self) -> u64 {
        self.headroom_pages.min(self.buddy_room_pages).max(0) as u64
    }

    /// Records `pages` base pages moved onto it (negative: moved off it).
    pub fn adjust_headroom(&mut self, pages: i64) {
        self.headroom_pages = self.headroom_pages.saturating_sub(pages);
        self.buddy_room_pages = self.buddy_room_pages.saturating_sub(pages);
    }

    /// It refused a page for lack of memory: no room for moves until the next read.
    pub fn refused_for_memory(&mut self) {
        self.headroom_pages = self.headroom_pages.min(0);
        self.buddy_room_pages = self.buddy_room_pages.min(0);
    }

    /// Sets its counts from `/proc/zoneinfo` (`None`: not described there, so the
    /// `meminfo` fallback) and its headroom from them.
    fn set_zones(&mut self, zones: Option<&zoneinfo::NodeZones>) {
        if self.mem_total_kib == 0 {
            (self.zones, self.headroom_pages, self.buddy_room_pages) = (None, 0, 0);
            return;
        }
        (self.zones, self.headroom_pages, self.buddy_room_pages) = match zones {
            Some(z) => (Some(z.totals), z.headroom, z.buddy_room),
            None => {
                let headroom = zoneinfo::fallback_headroom(self.mem_total_kib, self.mem_free_kib, PAGE_SIZE / 1024);
                (None, headroom, headroom)
            }
        };
    }
}

/// A tierkit tier: a group of nodes of one class, fastest group first.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Tier {
    /// Its index ([`TierId`] number).
    pub index: u8,
    /// `"fast"`, `"slow"`, or `"slow1"`, `"slow2"`… when several slow groups exist.
    pub name: String,
    /// Fast or slow.
    pub class: NodeClass,
    /// Its nodes.
    pub nodes: Vec<u32>,
    /// The kernel memory tier of its nodes, when they share one.
    pub memory_tier: Option<u32>,
}

/// The machine's NUMA nodes and the tierkit tiers built from them.
#[derive(Clone, Debug, Serialize)]
pub struct Topology {
    #[serde(skip)]
    root: PathBuf,
    /// Online nodes, by id.
    pub nodes: Vec<Node>,
    /// tierkit tiers, fastest first (`tiers[i].index == i`).
    pub tiers: Vec<Tier>,
    /// Whether the kernel exposes memory tiers (Linux 6.1 and later).
    pub kernel_memory_tiers: bool,
    /// Whether the classification came from [`TopologyOverrides`].
    pub overridden: bool,
}

impl Topology {
    /// Reads the topology under `root` (`/` on a live system) and classifies it
    /// automatically.
    pub fn discover(root: &Path) -> Result<Self, TopologyError> {
        Self::discover_with(root, &TopologyOverrides::default())
    }

    /// Reads the topology under `root` and classifies it with `overrides` (automatic
    /// where they are `None`).
    pub fn discover_with(root: &Path, overrides: &TopologyOverrides) -> Result<Self, TopologyError> {
        let dir = sysfs::node_dir(root);
        let online_path = dir.join("online");
        let Some(online) = sysfs::read_list(&online_path)? else { return Err(TopologyError::NoNuma(dir)) };
        if online.is_empty() {
            return Err(TopologyError::NoNuma(dir));
        }
        let has_cpu = sysfs::read_list(&dir.join("has_cpu"))?;
        let has_memory = sysfs::read_list(&dir.join("has_memory"))?;
        let memory_tiers = sysfs::read_memory_tiers(root)?;
        let mut nodes = Vec::with_capacity(online.len());
        for &id in &online {
            let nd = dir.join(format!("node{id}"));
            let cpus = sysfs::read_list(&nd.join("cpulist"))?.unwrap_or_default();
            let (mut mem_total_kib, mut mem_free_kib) = sysfs::read_meminfo(&nd.join("meminfo"))?;
            if has_memory.as_ref().is_some_and(|m| !m.contains(&id)) {
                (mem_total_kib, mem_free_kib) = (0, 0);
            }
            nodes.push(Node {
                id,
                has_cpu: has_cpu.as_ref().map_or(!cpus.is_empty(), |c| c.contains(&id)),
                cpus,
                mem_total_kib,
                mem_free_kib,
                zones: None,
                headroom_pages: 0,
                buddy_room_pages: 0,
                memory_tier: memory_tiers.iter().find(|(_, n)| n.contains(&id)).map(|&(t, _)| t),
                distances: sysfs::read_distances(&nd.join("distance"))?,
                access0: sysfs::read_access(&nd.join("access0/initiators"))?,
                access1: sysfs::read_access(&nd.join("access1/initiators"))?,
                class: NodeClass::Memoryless,
                tier: None,
            });
        }
        let tiers = classify::classify(&mut nodes, overrides)?;
        let mut topology = Self {
            root: root.to_owned(),
            nodes,
            tiers,
            kernel_memory_tiers: !memory_tiers.is_empty(),
            overridden: overrides.fast.is_some() || overrides.slow.is_some(),
        };
        topology.read_zones()?;
        Ok(topology)
    }

    /// Re-reads `proc/zoneinfo` and sets every node's zone counts and headroom.
    fn read_zones(&mut self) -> Result<(), TopologyError> {
        let zones = zoneinfo::read_zoneinfo(&self.root)?.unwrap_or_default();
        for node in &mut self.nodes {
            node.set_zones(zones.iter().find(|z| z.id == node.id));
        }
        Ok(())
    }

    /// The root directory it was read from.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// True when there is a fast and at least one slow tier: something to tier.
    pub fn has_tiering(&self) -> bool {
        self.tiers.len() >= 2
    }

    /// Why there is nothing to tier, or `None` when there is something.
    pub fn nothing_to_tier(&self) -> Option<String> {
        if self.has_tiering() {
            return None;
        }
        let with_memory = self.nodes.iter().filter(|n| n.class != NodeClass::Memoryless).count();
        Some(match (self.nodes.len(), with_memory) {
            (1, _) => "one NUMA node: nothing to tier".to_owned(),
            (_, 1) => format!("{} NUMA nodes but only one with memory: nothing to tier", self.nodes.len()),
            (n, _) => format!(
                "{n} NUMA nodes, all with CPUs in the same memory tier: nothing to tier \
                 (name slow nodes with --slow to tier them anyway)"
            ),
        })
    }

    /// The node with id `id`.
    pub fn node(&self, id: u32) -> Option<&Node> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// The tierkit tier of node `id` (`None` for memoryless or unknown nodes).
    pub fn tier_of_node(&self, id: u32) -> Option<TierId> {
        self.node(id).and_then(|n| n.tier).map(TierId)
    }

    /// The nodes of tier `tier` (empty for an unknown tier).
    pub fn tier_nodes(&self, tier: TierId) -> &[u32] {
        self.tiers.get(tier.index()).map_or(&[], |t| &t.nodes)
    }

    /// The tiers as [`tierkit_core::Memory::tiers`] describes them: capacity from the
    /// nodes' `MemTotal`; latency the mean HMAT read latency of the nodes that report
    /// one, bandwidth their summed HMAT read bandwidth (GB/s), when known.
    pub fn tier_infos(&self) -> Vec<TierInfo> {
        self.tiers
            .iter()
            .map(|t| {
                let nodes: Vec<&Node> = t.nodes.iter().filter_map(|&id| self.node(id)).collect();
                let kib: u64 = nodes.iter().map(|n| n.mem_total_kib).sum();
                let lat: Vec<u64> = nodes.iter().filter_map(|n| n.hmat()?.read_latency_ns).collect();
                let bw: Vec<u64> = nodes.iter().filter_map(|n| n.hmat()?.read_bandwidth_mbps).collect();
                TierInfo {
                    id: TierId(t.index),
                    name: t.name.clone(),
                    capacity_pages: kib * 1024 / PAGE_SIZE,
                    unloaded_latency_ns: (!lat.is_empty()).then(|| lat.iter().sum::<u64>() as f64 / lat.len() as f64),
                    bandwidth_gbps: (!bw.is_empty()).then(|| bw.iter().sum::<u64>() as f64 / 1000.0),
                }
            })
            .collect()
    }

    /// Re-reads every node's `MemTotal`/`MemFree` (memory hot-plug changes the first,
    /// everything changes the second) and its zone counts and headroom (`proc/zoneinfo`),
    /// replacing the adjustments made since the last read.
    pub fn refresh_memory(&mut self) -> Result<(), TopologyError> {
        let dir = sysfs::node_dir(&self.root);
        for node in self.nodes.iter_mut().filter(|n| n.class != NodeClass::Memoryless) {
            (node.mem_total_kib, node.mem_free_kib) =
                sysfs::read_meminfo(&dir.join(format!("node{}/meminfo", node.id)))?;
        }
        self.read_zones()
    }

    /// Base pages that may still be moved into tier `tier`: the sum of its nodes'
    /// [`Node::room_pages`] (0 for an unknown tier).
    pub fn room_pages(&self, tier: TierId) -> u64 {
        self.tier_nodes(tier).iter().filter_map(|&id| self.node(id)).map(Node::room_pages).sum()
    }

    /// The node of tier `tier` with the most room as of the last read and the moves
    /// since (the lowest id among equals): where pages moved to that tier go.
    pub fn roomiest_node(&self, tier: TierId) -> Option<u32> {
        let nodes = self.tier_nodes(tier).iter().filter_map(|&id| self.node(id));
        nodes.max_by_key(|n| (n.headroom_pages.min(n.buddy_room_pages), std::cmp::Reverse(n.id))).map(|n| n.id)
    }
}
