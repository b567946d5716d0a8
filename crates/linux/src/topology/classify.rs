//! Fast/slow classification of nodes and their grouping into tierkit tiers.

use std::collections::BTreeMap;

use super::{Node, NodeClass, Tier, TopologyError};

/// Operator choices that replace the automatic fast/slow classification.
///
/// With only `fast`, every other node with memory is slow; with only `slow`, every other
/// node with memory is fast; with both, every node with memory must be in one of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TopologyOverrides {
    /// Nodes to treat as fast.
    pub fast: Option<Vec<u32>>,
    /// Nodes to treat as slow.
    pub slow: Option<Vec<u32>>,
}

/// Sets each node's class and tier and returns the tiers, fastest first.
pub(super) fn classify(nodes: &mut [Node], overrides: &TopologyOverrides) -> Result<Vec<Tier>, TopologyError> {
    let with_memory: Vec<u32> = nodes.iter().filter(|n| n.mem_total_kib > 0).map(|n| n.id).collect();
    for (flag, list) in [("fast", &overrides.fast), ("slow", &overrides.slow)] {
        for &id in list.iter().flatten() {
            match nodes.iter().find(|n| n.id == id) {
                None => {
                    let online: Vec<String> = nodes.iter().map(|n| n.id.to_string()).collect();
                    return Err(TopologyError::UnknownNode { flag, node: id, online: online.join(",") });
                }
                Some(n) if n.mem_total_kib == 0 => return Err(TopologyError::NoMemory { flag, node: id }),
                Some(_) => {}
            }
        }
    }
    if let (Some(fast), Some(slow)) = (&overrides.fast, &overrides.slow) {
        if let Some(&both) = fast.iter().find(|id| slow.contains(id)) {
            return Err(TopologyError::Overlap(both));
        }
        if let Some(&neither) = with_memory.iter().find(|id| !fast.contains(id) && !slow.contains(id)) {
            return Err(TopologyError::Uncovered(neither));
        }
    }
    let fast: Vec<u32> = match (&overrides.fast, &overrides.slow) {
        (Some(fast), _) => fast.clone(),
        (None, Some(slow)) => with_memory.iter().copied().filter(|id| !slow.contains(id)).collect(),
        (None, None) => automatic_fast(nodes),
    };
    if fast.is_empty() {
        return Err(TopologyError::EmptyFast);
    }
    // Slow groups keyed by kernel memory tier (nodes without one last), fastest first.
    let mut slow: BTreeMap<(bool, u32), Vec<u32>> = BTreeMap::new();
    for n in nodes.iter_mut() {
        n.class = if n.mem_total_kib == 0 {
            NodeClass::Memoryless
        } else if fast.contains(&n.id) {
            NodeClass::Fast
        } else {
            slow.entry((n.memory_tier.is_none(), n.memory_tier.unwrap_or(0))).or_default().push(n.id);
            NodeClass::Slow
        };
    }
    let mut fast_nodes = fast;
    fast_nodes.sort_unstable();
    let mut tiers = vec![tier(nodes, 0, "fast".to_owned(), NodeClass::Fast, fast_nodes)];
    let several = slow.len() > 1;
    for (i, group) in slow.into_values().enumerate() {
        let name = if several { format!("slow{}", i + 1) } else { "slow".to_owned() };
        tiers.push(tier(nodes, i as u8 + 1, name, NodeClass::Slow, group));
    }
    for t in &tiers {
        for n in nodes.iter_mut().filter(|n| t.nodes.contains(&n.id)) {
            n.tier = Some(t.index);
        }
    }
    Ok(tiers)
}

/// Nodes with CPUs and memory in the fastest kernel memory tier holding such a node (all
/// of them when the kernel has no memory tiers); all memory nodes when none has CPUs.
fn automatic_fast(nodes: &[Node]) -> Vec<u32> {
    let cpu_mem = || nodes.iter().filter(|n| n.has_cpu && n.mem_total_kib > 0);
    let top = cpu_mem().filter_map(|n| n.memory_tier).min();
    let fast: Vec<u32> = cpu_mem().filter(|n| top.is_none() || n.memory_tier == top).map(|n| n.id).collect();
    if fast.is_empty() {
        nodes.iter().filter(|n| n.mem_total_kib > 0).map(|n| n.id).collect()
    } else {
        fast
    }
}

fn tier(nodes: &[Node], index: u8, name: String, class: NodeClass, ids: Vec<u32>) -> Tier {
    let first = nodes.iter().find(|n| Some(&n.id) == ids.first()).and_then(|n| n.memory_tier);
    let shared = nodes.iter().filter(|n| ids.contains(&n.id)).all(|n| n.memory_tier == first);
    Tier { index, name, class, nodes: ids, memory_tier: first.filter(|_| shared) }
}
