//! A simulated last-level cache that filters a full access stream down to the accesses
//! that reach memory.
//!
//! The model is set-associative with 64-byte lines and true LRU replacement per set,
//! write-allocate and write-back. What it passes on, as [`PageAccess`]es of the line's
//! 4 KiB page, in order:
//!
//! - a **miss**: a load miss is a read; a store (or modify) miss is a write (the line is
//!   fetched for ownership and dirtied, so the page is written);
//! - a **dirty eviction**: the write-back of a modified line is a write to its page,
//!   emitted just before the miss that evicted it.
//!
//! Hits pass nothing. An access that spans several lines touches each of them.

use super::{PageAccess, PAGE_SHIFT};
use crate::error::SimError;

/// Bytes per cache line.
pub const LINE_BYTES: u64 = 64;

/// One cached line: its line number (address / 64) and whether it was stored to.
#[derive(Clone, Copy, Debug)]
struct Way {
    line: u64,
    dirty: bool,
}

/// Counters of an [`LlcFilter`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LlcStats {
    /// Line accesses that hit.
    pub hits: u64,
    /// Line accesses that missed (each passed on).
    pub misses: u64,
    /// Dirty lines evicted (each passed on as a write).
    pub writebacks: u64,
}

/// A set-associative LRU cache of 64-byte lines that keeps only memory-level accesses.
#[derive(Clone, Debug)]
pub struct LlcFilter {
    ways: usize,
    sets: u64,
    /// `sets * ways` slots; within a set, most recently used first, `len[set]` valid.
    slots: Vec<Way>,
    len: Vec<u32>,
    stats: LlcStats,
}

impl LlcFilter {
    /// A cache of `capacity` bytes with `ways` lines per set. `capacity` must be a
    /// positive multiple of `64 * ways`.
    pub fn new(capacity: u64, ways: usize) -> Result<Self, SimError> {
        let bad = |why: String| SimError::bad_option("LLC filter", "llc", capacity.to_string(), why);
        if ways == 0 {
            return Err(SimError::bad_option("LLC filter", "llc-ways", "0", "at least 1 way"));
        }
        let set_bytes = LINE_BYTES * ways as u64;
        if capacity == 0 || !capacity.is_multiple_of(set_bytes) {
            return Err(bad(format!("a positive multiple of {set_bytes} bytes (64-byte lines x {ways} ways)")));
        }
        let sets = capacity / set_bytes;
        let slots = usize::try_from(sets)
            .ok()
            .and_then(|s| s.checked_mul(ways))
            .filter(|&n| n <= 1 << 32)
            .ok_or_else(|| bad("at most 2^32 lines".into()))?;
        let need = slots as u128 * std::mem::size_of::<Way>() as u128 + u128::from(sets) * 4;
        let input = || format!("LLC filter: llc = {} MiB ({ways} ways)", capacity >> 20);
        crate::budget::check(need, input, "the LLC model")?;
        Ok(Self {
            ways,
            sets,
            slots: vec![Way { line: 0, dirty: false }; slots],
            len: vec![0; sets as usize],
            stats: LlcStats::default(),
        })
    }

    /// Number of sets.
    pub fn sets(&self) -> u64 {
        self.sets
    }

    /// Counters so far.
    pub fn stats(&self) -> LlcStats {
        self.stats
    }

    /// Accesses `size` bytes at `addr` (a store if `write`), calling `out` with each
    /// memory-level access it causes. A `size` of 0 counts as 1.
    pub fn access(&mut self, addr: u64, size: u64, write: bool, out: &mut impl FnMut(PageAccess)) {
        let first = addr / LINE_BYTES;
        let last = addr.saturating_add(size.max(1) - 1) / LINE_BYTES;
        for line in first..=last {
            self.access_line(line, write, out);
        }
    }

    fn access_line(&mut self, line: u64, write: bool, out: &mut impl FnMut(PageAccess)) {
        let set = (line % self.sets) as usize;
        let base = set * self.ways;
        let n = self.len[set] as usize;
        let ways = &mut self.slots[base..base + self.ways];
        if let Some(i) = ways[..n].iter().position(|w| w.line == line) {
            self.stats.hits += 1;
            let mut hit = ways[i];
            hit.dirty |= write;
            ways.copy_within(0..i, 1);
            ways[0] = hit;
            return;
        }
        self.stats.misses += 1;
        let keep = if n == self.ways {
            let victim = ways[n - 1];
            if victim.dirty {
                self.stats.writebacks += 1;
                out(PageAccess::new((victim.line * LINE_BYTES) >> PAGE_SHIFT, true));
            }
            n - 1
        } else {
            self.len[set] += 1;
            n
        };
        ways.copy_within(0..keep, 1);
        ways[0] = Way { line, dirty: write };
        out(PageAccess::new((line * LINE_BYTES) >> PAGE_SHIFT, write));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(c: &mut LlcFilter, seq: &[(u64, bool)]) -> Vec<PageAccess> {
        let mut v = Vec::new();
        for &(addr, w) in seq {
            c.access(addr, 8, w, &mut |a| v.push(a));
        }
        v
    }

    #[test]
    fn repeated_line_hits_after_first_miss() {
        let mut c = LlcFilter::new(64 * 4, 2).unwrap();
        assert_eq!(c.sets(), 2);
        let out = run(&mut c, &[(0x1000, false), (0x1008, false), (0x1030, true)]);
        assert_eq!(out, vec![PageAccess::read(1)]);
        assert_eq!(c.stats(), LlcStats { hits: 2, misses: 1, writebacks: 0 });
    }

    #[test]
    fn lru_evicts_least_recently_used_and_writes_back_dirty() {
        // One set of two ways: lines A (page 1), B (page 2), C (page 3).
        let mut c = LlcFilter::new(128, 2).unwrap();
        let (a, b, cc) = (0x1000, 0x2000, 0x3000);
        // A stored (dirty), B loaded, A touched again (B is now LRU), C evicts B (clean).
        let out = run(&mut c, &[(a, true), (b, false), (a, false), (cc, false)]);
        assert_eq!(out, vec![PageAccess::new(1, true), PageAccess::read(2), PageAccess::read(3)]);
        // B again evicts A (LRU, dirty): write-back of page 1, then B's miss.
        let out = run(&mut c, &[(b, false)]);
        assert_eq!(out, vec![PageAccess::new(1, true), PageAccess::read(2)]);
        // C is still cached.
        assert!(run(&mut c, &[(cc, false)]).is_empty());
        assert_eq!(c.stats(), LlcStats { hits: 2, misses: 4, writebacks: 1 });
    }

    #[test]
    fn access_spanning_two_lines_touches_both() {
        let mut c = LlcFilter::new(64 * 16, 4).unwrap();
        let mut v = Vec::new();
        c.access(0x1ffc, 8, false, &mut |a| v.push(a));
        assert_eq!(v, vec![PageAccess::read(1), PageAccess::read(2)]);
        assert_eq!(c.stats().misses, 2);
    }

    #[test]
    fn sizes_are_validated() {
        assert!(LlcFilter::new(0, 16).is_err());
        assert!(LlcFilter::new(32 << 20, 0).is_err());
        assert!(LlcFilter::new(64 * 16 + 64, 16).is_err());
        let e = LlcFilter::new(1000, 4).unwrap_err().to_string();
        assert!(e.contains("multiple of 256"), "{e}");
        assert_eq!(LlcFilter::new(32 << 20, 16).unwrap().sets(), 32768);
    }
}
