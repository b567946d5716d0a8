//! `xgboost`: XGBoost training with the histogram (`hist`) tree method, the HybridTier §5.3 and
//! FreqTier §VI-C setup (Criteo Click Logs, hundreds of boosting rounds on 16 threads).
//!
//! Memory, each array page-aligned: the quantized feature matrix (rows × features u8 bins,
//! row-major, XGBoost's GHistIndexMatrix), labels and predictions (f32 per row), gradient
//! pairs (2 × f32 per row), the row partition (a 64-bit row id per row, regrouped by node at
//! every level) and a histogram per inner node (features × 256 bins × 2 × f64, XGBoost's
//! GradientPairPrecise). The row count is scaled so the whole approaches the footprint.
//!
//! A round builds one tree. It computes every row's gradient (reads its label and
//! prediction, writes its gradient pair), samples rows (`subsample`) into the root's
//! partition and features (`colsample`) for the tree, then expands the tree depth-wise, level
//! by level:
//! - build histograms: each sampled row's id, gradient pair and matrix row are read and added
//!   to its node's bin of every sampled feature (a write each). As XGBoost does, only the
//!   smaller child of a split is built from its rows; its sibling is the parent minus it. All
//!   nodes of a level are built in one pass over the rows, as XGBoost's threads share them;
//! - evaluate splits: read the level's histograms (computing the subtracted ones first);
//! - partition: each row's bin of its node's split feature is read and its id moved to the
//!   child's range.
//!
//! At the leaves the sampled rows' predictions are updated. Bins, split features and the rows
//! going left are hashed from the seed: values don't steer the access pattern, sizes do.
//! Accesses are cache lines, and consecutive touches of one array's line count once. The
//! histogram updates, one per row and sampled feature, are most of the stream (95% at the
//! defaults), although on a real CPU most of them would hit in its caches.
//!
//! Options:
//! - `subsample`: fraction of rows per tree, default 0.8; `colsample`: fraction of features per
//!   tree, default 0.8 (both the authors' XGBoost config, kevins981/xgboost `train2.dev.conf`).
//! - `depth`: tree depth, default 6 (XGBoost's `max_depth` default; the authors' config uses
//!   12, whose histograms take 4095 × features × 4 KiB).
//! - `features`: columns, default 39 (Criteo: 13 integer and 26 categorical features).

use tierkit_core::dist::Rng;
use tierkit_core::hash::mix64;

use super::{Access, MlpClass, Workload, WorkloadSpec};
use crate::error::SimError;

const MATRIX: usize = 0;
const LABELS: usize = 1;
const PREDS: usize = 2;
const GPAIR: usize = 3;
const ROWS: usize = 4;
const HIST: usize = 5;
/// Bytes per row of each per-row array after the matrix: label, prediction, gradient pair,
/// row id.
const ROW_BYTES: [u64; 4] = [4, 4, 8, 8];
/// Bytes of one feature's histogram: 256 bins of two f64.
const FEATURE_HIST: u64 = 256 * 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Gradients,
    Build,
    Evaluate,
    Partition,
    Predict,
}

struct Xgboost {
    rows: u64,
    features: u64,
    depth: u32,
    subsample: f64,
    colsample: usize,
    seed: u64,
    /// First line of each array, and the end.
    base: [u64; 7],
    total: u64,
    left: u64,

    round: u64,
    salt: u64,
    /// This tree's features, ascending.
    cols: Vec<u64>,
    /// Per inner node (heap order): the hash above which a row goes right, and the split
    /// feature.
    splits: Vec<(u64, u64)>,
    phase: Phase,
    level: u32,
    /// Row, or node of the level, the phase is at.
    cursor: u64,
    /// Per node of the level: where its rows start in the partition, how many were seen in
    /// this pass, and whether its histogram is built from rows.
    start: Vec<u64>,
    seen: Vec<u64>,
    built: Vec<bool>,
    /// Per node of the next level: rows, where they start, how many were placed.
    child_count: Vec<u64>,
    child_start: Vec<u64>,
    child_seen: Vec<u64>,
    last: [u64; 6],
    pending: Vec<Access>,
    pos: usize,
}

pub(super) fn build(spec: &WorkloadSpec) -> Result<Box<dyn Workload>, SimError> {
    Ok(Box::new(Xgboost::new(spec)?))
}

impl Xgboost {
    fn new(spec: &WorkloadSpec) -> Result<Self, SimError> {
        spec.check_options(&["subsample", "colsample", "depth", "features"])?;
        let subsample = spec.f64_opt("subsample", 0.8, 0.01..=1.0)?;
        let colsample = spec.f64_opt("colsample", 0.8, 0.01..=1.0)?;
        let depth = spec.u64_opt("depth", 6, 1..=16)? as u32;
        let features = spec.u64_opt("features", 39, 1..=4096)?;
        let hist_pages = ((1u64 << depth) - 1) * features * FEATURE_HIST / 4096;
        let row_bytes = features + ROW_BYTES.iter().sum::<u64>();
        // Room for one row; each of the five per-row arrays rounds up by less than a page.
        spec.check_sizes(hist_pages + 5 + row_bytes.div_ceil(4096))?;
        let rows = (spec.pages - hist_pages - 5) * 4096 / row_bytes;
        let mut base = [0u64; 7];
        for (r, bytes) in [features].iter().chain(&ROW_BYTES).map(|b| rows * b).enumerate() {
            base[r + 1] = base[r] + bytes.div_ceil(4096) * 64;
        }
        base[HIST + 1] = base[HIST] + hist_pages * 64;
        let mut w = Self {
            rows,
            features,
            depth,
            subsample,
            colsample: ((colsample * features as f64).round() as usize).max(1),
            seed: spec.seed,
            base,
            total: spec.accesses,
            left: spec.accesses,
            round: 0,
            salt: 0,
            cols: Vec::new(),
            splits: Vec::new(),
            phase: Phase::Gradients,
            level: 0,
            cursor: 0,
            start: Vec::new(),
            seen: Vec::new(),
            built: Vec::new(),
            child_count: Vec::new(),
            child_start: Vec::new(),
            child_seen: Vec::new(),
            last: [u64::MAX; 6],
            pending: Vec::new(),
            pos: 0,
        };
        w.start_round();
        Ok(w)
    }

    /// Samples the tree's features and draws its splits.
    fn start_round(&mut self) {
        self.salt = mix64(self.seed ^ mix64(self.round));
        let mut rng = Rng::new(self.salt);
        let mut cols: Vec<u64> = (0..self.features).collect();
        for i in 0..self.colsample {
            let j = i + rng.below((cols.len() - i) as u64) as usize;
            cols.swap(i, j);
        }
        cols.truncate(self.colsample);
        cols.sort_unstable();
        self.splits = (0..(1u64 << self.depth) - 1)
            .map(|_| {
                let left = 0.2 + 0.6 * rng.next_f64();
                ((left * 2f64.powi(64)) as u64, cols[rng.below(cols.len() as u64) as usize])
            })
            .collect();
        self.cols = cols;
        self.level = 0;
        self.cursor = 0;
        self.start = vec![0];
        self.seen = vec![0];
        self.built = vec![true];
        self.child_count = vec![0; 2];
    }

    #[inline]
    fn hash(&self, row: u64, node: u64) -> u64 {
        mix64(((row << 16) | node) ^ self.salt)
    }

    #[inline]
    fn sampled(&self, row: u64) -> bool {
        ((self.hash(row, 0xffff) >> 11) as f64) < self.subsample * (1u64 << 53) as f64
    }

    /// The row's node at the current level (index within the level) and the side it goes to.
    #[inline]
    fn route(&self, row: u64) -> (usize, usize) {
        let mut k = 0;
        for j in 0..=self.level {
            let node = (1 << j) - 1 + k as u64;
            k = 2 * k + (self.hash(row, node) >= self.splits[node as usize].0) as usize;
        }
        (k / 2, k % 2)
    }

    #[inline]
    fn emit(&mut self, array: usize, byte: u64, write: bool) {
        let line = self.base[array] + byte / 64;
        if self.last[array] != line {
            self.last[array] = line;
            self.pending.push(Access { page: line >> 6, word: (line & 63) as u8, write, class: MlpClass::Default });
        }
    }

    /// Touches the partition at `pos`, the `first` of a node's range, once per line.
    #[inline]
    fn row_id(&mut self, pos: u64, first: bool, write: bool) {
        if first || pos.is_multiple_of(8) {
            self.emit(ROWS, pos * 8, write);
        }
    }

    /// Byte offset of `feature`'s histogram of inner node `node` (heap order).
    fn hist(&self, node: u64, feature: u64) -> u64 {
        (node * self.features + feature) * FEATURE_HIST
    }

    /// Emits the accesses of the next row or node, and moves to the next phase at the end of
    /// one.
    fn step(&mut self) {
        let i = self.cursor;
        self.cursor += 1;
        let heap_first = (1u64 << self.level) - 1;
        match self.phase {
            Phase::Gradients => {
                self.emit(LABELS, i * 4, false);
                self.emit(PREDS, i * 4, false);
                self.emit(GPAIR, i * 8, true);
                if self.sampled(i) {
                    self.row_id(self.seen[0], self.seen[0] == 0, true);
                    self.seen[0] += 1;
                }
            }
            Phase::Build if self.sampled(i) => {
                let (k, side) = self.route(i);
                self.child_count[2 * k + side] += 1;
                let pos = self.start[k] + self.seen[k];
                self.seen[k] += 1;
                if self.built[k] {
                    self.row_id(pos, self.seen[k] == 1, false);
                    self.emit(GPAIR, i * 8, false);
                    let row = i * self.features;
                    for line in row / 64..=(row + self.features - 1) / 64 {
                        self.emit(MATRIX, line * 64, false);
                    }
                    let mut bins = 0;
                    for c in 0..self.colsample {
                        let f = self.cols[c];
                        if c == 0 || self.cols[c - 1] / 8 != f / 8 {
                            bins = mix64(((i << 12) | (f / 8)) ^ self.seed);
                        }
                        let bin = bins >> (f % 8 * 8) & 255;
                        self.emit(HIST, self.hist(heap_first + k as u64, f) + bin * 16, true);
                    }
                }
            }
            Phase::Evaluate => {
                // A subtracted histogram is its parent's minus its built sibling's.
                let node = heap_first + i;
                let from = (!self.built[i as usize])
                    .then(|| ((node - 1) / 2, if node % 2 == 1 { node + 1 } else { node - 1 }));
                for c in 0..self.colsample {
                    let f = self.cols[c];
                    let own = self.hist(node, f);
                    for off in (0..FEATURE_HIST).step_by(64) {
                        if let Some((parent, sibling)) = from {
                            self.emit(HIST, self.hist(parent, f) + off, false);
                            self.emit(HIST, self.hist(sibling, f) + off, false);
                            self.emit(HIST, own + off, true);
                        } else {
                            self.emit(HIST, own + off, false);
                        }
                    }
                }
            }
            Phase::Partition if self.sampled(i) => {
                let (k, side) = self.route(i);
                let node = heap_first + k as u64;
                self.emit(MATRIX, i * self.features + self.splits[node as usize].1, false);
                self.row_id(self.start[k] + self.seen[k], self.seen[k] == 0, false);
                self.seen[k] += 1;
                let child = 2 * k + side;
                self.row_id(self.child_start[child] + self.child_seen[child], self.child_seen[child] == 0, true);
                self.child_seen[child] += 1;
            }
            Phase::Predict if self.sampled(i) => self.emit(PREDS, i * 4, true),
            _ => {}
        }
        let end = if self.phase == Phase::Evaluate { 1 << self.level } else { self.rows };
        if self.cursor == end {
            self.next_phase();
        }
    }

    fn next_phase(&mut self) {
        self.cursor = 0;
        self.phase = match self.phase {
            Phase::Gradients => {
                self.seen[0] = 0;
                Phase::Build
            }
            Phase::Build => Phase::Evaluate,
            Phase::Evaluate => {
                self.seen.iter_mut().for_each(|s| *s = 0);
                self.child_start = (0..self.child_count.len())
                    .map(|c| self.start[c / 2] + if c % 2 == 1 { self.child_count[c - 1] } else { 0 })
                    .collect();
                self.child_seen = vec![0; self.child_count.len()];
                Phase::Partition
            }
            Phase::Partition => {
                self.level += 1;
                if self.level == self.depth {
                    Phase::Predict
                } else {
                    // Build the smaller child of each split; subtract for its sibling.
                    let counts = std::mem::replace(&mut self.child_count, vec![0; 2 << self.level]);
                    self.built = (0..counts.len()).map(|c| (counts[c], c % 2) < (counts[c ^ 1], (c ^ 1) % 2)).collect();
                    self.start = std::mem::take(&mut self.child_start);
                    self.seen = vec![0; counts.len()];
                    Phase::Build
                }
            }
            Phase::Predict => {
                self.round += 1;
                self.start_round();
                Phase::Gradients
            }
        };
    }
}

impl Workload for Xgboost {
    fn pages(&self) -> u64 {
        self.base[HIST + 1] / 64
    }

    fn len(&self) -> u64 {
        self.total
    }

    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> usize {
        let n = (max as u64).min(self.left) as usize;
        let mut done = 0;
        while done < n {
            if self.pos == self.pending.len() {
                self.pending.clear();
                self.pos = 0;
                self.step();
                continue;
            }
            let take = (self.pending.len() - self.pos).min(n - done);
            out.extend_from_slice(&self.pending[self.pos..self.pos + take]);
            self.pos += take;
            done += take;
        }
        self.left -= n as u64;
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::testing::drain_checked;

    fn spec(pages: u64, accesses: u64) -> WorkloadSpec {
        WorkloadSpec::new("xgboost", pages, accesses, 5).with("features", 8).with("depth", 3)
    }

    fn drain(spec: &WorkloadSpec) -> (Xgboost, Vec<Access>) {
        let mut w = Xgboost::new(spec).unwrap();
        let mut out = Vec::new();
        while w.fill(&mut out, 4096) > 0 {}
        (w, out)
    }

    fn array_of(w: &Xgboost, page: u64) -> usize {
        w.base.partition_point(|&b| b <= page * 64) - 1
    }

    #[test]
    fn histograms_are_hottest_and_take_the_writes() {
        let s = spec(1024, 4_000_000);
        let counts = drain_checked(&s);
        let (w, out) = drain(&s);
        assert!(w.round >= 2, "only {} rounds", w.round);
        assert!(w.pages() <= 1024 && w.pages() > 1016, "{}", w.pages());
        let mut per_array = [(0u64, 0u64); 6];
        for (page, &c) in counts.iter().enumerate() {
            per_array[array_of(&w, page as u64)].0 += c;
            per_array[array_of(&w, page as u64)].1 += 1;
        }
        let mean = |a: usize| per_array[a].0 as f64 / per_array[a].1 as f64;
        let hottest = counts.iter().enumerate().max_by_key(|&(_, c)| c).unwrap().0;
        assert_eq!(array_of(&w, hottest as u64), HIST);
        assert!(mean(HIST) > 20.0 * mean(MATRIX), "hist {} matrix {}", mean(HIST), mean(MATRIX));
        let mut writes = [0u64; 6];
        out.iter().filter(|a| a.write).for_each(|a| writes[array_of(&w, a.page)] += 1);
        let all: u64 = writes.iter().sum();
        assert_eq!(writes[MATRIX] + writes[LABELS], 0);
        assert!(writes[HIST] + writes[GPAIR] > all * 9 / 10, "{writes:?}");
    }

    #[test]
    fn each_round_streams_a_fresh_subsample_of_rows() {
        for subsample in [0.5, 0.8] {
            // A 64-byte row: matrix line i is row i.
            let s = spec(1024, 3_000_000)
                .with("features", 64)
                .with("depth", 2)
                .with("colsample", 0.1)
                .with("subsample", subsample);
            drain_checked(&s);
            let (w, out) = drain(&s);
            let mut rounds = vec![vec![false; w.rows as usize]];
            for a in &out {
                let line = a.page * 64 + a.word as u64;
                if a.write && line == w.base[GPAIR] {
                    rounds.push(vec![false; w.rows as usize]);
                } else if line < w.base[LABELS] {
                    rounds.last_mut().unwrap()[line as usize] = true;
                }
            }
            // The first entry precedes round 0's first write, the last is cut short.
            let full = &rounds[1..rounds.len() - 1];
            assert!(full.len() >= 2, "{} rounds", full.len());
            for pair in full.windows(2) {
                let rows = w.rows as f64;
                let touched = pair[0].iter().filter(|&&t| t).count() as f64;
                let both = pair[0].iter().zip(&pair[1]).filter(|(a, b)| **a && **b).count() as f64;
                assert!((touched / rows - subsample).abs() < 0.02, "{subsample}: {touched} of {rows}");
                assert!((both / touched - subsample).abs() < 0.03, "{subsample}: {both} of {touched} again");
            }
        }
    }

    #[test]
    fn bad_options_are_named() {
        let e = build(&spec(100, 10).with("depth", 0)).err().unwrap().to_string();
        assert!(e.contains("depth") && e.contains("\"0\""), "{e}");
        let e = build(&spec(100, 10).with("rounds", 1)).err().unwrap().to_string();
        assert!(e.contains("rounds") && e.contains("subsample"), "{e}");
        // Depth 6 over 39 features needs 63 × 39 histogram pages.
        let e = build(&WorkloadSpec::new("xgboost", 2000, 10, 1)).err().unwrap().to_string();
        assert!(e.contains("pages") && e.contains("2463"), "{e}");
        assert!(build(&WorkloadSpec::new("xgboost", 2463, 10, 1)).is_ok());
    }
}
