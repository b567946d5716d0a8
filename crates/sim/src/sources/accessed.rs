//! Accessed-bit scanning, per page or by DAMON-style adaptive regions.
//!
//! Every `sample_interval` the scanner checks (and clears) accessed bits; every
//! `aggregation_interval` it reports how many checks found each page (or region)
//! accessed, as [`Event::Accessed`], and starts counting afresh.
//!
//! - Per page (`regions: None`): every resident PTE is checked each interval
//!   (`mechanisms.pte_ns` each) — accurate and expensive, like a full page-table walk.
//! - Regions (`regions: Some((min, max))`), as DAMON does: the address space is cut into
//!   regions; each interval checks one random page per region (`region_check_ns` each)
//!   and credits the region if it was accessed. At each aggregation adjacent regions
//!   whose counts differ by at most 10% of the highest count merge, and then every
//!   region splits in two at a random point while that keeps the count within `max`;
//!   never fewer than `min` regions.
//!
//! Simulated accessed bits are the interval index of each page's last access, so an
//! access costs one store.

use tierkit_core::dist::Rng;
use tierkit_core::{AccessedScan, Event, Nanos};

use crate::machine::Machine;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Region {
    start: u64,
    end: u64,
    sample: u64,
    hits: u32,
}

pub(crate) struct AccessScanner {
    pub(crate) config: AccessedScan,
    /// Index of the current sampling interval + 1 (0 = never accessed).
    interval: u32,
    last_seen: Vec<u32>,
    /// Per-page mode: intervals accessed in this aggregation, and pages with any.
    counts: Vec<u16>,
    touched: Vec<u64>,
    regions: Vec<Region>,
    rng: Rng,
    next_check: Nanos,
    next_aggregation: Nanos,
    /// PTE or region checks since the last drain.
    pub(crate) checks: u64,
}

impl AccessScanner {
    pub(crate) fn new(config: AccessedScan, pages: u64, seed: u64) -> Self {
        let mut s = Self {
            config,
            interval: 1,
            last_seen: vec![0; pages as usize],
            counts: Vec::new(),
            touched: Vec::new(),
            regions: Vec::new(),
            rng: Rng::new(seed),
            next_check: config.sample_interval,
            next_aggregation: config.aggregation_interval,
            checks: 0,
        };
        match config.regions {
            None => s.counts = vec![0; pages as usize],
            Some((min, _)) => {
                let n = (min.max(1) as u64).min(pages.max(1));
                for i in 0..n {
                    let (start, end) = (pages * i / n, pages * (i + 1) / n);
                    let sample = start + s.rng.below(end - start);
                    s.regions.push(Region { start, end, sample, hits: 0 });
                }
            }
        }
        s
    }

    /// Starts loading `page`'s last-seen interval and, per page, its count: what
    /// [`Self::on_access`] reads.
    #[inline(always)]
    pub(crate) fn prefetch(&self, page: u64) {
        tierkit_core::prefetch::prefetch_at(&self.last_seen, page as usize);
        tierkit_core::prefetch::prefetch_at(&self.counts, page as usize);
    }

    #[inline(always)]
    pub(crate) fn on_access(&mut self, page: u64) {
        let seen = &mut self.last_seen[page as usize];
        if *seen != self.interval {
            *seen = self.interval;
            if !self.counts.is_empty() {
                if self.counts[page as usize] == 0 {
                    self.touched.push(page);
                }
                self.counts[page as usize] += 1;
            }
        }
    }

    /// Runs the checks and aggregations due by `now`.
    pub(crate) fn advance(&mut self, now: Nanos, machine: &Machine, events: &mut Vec<Event>) {
        if self.config.sample_interval == 0 || self.config.aggregation_interval == 0 {
            return;
        }
        while self.next_check <= now {
            if self.counts.is_empty() {
                for r in &mut self.regions {
                    r.hits += (self.last_seen[r.sample as usize] == self.interval) as u32;
                    r.sample = r.start + self.rng.below(r.end - r.start);
                }
                self.checks += self.regions.len() as u64;
            } else {
                self.checks += machine.used().iter().sum::<u64>();
            }
            self.interval += 1;
            self.next_check += self.config.sample_interval;
            if self.next_check > self.next_aggregation {
                self.aggregate(events);
                self.next_aggregation += self.config.aggregation_interval;
            }
        }
    }

    fn aggregate(&mut self, events: &mut Vec<Event>) {
        if self.counts.is_empty() {
            for r in &self.regions {
                events.push(Event::Accessed { first: r.start, pages: r.end - r.start, count: r.hits });
            }
            self.adapt();
        } else {
            self.touched.sort_unstable();
            for &p in &self.touched {
                events.push(Event::Accessed { first: p, pages: 1, count: self.counts[p as usize] as u32 });
                self.counts[p as usize] = 0;
            }
            self.touched.clear();
        }
    }

    fn adapt(&mut self) {
        let (min, max) = self.config.regions.expect("region mode");
        let top = self.regions.iter().map(|r| r.hits).max().unwrap_or(0);
        let threshold = top / 10;
        let mut merged: Vec<Region> = Vec::with_capacity(self.regions.len());
        let total = self.regions.len();
        for (i, r) in self.regions.drain(..).enumerate() {
            // Merging keeps at least `min` regions: those not yet visited plus merged.
            let keep_min = merged.len() + (total - i) > min as usize;
            match merged.last_mut() {
                Some(last) if last.hits.abs_diff(r.hits) <= threshold && keep_min => {
                    // Size-weighted count, as DAMON merges nr_accesses.
                    let (a, b) = (last.end - last.start, r.end - r.start);
                    last.hits = ((last.hits as u64 * a + r.hits as u64 * b) / (a + b)) as u32;
                    last.end = r.end;
                }
                _ => merged.push(r),
            }
        }
        let mut out = Vec::with_capacity(merged.len() * 2);
        let room = (max as usize).saturating_sub(merged.len());
        let mut splits = 0;
        for r in merged {
            if splits < room && r.end - r.start >= 2 {
                let cut = r.start + 1 + self.rng.below(r.end - r.start - 1);
                out.push(Region { start: r.start, end: cut, sample: r.start, hits: 0 });
                out.push(Region { start: cut, end: r.end, sample: cut, hits: 0 });
                splits += 1;
            } else {
                out.push(Region { hits: 0, ..r });
            }
        }
        for r in &mut out {
            r.sample = r.start + self.rng.below(r.end - r.start);
        }
        self.regions = out;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::capacities;
    use crate::model::MachineConfig;

    fn machine(pages: u64) -> Machine {
        let cfg = MachineConfig::preset("cxl").unwrap();
        let mut m = Machine::new(&cfg, &capacities(2, pages, (1, 1)), pages);
        for p in 0..pages {
            m.first_touch(p, true);
        }
        m
    }

    #[test]
    fn per_page_counts_intervals_with_an_access() {
        let m = machine(10);
        let cfg = AccessedScan { sample_interval: 10, aggregation_interval: 50, regions: None };
        let mut s = AccessScanner::new(cfg, 10, 1);
        let mut ev = Vec::new();
        for t in 0..50u64 {
            s.on_access(3); // every interval
            s.on_access(3);
            if t % 20 == 0 {
                s.on_access(7); // intervals 0, 2, 4
            }
            s.advance(t + 1, &m, &mut ev);
        }
        assert_eq!(
            ev,
            [Event::Accessed { first: 3, pages: 1, count: 5 }, Event::Accessed { first: 7, pages: 1, count: 3 }]
        );
        assert_eq!(s.checks, 50, "every PTE checked in each of 5 intervals");
    }

    #[test]
    fn regions_find_the_hot_range_and_stay_within_bounds() {
        let pages = 10_000;
        let m = machine(pages);
        let cfg = AccessedScan { sample_interval: 1, aggregation_interval: 20, regions: Some((10, 100)) };
        let mut s = AccessScanner::new(cfg, pages, 2);
        let mut ev = Vec::new();
        let mut rng = Rng::new(5);
        for t in 0..400u64 {
            for _ in 0..300 {
                s.on_access(2_000 + rng.below(100)); // hot: pages 2000..2100
            }
            s.advance(t + 1, &m, &mut ev);
            assert!((10..=100).contains(&s.regions.len()), "{}", s.regions.len());
        }
        // In the last aggregation, regions inside the hot range report high counts and
        // regions away from it zero; splitting has isolated at least one hot region.
        let regions_before_adapt =
            ev.iter().rev().take_while(|e| !matches!(e, Event::Accessed { first: 0, .. })).count() + 1;
        let mut hot_regions = 0;
        for e in ev.iter().rev().take(regions_before_adapt) {
            if let Event::Accessed { first, pages: n, count } = *e {
                if first >= 2_000 && first + n <= 2_100 {
                    hot_regions += 1;
                    assert!(count >= 10, "hot region {first}+{n}: {count}");
                }
                if first + n <= 1_990 || first >= 2_110 {
                    assert_eq!(count, 0, "cold region {first}+{n}");
                }
            }
        }
        assert!(hot_regions > 0, "no region isolates the hot range");
    }
}
