//! The physical address ranges of a NUMA node: what DAMON's `paddr` operations monitor.
//!
//! Linux lists a node's memory blocks as `memoryM` entries of
//! `/sys/devices/system/node/nodeN/`; block `M` spans `M * block_size` bytes on, with the
//! block size in `/sys/devices/system/memory/block_size_bytes` (hexadecimal). Only
//! online blocks count (`memory/memoryM/state`; a block without that file counts as
//! online). Consecutive blocks merge into one range.

use std::fs;
use std::ops::Range;
use std::path::Path;

use super::sysfs::{DamonError, Unavailable};

const NODE_DIR: &str = "sys/devices/system/node";
const MEMORY_DIR: &str = "sys/devices/system/memory";

/// Node `node`'s online physical memory under `root`, as sorted, disjoint byte ranges.
pub fn node_ranges(root: &Path, node: u32) -> Result<Vec<Range<u64>>, DamonError> {
    let size_path = root.join(MEMORY_DIR).join("block_size_bytes");
    let unknown = |path: &Path, detail: String| -> DamonError {
        Unavailable::NoNodeRanges { node, path: path.to_path_buf(), detail }.into()
    };
    let text = fs::read_to_string(&size_path).map_err(|e| unknown(&size_path, e.to_string()))?;
    let block = u64::from_str_radix(text.trim().trim_start_matches("0x"), 16)
        .ok()
        .filter(|&b| b > 0)
        .ok_or_else(|| unknown(&size_path, format!("{:?} is not a hexadecimal block size", text.trim())))?;
    let node_dir = root.join(NODE_DIR).join(format!("node{node}"));
    let entries = fs::read_dir(&node_dir).map_err(|e| unknown(&node_dir, e.to_string()))?;
    let mut blocks: Vec<u64> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| unknown(&node_dir, e.to_string()))?;
        let name = entry.file_name();
        let Some(index) = name.to_str().and_then(|n| n.strip_prefix("memory")).and_then(|n| n.parse().ok()) else {
            continue;
        };
        let state = root.join(MEMORY_DIR).join(format!("memory{index}/state"));
        match fs::read_to_string(&state) {
            Ok(s) if s.trim() != "online" => continue,
            _ => blocks.push(index),
        }
    }
    if blocks.is_empty() {
        return Err(unknown(&node_dir, "it lists no online memory block".to_string()));
    }
    blocks.sort_unstable();
    let mut ranges: Vec<Range<u64>> = Vec::new();
    for index in blocks {
        let (start, end) = (index * block, (index + 1) * block);
        match ranges.last_mut() {
            Some(last) if last.end == start => last.end = end,
            _ => ranges.push(start..end),
        }
    }
    Ok(ranges)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(name: &str, blocks: &[(u64, &str)]) -> std::path::PathBuf {
        let root = std::env::temp_dir().join(format!("tierkit-node-ranges-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join(NODE_DIR).join("node1")).unwrap();
        fs::create_dir_all(root.join(MEMORY_DIR)).unwrap();
        fs::write(root.join(MEMORY_DIR).join("block_size_bytes"), "8000000\n").unwrap();
        fs::write(root.join(NODE_DIR).join("node1/meminfo"), "").unwrap();
        for &(index, state) in blocks {
            fs::create_dir_all(root.join(NODE_DIR).join(format!("node1/memory{index}"))).unwrap();
            let dir = root.join(MEMORY_DIR).join(format!("memory{index}"));
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join("state"), format!("{state}\n")).unwrap();
        }
        root
    }

    #[test]
    fn online_blocks_merge_into_ranges_in_address_order() {
        let root = tree("merge", &[(10, "online"), (8, "online"), (9, "online"), (12, "online"), (13, "offline")]);
        let mib128 = 128 << 20;
        assert_eq!(node_ranges(&root, 1).unwrap(), [8 * mib128..11 * mib128, 12 * mib128..13 * mib128]);
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_node_without_memory_or_a_bad_block_size_is_named() {
        let root = tree("none", &[(3, "offline")]);
        let err = node_ranges(&root, 1).unwrap_err().to_string();
        assert!(err.contains("node 1") && err.contains("no online memory block"), "{err}");
        let err = node_ranges(&root, 2).unwrap_err().to_string();
        assert!(err.contains("node2"), "{err}");
        fs::write(root.join(MEMORY_DIR).join("block_size_bytes"), "zz\n").unwrap();
        let err = node_ranges(&root, 1).unwrap_err().to_string();
        assert!(err.contains("\"zz\" is not a hexadecimal block size"), "{err}");
        fs::remove_dir_all(root).unwrap();
    }
}
