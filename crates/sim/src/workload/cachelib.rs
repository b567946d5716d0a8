//! `cachelib-cdn` and `cachelib-social`: Meta's CacheLib cache driven by cachebench, the
//! CDN and social-graph setups of HybridTier §5.3 and FreqTier §VI-C, each "defined by a
//! popularity distribution, size distribution, and operation composition".
//!
//! Layout. An object is a 48-byte item header (with its key) plus a value of lognormal size,
//! stored in a slab class as CacheLib's allocator does: allocation sizes grow by 1.25x from
//! 64 B, 8-byte aligned, up to 4 MiB. Each class packs its objects back to back in its own
//! region, as in CacheLib's slabs, so small objects share 4 KiB pages and large ones span
//! several. The footprint is split among classes by the bytes each holds in a sample of the
//! size distribution; the hash table (CacheLib's access container: a 4-byte bucket per
//! object, rounded up to a power of two) comes first.
//!
//! Operations. Keys have Zipf popularity, independent of size (ranks are scattered over the
//! slots by a seeded permutation). An operation reads (GET) or writes (SET) its key's bucket
//! and then the object's lines: all of them up to 256 lines (16 KiB); for larger objects the
//! header line and a random 255-line window of the value (a range request), which bounds the
//! cost of an operation. A SET of a new key (churn) writes the object at its class's
//! allocation cursor, evicting the slot allocated longest ago: the new key takes the sampled
//! popularity, and the evicted key's popularity moves to the vacated slot (whose memory it
//! reuses when it returns). Hot keys thus move to fresh slab space and page popularity drifts
//! within a fixed footprint. Other SETs overwrite the object in place.
//!
//! Options (default for cdn / social):
//! - `alpha`: Zipf exponent of key popularity, 0.7 / 0.9. CDN: the top 20% of items take 60% of
//!   accesses (FreqTier §I, citing the CacheLib paper), which is Zipf 0.7; social graph: 0.9,
//!   the top 10% of items taking about 80% (FreqTier §II-B, for Meta's caches).
//! - `get_ratio`: fraction of operations that are GETs, 0.99 / 0.9: the authors' cachebench
//!   configs (kevins981/CacheLib `test_configs/ecosys_medium/{cdn,graph_cache_leader_assocs}`,
//!   which HybridTier's artifact runs): getRatio 0.991 and 0.884, the rest lone GETs that miss
//!   and are then set.
//! - `churn`: fraction of SETs that insert a new key, 0.1 / 0.1. An assumption: the papers only
//!   report that half of the popular objects of Meta's caches are no longer popular ten minutes
//!   later (HybridTier §2.2).
//!
//! Value sizes: CDN lognormal with median 8 KiB and sigma 1.5 (mean 25 KiB, capped at 4 MiB;
//! the authors' config gives 8.5M keys 200 GB, about 24 KB a key); social graph lognormal with
//! median 256 B and sigma 1 (hundreds of bytes).
//!
//! Memory: about 4 bytes of metadata per object (its rank), plus 4 per key moved by churn.

use tierkit_core::dist::{Rng, Zipf};
use tierkit_core::hash::mix64;

use super::zipf::Permutation;
use super::{Access, MlpClass, Workload, WorkloadSpec};
use crate::budget;
use crate::error::SimError;

const PAGE: u64 = 4096;
const HEADER: u64 = 48;
const MAX_ALLOC: u64 = 4 << 20;
const MAX_LINES: u64 = 256;
/// Size-distribution draws that set the classes' shares of the footprint.
const SIZE_SAMPLES: usize = 1 << 16;

/// One slab class: `slots` objects of `size` bytes from line `first_line` on.
#[derive(Clone, Debug)]
struct Class {
    size: u64,
    first_slot: u32,
    slots: u32,
    first_line: u64,
    /// Next slot to allocate (the one allocated longest ago), relative to `first_slot`.
    cursor: u32,
}

/// A run of consecutive lines still to emit.
#[derive(Clone, Copy, Debug, Default)]
struct Run {
    line: u64,
    left: u64,
    write: bool,
}

struct CacheLib {
    zipf: Zipf,
    rng: Rng,
    classes: Vec<Class>,
    /// Where each rank starts; a rank moved by churn is in `moved` and `slot_of_rank`.
    perm: Permutation,
    moved: Vec<u64>,
    slot_of_rank: Vec<u32>,
    rank_of_slot: Vec<u32>,
    buckets: u64,
    salt: u64,
    get_ratio: f64,
    churn: f64,
    pages: u64,
    total: u64,
    left: u64,
    /// The current operation's runs, emitted in order from `next`.
    runs: [Run; 3],
    next: usize,
}

pub(super) fn build(spec: &WorkloadSpec) -> Result<Box<dyn Workload>, SimError> {
    Ok(Box::new(CacheLib::new(spec)?))
}

impl CacheLib {
    fn new(spec: &WorkloadSpec) -> Result<Self, SimError> {
        spec.check_options(&["alpha", "get_ratio", "churn"])?;
        spec.check_sizes(2)?;
        let cdn = spec.name == "cachelib-cdn";
        let (alpha, get_ratio, median, sigma) = if cdn { (0.7, 0.99, 8192.0, 1.5) } else { (0.9, 0.9, 256.0, 1.0) };
        let alpha = spec.f64_opt("alpha", alpha, 0.01..=5.0)?;
        let get_ratio = spec.f64_opt("get_ratio", get_ratio, 0.0..=1.0)?;
        let churn = spec.f64_opt("churn", 0.1, 0.0..=1.0)?;

        // Allocation sizes, and the bytes each holds in a sample of objects.
        let mut sizes = vec![64u64];
        while *sizes.last().unwrap() < MAX_ALLOC {
            let next = (sizes.last().unwrap() * 5 / 4).next_multiple_of(8);
            sizes.push(next.min(MAX_ALLOC));
        }
        let mut rng = Rng::new(spec.seed ^ 0x5a1e);
        let mut bytes = vec![0u64; sizes.len()];
        for _ in 0..SIZE_SAMPLES {
            // Box-Muller: a standard normal from two uniforms.
            let z = (-2.0 * (1.0 - rng.next_f64()).ln()).sqrt() * (std::f64::consts::TAU * rng.next_f64()).cos();
            let value = (median * (sigma * z).exp()).clamp(1.0, (MAX_ALLOC - HEADER) as f64) as u64;
            let k = sizes.partition_point(|&s| s < HEADER + value);
            bytes[k] += sizes[k];
        }
        let sampled: u64 = bytes.iter().sum();

        // The hash table, sized for the object count the footprint holds on average.
        let objects = spec.pages as u128 * (PAGE as u128 * SIZE_SAMPLES as u128) / sampled as u128;
        let buckets = (objects as u64).max(1).next_power_of_two();
        let ht_pages = (buckets * 4).div_ceil(PAGE);
        let data_pages = spec.pages.saturating_sub(ht_pages);
        // Largest classes first, each taking its share rounded down to whole objects; what it
        // leaves carries to the next, so the small classes fill the footprint to the page.
        let mut classes = Vec::new();
        let (mut slot, mut line, mut share) = (0u64, ht_pages * 64, 0u64);
        for (&size, &b) in sizes.iter().zip(&bytes).rev() {
            share += b;
            let avail = (data_pages as u128 * share as u128 / sampled as u128) as u64 - (line / 64 - ht_pages);
            let slots = avail * PAGE / size;
            if slots > 0 {
                classes.push(Class { size, first_slot: slot as u32, slots: slots as u32, first_line: line, cursor: 0 });
                slot += slots;
                line += (slots * size).div_ceil(PAGE) * 64;
            }
        }
        if !(1..=u32::MAX as u64).contains(&slot) {
            let expected = "a footprint that holds between 1 and 2^32 - 1 objects";
            return Err(SimError::bad_option(format!("workload {}", spec.name), "pages", spec.pages, expected));
        }
        // Two u32 tables and a bit per object.
        let input = || format!("{}: pages = {}", spec.owner(), spec.pages);
        budget::check(u128::from(slot) * 8 + u128::from(slot / 8), input, "building its object tables")?;
        let perm = Permutation::new(slot, spec.seed);
        let mut rank_of_slot = vec![0u32; slot as usize];
        for r in 0..slot {
            rank_of_slot[perm.apply(r) as usize] = r as u32;
        }
        Ok(Self {
            zipf: Zipf::new(slot, alpha)?,
            rng: Rng::new(spec.seed),
            classes,
            perm,
            moved: vec![0; slot.div_ceil(64) as usize],
            slot_of_rank: vec![0; slot as usize],
            rank_of_slot,
            buckets,
            salt: mix64(spec.seed),
            get_ratio,
            churn,
            pages: line / 64,
            total: spec.accesses,
            left: spec.accesses,
            runs: [Run::default(); 3],
            next: 3,
        })
    }

    /// The slot holding `rank`. Only moved ranks are looked up in a table, so the common
    /// case touches one bit per object instead of four bytes.
    #[inline]
    fn slot(&self, rank: u32) -> u32 {
        if self.moved[rank as usize / 64] >> (rank % 64) & 1 == 1 {
            self.slot_of_rank[rank as usize]
        } else {
            self.perm.apply(rank as u64) as u32
        }
    }

    #[inline]
    fn class_of(&self, slot: u32) -> usize {
        self.classes.partition_point(|c| c.first_slot <= slot) - 1
    }

    /// First line and line count of the object in `slot`.
    #[inline]
    fn object_lines(&self, slot: u32) -> (u64, u64) {
        let c = &self.classes[self.class_of(slot)];
        let start = (slot - c.first_slot) as u64 * c.size;
        let first = start / 64;
        (c.first_line + first, (start + c.size - 1) / 64 - first + 1)
    }

    /// Inserts a new key with the popularity of `rank` at its class's allocation cursor;
    /// returns the new slot.
    fn insert(&mut self, rank: u32, old: u32) -> u32 {
        let k = self.class_of(old);
        let c = &mut self.classes[k];
        let fresh = c.first_slot + c.cursor;
        c.cursor = if c.cursor + 1 == c.slots { 0 } else { c.cursor + 1 };
        let evicted = self.rank_of_slot[fresh as usize];
        for (r, s) in [(evicted, old), (rank, fresh)] {
            self.slot_of_rank[r as usize] = s;
            self.moved[r as usize / 64] |= 1 << (r % 64);
        }
        self.rank_of_slot[fresh as usize] = rank;
        self.rank_of_slot[old as usize] = evicted;
        fresh
    }

    /// Draws the next operation and queues its runs.
    fn start_op(&mut self) {
        let rank = (self.zipf.sample(&mut self.rng) - 1) as u32;
        let write = self.rng.next_f64() >= self.get_ratio;
        let mut slot = self.slot(rank);
        if write && self.rng.next_f64() < self.churn {
            slot = self.insert(rank, slot);
        }
        let bucket = mix64(rank as u64 ^ self.salt) & (self.buckets - 1);
        let (first, lines) = self.object_lines(slot);
        self.runs[0] = Run { line: bucket / 16, left: 1, write };
        if lines <= MAX_LINES {
            self.runs[1] = Run { line: first, left: lines, write };
            self.runs[2] = Run::default();
        } else {
            let window = 1 + self.rng.below(lines - MAX_LINES + 1);
            self.runs[1] = Run { line: first, left: 1, write };
            self.runs[2] = Run { line: first + window, left: MAX_LINES - 1, write };
        }
        self.next = 0;
    }
}

impl Workload for CacheLib {
    fn pages(&self) -> u64 {
        self.pages
    }

    fn len(&self) -> u64 {
        self.total
    }

    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> usize {
        let n = (max as u64).min(self.left);
        let mut done = 0;
        while done < n {
            if self.next == 3 {
                self.start_op();
            }
            let run = &mut self.runs[self.next];
            let take = run.left.min(n - done);
            for line in run.line..run.line + take {
                out.push(Access {
                    page: line >> 6,
                    word: (line & 63) as u8,
                    write: run.write,
                    class: MlpClass::Default,
                });
            }
            run.line += take;
            run.left -= take;
            done += take;
            while self.next < 3 && self.runs[self.next].left == 0 {
                self.next += 1;
            }
        }
        self.left -= n;
        n as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::testing::drain_checked;

    fn spec(name: &str, pages: u64, accesses: u64) -> WorkloadSpec {
        WorkloadSpec::new(name, pages, accesses, 7)
    }

    /// Share of object-page accesses that the hottest `frac` of object pages take.
    fn top_share(counts: &[u64], ht_pages: usize, frac: f64) -> f64 {
        let mut sorted = counts[ht_pages..].to_vec();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let top = (sorted.len() as f64 * frac).ceil() as usize;
        sorted[..top].iter().sum::<u64>() as f64 / sorted.iter().sum::<u64>() as f64
    }

    fn ht_pages(w: &CacheLib) -> usize {
        (w.classes[0].first_line / 64) as usize
    }

    #[test]
    fn hot_pages_concentrate_accesses() {
        for name in ["cachelib-cdn", "cachelib-social"] {
            let s = spec(name, 8192, 400_000);
            let counts = drain_checked(&s);
            let w = CacheLib::new(&s).unwrap();
            assert!(w.pages() <= 8192 && w.pages() > 8000, "{name}: {}", w.pages());
            let share = top_share(&counts, ht_pages(&w), 0.1);
            assert!(share > 0.45, "{name}: top 10% of pages take {share}");
        }
    }

    /// Mean number of objects, and of keys among the 20% most popular, on each of the hottest
    /// 10% of object pages.
    fn keys_per_hot_page(name: &str) -> (f64, f64) {
        let s = spec(name, 8192, 300_000).with("churn", 0);
        let counts = drain_checked(&s);
        let w = CacheLib::new(&s).unwrap();
        let mut keys = vec![(0u32, 0u32); w.pages() as usize];
        let popular = w.rank_of_slot.len() as u32 / 5;
        for (slot, &rank) in w.rank_of_slot.iter().enumerate() {
            let (first, lines) = w.object_lines(slot as u32);
            for page in first / 64..=(first + lines - 1) / 64 {
                keys[page as usize].0 += 1;
                keys[page as usize].1 += (rank < popular) as u32;
            }
        }
        let mut pages: Vec<usize> = (ht_pages(&w)..counts.len()).collect();
        pages.sort_unstable_by(|&a, &b| counts[b].cmp(&counts[a]));
        let hot = &pages[..pages.len() / 10];
        let mean = |f: fn((u32, u32)) -> u32| hot.iter().map(|&p| f(keys[p]) as f64).sum::<f64>() / hot.len() as f64;
        (mean(|k| k.0), mean(|k| k.1))
    }

    #[test]
    fn social_objects_share_pages_cdn_objects_span_them() {
        let (objects, popular) = keys_per_hot_page("cachelib-social");
        assert!(objects > 5.0 && popular > 1.8, "social: {objects} objects, {popular} popular");
        let (objects, popular) = keys_per_hot_page("cachelib-cdn");
        assert!(objects < 2.0 && popular < 1.0, "cdn: {objects} objects, {popular} popular");
        // Most CDN objects are larger than a page, hardly any social object is.
        for (name, lo, hi) in [("cachelib-cdn", 0.5, 1.0), ("cachelib-social", 0.0, 0.01)] {
            let w = CacheLib::new(&spec(name, 8192, 1)).unwrap();
            let n = w.rank_of_slot.len() as u32;
            let large = (0..n).filter(|&s| w.object_lines(s).1 > 65).count() as f64 / n as f64;
            assert!((lo..=hi).contains(&large), "{name}: {large}");
        }
    }

    #[test]
    fn get_ratio_sets_the_share_of_writes() {
        for ratio in [1.0, 0.9, 0.6] {
            let s = spec("cachelib-social", 4096, 200_000).with("get_ratio", ratio);
            drain_checked(&s);
            let mut w = build(&s).unwrap();
            let mut out = Vec::new();
            while w.fill(&mut out, 4096) > 0 {}
            let writes = out.iter().filter(|a| a.write).count() as f64 / out.len() as f64;
            assert!((writes - (1.0 - ratio)).abs() < 0.02, "get_ratio {ratio}: writes {writes}");
        }
    }

    /// Share of the second half's object-page accesses that go to the first half's hottest
    /// 2% of pages.
    fn stays_on_old_hot_pages(churn: f64) -> f64 {
        let s = spec("cachelib-social", 4096, 2_000_000).with("get_ratio", 0.5).with("churn", churn);
        drain_checked(&s);
        let mut w = CacheLib::new(&s).unwrap();
        let ht = ht_pages(&w);
        let mut halves = [vec![0u64; w.pages() as usize], vec![0u64; w.pages() as usize]];
        let (mut out, mut seen) = (Vec::new(), 0);
        while w.fill(&mut out, 4096) > 0 {
            for a in out.drain(..) {
                halves[(seen >= s.accesses / 2) as usize][a.page as usize] += 1;
                seen += 1;
            }
        }
        let mut pages: Vec<usize> = (ht..halves[0].len()).collect();
        pages.sort_unstable_by(|&a, &b| halves[0][b].cmp(&halves[0][a]));
        let hot = &pages[..pages.len() / 50];
        hot.iter().map(|&p| halves[1][p]).sum::<u64>() as f64 / halves[1][ht..].iter().sum::<u64>() as f64
    }

    #[test]
    fn churn_moves_traffic_to_new_pages() {
        let fixed = stays_on_old_hot_pages(0.0);
        let churned = stays_on_old_hot_pages(1.0);
        assert!(fixed > 0.2 && churned < 0.5 * fixed, "static {fixed}, churned {churned}");
    }

    #[test]
    fn bad_options_are_named() {
        let e = build(&spec("cachelib-cdn", 100, 10).with("churn", 2)).err().unwrap().to_string();
        assert!(e.contains("churn") && e.contains("\"2\""), "{e}");
        let e = build(&spec("cachelib-social", 100, 10).with("beta", 1)).err().unwrap().to_string();
        assert!(e.contains("beta") && e.contains("get_ratio"), "{e}");
        assert!(build(&spec("cachelib-cdn", 1, 10)).is_err());
    }
}
