//! Where a run leaves the program's hot set: of the accesses of the pages the run
//! accessed most (as many as the fast tier holds), the share whose pages sit on the
//! fast tier at the run's end. It is what `tierkit advise --deploy` measures live (the
//! trace's most accessed pages, weighted by their accesses, located with `move_pages`
//! at the program's end), so the simulator predicts the same quantity.

/// Accesses per page over a run (empty when not measured).
pub(crate) struct HotSet {
    counts: Vec<u32>,
}

impl HotSet {
    /// Counts for `pages` pages; none when `measure` is off.
    pub(crate) fn new(pages: u64, measure: bool) -> Self {
        Self { counts: if measure { vec![0; pages as usize] } else { Vec::new() } }
    }

    /// An access to `page` (nothing when not measured).
    #[inline(always)]
    pub(crate) fn access(&mut self, page: u64) {
        if let Some(c) = self.counts.get_mut(page as usize) {
            *c = c.saturating_add(1);
        }
    }

    /// The share of the accesses of the `k` most accessed pages whose pages `on_fast`
    /// says are on the fast tier; `None` when not measured or nothing was accessed.
    pub(crate) fn fast_share(&self, k: u64, on_fast: impl Fn(u64) -> bool) -> Option<f64> {
        let mut hot: Vec<(u32, u64)> =
            self.counts.iter().enumerate().filter(|(_, &c)| c > 0).map(|(p, &c)| (c, p as u64)).collect();
        let k = (k as usize).min(hot.len());
        if k == 0 {
            return None;
        }
        if k < hot.len() {
            hot.select_nth_unstable_by(k - 1, |a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            hot.truncate(k);
        }
        let all: u64 = hot.iter().map(|&(c, _)| u64::from(c)).sum();
        let fast: u64 = hot.iter().filter(|&&(_, p)| on_fast(p)).map(|&(c, _)| u64::from(c)).sum();
        Some(fast as f64 / all as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_weighs_the_k_most_accessed_pages_by_their_accesses() {
        let mut h = HotSet::new(5, true);
        for (page, n) in [(0, 1), (1, 6), (2, 3), (3, 0), (4, 2)] {
            (0..n).for_each(|_| h.access(page));
        }
        // The two hottest: page 1 (6) and page 2 (3); page 1 on the fast tier.
        assert_eq!(h.fast_share(2, |p| p == 1), Some(6.0 / 9.0));
        // A cold page on the fast tier does not count.
        assert_eq!(h.fast_share(2, |p| p == 0), Some(0.0));
        // k beyond the pages accessed: every accessed page, never the untouched one.
        assert_eq!(h.fast_share(10, |p| p != 3), Some(1.0));
    }

    #[test]
    fn nothing_is_counted_unless_measured() {
        let mut h = HotSet::new(5, false);
        h.access(1);
        assert_eq!(h.fast_share(2, |_| true), None);
        assert_eq!(HotSet::new(5, true).fast_share(2, |_| true), None);
    }
}
