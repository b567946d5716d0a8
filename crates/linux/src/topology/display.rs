//! The human-readable topology table `tierkit topology` prints.

use std::fmt;

use tierkit_core::PAGE_SIZE;

use super::{Node, Topology};

/// `[0, 1, 2, 5]` as the kernel writes it: `"0-2,5"`; `"-"` when empty.
fn format_list(ids: &[u32]) -> String {
    if ids.is_empty() {
        return "-".to_owned();
    }
    let mut parts = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        parts.push(if i == j { ids[i].to_string() } else { format!("{}-{}", ids[i], ids[j]) });
        i = j + 1;
    }
    parts.join(",")
}

/// KiB as `"13.0 GiB"` / `"512 MiB"`.
fn format_kib(kib: u64) -> String {
    if kib >= 1 << 20 {
        format!("{:.1} GiB", kib as f64 / (1u64 << 20) as f64)
    } else {
        format!("{} MiB", kib >> 10)
    }
}

fn format_hmat(node: &Node) -> String {
    let Some(a) = node.hmat() else { return "-".to_owned() };
    let lat = a.read_latency_ns.map_or("?".to_owned(), |l| format!("{l} ns"));
    let bw = a.read_bandwidth_mbps.map_or("?".to_owned(), |b| format!("{:.1} GB/s", b as f64 / 1000.0));
    format!("{lat}, {bw}")
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header =
            ["node", "class", "tier", "cpus", "mem total", "mem free", "room", "mem tier", "distances", "hmat read"];
        let rows: Vec<[String; 10]> = self
            .nodes
            .iter()
            .map(|n| {
                let distances: Vec<String> = n.distances.iter().map(u32::to_string).collect();
                [
                    n.id.to_string(),
                    n.class.name().to_owned(),
                    n.tier.map_or("-".to_owned(), |t| t.to_string()),
                    format_list(&n.cpus),
                    format_kib(n.mem_total_kib),
                    format_kib(n.mem_free_kib),
                    format_kib(n.move_room_pages() * PAGE_SIZE / 1024),
                    n.memory_tier.map_or("-".to_owned(), |t| t.to_string()),
                    if distances.is_empty() { "-".to_owned() } else { distances.join(" ") },
                    format_hmat(n),
                ]
            })
            .collect();
        let mut widths = header.map(str::len);
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.len());
            }
        }
        let line = |f: &mut fmt::Formatter<'_>, cells: &[&str]| -> fmt::Result {
            let padded: Vec<String> = cells.iter().zip(widths).map(|(c, w)| format!("{c:<w$}")).collect();
            writeln!(f, "{}", padded.join("  ").trim_end())
        };
        line(f, &header)?;
        for row in &rows {
            line(f, &row.iter().map(String::as_str).collect::<Vec<_>>())?;
        }
        writeln!(
            f,
            "(room: what tierkit may still move onto a node: free memory above the kernel's high watermarks and a \
             margin, and above its low watermarks without the per-CPU lists)"
        )?;
        if !self.kernel_memory_tiers {
            writeln!(f, "(this kernel exposes no memory tiers; classified by CPUs alone)")?;
        }
        match self.nothing_to_tier() {
            Some(reason) => writeln!(f, "{reason}."),
            None => {
                let how = if self.overridden { " (as overridden)" } else { "" };
                writeln!(f, "tiers, fastest first{how}:")?;
                for (t, info) in self.tiers.iter().zip(self.tier_infos()) {
                    let kib: u64 = t.nodes.iter().filter_map(|&id| self.node(id)).map(|n| n.mem_total_kib).sum();
                    let noun = if t.nodes.len() == 1 { "node" } else { "nodes" };
                    let nodes = format_list(&t.nodes);
                    write!(f, "  tier {} {}: {noun} {nodes}, {}", t.index, t.name, format_kib(kib))?;
                    if let Some(lat) = info.unloaded_latency_ns {
                        write!(f, ", {lat:.0} ns read latency")?;
                    }
                    writeln!(f)?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_sizes_read_like_the_kernel_writes_them() {
        assert_eq!(format_list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert_eq!(format_list(&[]), "-");
        assert_eq!(format_kib(1 << 20), "1.0 GiB");
        assert_eq!(format_kib(512 << 10), "512 MiB");
    }
}
