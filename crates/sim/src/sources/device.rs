//! Device-side trackers in the slow tier's controller (M5 §5.1).
//!
//! Every access served by a slower tier feeds the hot-page tracker (HPT, keyed by page)
//! or the hot-word tracker (HWT, keyed by page·64 + word): a Count-Min sketch of M5's
//! evaluated size (32K entries, 4 rows) with a sorted top-K table — or, with `exact`,
//! M5's precise page / word access counters (PAC / WAC, §4). Every `query_period` the
//! host reads the top-K — a run of [`Event::TopK`] in rank order — and the tracker
//! resets. The hardware does the counting for free; each query costs the host
//! `mechanisms.device_query_ns`.

use tierkit_core::sketches::{CmTopK, ExactCounter, FrequencySketch};
use tierkit_core::{DeviceTopK, Event, Nanos, ParamError};

enum Counter {
    Sketch(CmTopK),
    Exact(ExactCounter),
}

pub(crate) struct DeviceTracker {
    pub(crate) config: DeviceTopK,
    tracker: Counter,
    next_query: Nanos,
    /// Queries since the last drain.
    pub(crate) queries: u64,
}

impl DeviceTracker {
    pub(crate) fn new(config: DeviceTopK) -> Result<Self, ParamError> {
        let tracker =
            if config.exact { Counter::Exact(ExactCounter::new()) } else { Counter::Sketch(CmTopK::m5_hpt(config.k)?) };
        Ok(Self { config, tracker, next_query: config.query_period, queries: 0 })
    }

    #[inline(always)]
    pub(crate) fn on_access(&mut self, page: u64, word: u8, tier: u8) {
        if tier != 0 {
            let key = if self.config.words { page * 64 + word as u64 } else { page };
            match &mut self.tracker {
                Counter::Sketch(t) => t.record(key),
                Counter::Exact(c) => {
                    c.increment(key);
                }
            }
        }
    }

    /// Serves the queries due by `now`.
    pub(crate) fn advance(&mut self, now: Nanos, events: &mut Vec<Event>) {
        if self.config.query_period == 0 {
            return;
        }
        while self.next_query <= now {
            let top: Vec<(u64, u64)> = match &mut self.tracker {
                Counter::Sketch(t) => {
                    let top = t.top().to_vec();
                    t.reset();
                    top
                }
                Counter::Exact(c) => {
                    let mut all: Vec<(u64, u64)> = c.iter().map(|(k, n)| (k, n as u64)).collect();
                    all.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
                    all.truncate(self.config.k);
                    c.clear();
                    all
                }
            };
            for (key, count) in top {
                let (page, word) = if self.config.words { (key / 64, Some((key % 64) as u8)) } else { (key, None) };
                events.push(Event::TopK { page, word, count });
            }
            self.queries += 1;
            self.next_query += self.config.query_period;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_hot_slow_pages_and_words_then_resets() {
        let mut d = DeviceTracker::new(DeviceTopK { k: 2, query_period: 100, words: true, exact: false }).unwrap();
        for i in 0..1000u64 {
            d.on_access(5, 3, 1);
            d.on_access(9, 1, 0); // fast-tier accesses are invisible to the device
            if i % 2 == 0 {
                d.on_access(7, 60, 1);
            }
            d.on_access(1000 + i, 0, 1);
        }
        let mut ev = Vec::new();
        d.advance(100, &mut ev);
        assert_eq!(ev[0], Event::TopK { page: 5, word: Some(3), count: 1000 });
        assert!(matches!(ev[1], Event::TopK { page: 7, word: Some(60), count: c } if (500..510).contains(&c)));
        ev.clear();
        d.advance(200, &mut ev);
        assert!(ev.is_empty(), "reset after each query");
        assert_eq!(d.queries, 2);
    }
}

#[cfg(test)]
mod exact_tests {
    use super::*;

    #[test]
    fn exact_counters_report_true_counts_in_rank_order() {
        let mut d = DeviceTracker::new(DeviceTopK { k: 3, query_period: 10, words: false, exact: true }).unwrap();
        for (page, n) in [(4u64, 7u64), (9, 3), (2, 11), (5, 1)] {
            for _ in 0..n {
                d.on_access(page, 0, 1);
            }
        }
        let mut ev = Vec::new();
        d.advance(10, &mut ev);
        let got: Vec<_> = ev
            .iter()
            .map(|e| if let Event::TopK { page, count, .. } = *e { (page, count) } else { unreachable!() })
            .collect();
        assert_eq!(got, [(2, 11), (4, 7), (9, 3)]);
        ev.clear();
        d.advance(20, &mut ev);
        assert!(ev.is_empty());
    }
}
