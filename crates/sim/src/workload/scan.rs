//! `scan`: one-time sequential pollution over a steady hot working set, the case where
//! recency-driven promotion (TPP, AutoNUMA) moves pages that are never used again while
//! frequency-driven tiering (HybridTier, FreqTier) should keep the hot set in place.
//!
//! The hot set is `hot_fraction` of the pages under scrambled Zipf popularity; its pages
//! are spread evenly over the footprint (every `pages / hot`-th page, ranks scattered
//! over them by a [`Permutation`]). From access `scan_at * accesses` on, each access is,
//! with probability `scan_share`, the next step of one sequential pass over every other
//! (cold) page in ascending order: `scan_lines` reads per page, of words
//! `0..scan_lines` in order. The other accesses keep going to the hot set, at a random
//! word. Once every cold page has been read the stream is hot-only again; the scan needs
//! about `(pages - hot) * scan_lines / scan_share` accesses, and is cut short if the run
//! ends first.
//!
//! Options:
//! - `alpha` (default 0.99): the Zipf exponent of the hot set.
//! - `hot_fraction` (default 0.25): share of the pages in the hot set; it keeps at least
//!   one page and leaves at least one page to scan.
//! - `scan_at` (default 0.3): when the scan starts, as a fraction of the accesses.
//! - `scan_share` (default 0.5): share of the accesses that scan while the scan runs.
//! - `scan_lines` (default 64, every line of a page): reads per scanned page.

use tierkit_core::dist::{Rng, Zipf};

use super::zipf::Permutation;
use super::{Access, Generate, MlpClass, Stream, Workload, WorkloadSpec};
use crate::error::SimError;

struct Scan {
    zipf: Zipf,
    rng: Rng,
    perm: Permutation,
    pages: u64,
    /// Hot pages are `slot * stride` for slots `0..hot`.
    hot: u64,
    stride: u64,
    /// Accesses left before the scan starts.
    before_scan: u64,
    /// An access scans when 53 random bits fall below this.
    scan_below: u64,
    scan_lines: u8,
    /// The scan's next page (`pages` once done) and line.
    scan_page: u64,
    scan_line: u8,
}

pub(super) fn build(spec: &WorkloadSpec) -> Result<Box<dyn Workload>, SimError> {
    spec.check_options(&["alpha", "hot_fraction", "scan_at", "scan_share", "scan_lines"])?;
    spec.check_sizes(2)?;
    let alpha = spec.f64_opt("alpha", 0.99, 0.01..=5.0)?;
    let hot_fraction = spec.f64_opt("hot_fraction", 0.25, 0.0..=1.0)?;
    let scan_at = spec.f64_opt("scan_at", 0.3, 0.0..=1.0)?;
    let scan_share = spec.f64_opt("scan_share", 0.5, 0.01..=1.0)?;
    let scan_lines = spec.u64_opt("scan_lines", 64, 1..=64)? as u8;
    let hot = ((hot_fraction * spec.pages as f64).round() as u64).clamp(1, spec.pages - 1);
    let mut scan = Scan {
        zipf: Zipf::new(hot, alpha)?,
        rng: Rng::new(spec.seed),
        perm: Permutation::new(hot, spec.seed),
        pages: spec.pages,
        hot,
        stride: spec.pages / hot,
        before_scan: (scan_at * spec.accesses as f64).round() as u64,
        scan_below: (scan_share * (1u64 << 53) as f64) as u64,
        scan_lines,
        scan_page: 0,
        scan_line: 0,
    };
    scan.skip_hot();
    Ok(Stream::boxed(scan, spec.accesses))
}

impl Scan {
    fn is_hot(&self, page: u64) -> bool {
        let slot = page / self.stride;
        slot < self.hot && slot * self.stride == page
    }

    /// Moves the scan past hot pages.
    fn skip_hot(&mut self) {
        while self.scan_page < self.pages && self.is_hot(self.scan_page) {
            self.scan_page += 1;
        }
    }

    #[inline]
    fn access(&mut self) -> Access {
        if self.before_scan > 0 {
            self.before_scan -= 1;
        } else if self.scan_page < self.pages && self.rng.next_u64() >> 11 < self.scan_below {
            let access = Access { page: self.scan_page, word: self.scan_line, write: false, class: MlpClass::Default };
            self.scan_line += 1;
            if self.scan_line == self.scan_lines {
                self.scan_line = 0;
                self.scan_page += 1;
                self.skip_hot();
            }
            return access;
        }
        let slot = self.perm.apply(self.zipf.sample(&mut self.rng) - 1);
        Access {
            page: slot * self.stride,
            word: (self.rng.next_u64() & 63) as u8,
            write: false,
            class: MlpClass::Default,
        }
    }
}

impl Generate for Scan {
    fn pages(&self) -> u64 {
        self.pages
    }

    fn next_access(&mut self) -> Access {
        self.access()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::testing::drain_checked;

    fn stream(spec: &WorkloadSpec) -> Vec<Access> {
        let mut w = build(spec).unwrap();
        let mut out = Vec::new();
        while w.fill(&mut out, 4096) > 0 {}
        out
    }

    #[test]
    fn cold_pages_are_scanned_once_in_order_inside_the_window() {
        // 500 hot pages (every 4th), 1500 cold ones: 96k scan reads, done by ~312k.
        let spec = WorkloadSpec::new("scan", 2000, 400_000, 9);
        let counts = drain_checked(&spec);
        let out = stream(&spec);
        let hot = |p: u64| p & 3 == 0;
        let scans: Vec<(usize, &Access)> = out.iter().enumerate().filter(|(_, a)| !hot(a.page)).collect();
        assert_eq!(scans.len(), 1500 * 64, "every cold page read exactly 64 times");
        assert_eq!(counts.iter().enumerate().filter(|&(p, &c)| !hot(p as u64) && c != 64).count(), 0);
        for (k, (_, a)) in scans.iter().enumerate() {
            let page = k as u64 / 64;
            assert_eq!((a.page, a.word as u64), (page + page / 3 + 1, k as u64 % 64), "ascending, line by line");
        }
        let (start, end) = (scans[0].0, scans.last().unwrap().0);
        assert!((120_000..120_010).contains(&start), "{start}");
        assert!((300_000..330_000).contains(&end), "{end}");
        // Hot traffic continues: all of it outside the scan, about half inside.
        let hot_inside = out[start..=end].iter().filter(|a| hot(a.page)).count() as f64;
        assert!((hot_inside / (end - start + 1) as f64 - 0.5).abs() < 0.01, "{hot_inside}");
        // Zipf over the hot set, its ranks scattered over it.
        let mut hot_counts: Vec<(u64, usize)> = (0..2000).step_by(4).map(|p| (counts[p], p)).collect();
        hot_counts.sort_unstable_by(|a, b| b.cmp(a));
        assert!(hot_counts[0].0 > 20 * hot_counts[250].0, "{:?} {:?}", hot_counts[0], hot_counts[250]);
        assert_ne!(hot_counts[0].1, 0);
    }

    #[test]
    fn options_shape_the_scan() {
        // hot_fraction 0.6 puts the hot set on pages 0..600 (stride 1); 3 lines per page.
        let spec = WorkloadSpec::new("scan", 1000, 5000, 2)
            .with("hot_fraction", 0.6)
            .with("scan_at", 0)
            .with("scan_share", 1)
            .with("scan_lines", 3);
        let out = stream(&spec);
        let expected: Vec<(u64, u8)> = (600..1000).flat_map(|p| (0..3).map(move |w| (p, w))).collect();
        assert_eq!(out[..1200].iter().map(|a| (a.page, a.word)).collect::<Vec<_>>(), expected);
        assert!(out[1200..].iter().all(|a| a.page < 600));
        // A run too short for the scan cuts it short.
        let short = stream(&spec.with("scan_lines", 64));
        assert_eq!(short.last().unwrap().page, 600 + 5000 / 64);
    }

    #[test]
    fn bad_options_are_named() {
        let spec = WorkloadSpec::new("scan", 10, 10, 1);
        let e = build(&spec.clone().with("scan_share", 0)).err().unwrap().to_string();
        assert!(e.contains("scan_share"), "{e}");
        let e = build(&spec.clone().with("scan_lines", 65)).err().unwrap().to_string();
        assert!(e.contains("scan_lines") && e.contains("64"), "{e}");
        let e = build(&spec.with("scan", 1)).err().unwrap().to_string();
        assert!(e.contains("scan_at"), "{e}");
        assert!(build(&WorkloadSpec::new("scan", 1, 10, 1)).is_err());
    }
}
