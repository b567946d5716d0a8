//! Which memory-level accesses become records, and their instruction gaps: the rule
//! `valgrind/tk_record.c` applies in its `emit`, for recordings made with lackey.
//!
//! Nothing is written until the start (the program's beginning: lackey has no start
//! marker) plus `skip` instructions; the first record's gap counts from there. Then
//! one in `sample_every` accesses is kept, chosen by xorshift64* from a fixed seed,
//! drawn once per access offered after the start, so that the tool and lackey keep the
//! same accesses of the same run.

use tierkit_sim::trace::PageAccess;

/// The seed of the sample (the tool's `rng_state`).
const SEED: u64 = 0x9E37_79B9_7F4A_7C15;

/// Decides which accesses are written and with which instruction gap.
pub struct Emitter {
    skip: u64,
    sample_every: u64,
    rng: u64,
    /// Instructions at the previous record (or at the start).
    last: Option<u64>,
}

impl Emitter {
    /// Skips the first `skip` instructions, then keeps one in `sample_every` accesses.
    pub fn new(skip: u64, sample_every: u64) -> Self {
        Self { skip, sample_every: sample_every.max(1), rng: SEED, last: None }
    }

    fn next_random(&mut self) -> u64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Instructions before the first record could be written, once that point came.
    pub fn first_instruction(&self) -> Option<u64> {
        (self.last.is_some()).then_some(self.skip)
    }

    /// The record for access `a`, made when the program had executed `instructions`;
    /// `None` when it is skipped or not sampled.
    pub fn offer(&mut self, a: PageAccess, instructions: u64) -> Option<PageAccess> {
        let last = match self.last {
            Some(l) => l,
            None if instructions >= self.skip => *self.last.insert(self.skip),
            None => return None,
        };
        if self.sample_every > 1 && !self.next_random().is_multiple_of(self.sample_every) {
            return None;
        }
        self.last = Some(instructions);
        Some(PageAccess { instructions: instructions - last, ..a })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_then_counts_gaps_from_the_start_point() {
        let mut e = Emitter::new(10, 1);
        assert_eq!(e.offer(PageAccess::read(1), 9), None);
        assert_eq!(e.first_instruction(), None);
        assert_eq!(e.offer(PageAccess::read(2), 14).map(|a| a.instructions), Some(4));
        assert_eq!(e.offer(PageAccess::new(3, true), 14), Some(PageAccess { page: 3, write: true, instructions: 0 }));
        assert_eq!(e.offer(PageAccess::read(4), 20).map(|a| a.instructions), Some(6));
        assert_eq!(e.first_instruction(), Some(10));
    }

    #[test]
    fn a_sample_keeps_about_one_in_n_and_its_gaps_sum_to_the_span() {
        let mut e = Emitter::new(0, 8);
        let kept: Vec<PageAccess> = (1..=80_000u64).filter_map(|i| e.offer(PageAccess::read(i), 3 * i)).collect();
        assert!((9_000..11_000).contains(&kept.len()), "{}", kept.len());
        let last = kept.last().unwrap();
        assert_eq!(kept.iter().map(|a| a.instructions).sum::<u64>(), 3 * last.page);
    }
}
