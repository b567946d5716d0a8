//! Initial DAMON regions from a process's mappings.
//!
//! Left alone, DAMON's `vaddr` operations start from three regions spanning the target's
//! whole address space less its two largest unmapped gaps. What remains can still be
//! mostly holes: a static binary's `brk` heap sits hundreds of MiB above its data
//! segment, and that stretch counts towards the total DAMON divides by
//! `nr_regions/min`. Regions that large rarely land a check on the few hot pages, merge
//! into a handful of idle regions, and stay that way.
//!
//! [`initial_regions`] instead starts DAMON on the memory tierkit can tier and that
//! changes most: the private anonymous mappings, heap and stacks, merged where they
//! touch, cut into pieces so that there are at least as many regions as DAMON keeps at
//! least. DAMON refits its regions to the mappings every `update_us` (regions outside
//! them go, gaps are filled), so memory mapped later is still monitored.

use std::ops::Range;

use tierkit_core::PAGE_SIZE;

use crate::memory::procfs::{Mapping, MappingKind};

/// Whether DAMON should start on `m`: private anonymous memory, heap or stack that the
/// process can access (not `---p` guard areas).
fn monitored(m: &Mapping) -> bool {
    matches!(m.kind, MappingKind::Anon | MappingKind::Heap | MappingKind::Stack)
        && (m.perms.read || m.perms.write)
        && m.end > m.start
}

/// The address ranges (page aligned, sorted, disjoint) DAMON should start monitoring
/// in `mappings`: the private anonymous mappings, heap and stacks, merged where they
/// touch, cut into equal pieces so that there are at least `min_regions` of them in
/// all (each at least a page). Empty when there is nothing to monitor or the merged
/// ranges alone would exceed `max_regions` (DAMON then picks its own).
pub fn initial_regions(mappings: &[Mapping], min_regions: u64, max_regions: u64) -> Vec<Range<u64>> {
    let mut ranges: Vec<Range<u64>> = mappings
        .iter()
        .filter(|m| monitored(m))
        .map(|m| m.start / PAGE_SIZE * PAGE_SIZE..m.end.div_ceil(PAGE_SIZE) * PAGE_SIZE)
        .collect();
    ranges.sort_unstable_by_key(|r| r.start);
    let mut merged: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    if merged.is_empty() || merged.len() as u64 > max_regions {
        return Vec::new();
    }
    let total_pages: u64 = merged.iter().map(|r| (r.end - r.start) / PAGE_SIZE).sum();
    // Pages per piece: small enough for `min_regions` pieces, never more than `max_regions`.
    let mut piece = (total_pages / min_regions.max(1)).max(1);
    while pieces_of(&merged, piece) > max_regions {
        piece *= 2;
    }
    let mut out = Vec::new();
    for r in merged {
        let pages = (r.end - r.start) / PAGE_SIZE;
        let n = pages.div_ceil(piece);
        for i in 0..n {
            // Equal cuts of the range, on page boundaries.
            let start = r.start + pages * i / n * PAGE_SIZE;
            let end = r.start + pages * (i + 1) / n * PAGE_SIZE;
            out.push(start..end);
        }
    }
    out
}

/// How many pieces of at most `piece` pages `ranges` are cut into.
fn pieces_of(ranges: &[Range<u64>], piece: u64) -> u64 {
    ranges.iter().map(|r| ((r.end - r.start) / PAGE_SIZE).div_ceil(piece)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::procfs::parse_maps;

    /// A static binary's maps: data, bss, a heap far above it, a 64 MiB buffer, a guard
    /// page, vvar/vdso and the stack.
    const MAPS: &str = "\
00400000-00401000 r--p 00000000 00:02 40 /bin/zipf_reader
004c2000-004c5000 rw-p 000c1000 00:02 40 /bin/zipf_reader
004c5000-004cb000 rw-p 00000000 00:00 0
115eb000-1162e000 rw-p 00000000 00:00 0 [heap]
7f4152dff000-7f4152e00000 ---p 00000000 00:00 0
7f4152e00000-7f4156e00000 rw-p 00000000 00:00 0
7f4156e00000-7f4156e21000 rw-p 00000000 00:00 0
7f4157805000-7f4157809000 r--p 00000000 00:00 0 [vvar]
7f4157809000-7f415780b000 r-xp 00000000 00:00 0 [vdso]
7f41577e0000-7f41577e4000 rw-s 00000000 00:05 9 /dev/shm/x
7ffc39307000-7ffc39328000 rw-p 00000000 00:00 0 [stack]
";

    #[test]
    fn anonymous_heap_and_stack_mappings_are_merged_and_cut_to_the_minimum() {
        let maps = parse_maps(MAPS).unwrap();
        let regions = initial_regions(&maps, 100, 1000);
        // bss (6 pages), heap (67), buffer + the mapping touching it (16417), stack (33):
        // 16523 pages, pieces of at most 165 pages.
        assert!(regions.len() >= 100 && regions.len() <= 110, "{}", regions.len());
        assert!(regions.windows(2).all(|w| w[0].end <= w[1].start), "sorted and disjoint");
        assert!(regions.iter().all(|r| r.start % PAGE_SIZE == 0 && r.end % PAGE_SIZE == 0 && r.end > r.start));
        let covered: u64 = regions.iter().map(|r| r.end - r.start).sum();
        assert_eq!(covered, (6 + 67 + 16384 + 33 + 33) * PAGE_SIZE);
        assert_eq!(regions[0], 0x4c5000..0x4cb000, "the bss is small enough for one piece");
        assert_eq!(regions.last().unwrap(), &(0x7ffc39307000..0x7ffc39328000));
        let in_buffer = regions.iter().filter(|r| r.start >= 0x7f4152e00000 && r.end <= 0x7f4156e21000).count();
        assert!(in_buffer >= 99, "the buffer gets nearly every piece: {in_buffer}");
        // Files, shared memory, vvar/vdso and the guard page are left out.
        for addr in [0x400000, 0x4c2000, 0x7f4152dff000, 0x7f4157805000, 0x7f41577e0000] {
            assert!(!regions.iter().any(|r| r.contains(&addr)), "{addr:#x}");
        }
    }

    #[test]
    fn the_piece_count_respects_the_maximum_and_empty_cases_defer_to_damon() {
        let maps = parse_maps(MAPS).unwrap();
        let regions = initial_regions(&maps, 5000, 200);
        assert!(regions.len() <= 200 && regions.len() >= 100, "{}", regions.len());
        assert!(initial_regions(&maps, 3, 3).is_empty(), "4 merged ranges exceed a maximum of 3");
        let files = parse_maps("00400000-00401000 r--p 00000000 00:02 40 /bin/x\n").unwrap();
        assert!(initial_regions(&files, 10, 1000).is_empty());
    }
}
