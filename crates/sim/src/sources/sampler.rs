//! PEBS/IBS-like access sampling.
//!
//! Every counted access (all tiers, or slow tiers only) decrements a countdown; at zero
//! the access becomes an [`Event::Sample`] with its page, serving tier, word and
//! read/write flag, and the stall it caused: the serving tier's loaded latency (of the
//! previous chunk, [`Sampler::set_stalls`]) over the MLP of the access's class. A rate
//! in Hz is turned into a period from the access rate the application achieved in the
//! previous interval (what `perf -F` does with its frequency mode). Periods above 1 are
//! jittered uniformly in [P/2, 3P/2] so that periodic access patterns do not alias with
//! the sampler. Each sample costs `mechanisms.sample_ns` of CPU.

use tierkit_core::dist::Rng;
use tierkit_core::{Event, Nanos, SampleRate, Sampling, TierId};

use crate::workload::Access;

pub(crate) struct Sampler {
    config: Sampling,
    period: u64,
    countdown: u64,
    rng: Rng,
    /// Samples taken since the last drain.
    pub(crate) taken: u64,
    /// Stall per miss, ns, by tier and [`MlpClass`].
    stalls: Vec<[f32; 3]>,
}

impl Sampler {
    pub(crate) fn new(config: Sampling, seed: u64) -> Self {
        let mut s = Self { config, period: 0, countdown: 0, rng: Rng::new(seed), taken: 0, stalls: Vec::new() };
        s.period = match config.rate {
            SampleRate::Period(p) => p,
            // Before any interval has run, start at one sample per 1000 accesses.
            SampleRate::Hz(hz) if hz > 0.0 => 1000,
            SampleRate::Hz(_) => 0,
        };
        s.countdown = s.next_countdown();
        s
    }

    fn next_countdown(&mut self) -> u64 {
        match self.period {
            0 => u64::MAX,
            1 => 1,
            p => p / 2 + 1 + self.rng.below(p),
        }
    }

    /// Updates the configuration (the policy changed its request).
    pub(crate) fn reconfigure(&mut self, config: Sampling, counted_rate_per_sec: f64) {
        if config != self.config {
            self.config = config;
            self.retune(counted_rate_per_sec);
            self.countdown = self.next_countdown();
        }
    }

    /// Re-derives the period of a Hz rate from the counted access rate.
    pub(crate) fn retune(&mut self, counted_rate_per_sec: f64) {
        self.period = match self.config.rate {
            SampleRate::Period(p) => p,
            SampleRate::Hz(hz) if hz > 0.0 && counted_rate_per_sec > 0.0 => {
                (counted_rate_per_sec / hz).round().max(1.0) as u64
            }
            SampleRate::Hz(hz) if hz > 0.0 => self.period.max(1),
            SampleRate::Hz(_) => 0,
        };
        // A countdown longer than the new period allows (or a suspended one) restarts.
        if self.period == 0 || self.countdown > self.period + self.period / 2 + 1 {
            self.countdown = self.next_countdown();
        }
    }

    /// Sets the stall per miss by tier and class: `latency_ns[t] / mlp[class]`.
    pub(crate) fn set_stalls(&mut self, latency_ns: &[f64], mlp: [f64; 3]) {
        self.stalls.clear();
        self.stalls.extend(latency_ns.iter().map(|&l| mlp.map(|m| (l / m) as f32)));
    }

    /// Whether every access on every tier is a sample (period 1, no tier filter).
    pub(crate) fn takes_every_access(&self) -> bool {
        self.period == 1 && !self.config.slow_tiers_only
    }

    /// Whether accesses on `tier` are counted.
    #[inline(always)]
    pub(crate) fn counts(&self, tier: u8) -> bool {
        !self.config.slow_tiers_only || tier != 0
    }

    #[inline(always)]
    pub(crate) fn on_access(&mut self, a: &Access, tier: u8, time: impl Fn() -> Nanos, events: &mut Vec<Event>) {
        if !self.counts(tier) {
            return;
        }
        self.countdown -= 1;
        if self.countdown == 0 {
            self.taken += 1;
            let word = self.config.words.then_some(a.word);
            let stall_ns = self.stalls.get(tier as usize).map(|s| s[a.class as usize]);
            events.push(Event::Sample {
                page: a.page,
                tier: TierId(tier),
                word,
                write: a.write,
                time: time(),
                stall_ns,
            });
            self.countdown = self.next_countdown();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::MlpClass;

    fn run(s: &mut Sampler, n: u64, tier_of: impl Fn(u64) -> u8) -> Vec<Event> {
        let mut ev = Vec::new();
        for i in 0..n {
            s.on_access(
                &Access { page: i, word: (i % 64) as u8, write: i % 2 == 0, class: MlpClass::Default },
                tier_of(i),
                || i,
                &mut ev,
            );
        }
        ev
    }

    #[test]
    fn period_one_samples_every_access_with_its_fields() {
        let mut s = Sampler::new(Sampling { words: true, ..Sampling::every(1) }, 1);
        let ev = run(&mut s, 100, |_| 1);
        assert_eq!(ev.len(), 100);
        assert_eq!(
            ev[3],
            Event::Sample { page: 3, tier: TierId(1), word: Some(3), write: false, time: 3, stall_ns: None }
        );
    }

    #[test]
    fn a_sample_reports_its_tiers_latency_over_its_class_mlp() {
        let mut s = Sampler::new(Sampling::every(1), 1);
        let mut ev = Vec::new();
        let access = |class| Access { page: 1, word: 0, write: false, class };
        s.on_access(&access(MlpClass::Dependent), 1, || 0, &mut ev);
        s.set_stalls(&[80.0, 120.0], [4.0, 1.0, 10.0]);
        for class in [MlpClass::Default, MlpClass::Dependent, MlpClass::Streaming] {
            s.on_access(&access(class), 1, || 0, &mut ev);
        }
        s.on_access(&access(MlpClass::Dependent), 0, || 0, &mut ev);
        let stalls: Vec<Option<f32>> =
            ev.iter().map(|e| if let Event::Sample { stall_ns, .. } = *e { stall_ns } else { None }).collect();
        // Before any latency is known the stall is not reported.
        assert_eq!(stalls, [None, Some(30.0), Some(120.0), Some(12.0), Some(80.0)]);
    }

    #[test]
    fn jittered_period_keeps_the_mean_rate_and_slow_only_filters() {
        let mut s = Sampler::new(Sampling::every(100), 7);
        let n = run(&mut s, 1_000_000, |_| 0).len() as f64;
        assert!((n - 10_000.0).abs() < 300.0, "{n}");
        let mut slow = Sampler::new(Sampling { slow_tiers_only: true, ..Sampling::every(1) }, 7);
        let ev = run(&mut slow, 1000, |i| (i % 4 == 0) as u8);
        assert_eq!(ev.len(), 250);
        assert!(ev.iter().all(|e| matches!(e, Event::Sample { tier: TierId(1), .. })));
    }

    #[test]
    fn hz_rates_follow_the_access_rate_and_zero_suspends() {
        let mut s = Sampler::new(Sampling::new(10_000.0), 3);
        s.retune(1e8); // 100M accesses/s at 10 kHz: one sample per 10k accesses
        let n = run(&mut s, 1_000_000, |_| 0).len();
        assert!((90..=110).contains(&n), "{n}");
        s.reconfigure(Sampling::new(0.0), 1e8);
        assert!(run(&mut s, 1_000_000, |_| 0).is_empty());
    }
}
