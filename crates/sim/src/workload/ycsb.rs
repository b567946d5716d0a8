//! `ycsb-a`, `ycsb-b`, `ycsb-c`: the YCSB core workloads over an in-memory key-value
//! store, the papers' standard skewed load (FreqTier §VII, HybridTier §5: Zipf 0.99 key
//! popularity, YCSB's default). A = 50% reads / 50% updates, B = 95% / 5%, C = reads
//! only; `spec.name` picks the variant.
//!
//! Records are packed back to back into the footprint (`pages * 4096 / record_bytes`
//! of them, so a record may span two pages); key ranks are scattered over the records by
//! a [`Permutation`]. A read loads every 64-byte line of its record in order, one access
//! per line; an update stores the same lines. `accesses` counts line accesses, so the
//! last operation may be cut short.
//!
//! Options:
//! - `record_bytes` (default 1024, YCSB's 10 fields of 100 bytes rounded to lines: 4
//!   records per page): a multiple of 64, at most 1 MiB and at most the footprint.
//! - `alpha` (default 0.99): the Zipf exponent of key popularity.

use tierkit_core::dist::{Rng, Zipf};

use super::zipf::Permutation;
use super::{Access, Generate, MlpClass, Stream, Workload, WorkloadSpec};
use crate::error::SimError;

struct Ycsb {
    zipf: Zipf,
    rng: Rng,
    perm: Permutation,
    pages: u64,
    /// Lines per record.
    lines: u64,
    /// An operation is a read when 53 random bits fall below this.
    read_below: u64,
    /// The current operation: its next line (global line index), lines left, store or not.
    line: u64,
    op_left: u64,
    write: bool,
}

pub(super) fn build(spec: &WorkloadSpec) -> Result<Box<dyn Workload>, SimError> {
    let read_share = match spec.name.as_str() {
        "ycsb-a" => 0.5,
        "ycsb-b" => 0.95,
        "ycsb-c" => 1.0,
        other => return Err(SimError::unknown("workload", other, ["ycsb-a", "ycsb-b", "ycsb-c"])),
    };
    spec.check_options(&["record_bytes", "alpha"])?;
    spec.check_sizes(1)?;
    let record_bytes = spec.u64_opt("record_bytes", 1024, 64..=1 << 20)?;
    let records = spec.pages * 4096 / record_bytes;
    if record_bytes & 63 != 0 || records == 0 {
        let expected = format!("a multiple of 64 of at most the footprint, {} bytes", spec.pages * 4096);
        return Err(SimError::bad_option(format!("workload {}", spec.name), "record_bytes", record_bytes, expected));
    }
    let alpha = spec.f64_opt("alpha", 0.99, 0.01..=5.0)?;
    Ok(Stream::boxed(
        Ycsb {
            zipf: Zipf::new(records, alpha)?,
            rng: Rng::new(spec.seed),
            perm: Permutation::new(records, spec.seed),
            pages: spec.pages,
            lines: record_bytes / 64,
            read_below: (read_share * (1u64 << 53) as f64) as u64,
            line: 0,
            op_left: 0,
            write: false,
        },
        spec.accesses,
    ))
}

impl Generate for Ycsb {
    fn pages(&self) -> u64 {
        self.pages
    }

    fn next_access(&mut self) -> Access {
        if self.op_left == 0 {
            let record = self.perm.apply(self.zipf.sample(&mut self.rng) - 1);
            self.line = record * self.lines;
            self.op_left = self.lines;
            self.write = self.rng.next_u64() >> 11 >= self.read_below;
        }
        let access =
            Access { page: self.line >> 6, word: (self.line & 63) as u8, write: self.write, class: MlpClass::Default };
        self.line += 1;
        self.op_left -= 1;
        access
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::testing::drain_checked;

    fn stream(spec: &WorkloadSpec) -> Vec<Access> {
        let mut w = build(spec).unwrap();
        let mut out = Vec::new();
        while w.fill(&mut out, 1000) > 0 {}
        out
    }

    #[test]
    fn variants_mix_reads_and_updates() {
        for (name, updates) in [("ycsb-a", 0.5), ("ycsb-b", 0.05), ("ycsb-c", 0.0)] {
            let spec = WorkloadSpec::new(name, 4000, 320_000, 2);
            drain_checked(&spec);
            let out = stream(&spec);
            // 20k operations of 16 lines each, all lines of one operation alike.
            let ops: Vec<&[Access]> = out.chunks(16).collect();
            assert!(ops.iter().all(|op| op.iter().all(|a| a.write == op[0].write)), "{name}");
            let writes = ops.iter().filter(|op| op[0].write).count() as f64 / ops.len() as f64;
            assert!((writes - updates).abs() < 0.015, "{name}: {writes}");
        }
    }

    #[test]
    fn records_are_read_line_by_line_and_skewed() {
        // 1536-byte records (24 lines) straddle page boundaries.
        let spec = WorkloadSpec::new("ycsb-c", 3000, 240_000, 4).with("record_bytes", 1536);
        let counts = drain_checked(&spec);
        let out = stream(&spec);
        for op in out.chunks(24) {
            let first = op[0].page * 64 + op[0].word as u64;
            assert_eq!(first % 24, 0, "operations start at a record");
            assert!(op.iter().enumerate().all(|(i, a)| a.page * 64 + a.word as u64 == first + i as u64));
        }
        assert!(out.chunks(24).any(|op| op[0].page != op[23].page));
        // 8000 records under Zipf 0.99: the hottest 1% of pages take a third of the lines.
        let mut sorted = counts;
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let top: u64 = sorted[..30].iter().sum();
        assert!(top as f64 / 240_000.0 > 0.3, "{top}");
        let alpha = spec.with("alpha", 0.2);
        let mut flat = drain_checked(&alpha);
        flat.sort_unstable_by(|a, b| b.cmp(a));
        assert!((flat[..30].iter().sum::<u64>() as f64) < 0.05 * 240_000.0);
    }

    #[test]
    fn bad_options_are_named() {
        let spec = WorkloadSpec::new("ycsb-a", 4, 10, 1);
        let e = build(&spec.clone().with("record_bytes", 100)).err().unwrap().to_string();
        assert!(e.contains("record_bytes") && e.contains("multiple of 64"), "{e}");
        let e = build(&spec.clone().with("record_bytes", 32768)).err().unwrap().to_string();
        assert!(e.contains("record_bytes") && e.contains("16384"), "{e}");
        let e = build(&spec.with("read_share", 1)).err().unwrap().to_string();
        assert!(e.contains("read_share") && e.contains("record_bytes"), "{e}");
        assert!(build(&WorkloadSpec::new("ycsb-d", 4, 10, 1)).is_err());
    }
}
