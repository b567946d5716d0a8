//! Rounding a trace's clock for storage: each record's instruction gap becomes a
//! multiple of a unit, the remainder carried to the next record, so that every prefix of
//! the trace stays within one unit of its exact instruction count and the total is exact.
//!
//! The replay reads the clock a chunk of records at a time (thousands of records), so a
//! unit as large as the mean gap moves no chunk's compute by more than one record's
//! worth, while a rounded gap costs a few bits instead of the exact gap's twelve to
//! sixteen: what keeps a recorded corpus small.

use std::path::Path;

use super::native::Fields;
use super::{open, Format, NativeWriter, PageAccess};
use crate::error::SimError;

/// A gap rounder; see the module documentation.
#[derive(Clone, Copy, Debug)]
pub struct GapRounder {
    unit: u64,
    carry: u64,
}

impl GapRounder {
    /// A rounder to multiples of `unit` instructions (at least 1).
    pub fn new(unit: u64) -> Self {
        Self { unit: unit.max(1), carry: 0 }
    }

    /// The unit `auto` picks for `instructions` over `records`: the largest power of two
    /// not above the mean gap (1 for an empty trace).
    pub fn auto_unit(instructions: u64, records: u64) -> u64 {
        let mean = instructions / records.max(1);
        if mean == 0 {
            1
        } else {
            1 << (63 - mean.leading_zeros())
        }
    }

    /// The unit.
    pub fn unit(&self) -> u64 {
        self.unit
    }

    /// The rounded gap of a record whose exact gap is `gap`.
    pub fn round(&mut self, gap: u64) -> u64 {
        self.carry += gap;
        let out = self.carry / self.unit * self.unit;
        self.carry -= out;
        out
    }

    /// What is still carried: the last record takes it, so the total stays exact.
    pub fn rest(&self) -> u64 {
        self.carry
    }
}

/// Copies the native trace `input` (which must have a clock) to `output` with its gaps
/// rounded to `unit` (`None`: [`GapRounder::auto_unit`]), its store flags and MLP classes
/// kept; returns the records and the unit.
pub fn round_trace(input: &Path, output: &Path, unit: Option<u64>) -> Result<(u64, u64), SimError> {
    let no_clock = || SimError::File {
        file: input.display().to_string(),
        at: "header".into(),
        message: "this trace has no clock: there are no instruction gaps to round".into(),
    };
    let mut reader = open(input, Some(Format::Native))?;
    let clock = reader.clock().ok_or_else(no_clock)?;
    let unit = match unit {
        Some(u) => u,
        None => {
            let mut records = 0u64;
            while reader.next_access()?.is_some() {
                records += 1;
            }
            reader = open(input, Some(Format::Native))?;
            GapRounder::auto_unit(clock.instructions, records)
        }
    };
    let mut rounder = GapRounder::new(unit);
    let fields = Fields {
        writes: reader.records_stores(),
        sample_every: Some(clock.sample_every),
        classes: reader.carries_classes(),
    };
    let mut w = NativeWriter::with_fields(output, fields)?;
    let mut held = None;
    let mut records = 0u64;
    while let Some((a, class)) = reader.next_classed()? {
        if let Some((prev, c)) = held.replace((PageAccess { instructions: rounder.round(a.instructions), ..a }, class))
        {
            w.push_classed(prev, c)?;
        }
        records += 1;
    }
    if let Some((last, c)) = held {
        w.push_classed(PageAccess { instructions: last.instructions + rounder.rest(), ..last }, c)?;
    }
    w.finish()?;
    Ok((records, unit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_prefix_stays_within_one_unit_and_the_total_is_exact() {
        let gaps = [5u64, 900, 3, 0, 77, 1024, 1, 333, 12, 4096, 7];
        let unit = GapRounder::auto_unit(gaps.iter().sum(), gaps.len() as u64);
        assert_eq!(unit, 512, "mean 587: the largest power of two not above it");
        let mut r = GapRounder::new(unit);
        let (mut exact, mut rounded) = (0u64, 0u64);
        for &g in &gaps {
            let q = r.round(g);
            assert_eq!(q % unit, 0);
            exact += g;
            rounded += q;
            assert!(exact - rounded < unit, "prefix {rounded} vs exact {exact}");
        }
        assert_eq!(rounded + r.rest(), exact);
        assert_eq!(GapRounder::auto_unit(0, 10), 1);
        assert_eq!(GapRounder::auto_unit(7, 0), 4);
    }
}
