//! Sequential-stream detection from sampled addresses, for prefetching promotions.
//!
//! A program that sweeps an array touches each page for a short burst and moves on: by the
//! time a sampled page is promoted the sweep has passed it, so frequency and recency
//! policies alike serve such phases from the slow tier (xgboost's gradient and partition
//! passes). Samples of a sweep land on ascending pages; the detector follows a few
//! candidate streams, confirms one after several ascending samples close together, and
//! reports how far ahead of the sweep pages should be brought in: the stream's speed
//! times a horizon (the time a promotion takes to land), as Linux readahead sizes its
//! window from the sequential run it has seen.
//!
//! Random samples rarely form streams: slots are replaced least-recently-advanced first,
//! so a false stream would need `confirm` ascending samples within a small gap of each
//! other before `slots` unrelated samples evict it.

use std::ops::Range;

use crate::types::{Nanos, Page};

/// Parameters of [`StreamDetector`].
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct StreamParams {
    /// Candidate streams followed at once (16, like a hardware stream prefetcher's
    /// table).
    pub slots: usize,
    /// The largest forward step, in pages, between two samples of one stream (64: a
    /// sampled sweep skips pages between samples).
    pub max_gap: u64,
    /// Ascending samples that confirm a stream (4).
    pub confirm: u32,
    /// Pages a stream must have covered before it is confirmed (64 = 256 KiB): a sweep
    /// over one object (a CDN item, a row) is not worth prefetching past its end.
    pub min_run: u64,
    /// How far ahead to prefetch, as time at the stream's speed (two policy ticks).
    pub horizon: Nanos,
    /// The most pages one stream keeps prefetched ahead of its last sample (1024 = 4 MiB).
    pub max_ahead: u64,
}

impl Default for StreamParams {
    fn default() -> Self {
        Self {
            slots: 16,
            max_gap: 64,
            confirm: 4,
            min_run: 64,
            horizon: 200 * crate::types::MILLISECOND,
            max_ahead: 1024,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Stream {
    first: Page,
    first_time: Nanos,
    last: Page,
    last_time: Nanos,
    /// Samples that advanced it (including the first).
    samples: u32,
    /// Samples on pages it covered, the head included (its density).
    hits: u32,
    /// Samples that fell inside what it had covered: a sweep rarely looks back, random
    /// accesses over a small region constantly do.
    backs: u32,
    /// Pages below this have been handed out for prefetching.
    ahead: Page,
    /// The detector's sample counter when it last advanced (for replacement).
    touched: u64,
    /// [`StreamDetector::confirmed`], kept current.
    confirmed: bool,
}

/// What [`StreamDetector::observe`] found.
#[derive(Clone, Debug, PartialEq)]
pub struct Observation {
    /// Pages newly worth prefetching, and the sweep's samples per covered page.
    pub prefetch: Option<(Range<Page>, f64)>,
    /// The sample fell in a confirmed sweep's live window.
    pub in_sweep: bool,
}

impl Stream {
    /// Confirmed, and `page` lies from `trail` pages behind its last sample to the end of
    /// what it prefetched.
    fn live_window_holds(&self, page: Page, trail: u64) -> bool {
        self.confirmed && page + trail >= self.last && page < self.ahead.max(self.last + 1)
    }
}

/// Follows ascending sample sequences; see the module documentation.
#[derive(Clone, Debug)]
pub struct StreamDetector {
    params: StreamParams,
    streams: Vec<Stream>,
    /// Per slot, the pages a sample can interact with it over (`min(first, last - gap)`
    /// to `max(last + gap, ahead)`) and when it last advanced, kept beside the slots so
    /// the common case (a sample near no stream) is one tight pass over 24 bytes a slot.
    spans: Vec<(Page, Page, u64)>,
    clock: u64,
}

impl StreamDetector {
    /// A detector with `params.slots` empty slots.
    pub fn new(params: StreamParams) -> Self {
        Self { streams: Vec::with_capacity(params.slots), spans: Vec::with_capacity(params.slots), params, clock: 0 }
    }

    /// Observes a sample of `page` at `time`, in one pass over the slots (this runs for
    /// every sample). Reports whether the page lies in a confirmed sweep's live window
    /// (from `max_gap` behind its head to the end of its prefetch), and, when the sample
    /// advances a confirmed sweep, the pages newly worth prefetching (ahead of it, never
    /// handed out before) with the sweep's density: samples per page it has covered.
    pub fn observe(&mut self, page: Page, time: Nanos) -> Observation {
        self.clock += 1;
        let gap = self.params.max_gap;
        let (mut advance, mut behind, mut oldest, mut in_sweep) = (None, None, 0, false);
        let mut oldest_touched = u64::MAX;
        for (i, &(lo, hi, touched)) in self.spans.iter().enumerate() {
            if touched < oldest_touched {
                (oldest, oldest_touched) = (i, touched);
            }
            if page < lo || page > hi {
                continue;
            }
            let s = &self.streams[i];
            if page > s.last {
                if advance.is_none() && page - s.last <= gap {
                    advance = Some(i);
                }
            } else if behind.is_none() && page >= s.first {
                behind = Some(i);
            }
            in_sweep |= s.live_window_holds(page, gap);
        }
        if let Some(i) = advance {
            let params = self.params;
            let s = &mut self.streams[i];
            s.last = page;
            s.last_time = time;
            s.samples += 1;
            s.hits += 1;
            s.touched = self.clock;
            s.confirmed = Self::confirmed(&params, s);
            self.spans[i] = Self::span(s, gap);
            if !s.confirmed || s.last_time <= s.first_time {
                return Observation { prefetch: None, in_sweep };
            }
            let covered = s.last - s.first + 1;
            // Pages per ns. Like readahead's window, never further ahead than the run seen
            // so far: a short sweep (one object) overshoots by at most its own length.
            let speed = covered as f64 / (s.last_time - s.first_time) as f64;
            let ahead = ((speed * params.horizon as f64) as u64).clamp(1, params.max_ahead.min(covered));
            let from = s.ahead.max(s.last + 1);
            let to = s.last.saturating_add(1 + ahead);
            let prefetch = (from < to).then(|| {
                s.ahead = to;
                (from..to, s.hits as f64 / covered as f64)
            });
            self.spans[i] = Self::span(s, gap);
            return Observation { prefetch, in_sweep: true };
        }
        if let Some(i) = behind {
            let params = self.params;
            let s = &mut self.streams[i];
            s.hits += 1;
            s.backs += (page < s.last) as u32;
            s.confirmed = Self::confirmed(&params, s);
            return Observation { prefetch: None, in_sweep };
        }
        let fresh = Stream {
            first: page,
            first_time: time,
            last: page,
            last_time: time,
            samples: 1,
            hits: 1,
            backs: 0,
            ahead: 0,
            touched: self.clock,
            confirmed: false,
        };
        let span = Self::span(&fresh, gap);
        if self.streams.len() < self.params.slots {
            self.streams.push(fresh);
            self.spans.push(span);
        } else {
            self.streams[oldest] = fresh;
            self.spans[oldest] = span;
        }
        Observation { prefetch: None, in_sweep }
    }

    /// The pages a sample can interact with `s` over, and when it last advanced.
    fn span(s: &Stream, gap: u64) -> (Page, Page, u64) {
        (s.first.min(s.last.saturating_sub(gap)), s.last.saturating_add(gap).max(s.ahead), s.touched)
    }

    fn confirmed(params: &StreamParams, s: &Stream) -> bool {
        s.samples >= params.confirm && s.last - s.first + 1 >= params.min_run && s.backs * 4 <= s.samples
    }

    /// True when `page` lies in a confirmed stream's live window: from `trail` pages
    /// behind its last sample to the end of what it prefetched. Such pages are about to
    /// be, or are being, swept and should not be demoted.
    pub fn in_window(&self, page: Page, trail: u64) -> bool {
        self.streams.iter().any(|s| s.live_window_holds(page, trail))
    }

    /// Heap bytes of the slots.
    pub fn heap_bytes(&self) -> usize {
        self.streams.capacity() * std::mem::size_of::<Stream>()
            + self.spans.capacity() * std::mem::size_of::<(Page, Page, u64)>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::MILLISECOND;

    #[test]
    fn an_ascending_sweep_is_confirmed_and_prefetched_ahead_at_its_speed() {
        let mut d = StreamDetector::new(StreamParams::default());
        // One page every millisecond, sampled every 10 pages: 1000 pages/s.
        let mut got = Vec::new();
        for i in 0..10u64 {
            got.push(d.observe(1000 + 10 * i, i * 10 * MILLISECOND).prefetch);
        }
        assert!(got[..7].iter().all(|g| g.is_none()), "confirmed after 4 samples and 64 pages");
        let (range, density) = got[7].clone().unwrap();
        // Covered 71 pages in 70 ms: ~1014 pages/s, 200 ms ahead = 202 pages, but never
        // further than the 71 pages seen.
        assert_eq!(range, 1071..1142);
        assert!((density - 8.0 / 71.0).abs() < 1e-9);
        // The next sample only extends the window: nothing is handed out twice.
        let (next, _) = got[8].clone().unwrap();
        assert_eq!(next, 1142..1162);
        assert!(d.in_window(1150, 0) && d.in_window(1060, 40) && !d.in_window(1000, 0));
    }

    #[test]
    fn random_samples_do_not_form_streams() {
        let mut d = StreamDetector::new(StreamParams::default());
        let mut rng = crate::dist::Rng::new(7);
        let confirmed = (0..200_000u64).filter(|&t| d.observe(rng.below(1 << 20), t * 1000).prefetch.is_some()).count();
        assert_eq!(confirmed, 0);
    }

    #[test]
    fn interleaved_sweeps_are_followed_separately() {
        let mut d = StreamDetector::new(StreamParams::default());
        let mut hits = [0; 2];
        for i in 0..20u64 {
            for (k, base) in [0u64, 1 << 30].into_iter().enumerate() {
                hits[k] += d.observe(base + 8 * i, i * MILLISECOND).prefetch.is_some() as usize;
            }
        }
        assert!(hits.iter().all(|&h| h >= 10), "{hits:?}");
    }
}
