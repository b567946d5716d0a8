//! Statistics of a trace, for `tierkit trace info`.

use tierkit_core::sketches::PageTable;

use super::{PageReader, TraceClock, PAGE_SHIFT};
use crate::error::SimError;

/// Longest trace whose reuse distances are computed (they need 8 bytes per access).
pub const REUSE_DISTANCE_MAX_ACCESSES: u64 = 1 << 25;

/// Ranks in the Zipf fit need at least this many accesses, so that sampling noise
/// (Poisson, relative error about 1/sqrt(count)) stays under 25%.
pub const ZIPF_FIT_MIN_COUNT: u64 = 16;

/// What `tierkit trace info` reports.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceStats {
    /// Accesses.
    pub accesses: u64,
    /// Stores among them.
    pub writes: u64,
    /// Distinct pages.
    pub pages: u64,
    /// Distinct pages × 4 KiB.
    pub footprint_bytes: u64,
    /// Share of accesses to a page accessed before: (accesses − pages) / accesses.
    pub reuse_fraction: f64,
    /// Median LRU stack distance of the re-accesses (distinct other pages accessed since
    /// the page's previous access); `None` without re-accesses or beyond
    /// [`REUSE_DISTANCE_MAX_ACCESSES`].
    pub median_reuse_distance: Option<u64>,
    /// Share of accesses going to the hottest 1% of pages (at least one page).
    pub top1_share: f64,
    /// Share of accesses going to the hottest 10% of pages (at least one page).
    pub top10_share: f64,
    /// Fitted Zipf exponent (see [`fit_zipf`]); `None` when too few pages are
    /// accessed often enough.
    pub zipf_alpha: Option<f64>,
    /// The most accessed pages as (page number, accesses), most accessed first (ties:
    /// lower page first); as many as asked for (see [`stats_with_top`]).
    pub hottest: Vec<(u64, u64)>,
    /// The trace's own clock, when it has one (see [`PageReader::clock`]).
    pub clock: Option<TraceClock>,
    /// Accesses of each MLP class, in the order of [`crate::model::MlpClass::ALL`], when the records
    /// carry classes (see [`PageReader::carries_classes`]); `None` otherwise (every
    /// access then has the default class, `app.mlp`).
    pub classes: Option<[u64; 3]>,
}

/// A Fenwick tree of counts over access positions.
struct Fenwick(Vec<u32>);

impl Fenwick {
    fn add(&mut self, mut i: usize, delta: i32) {
        i += 1;
        while i <= self.0.len() {
            self.0[i - 1] = self.0[i - 1].wrapping_add_signed(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// Sum over positions `0..i`.
    fn prefix(&self, mut i: usize) -> u64 {
        let mut s = 0u64;
        while i > 0 {
            s += self.0[i - 1] as u64;
            i -= i & i.wrapping_neg();
        }
        s
    }
}

/// Median LRU stack distance of the re-accesses in `seq` (dense page ids below
/// `pages`), with a Fenwick tree marking each page's last access: O(n log n).
fn median_stack_distance(seq: &[u32], pages: usize) -> Option<u64> {
    let mut tree = Fenwick(vec![0; seq.len()]);
    let mut last = vec![u32::MAX; pages];
    let mut histogram: Vec<u64> = Vec::new();
    let mut reuses = 0u64;
    for (i, &p) in seq.iter().enumerate() {
        let prev = last[p as usize];
        if prev != u32::MAX {
            let d = (tree.prefix(i) - tree.prefix(prev as usize + 1)) as usize;
            if histogram.len() <= d {
                histogram.resize(d + 1, 0);
            }
            histogram[d] += 1;
            reuses += 1;
            tree.add(prev as usize, -1);
        }
        tree.add(i, 1);
        last[p as usize] = i as u32;
    }
    let half = reuses.div_ceil(2);
    let mut seen = 0;
    histogram
        .iter()
        .position(|&c| {
            seen += c;
            reuses > 0 && seen >= half
        })
        .map(|d| d as u64)
}

/// Fits a Zipf exponent to per-page access counts sorted in decreasing order.
///
/// Under Zipf(α) the `r`-th most accessed page gets a share proportional to `r^-α`, so
/// `ln count(r) = c − α ln r`. The fit is an ordinary least-squares line through
/// `(ln r, ln count(r))` over the top ranks, those with at least [`ZIPF_FIT_MIN_COUNT`]
/// accesses (the sorted tail of rarely seen pages is sampling noise, which flattens the
/// curve), taken at geometrically spaced ranks (1, 2, …, then about 10% apart) so that
/// every decade of ranks weighs about the same; α is minus the slope. `None` with
/// fewer than 3 such ranks. A uniform trace gives about 0.
pub fn fit_zipf(sorted_desc: &[u64]) -> Option<f64> {
    let top = sorted_desc.iter().take_while(|&&c| c >= ZIPF_FIT_MIN_COUNT).count();
    let mut points = Vec::new();
    let mut r = 1usize;
    while r <= top {
        points.push(((r as f64).ln(), (sorted_desc[r - 1] as f64).ln()));
        r = (r + 1).max((r as f64 * 1.1) as usize);
    }
    if points.len() < 3 {
        return None;
    }
    let n = points.len() as f64;
    let (mx, my) = (points.iter().map(|p| p.0).sum::<f64>() / n, points.iter().map(|p| p.1).sum::<f64>() / n);
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = points.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    Some(-sxy / sxx)
}

/// Share of `total` in the first `ceil(fraction × len)` (at least 1) of `sorted_desc`.
fn top_share(sorted_desc: &[u64], fraction: f64, total: u64) -> f64 {
    let k = ((sorted_desc.len() as f64 * fraction).ceil() as usize).clamp(1, sorted_desc.len());
    sorted_desc[..k].iter().sum::<u64>() as f64 / total as f64
}

/// Reads `reader` (of the trace `file`, for errors) to its end and computes its
/// statistics; a trace without accesses is an error. Memory: a page map and a
/// count per distinct page, plus 4 bytes per access (for reuse distances) up to
/// [`REUSE_DISTANCE_MAX_ACCESSES`] accesses.
pub fn stats(reader: &mut dyn PageReader, file: &str) -> Result<TraceStats, SimError> {
    stats_with_top(reader, file, 0)
}

/// [`stats`] with the `top` most accessed pages listed (8 more bytes per distinct page
/// when `top > 0`).
pub fn stats_with_top(reader: &mut dyn PageReader, file: &str, top: usize) -> Result<TraceStats, SimError> {
    let mut ids = PageTable::new();
    let mut counts: Vec<u64> = Vec::new();
    let mut page_of: Vec<u64> = Vec::new();
    let mut seq: Option<Vec<u32>> = Some(Vec::new());
    let (mut accesses, mut writes) = (0u64, 0u64);
    let mut classes = [0u64; 3];
    while let Some((a, class)) = reader.next_classed()? {
        classes[class as usize] += 1;
        let fresh = counts.len() as u32;
        let id = *ids.entry(a.page, fresh);
        if id == fresh {
            counts.push(0);
            if top > 0 {
                page_of.push(a.page);
            }
        }
        counts[id as usize] += 1;
        accesses += 1;
        writes += a.write as u64;
        if accesses > REUSE_DISTANCE_MAX_ACCESSES {
            seq = None;
        }
        if let Some(s) = &mut seq {
            s.push(id);
        }
    }
    if accesses == 0 {
        return Err(SimError::File {
            file: file.to_string(),
            at: "end".into(),
            message: "the trace holds no accesses".into(),
        });
    }
    let pages = counts.len();
    let median_reuse_distance = seq.and_then(|s| median_stack_distance(&s, pages));
    let mut hottest: Vec<(u64, u64)> = page_of.into_iter().zip(counts.iter().copied()).collect();
    if top > 0 && top < hottest.len() {
        hottest.select_nth_unstable_by(top - 1, |a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        hottest.truncate(top);
    }
    hottest.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    counts.sort_unstable_by(|a, b| b.cmp(a));
    Ok(TraceStats {
        accesses,
        writes,
        pages: pages as u64,
        footprint_bytes: (pages as u64) << PAGE_SHIFT,
        reuse_fraction: (accesses - pages as u64) as f64 / accesses as f64,
        median_reuse_distance,
        top1_share: top_share(&counts, 0.01, accesses),
        top10_share: top_share(&counts, 0.10, accesses),
        zipf_alpha: fit_zipf(&counts),
        hottest,
        clock: reader.clock(),
        classes: reader.carries_classes().then_some(classes),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_distances_count_distinct_pages_between() {
        // a b c a: a's reuse sees b, c -> 2. a b a b: 1, 1. a a: 0.
        assert_eq!(median_stack_distance(&[0, 1, 2, 0], 3), Some(2));
        assert_eq!(median_stack_distance(&[0, 1, 0, 1], 2), Some(1));
        assert_eq!(median_stack_distance(&[0, 0, 0], 1), Some(0));
        // Repeats between do not count twice: a b b b a -> 1 (and the b's 0, 0).
        assert_eq!(median_stack_distance(&[0, 1, 1, 1, 0], 2), Some(0));
        assert_eq!(median_stack_distance(&[0, 1, 2], 3), None);
    }

    struct Pages(std::vec::IntoIter<u64>);

    impl PageReader for Pages {
        fn next_access(&mut self) -> Result<Option<super::super::PageAccess>, SimError> {
            Ok(self.0.next().map(super::super::PageAccess::read))
        }

        fn records_stores(&self) -> bool {
            false
        }
    }

    #[test]
    fn the_hottest_pages_come_most_accessed_first() {
        let trace = vec![7, 3, 9, 3, 7, 3, 100, 9, 42, 9];
        let s = stats_with_top(&mut Pages(trace.clone().into_iter()), "t", 3).unwrap();
        assert_eq!(s.hottest, [(3, 3), (9, 3), (7, 2)], "ties: the lower page first");
        let all = stats_with_top(&mut Pages(trace.clone().into_iter()), "t", 100).unwrap();
        assert_eq!(all.hottest.len(), 5, "at most every page");
        assert_eq!(all.hottest.iter().map(|h| h.1).sum::<u64>(), 10);
        assert!(stats(&mut Pages(trace.into_iter()), "t").unwrap().hottest.is_empty());
    }

    #[test]
    fn exact_power_laws_fit_exactly() {
        for alpha in [0.5, 1.0, 1.3] {
            let counts: Vec<u64> = (1..=2000).map(|r| (1e7 * (r as f64).powf(-alpha)).round() as u64).collect();
            let fit = fit_zipf(&counts).unwrap();
            assert!((fit - alpha).abs() < 0.01, "alpha {alpha}: fit {fit}");
        }
        assert_eq!(fit_zipf(&[100, 100, 100, 100]), Some(0.0));
        assert_eq!(fit_zipf(&[100, 15, 15, 15]), None, "one rank above the noise floor");
    }
}
