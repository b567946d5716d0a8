//! `tierkit sketches`: the tracking memory of each hotness structure at the papers'
//! default sizing, for a given fast-tier size and fast:slow ratio.

use anyhow::Result;
use tierkit_core::sketches::footprint::{footprint, FootprintRow};
use tierkit_core::PAGE_SIZE;

const GIB: f64 = (1u64 << 30) as f64;

/// Prints the table (or JSON) for `fast_bytes` of fast memory at `ratio`.
pub fn run(fast_bytes: u64, ratio: (u64, u64), json: bool) -> Result<()> {
    let fast_pages = (fast_bytes / PAGE_SIZE).max(1);
    let slow_pages = fast_pages.checked_mul(ratio.1).map(|p| p / ratio.0);
    let slow_pages =
        slow_pages.ok_or_else(|| anyhow::anyhow!("--ratio {}:{}: slow tier too large", ratio.0, ratio.1))?;
    let rows = footprint(fast_pages, slow_pages)?;
    let managed_gib = (fast_pages + slow_pages) as f64 * PAGE_SIZE as f64 / GIB;
    let fast_gib = fast_pages as f64 * PAGE_SIZE as f64 / GIB;
    if json {
        println!("{}", to_json(&rows, fast_gib, managed_gib));
        return Ok(());
    }
    println!(
        "Tracking memory, fast tier {fast_gib:.2} GiB, ratio {}:{} ({managed_gib:.2} GiB managed), 4 KiB pages",
        ratio.0, ratio.1
    );
    println!("{:<16} {:>14} {:>16} {:>14}  sizing", "structure", "bytes", "per managed GiB", "per fast GiB");
    for r in &rows {
        println!(
            "{:<16} {:>14} {:>16} {:>14}  {}",
            r.structure,
            human(r.heap_bytes as f64),
            human(r.heap_bytes as f64 / managed_gib),
            human(r.heap_bytes as f64 / fast_gib),
            r.sizing
        );
    }
    Ok(())
}

fn human(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{v:.0} B")
    } else {
        format!("{v:.2} {}", UNITS[u])
    }
}

fn to_json(rows: &[FootprintRow], fast_gib: f64, managed_gib: f64) -> String {
    let items: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{{\"structure\":\"{}\",\"sizing\":\"{}\",\"heap_bytes\":{},\"bytes_per_managed_gib\":{:.1},\"bytes_per_fast_gib\":{:.1}}}",
                r.structure,
                r.sizing.replace('"', "\\\""),
                r.heap_bytes,
                r.heap_bytes as f64 / managed_gib,
                r.heap_bytes as f64 / fast_gib
            )
        })
        .collect();
    format!("{{\"fast_gib\":{fast_gib},\"managed_gib\":{managed_gib},\"structures\":[{}]}}", items.join(","))
}
