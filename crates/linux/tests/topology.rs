//! Topology discovery and classification on fixture sysfs trees and on this host.

use std::path::{Path, PathBuf};

use tierkit_core::{TierId, PAGE_SIZE};
use tierkit_linux::topology::{NodeClass, Topology, TopologyError, TopologyOverrides, ZoneTotals};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/topology").join(name)
}

fn overrides(fast: Option<&[u32]>, slow: Option<&[u32]>) -> TopologyOverrides {
    TopologyOverrides { fast: fast.map(<[u32]>::to_vec), slow: slow.map(<[u32]>::to_vec) }
}

#[test]
fn one_node_has_nothing_to_tier() {
    let topo = Topology::discover(&fixture("one-node")).unwrap();
    assert_eq!(topo.nodes.len(), 1);
    assert_eq!(topo.nodes[0].cpus, [0, 1]);
    assert_eq!(topo.nodes[0].memory_tier, Some(4));
    assert_eq!(topo.nodes[0].class, NodeClass::Fast);
    assert!(!topo.has_tiering());
    assert_eq!(topo.tiers.len(), 1);
    let text = topo.to_string();
    assert!(text.contains("one NUMA node: nothing to tier"), "{text}");
    assert!(!text.contains("tiers, fastest first"), "{text}");
}

#[test]
fn qemu_guest_node1_is_the_slow_tier() {
    let topo = Topology::discover(&fixture("qemu-tier")).unwrap();
    assert!(topo.has_tiering());
    assert!(topo.kernel_memory_tiers);
    let classes: Vec<_> = topo.nodes.iter().map(|n| (n.id, n.class, n.tier, n.memory_tier)).collect();
    assert_eq!(classes, [(0, NodeClass::Fast, Some(0), Some(4)), (1, NodeClass::Slow, Some(1), Some(22))]);
    assert_eq!(topo.nodes[1].distances, [20, 10]);
    assert!(topo.nodes[1].cpus.is_empty() && !topo.nodes[1].has_cpu);
    assert_eq!(topo.tier_of_node(1), Some(TierId(1)));
    assert_eq!(topo.tier_nodes(TierId(1)), [1]);
    let infos = topo.tier_infos();
    assert_eq!(infos.len(), 2);
    assert_eq!(infos[1].capacity_pages, 1046528 * 1024 / PAGE_SIZE);
    assert_eq!(infos[1].unloaded_latency_ns, None, "no HMAT here");
    let text = topo.to_string();
    assert!(text.contains("tier 1 slow: node 1"), "{text}");
    let json = serde_json::to_value(&topo).unwrap();
    assert_eq!(json["nodes"][1]["class"], "slow");
    assert_eq!(json["tiers"][1]["nodes"][0], 1);
}

/// The guest's `/proc/zoneinfo`: node 0 is DMA + DMA32 (Normal, Movable and Device
/// empty) with the high watermarks transparent huge pages give a 1 GiB node (66 MiB);
/// node 1 is all ZONE_MOVABLE (hot-plugged `online_movable`).
#[test]
fn qemu_guest_room_is_free_memory_above_watermarks_reserves_and_a_margin() {
    let topo = Topology::discover(&fixture("qemu-tier")).unwrap();
    let zones: Vec<ZoneTotals> = topo.nodes.iter().map(|n| n.zones.unwrap()).collect();
    assert_eq!(zones[0], ZoneTotals { free: 175596, pcp: 24, min: 11252, low: 14056, high: 16860, managed: 253514 });
    assert_eq!(zones[1].free, 260078);
    assert_eq!((zones[1].min, zones[1].low, zones[1].high, zones[1].managed), (128, 3034, 5940, 261632));
    // The same free pages meminfo counts.
    assert_eq!((zones[0].free * 4, zones[1].free * 4), (702384, 1040312));
    // Node 0: DMA (3584 free + 12 on CPU 1's list, high 254, 975 protected from movable
    // allocations) and DMA32 (172012 + 12 free, high 16574); the empty Movable zone's
    // watermark of 32 takes nothing; margin 1% of 253514 managed.
    let node0 = (3584 + 12 - 254 - 975) + (172012 + 12 - 16574) - 2535;
    // Node 1: its Movable zone (260078 free + 12 on CPU 1's list) above its high
    // watermark, margin 1% of 261632.
    assert_eq!(zones[1].pcp, 12);
    let node1 = (260078 + 12 - 5940) - 2616;
    assert_eq!((topo.nodes[0].headroom_pages, topo.nodes[1].headroom_pages), (node0, node1));
    // The buddy room: free pages above the low watermarks and protection, without the
    // per-CPU lists or a margin.
    let buddy = ((3584 - 212 - 975) + (172012 - 13812), 260078 - 3034);
    assert_eq!((topo.nodes[0].buddy_room_pages, topo.nodes[1].buddy_room_pages), buddy);
    assert_eq!(topo.nodes[0].move_room_pages(), node0.min(buddy.0) as u64);
    assert_eq!((topo.room_pages(TierId(0)), topo.room_pages(TierId(1))), (node0 as u64, node1 as u64));
    assert!(topo.room_pages(TierId(0)) < 702384 / 4 - 16860, "less than MemFree above the high watermarks");
    assert_eq!(topo.room_pages(TierId(2)), 0);
    let text = topo.to_string();
    assert!(text.lines().next().unwrap().contains("mem free  room"), "{text}");
    assert!(text.contains(&format!("{} MiB", node0 * 4 / 1024)), "{text}");
    let json = serde_json::to_value(&topo).unwrap();
    assert_eq!(json["nodes"][1]["headroom_pages"], node1);
    assert_eq!(json["nodes"][0]["zones"]["high"], 16860);
}

/// Room follows moves: a node's headroom drops by the pages moved in, rises by those
/// moved out, never counts below zero, and a refresh replaces the estimate.
#[test]
fn room_is_adjusted_by_moves_and_replaced_by_a_refresh() {
    let mut topo = Topology::discover(&fixture("qemu-tier")).unwrap();
    let read = topo.nodes[1].headroom_pages;
    topo.nodes[1].adjust_headroom(read + 100);
    assert_eq!((topo.nodes[1].headroom_pages, topo.nodes[1].room_pages()), (-100, 0));
    assert_eq!(topo.room_pages(TierId(1)), 0);
    assert_eq!(topo.roomiest_node(TierId(1)), Some(1), "the only node of the tier, full or not");
    topo.nodes[1].adjust_headroom(-150);
    assert_eq!(topo.room_pages(TierId(1)), 50);
    topo.refresh_memory().unwrap();
    assert_eq!(topo.nodes[1].headroom_pages, read);
}

/// Moves are bounded by the buddy room as well as the headroom, a policy's view of the
/// free pages by the headroom alone; both follow moves, and a refusal for lack of memory
/// ends the room for moves until the next read.
#[test]
fn moves_keep_the_free_pages_above_the_low_watermarks() {
    let mut topo = Topology::discover(&fixture("qemu-tier")).unwrap();
    let node = &mut topo.nodes[1];
    let read = node.headroom_pages;
    node.buddy_room_pages = 40; // the per-CPU lists hold the rest of the headroom
    assert_eq!((node.room_pages(), node.move_room_pages()), (read as u64, 40));
    node.adjust_headroom(30);
    assert_eq!((node.room_pages(), node.move_room_pages()), (read as u64 - 30, 10));
    node.adjust_headroom(-5);
    assert_eq!(node.move_room_pages(), 15, "a page moved off frees buddy room too");
    node.refused_for_memory();
    assert_eq!((node.room_pages(), node.move_room_pages()), (0, 0));
    topo.nodes[0].buddy_room_pages = 0;
    assert_eq!(topo.room_pages(TierId(0)), topo.nodes[0].headroom_pages as u64, "policies still see the headroom");
    topo.refresh_memory().unwrap();
    assert_eq!(topo.nodes[1].move_room_pages(), read.min(260078 - 3034) as u64);
}

/// Without `proc/zoneinfo` (these fixtures have none) the watermarks are unknown: room
/// is `MemFree` less 2% of `MemTotal`.
#[test]
fn without_zoneinfo_room_keeps_two_percent_back() {
    let topo = Topology::discover(&fixture("cxl-4node")).unwrap();
    assert!(topo.nodes.iter().all(|n| n.zones.is_none()));
    let node0 = (40960000 - 65536000 / 50) / 4;
    assert_eq!(topo.nodes[0].headroom_pages, node0);
    assert_eq!(topo.room_pages(TierId(0)), node0 as u64 + (50331648 - 65536000 / 50) / 4);
}

#[test]
fn cxl_machine_groups_slow_nodes_by_memory_tier_with_hmat() {
    let topo = Topology::discover(&fixture("cxl-4node")).unwrap();
    let tiers: Vec<_> = topo.tiers.iter().map(|t| (t.name.as_str(), t.nodes.clone(), t.memory_tier)).collect();
    assert_eq!(tiers, [("fast", vec![0, 1], Some(4)), ("slow1", vec![2], Some(6)), ("slow2", vec![3], Some(8))]);
    assert_eq!(topo.nodes[0].cpus.len(), 16);
    // access1 (CPU initiators) when present, access0 otherwise.
    assert_eq!(topo.nodes[2].hmat().unwrap().read_latency_ns, Some(250));
    assert!(topo.nodes[3].access1.is_none());
    assert_eq!(topo.nodes[3].hmat().unwrap().write_bandwidth_mbps, Some(22000));
    let infos = topo.tier_infos();
    assert_eq!(infos[0].unloaded_latency_ns, Some(91.0));
    assert_eq!(infos[0].bandwidth_gbps, Some(238.0));
    assert_eq!(infos[2].unloaded_latency_ns, Some(310.0));
    // Pages moved to the fast tier go to its node with the most free memory.
    assert_eq!(topo.roomiest_node(TierId(0)), Some(1));
    assert_eq!(topo.roomiest_node(TierId(3)), None);
    let text = topo.to_string();
    assert!(text.contains("250 ns, 32.0 GB/s") && text.contains("0-7,16-23"), "{text}");
}

#[test]
fn overrides_replace_the_automatic_choice() {
    let root = fixture("cxl-4node");
    let topo = Topology::discover_with(&root, &overrides(Some(&[0]), None)).unwrap();
    assert!(topo.overridden);
    let tiers: Vec<_> = topo.tiers.iter().map(|t| t.nodes.clone()).collect();
    assert_eq!(tiers, [vec![0], vec![1], vec![2], vec![3]], "node 1 joins the slow side, in its memory tier");
    let topo = Topology::discover_with(&root, &overrides(None, Some(&[3]))).unwrap();
    assert_eq!(topo.tier_nodes(TierId(0)), [0, 1, 2]);
    assert_eq!(topo.tiers.len(), 2);
    let topo = Topology::discover_with(&root, &overrides(Some(&[0, 1, 2]), Some(&[3]))).unwrap();
    assert_eq!(topo.tier_nodes(TierId(1)), [3]);
    // Two sockets and no kernel memory tiers: nothing to tier unless told.
    let two = fixture("two-socket-no-tiers");
    let topo = Topology::discover(&two).unwrap();
    assert!(!topo.has_tiering() && !topo.kernel_memory_tiers);
    assert!(topo.to_string().contains("2 NUMA nodes, all with CPUs in the same memory tier"), "{topo}");
    let topo = Topology::discover_with(&two, &overrides(None, Some(&[1]))).unwrap();
    assert!(topo.has_tiering());
    assert_eq!(topo.nodes[1].class, NodeClass::Slow);
}

#[test]
fn bad_overrides_are_refused_with_the_reason() {
    let root = fixture("cxl-4node");
    let err = |o| Topology::discover_with(&root, &o).unwrap_err();
    let e = err(overrides(Some(&[7]), None));
    assert!(matches!(e, TopologyError::UnknownNode { flag: "fast", node: 7, .. }), "{e}");
    assert!(e.to_string().contains("online: 0,1,2,3"), "{e}");
    assert!(matches!(err(overrides(Some(&[0, 2]), Some(&[2, 3]))), TopologyError::Overlap(2)));
    assert!(matches!(err(overrides(Some(&[0]), Some(&[2, 3]))), TopologyError::Uncovered(1)));
    assert!(matches!(err(overrides(None, Some(&[0, 1, 2, 3]))), TopologyError::EmptyFast));
    assert!(matches!(err(overrides(Some(&[]), None)), TopologyError::EmptyFast));
}

#[test]
fn missing_or_broken_sysfs_is_reported_by_path() {
    let e = Topology::discover(Path::new("/nonexistent-root")).unwrap_err();
    assert!(matches!(e, TopologyError::NoNuma(_)), "{e}");
    let dir = std::env::temp_dir().join(format!("tierkit-topo-{}", std::process::id()));
    let node = dir.join("sys/devices/system/node");
    std::fs::create_dir_all(node.join("node0")).unwrap();
    std::fs::write(node.join("online"), "0\n").unwrap();
    std::fs::write(node.join("node0/distance"), "10 x\n").unwrap();
    let e = Topology::discover(&dir).unwrap_err();
    assert!(e.to_string().contains("node0/distance") && e.to_string().contains("\"10 x\""), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn this_host_reads_and_refreshes() {
    let mut topo = Topology::discover(Path::new("/")).unwrap();
    assert!(!topo.nodes.is_empty());
    assert!(topo.tier_infos()[0].capacity_pages > 0);
    topo.refresh_memory().unwrap();
    let node = &topo.nodes[0];
    let zones = node.zones.expect("this host has a /proc/zoneinfo describing node 0");
    assert!(zones.managed > 0 && zones.high > zones.low && zones.low > zones.min);
    // MemFree leaves out the free pages on the per-CPU lists, which the room counts.
    let free_pages = node.mem_free_kib / 4 + zones.pcp;
    assert!(node.headroom_pages < free_pages as i64, "room is less than the free pages");
    if topo.nodes.len() == 1 {
        assert!(topo.to_string().contains("nothing to tier"));
    }
}
