//! How many pages a node can take: free memory as the page allocator sees it
//! (`/proc/zoneinfo`), not `MemFree`.
//!
//! `MemFree` counts every free page, also those the kernel keeps back: each zone's
//! watermarks (below `low` kswapd starts reclaiming, below `min` only the kernel may
//! allocate) and the lowmem reserve (`protection`) that keeps lower zones for allocations
//! that cannot use higher ones. A page `move_pages(2)` moves onto a node is a movable user
//! allocation bound to that node (`GFP_HIGHUSER_MOVABLE | __GFP_THISNODE`). Pushed below
//! the watermarks, the node reclaims; when nothing is reclaimable (no swap, memory pinned
//! or in huge pages) and no other node can serve kernel allocations (a CXL node onlined
//! as `ZONE_MOVABLE` serves none), kernel allocations fail and the OOM killer runs —
//! against the very process tierkit manages.
//!
//! So a node's *headroom* is what it can take before reaching its high watermarks plus
//! a margin:
//!
//! ```text
//! headroom = Σ over its zones of max(0, free + pcp − high − protection[Movable]) − margin
//! margin   = MARGIN_PERCENT (1%) of the node's managed pages
//! ```
//!
//! - `pcp` are the free pages on the zone's per-CPU lists (the `count:` of each CPU's
//!   pageset). A freed page goes there first, and `pages free` leaves it out until the
//!   lists are drained: a demotion frees pages on the fast node's lists of the CPU that
//!   ran `move_pages`, often thousands of them. Without them the room read after a
//!   demotion had not risen, and a policy told so demoted again (in the test guest, a
//!   whole 256 MiB buffer). They are taken first by allocations on their CPU — tierkit's
//!   own promotions among them — and returned to the free lists when drained.
//!
//! - `high` is where kswapd stops reclaiming.
//! - `protection[Movable]` is the zone's reserve against movable allocations (the lowmem
//!   reserve that keeps `DMA`/`DMA32` for allocations that need them).
//! - The margin absorbs what the target and the kernel allocate between two reads (the
//!   live platform re-reads every second, and before a step of moves when the last read
//!   is older than the step). It is not `max(high, 1%)`: kernels with
//!   transparent huge pages raise `min_free_kbytes`, so on small nodes `high` is already
//!   several percent (66 MiB of the QEMU guest's 967 MiB node 0), and doubling it would
//!   keep a seventh of the fast tier unused.
//!
//! The per-CPU lists are free pages, but the allocator checks its watermarks against
//! `pages free` alone, and the lists of other CPUs serve no allocation until they are
//! drained (the kernel sizes them up to the low watermark in all, 27 MiB a CPU in the test
//! guest). A `move_pages` allocation that finds `pages free` below `low` wakes kswapd and
//! takes pages down to `min`, the reserve the kernel keeps for its own allocations, which
//! a target's own page faults leave alone (they fall back to the next node at `low`). With
//! the lists counted, `pages free` on the test guest's fast node sat below `low` for most
//! of a soak run, and in one CI run tierkit's promotions reached `min` (`ENOMEM`) just
//! before the OOM killer ran. So moves onto a node also keep its `pages free` above its
//! low watermarks, where kswapd wakes, as the kernel's own promotion does (it needs
//! `pages free` above `high`):
//!
//! ```text
//! buddy room = Σ over its zones of max(0, free − low − protection[Movable])
//! ```
//!
//! without a margin (the `low`–`min` gap is the kernel's reserve for what others allocate
//! between two reads). It bounds moves only: what a policy is told is free stays the
//! headroom, so pages on the lists are not demoted for again.
//!
//! Without a `zoneinfo` (fixture trees, or a node the file does not list yet) the
//! watermarks are unknown: headroom = `MemFree` − [`FALLBACK_RESERVE_PERCENT`] (2%) of
//! `MemTotal`, 1% standing in for the high watermark and 1% for the margin; the buddy
//! room is the same.
//!
//! The parser is tierkit's own: the procfs crate (0.18, `procfs` and `procfs-core`) has no
//! `/proc/zoneinfo` reader.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::sysfs::read_optional;
use super::TopologyError;

/// The margin kept free above a node's high watermarks, in percent of its managed pages.
pub const MARGIN_PERCENT: u64 = 1;

/// The reserve assumed when `/proc/zoneinfo` says nothing about a node, in percent of its
/// `MemTotal`.
pub const FALLBACK_RESERVE_PERCENT: u64 = 2;

/// A node's page-allocator counts from `/proc/zoneinfo`, summed over its zones, in base
/// pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ZoneTotals {
    /// Free pages (`pages free`).
    pub free: u64,
    /// Free pages on the per-CPU lists (`count:` of every CPU's pageset).
    pub pcp: u64,
    /// Min watermarks: below them only the kernel may allocate.
    pub min: u64,
    /// Low watermarks: kswapd starts reclaiming below them.
    pub low: u64,
    /// High watermarks: kswapd reclaims up to them.
    pub high: u64,
    /// Pages the page allocator manages.
    pub managed: u64,
}

/// What `/proc/zoneinfo` says about one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct NodeZones {
    /// The node id.
    pub id: u32,
    /// Its counts.
    pub totals: ZoneTotals,
    /// Pages it can take by migration: free pages above each zone's high watermark and
    /// protection, less the margin (negative when the node is already below).
    pub headroom: i64,
    /// Pages moves may bring in before `pages free` reaches the low watermarks and
    /// protection (the buddy room).
    pub buddy_room: i64,
}

/// One `Node N, zone NAME` block.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Zone {
    node: u32,
    name: String,
    free: Option<u64>,
    min: Option<u64>,
    low: Option<u64>,
    high: Option<u64>,
    managed: Option<u64>,
    protection: Vec<u64>,
    pcp: u64,
}

/// `/proc/zoneinfo` under a root.
pub(super) fn zoneinfo_path(root: &Path) -> PathBuf {
    root.join("proc/zoneinfo")
}

/// Every node's counts from `root/proc/zoneinfo`, by node id; `None` when the file does
/// not exist.
pub(super) fn read_zoneinfo(root: &Path) -> Result<Option<Vec<NodeZones>>, TopologyError> {
    let path = zoneinfo_path(root);
    let Some(text) = read_optional(&path)? else { return Ok(None) };
    parse_zoneinfo(&text).map(Some).map_err(|(expected, found)| TopologyError::Parse { path, expected, found })
}

/// Parses the text of `/proc/zoneinfo` into per-node counts, by node id; on malformed
/// text, what was expected and the start of the offending line.
fn parse_zoneinfo(text: &str) -> Result<Vec<NodeZones>, (&'static str, String)> {
    let found = |line: &str| line.trim().chars().take(80).collect::<String>();
    let mut zones: Vec<Zone> = Vec::new();
    for line in text.lines() {
        if let Some(header) = line.strip_prefix("Node ") {
            let parsed = header.split_once(", zone").and_then(|(node, name)| Some((node.trim().parse().ok()?, name)));
            let Some((node, name)) = parsed else { return Err(("`Node N, zone NAME` headers", found(line))) };
            zones.push(Zone { node, name: name.trim().to_owned(), ..Zone::default() });
            continue;
        }
        let Some(zone) = zones.last_mut() else { continue };
        let words: Vec<&str> = line.split_whitespace().collect();
        let number = |word: &str| word.parse::<u64>().map_err(|_| ("a page count", found(line)));
        let (field, value) = match words.as_slice() {
            ["pages", "free", n] => (&mut zone.free, n),
            ["min", n] => (&mut zone.min, n),
            ["low", n] => (&mut zone.low, n),
            ["high", n] => (&mut zone.high, n),
            ["managed", n] => (&mut zone.managed, n),
            ["count:", n] => {
                zone.pcp += number(n)?;
                continue;
            }
            ["protection:", ..] => {
                let list = line.split_once('(').and_then(|(_, rest)| rest.split_once(')')).map(|(list, _)| list);
                let Some(list) = list else { return Err(("`protection: (a, b, …)`", found(line))) };
                zone.protection = list.split(',').map(|n| number(n.trim())).collect::<Result<_, _>>()?;
                continue;
            }
            _ => continue,
        };
        // The first occurrence counts (per-CPU pagesets further down have `high:` lines).
        if field.is_none() {
            *field = Some(number(value)?);
        }
    }
    let mut nodes: Vec<(u32, Vec<Zone>)> = Vec::new();
    for zone in zones {
        if [zone.free, zone.min, zone.low, zone.high, zone.managed].contains(&None) {
            let name = format!("Node {}, zone {}", zone.node, zone.name);
            return Err(("`pages free`, `min`, `low`, `high` and `managed` lines in every zone", name));
        }
        match nodes.iter_mut().find(|(id, _)| *id == zone.node) {
            Some((_, list)) => list.push(zone),
            None => nodes.push((zone.node, vec![zone])),
        }
    }
    nodes.sort_by_key(|&(id, _)| id);
    Ok(nodes.into_iter().map(|(id, zones)| node_zones(id, &zones)).collect())
}

/// A node's counts and headroom from its zones, listed in zone-index order as the kernel
/// prints them (every zone, populated or not).
fn node_zones(id: u32, zones: &[Zone]) -> NodeZones {
    // The protection entry that applies to movable allocations: the one at ZONE_MOVABLE's
    // index; without a Movable zone, the largest (most conservative) one.
    let movable = zones.iter().position(|z| z.name == "Movable");
    let mut t = ZoneTotals::default();
    let (mut usable, mut above_low) = (0u64, 0u64);
    for z in zones {
        let (free, high) = (z.free.unwrap_or(0), z.high.unwrap_or(0));
        let protected = match movable {
            Some(i) => z.protection.get(i).copied().unwrap_or(0),
            None => z.protection.iter().copied().max().unwrap_or(0),
        };
        t.free += free;
        t.pcp += z.pcp;
        t.min += z.min.unwrap_or(0);
        t.low += z.low.unwrap_or(0);
        t.high += high;
        t.managed += z.managed.unwrap_or(0);
        usable += (free + z.pcp).saturating_sub(high.saturating_add(protected));
        above_low += free.saturating_sub(z.low.unwrap_or(0).saturating_add(protected));
    }
    let headroom = usable as i64 - (t.managed * MARGIN_PERCENT / 100) as i64;
    NodeZones { id, totals: t, headroom, buddy_room: above_low as i64 }
}

/// Headroom in base pages of a node `/proc/zoneinfo` does not describe, from its
/// `meminfo` (KiB).
pub(super) fn fallback_headroom(mem_total_kib: u64, mem_free_kib: u64, page_kib: u64) -> i64 {
    let reserve = mem_total_kib * FALLBACK_RESERVE_PERCENT / 100;
    (mem_free_kib as i64 - reserve as i64) / page_kib as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: &str = "\
Node 0, zone      DMA
  per-node stats
      nr_inactive_anon 5692
  pages free     3840
        boost    0
        min      19
        low      23
        high     27
        promo    31
        spanned  4095
        present  3998
        managed  3840
        cma      0
        protection: (0, 3019, 13259, 13259, 13259)
      nr_free_pages 3840
  pagesets
    cpu: 0
              count:    0
              high:     0
Node 0, zone   Normal
  pages free     2454291
        min      13033
        low      16291
        high     19549
        managed  2621440
        protection: (0, 0, 0, 0, 0)
  pagesets
    cpu: 0
              high:     11547
Node 0, zone  Movable
  pages free     0
        min      32
        low      32
        high     32
        managed  0
        protection: (0, 0, 0, 0, 0)
";

    #[test]
    fn zones_sum_per_node_with_watermarks_reserves_and_margin() {
        let nodes = parse_zoneinfo(HOST).unwrap();
        assert_eq!(nodes.len(), 1);
        let NodeZones { id, totals: t, headroom, buddy_room } = nodes[0];
        assert_eq!(id, 0);
        assert_eq!((t.free, t.min, t.low, t.high, t.managed), (2458131, 13084, 16346, 19608, 2625280));
        // DMA keeps 13259 pages (its protection at the Movable zone's index, 2) from movable
        // allocations: none of its 3840 free pages count.
        assert_eq!(headroom, (2454291 - 19549) - 2625280 / 100);
        assert_eq!(buddy_room, 2454291 - 16291, "above low, without a margin");
    }

    #[test]
    fn pageset_high_lines_do_not_override_the_watermark() {
        let t = parse_zoneinfo(HOST).unwrap()[0].totals;
        assert_eq!(t.high, 27 + 19549 + 32, "not the pagesets' `high: 0` or `high: 11547`");
    }

    #[test]
    fn per_cpu_free_pages_count_as_room() {
        let lists = "  pagesets\n    cpu: 0\n              count:    700\n              high:     900\n    cpu: 1\n              \
                     count:    300\n              high:     900\n";
        let zone = "Node 0, zone Normal\n  pages free 5000\n  min 100\n  low 200\n  high 300\n  managed 100000\n  \
                    protection: (0, 0)\n";
        let node = parse_zoneinfo(&format!("{zone}{lists}")).unwrap()[0];
        assert_eq!((node.totals.free, node.totals.pcp), (5000, 1000));
        assert_eq!(node.headroom, (5000 + 1000 - 300) - 1000);
        let bare = parse_zoneinfo(zone).unwrap()[0];
        assert_eq!(node.headroom - bare.headroom, 1000, "a demotion's freed pages raise the room at once");
        assert_eq!((node.buddy_room, bare.buddy_room), (5000 - 200, 5000 - 200), "the lists are not buddy room");
    }

    #[test]
    fn buddy_room_is_free_pages_above_low_and_protection_without_the_lists() {
        let zone = |free: u64| {
            format!(
                "Node 0, zone DMA32\n  pages free 900\n  min 10\n  low 20\n  high 30\n  managed 1000\n  \
                 protection: (0, 0, 400)\n  pagesets\n    cpu: 0\n              count:    5000\n\
                 Node 0, zone Normal\n  pages free {free}\n  min 100\n  low 2000\n  high 3000\n  managed 100000\n  \
                 protection: (0, 0, 0)\n  pagesets\n    cpu: 0\n              count:    6000\n\
                 Node 0, zone Movable\n  pages free 0\n  min 0\n  low 0\n  high 0\n  managed 0\n  \
                 protection: (0, 0, 0)\n"
            )
        };
        let node = parse_zoneinfo(&zone(2500)).unwrap()[0];
        assert_eq!(node.buddy_room, (900 - 20 - 400) + (2500 - 2000), "DMA32's protection, Normal's low");
        assert_eq!(node.headroom, (900 + 5000 - 30 - 400) + (2500 + 6000 - 3000) - 1010, "the lists count here");
        assert_eq!(parse_zoneinfo(&zone(1500)).unwrap()[0].buddy_room, 900 - 20 - 400, "a zone below low gives none");
    }

    #[test]
    fn a_node_below_its_watermarks_has_negative_headroom() {
        let text = "Node 1, zone  Movable\n  pages free 600\n  min 128\n  low 3034\n  high 5940\n  managed 261632\n  \
                    protection: (0, 0, 0, 0, 0)\n";
        let node = parse_zoneinfo(text).unwrap()[0];
        assert_eq!(node.id, 1);
        assert_eq!(node.headroom, -2616, "a zone below high gives nothing; the margin is still owed");
    }

    #[test]
    fn malformed_text_names_what_is_wrong() {
        assert_eq!(parse_zoneinfo("Node x, zone DMA\n").unwrap_err().1, "Node x, zone DMA");
        let err = parse_zoneinfo("Node 0, zone DMA\n  pages free 1\n  min 1\n  high 1\n  managed 1\n").unwrap_err();
        assert_eq!(err.1, "Node 0, zone DMA");
        assert!(err.0.contains("`low`"), "{err:?}");
        assert_eq!(parse_zoneinfo("Node 0, zone DMA\n  min 1x\n").unwrap_err().1, "min 1x");
        assert_eq!(parse_zoneinfo("Node 0, zone DMA\n  protection: 0, 1\n").unwrap_err().1, "protection: 0, 1");
        assert_eq!(parse_zoneinfo("").unwrap(), []);
    }

    #[test]
    fn without_zoneinfo_two_percent_is_kept() {
        assert_eq!(fallback_headroom(1_000_000, 500_000, 4), (500_000 - 20_000) / 4);
        assert_eq!(fallback_headroom(1_000_000, 10_000, 4), -10_000 / 4);
    }
}
