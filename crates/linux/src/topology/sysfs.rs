//! Reading the sysfs files that describe NUMA nodes and memory tiers.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::{Access, TopologyError};

/// The NUMA node directory under a root (`/sys/devices/system/node` on a live system).
pub(super) fn node_dir(root: &Path) -> PathBuf {
    root.join("sys/devices/system/node")
}

/// The memory-tier directory under a root (`/sys/devices/virtual/memory_tiering`).
pub(super) fn tiering_dir(root: &Path) -> PathBuf {
    root.join("sys/devices/virtual/memory_tiering")
}

/// Parses a kernel list such as `"0-3,8,10-11"` (cpulist, nodelist) into sorted, distinct
/// numbers. An empty or blank string is the empty list; `None` when malformed.
pub fn parse_list(text: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.trim().is_empty()) {
        let part = part.trim();
        match part.split_once('-') {
            Some((lo, hi)) => {
                let (lo, hi): (u32, u32) = (lo.parse().ok()?, hi.parse().ok()?);
                if lo > hi || hi - lo > 1 << 20 {
                    return None;
                }
                out.extend(lo..=hi);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// The text of a file, or `None` when it does not exist (older kernels, no HMAT).
pub(super) fn read_optional(path: &Path) -> Result<Option<String>, TopologyError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(source) => Err(TopologyError::Io { path: path.to_owned(), source }),
    }
}

fn parse_error(path: &Path, expected: &'static str, found: &str) -> TopologyError {
    TopologyError::Parse { path: path.to_owned(), expected, found: found.trim().chars().take(80).collect() }
}

/// A list file (`online`, `cpulist`, `nodelist`), `None` when it does not exist.
pub(super) fn read_list(path: &Path) -> Result<Option<Vec<u32>>, TopologyError> {
    match read_optional(path)? {
        Some(text) => parse_list(&text).map(Some).ok_or_else(|| parse_error(path, "a list like 0-3,8", &text)),
        None => Ok(None),
    }
}

/// `MemTotal` and `MemFree` in KiB from a node's `meminfo`
/// (`Node 0 MemTotal:  13592788 kB`); zero when the file does not exist.
pub(super) fn read_meminfo(path: &Path) -> Result<(u64, u64), TopologyError> {
    let Some(text) = read_optional(path)? else { return Ok((0, 0)) };
    let field = |name: &str| -> Result<u64, TopologyError> {
        let Some(line) = text.lines().find(|l| l.split(':').next().is_some_and(|k| k.ends_with(name))) else {
            return Err(parse_error(path, "MemTotal and MemFree lines", name));
        };
        let value = line.split(':').nth(1).unwrap_or("").trim().trim_end_matches("kB").trim();
        value.parse().map_err(|_| parse_error(path, "a size in kB", line))
    };
    Ok((field(" MemTotal")?, field(" MemFree")?))
}

/// A node's `distance` row (to every online node, in node order).
pub(super) fn read_distances(path: &Path) -> Result<Vec<u32>, TopologyError> {
    let Some(text) = read_optional(path)? else { return Ok(Vec::new()) };
    text.split_whitespace().map(|d| d.parse().map_err(|_| parse_error(path, "distances like `10 20`", &text))).collect()
}

/// The HMAT attributes in `nodeN/accessK/initiators/`, `None` when the kernel exposes
/// none (no HMAT, or not for this node).
pub(super) fn read_access(dir: &Path) -> Result<Option<Access>, TopologyError> {
    let number = |name: &str| -> Result<Option<u64>, TopologyError> {
        let path = dir.join(name);
        match read_optional(&path)? {
            Some(text) => text.trim().parse().map(Some).map_err(|_| parse_error(&path, "a number", &text)),
            None => Ok(None),
        }
    };
    let access = Access {
        read_latency_ns: number("read_latency")?,
        write_latency_ns: number("write_latency")?,
        read_bandwidth_mbps: number("read_bandwidth")?,
        write_bandwidth_mbps: number("write_bandwidth")?,
    };
    Ok((access != Access::default()).then_some(access))
}

/// Kernel memory tiers as `(tier id, nodes)`, by tier id; empty when the kernel has no
/// memory tiering (before 6.1).
pub(super) fn read_memory_tiers(root: &Path) -> Result<Vec<(u32, Vec<u32>)>, TopologyError> {
    let dir = tiering_dir(root);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(TopologyError::Io { path: dir, source }),
    };
    let mut tiers = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| TopologyError::Io { path: dir.clone(), source })?;
        let name = entry.file_name();
        let Some(id) = name.to_str().and_then(|n| n.strip_prefix("memory_tier")).and_then(|n| n.parse().ok()) else {
            continue;
        };
        let nodelist = entry.path().join("nodelist");
        tiers.push((id, read_list(&nodelist)?.unwrap_or_default()));
    }
    tiers.sort_unstable();
    Ok(tiers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_like_the_kernel_prints_them() {
        assert_eq!(parse_list("0-3,8,10-11\n"), Some(vec![0, 1, 2, 3, 8, 10, 11]));
        assert_eq!(parse_list("\n"), Some(vec![]));
        assert_eq!(parse_list("2,0,2"), Some(vec![0, 2]));
        assert_eq!(parse_list("3-1"), None);
        assert_eq!(parse_list("a"), None);
        assert_eq!(parse_list("0-4294967295"), None);
    }
}
