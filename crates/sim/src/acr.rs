//! M5 §4.1's access-count ratio: how hot the pages a policy promoted really were.
//!
//! Over each window (a timeline interval), the slow tier's accesses are counted exactly
//! per page, as M5's page access counters (PAC) in the CXL controller do. At the end of
//! the window, the accesses of the pages promoted in it are summed and divided by the
//! accesses of the same number of the window's most accessed slow-tier pages: 1 means
//! the policy promoted the true top pages. The run's figure is the mean over windows
//! with promotions.

/// Per-window counting for the ratio.
pub(crate) struct AccessCountRatio {
    counts: Vec<u32>,
    touched: Vec<u64>,
    promoted: Vec<u64>,
    sum: f64,
    windows: u64,
}

impl AccessCountRatio {
    pub(crate) fn new(pages: u64) -> Self {
        Self { counts: vec![0; pages as usize], touched: Vec::new(), promoted: Vec::new(), sum: 0.0, windows: 0 }
    }

    /// An access served by a slow tier.
    #[inline(always)]
    pub(crate) fn slow_access(&mut self, page: u64) {
        let c = &mut self.counts[page as usize];
        if *c == 0 {
            self.touched.push(page);
        }
        *c = c.saturating_add(1);
    }

    /// A page promoted in this window (ignored when nothing is counted).
    pub(crate) fn promoted(&mut self, page: u64) {
        if !self.counts.is_empty() {
            self.promoted.push(page);
        }
    }

    /// Closes the window; returns its ratio, if anything was promoted.
    pub(crate) fn close_window(&mut self) -> Option<f64> {
        let k = self.promoted.len();
        let ratio = (k > 0).then(|| {
            let got: u64 = self.promoted.iter().map(|&p| self.counts[p as usize] as u64).sum();
            let mut all: Vec<u32> = self.touched.iter().map(|&p| self.counts[p as usize]).collect();
            let top: u64 = if all.len() > k {
                all.select_nth_unstable_by(k - 1, |a, b| b.cmp(a));
                all[..k].iter().map(|&c| c as u64).sum()
            } else {
                all.iter().map(|&c| c as u64).sum()
            };
            if top == 0 {
                0.0
            } else {
                got as f64 / top as f64
            }
        });
        for &p in &self.touched {
            self.counts[p as usize] = 0;
        }
        self.touched.clear();
        self.promoted.clear();
        if let Some(r) = ratio {
            self.sum += r;
            self.windows += 1;
        }
        ratio
    }

    /// Mean over the windows with promotions (`None` if there were none).
    pub(crate) fn mean(&self) -> Option<f64> {
        (self.windows > 0).then(|| self.sum / self.windows as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_of_promoted_to_true_top_accesses() {
        let mut a = AccessCountRatio::new(10);
        for (page, n) in [(1u64, 10), (2, 6), (3, 4), (4, 1)] {
            for _ in 0..n {
                a.slow_access(page);
            }
        }
        a.promoted(3);
        a.promoted(4);
        // Promoted 4 + 1 = 5 accesses; the true top two have 10 + 6 = 16.
        assert_eq!(a.close_window(), Some(5.0 / 16.0));
        assert_eq!(a.close_window(), None, "no promotions, no window");
        a.slow_access(7);
        a.promoted(7);
        assert_eq!(a.close_window(), Some(1.0), "counts start afresh each window");
        assert_eq!(a.mean(), Some((5.0 / 16.0 + 1.0) / 2.0));
    }
}
