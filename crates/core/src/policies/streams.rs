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

use std::collections::VecDeque;
use std::ops::Range;

use crate::types::{Nanos, Page};

/// The most slots a detector follows: one bit each in a word.
pub(crate) const MAX_SLOTS: usize = 64;

/// Parameters of [`StreamDetector`].
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct StreamParams {
    /// Candidate streams followed at once (16, like a hardware stream prefetcher's
    /// table; at most 64, one bit each in a word).
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
    /// to `max(last + gap, ahead)`), kept beside the slots in two arrays so that the
    /// common case (a sample near no stream) is one branch-free pass over 16 bytes a slot.
    lo: Vec<Page>,
    hi: Vec<Page>,
    /// The slots from the least recently advanced (or started) to the most: a stream
    /// replaces the first.
    order: VecDeque<usize>,
}

impl StreamDetector {
    /// A detector with `params.slots` empty slots.
    pub fn new(params: StreamParams) -> Self {
        let n = params.slots;
        Self {
            streams: Vec::with_capacity(n),
            lo: Vec::with_capacity(n),
            hi: Vec::with_capacity(n),
            order: VecDeque::with_capacity(n),
            params,
        }
    }

    /// Observes a sample of `page` at `time`, in one pass over the slots (this runs for
    /// every sample). Reports whether the page lies in a confirmed sweep's live window
    /// (from `max_gap` behind its head to the end of its prefetch), and, when the sample
    /// advances a confirmed sweep, the pages newly worth prefetching (ahead of it, never
    /// handed out before) with the sweep's density: samples per page it has covered.
    pub fn observe(&mut self, page: Page, time: Nanos) -> Observation {
        let gap = self.params.max_gap;
        // The slots whose span holds the page, one bit each.
        let mut near = 0u64;
        for (i, (&lo, &hi)) in self.lo.iter().zip(&self.hi).enumerate() {
            near |= ((lo <= page) as u64 & (page <= hi) as u64) << i;
        }
        let (mut advance, mut behind, mut in_sweep) = (None, None, false);
        while near != 0 {
            let i = near.trailing_zeros() as usize;
            near &= near - 1;
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
            s.confirmed = Self::confirmed(&params, s);
            self.renew(i);
            let s = &mut self.streams[i];
            if !s.confirmed || s.last_time <= s.first_time {
                self.set_span(i);
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
            self.set_span(i);
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
            confirmed: false,
        };
        let i = if self.streams.len() < self.params.slots.min(MAX_SLOTS) {
            self.streams.push(fresh);
            self.lo.push(0);
            self.hi.push(0);
            self.order.push_back(self.streams.len() - 1);
            self.streams.len() - 1
        } else {
            // The least recently advanced slot takes the new stream and becomes the newest.
            let oldest = self.order.pop_front().expect("a full detector has slots");
            self.order.push_back(oldest);
            self.streams[oldest] = fresh;
            oldest
        };
        self.set_span(i);
        Observation { prefetch: None, in_sweep }
    }

    /// Makes slot `i` the most recently advanced.
    fn renew(&mut self, i: usize) {
        if let Some(at) = self.order.iter().position(|&j| j == i) {
            self.order.remove(at);
        }
        self.order.push_back(i);
    }

    /// Stores the pages a sample can interact with slot `i` over.
    fn set_span(&mut self, i: usize) {
        let (s, gap) = (&self.streams[i], self.params.max_gap);
        self.lo[i] = s.first.min(s.last.saturating_sub(gap));
        self.hi[i] = s.last.saturating_add(gap).max(s.ahead);
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
            + (self.lo.capacity() + self.hi.capacity()) * std::mem::size_of::<Page>()
            + self.order.capacity() * std::mem::size_of::<usize>()
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
    fn the_least_recently_advanced_stream_is_replaced() {
        let run = |unrelated_after: u64| {
            let mut d = StreamDetector::new(StreamParams::default());
            let mut t = 0;
            let mut at = |d: &mut StreamDetector, page: Page| {
                t += MILLISECOND;
                d.observe(page, t)
            };
            // The sweep starts first, then 15 unrelated samples fill the other slots.
            at(&mut d, 1000);
            for k in 1..16u64 {
                at(&mut d, k << 30);
            }
            // Advancing makes the sweep the most recent, although it started first.
            at(&mut d, 1030);
            at(&mut d, 1060);
            for k in 0..unrelated_after {
                at(&mut d, (100 + k) << 30);
            }
            at(&mut d, 1090).prefetch.is_some()
        };
        // Fifteen newer streams evict the fifteen others; the sixteenth evicts the sweep.
        assert!(run(15), "the sweep's fourth sample confirms it");
        assert!(!run(16), "evicted: its fourth sample starts afresh");
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
