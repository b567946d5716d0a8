//! A workload's shape, for putting a built-in stand-in beside the program it is named
//! after: footprint, how much of the stream the hottest pages take, the exact LRU
//! miss-ratio curve, and how two rankings of policies agree (Spearman's ρ).
//!
//! The miss-ratio curve is exact: every access's LRU stack distance (the distinct pages
//! touched since the same page's previous access) is counted with a Fenwick tree over
//! access times (Bennett & Kruskal 1975, Olken 1981), O(log n) per access; an access
//! misses a cache of `c` pages when its distance is at least `c` or it is the page's
//! first.

use serde::{Deserialize, Serialize};

use crate::budget;
use crate::compare::{compare, Grid};
use crate::workload::{self, Access, WorkloadSpec};
use crate::SimError;

/// The fractions of the footprint whose share of accesses a [`Profile`] reports.
pub const TOP_FRACTIONS: [(u64, u64); 3] = [(1, 32), (1, 16), (1, 8)];

/// The cache sizes, as fractions of the footprint, of a [`Profile`]'s miss-ratio curve.
pub const MRC_FRACTIONS: [(u64, u64); 6] = [(1, 64), (1, 32), (1, 16), (1, 8), (1, 4), (1, 2)];

/// One point of a miss-ratio curve.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MrcPoint {
    /// Cache size as a fraction of the footprint, `(1, 16)` for 1/16.
    pub fraction: (u64, u64),
    /// Cache size in pages.
    pub pages: u64,
    /// LRU's miss ratio at that size (first accesses count as misses).
    pub miss_ratio: f64,
}

/// What a stream's shape is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// Distinct pages touched.
    pub pages: u64,
    /// Accesses read.
    pub accesses: u64,
    /// Share of the accesses the hottest pages take, per [`TOP_FRACTIONS`] entry.
    pub top_share: Vec<((u64, u64), f64)>,
    /// LRU's miss-ratio curve at [`MRC_FRACTIONS`] of the footprint.
    pub mrc: Vec<MrcPoint>,
}

/// Reads up to `limit` accesses of `spec`'s stream and profiles them; refused when its
/// counts (16 bytes per page and 8 per access) need more memory than is available.
pub fn profile(spec: &WorkloadSpec, limit: u64) -> Result<Profile, SimError> {
    let mut wl = workload::build(spec)?;
    let (pages, total) = (wl.pages(), wl.len().min(limit));
    let input = || format!("workload {}: pages = {pages}, accesses = {total}", spec.name);
    budget::check((u128::from(pages) * 2 + u128::from(total) + 2) * 8, input, "profiling it")?;
    let mut p = Profiler::new(pages, total);
    let mut buf: Vec<Access> = Vec::with_capacity(4096);
    while p.now < total {
        buf.clear();
        if wl.try_fill(&mut buf, 4096.min((total - p.now) as usize))? == 0 {
            break;
        }
        for a in &buf {
            p.push(a.page);
        }
    }
    Ok(p.finish())
}

/// Stack distances and counts of a stream of dense page ids.
struct Profiler {
    counts: Vec<u64>,
    /// Time of each page's latest access plus one; 0 = never accessed.
    last: Vec<u64>,
    /// A mark at the time of every page's latest access.
    marks: Fenwick,
    /// Histogram of stack distances.
    distances: Vec<u64>,
    cold: u64,
    now: u64,
}

impl Profiler {
    fn new(pages: u64, accesses: u64) -> Self {
        Self {
            counts: vec![0; pages as usize],
            last: vec![0; pages as usize],
            marks: Fenwick::new(accesses as usize + 1),
            distances: Vec::new(),
            cold: 0,
            now: 0,
        }
    }

    fn push(&mut self, page: u64) {
        self.now += 1;
        let p = page as usize;
        self.counts[p] += 1;
        let prev = self.last[p];
        if prev == 0 {
            self.cold += 1;
        } else {
            // Distinct pages since: pages whose latest access lies after `prev`.
            let d = (self.marks.prefix(self.now as usize - 1) - self.marks.prefix(prev as usize)) as usize;
            if self.distances.len() <= d {
                self.distances.resize(d + 1, 0);
            }
            self.distances[d] += 1;
            self.marks.add(prev as usize, -1);
        }
        self.marks.add(self.now as usize, 1);
        self.last[p] = self.now;
    }

    fn finish(self) -> Profile {
        let now = self.now;
        let share = |x: u64| if now > 0 { x as f64 / now as f64 } else { 0.0 };
        let mut sorted: Vec<u64> = self.counts.into_iter().filter(|&c| c > 0).collect();
        let pages = sorted.len() as u64;
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let top_share = TOP_FRACTIONS
            .iter()
            .map(|&(n, d)| ((n, d), share(sorted.iter().take((pages * n).div_ceil(d) as usize).sum())))
            .collect();
        // Misses at size c: cold misses plus every reuse at distance >= c.
        let mut at_least = vec![0u64; self.distances.len() + 1];
        for d in (0..self.distances.len()).rev() {
            at_least[d] = at_least[d + 1] + self.distances[d];
        }
        let mrc = MRC_FRACTIONS
            .iter()
            .map(|&(n, d)| {
                let c = ((pages * n) / d).max(1);
                let far = at_least.get(c as usize).copied().unwrap_or(0);
                MrcPoint { fraction: (n, d), pages: c, miss_ratio: share(self.cold + far) }
            })
            .collect();
        Profile { pages, accesses: now, top_share, mrc }
    }
}

/// How two workloads rank the same policies at one ratio.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Ranking {
    /// Fast:slow ratio, written `"1:16"` as in result rows.
    #[serde(serialize_with = "crate::result::ratio::serialize")]
    pub ratio: (u64, u64),
    /// The policies, in the order of the two series.
    pub policies: Vec<String>,
    /// Each policy's % of all-local on the first workload.
    pub first: Vec<f64>,
    /// Each policy's % of all-local on the second workload.
    pub second: Vec<f64>,
    /// Spearman's ρ of the two series (`None` when either is constant).
    pub rho: Option<f64>,
}

/// Runs `policies` on `base`'s machine for the two workloads at each of `ratios` and
/// says how far their rankings agree.
pub fn rankings(
    base: &Grid,
    pair: [WorkloadSpec; 2],
    ratios: &[(u64, u64)],
    policies: &[String],
    threads: usize,
) -> Result<Vec<Ranking>, SimError> {
    let grid = Grid { workloads: pair.to_vec(), ratios: ratios.to_vec(), policies: policies.to_vec(), ..base.clone() };
    let rows = compare(&grid, threads, &|_, _, _| {})?;
    let pct = |w: usize, ratio: (u64, u64)| -> Vec<f64> {
        let name = &grid.workloads[w];
        policies
            .iter()
            .map(|p| {
                rows.iter()
                    .skip(w * ratios.len() * policies.len())
                    .take(ratios.len() * policies.len())
                    .find(|r| r.result.ratio == ratio && &r.result.policy == p && r.result.workload == name.name)
                    .map_or(f64::NAN, |r| r.pct_of_all_local)
            })
            .collect()
    };
    Ok(ratios
        .iter()
        .map(|&ratio| {
            let (first, second) = (pct(0, ratio), pct(1, ratio));
            let rho = spearman(&first, &second);
            Ranking { ratio, policies: policies.to_vec(), first, second, rho }
        })
        .collect())
}

/// Spearman's rank correlation of two equally long series (ties take their mean rank);
/// `None` with fewer than two values or when either series is constant.
pub fn spearman(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() != b.len() || a.len() < 2 {
        return None;
    }
    let (ra, rb) = (ranks(a), ranks(b));
    let n = a.len() as f64;
    let mean = (n + 1.0) / 2.0;
    let (mut cov, mut va, mut vb) = (0.0, 0.0, 0.0);
    for (x, y) in ra.iter().zip(&rb) {
        cov += (x - mean) * (y - mean);
        va += (x - mean) * (x - mean);
        vb += (y - mean) * (y - mean);
    }
    if va == 0.0 || vb == 0.0 {
        return None;
    }
    Some(cov / (va * vb).sqrt())
}

/// 1-based ranks, ties sharing their mean rank.
fn ranks(v: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&i, &j| v[i].total_cmp(&v[j]));
    let mut r = vec![0.0; v.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && v[order[j + 1]] == v[order[i]] {
            j += 1;
        }
        let mean = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            r[k] = mean;
        }
        i = j + 1;
    }
    r
}

/// A Fenwick (binary indexed) tree of counts over positions `1..n`.
struct Fenwick {
    tree: Vec<i64>,
}

impl Fenwick {
    fn new(n: usize) -> Self {
        Self { tree: vec![0; n + 1] }
    }

    fn add(&mut self, mut i: usize, delta: i64) {
        while i < self.tree.len() {
            self.tree[i] += delta;
            i += i & i.wrapping_neg();
        }
    }

    /// Sum over positions `1..=i`.
    fn prefix(&self, mut i: usize) -> i64 {
        let mut s = 0;
        while i > 0 {
            s += self.tree[i];
            i -= i & i.wrapping_neg();
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spearman_of_equal_reversed_and_tied_rankings() {
        let a = [1.0, 2.0, 3.0, 4.0];
        assert!((spearman(&a, &[10.0, 20.0, 30.0, 40.0]).unwrap() - 1.0).abs() < 1e-12);
        assert!((spearman(&a, &[4.0, 3.0, 2.0, 1.0]).unwrap() + 1.0).abs() < 1e-12);
        assert_eq!(ranks(&[5.0, 1.0, 5.0]), vec![2.5, 1.0, 2.5]);
        assert_eq!(spearman(&a, &[1.0; 4]), None);
        assert_eq!(spearman(&[1.0], &[1.0]), None);
    }

    #[test]
    fn fenwick_counts_distinct_pages_between_reuses() {
        let mut f = Fenwick::new(8);
        for i in 1..=5 {
            f.add(i, 1);
        }
        f.add(2, -1);
        assert_eq!(f.prefix(5) - f.prefix(1), 3);
    }

    #[test]
    fn lru_distances_give_the_exact_curve() {
        // 64 pages in a loop, 10 times: LRU of fewer than 64 pages always misses; then a
        // page reused right away (distance 0) hits any cache.
        let mut p = Profiler::new(128, 64 * 10 + 2);
        for _ in 0..10 {
            for page in 0..64 {
                p.push(page);
            }
        }
        p.push(100);
        p.push(100);
        let prof = p.finish();
        assert_eq!((prof.pages, prof.accesses), (65, 642));
        // 1/2 of 65 pages = 32 < 64: every access but the immediate reuse misses.
        let half = prof.mrc.last().unwrap();
        assert_eq!((half.fraction, half.pages), ((1, 2), 32));
        assert!((half.miss_ratio - 641.0 / 642.0).abs() < 1e-12, "{half:?}");
        // Each loop page takes 10 of 642 accesses; page 100 takes 2.
        let top = prof.top_share[0]; // the top 1/32 of 65 pages: 3 pages
        assert!((top.1 - 30.0 / 642.0).abs() < 1e-12, "{top:?}");
    }

    #[test]
    fn zipf_hot_pages_take_most_accesses_and_the_curve_falls() {
        let spec = WorkloadSpec::new("zipf", 4096, 200_000, 3).with("alpha", 1.1);
        let p = profile(&spec, u64::MAX).unwrap();
        assert_eq!(p.accesses, 200_000);
        let shares: Vec<f64> = p.top_share.iter().map(|s| s.1).collect();
        assert!(shares[0] > 0.5 && shares[0] < shares[1] && shares[1] < shares[2] && shares[2] <= 1.0, "{shares:?}");
        for w in p.mrc.windows(2) {
            assert!(w[1].miss_ratio <= w[0].miss_ratio, "{:?}", p.mrc);
        }
        assert!(p.mrc[0].miss_ratio > p.mrc[5].miss_ratio + 0.1, "{:?}", p.mrc);
    }
}
