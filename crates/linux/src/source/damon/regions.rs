//! DAMON monitoring regions and the events they become.

use serde::Serialize;
use tierkit_core::{Event, PAGE_SIZE};

/// One DAMON region of the target's virtual address space, as the kernel reports it
/// after an aggregation interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Region {
    /// First byte of the region (page aligned).
    pub start: u64,
    /// One past its last byte.
    pub end: u64,
    /// Sampling checks within the aggregation interval that found the region accessed
    /// (at most `aggr_us / sample_us`).
    pub nr_accesses: u32,
}

impl Region {
    /// The region's size in bytes.
    pub fn bytes(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }

    /// The region as an [`Event::Accessed`]: pages `start >> 12 ..` (whole pages only),
    /// accessed `nr_accesses` times. `None` for a region smaller than a page.
    pub fn event(&self) -> Option<Event> {
        let pages = self.bytes() / PAGE_SIZE;
        (pages > 0).then_some(Event::Accessed { first: self.start / PAGE_SIZE, pages, count: self.nr_accesses })
    }
}

/// Appends the events of `regions` to `out` (one [`Event::Accessed`] per region of at
/// least a page).
pub fn to_events(regions: &[Region], out: &mut Vec<Event>) {
    out.extend(regions.iter().filter_map(Region::event));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_become_page_ranges_with_their_access_counts() {
        let regions = [
            Region { start: 0x7f00_0000_0000, end: 0x7f00_0020_0000, nr_accesses: 20 },
            Region { start: 0x5000, end: 0x5800, nr_accesses: 1 },
            Region { start: 0x1000, end: 0x4000, nr_accesses: 0 },
        ];
        let mut out = vec![Event::Free { page: 1 }];
        to_events(&regions, &mut out);
        assert_eq!(
            out,
            [
                Event::Free { page: 1 },
                Event::Accessed { first: 0x7f00_0000_0000 >> 12, pages: 512, count: 20 },
                Event::Accessed { first: 1, pages: 3, count: 0 },
            ]
        );
        assert_eq!(regions[0].bytes(), 2 << 20);
    }

    #[test]
    fn an_inverted_region_is_empty_not_huge() {
        let region = Region { start: 0x9000, end: 0x1000, nr_accesses: 5 };
        assert_eq!(region.bytes(), 0);
        assert_eq!(region.event(), None);
    }
}
