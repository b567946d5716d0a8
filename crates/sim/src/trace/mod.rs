//! Traces: read access traces in several formats, write tierkit's native format and
//! libCacheSim's `oracleGeneral`, and replay any of them as the `trace` workload.
//!
//! | format | name (`--format`) | detected by | module |
//! |---|---|---|---|
//! | tierkit native (delta/varint + zstd, versioned header) | `native` | magic `TKTRACE\0` | [`native`] |
//! | libCacheSim `oracleGeneral` (24-byte records, no header) | `oracle-general` | fallback for binary files | [`oracle_general`] |
//! | CSV of page numbers or addresses | `csv` | fallback for text files | [`csv`] |
//! | Valgrind lackey `--trace-mem=yes` | `lackey` | ` L addr,size` lines | [`lackey`] |
//! | `perf script` lines with data addresses | `perf-script` | `time: event: addr` | [`perf_script`] |
//! | Pin `pinatrace` | `pinatrace` | `ip: R addr` lines | [`pinatrace`] |
//! | damo JSON records (regions become page samples) | `damo` | a leading `[` or `{` | [`damo`] |
//!
//! Every reader yields [`PageAccess`]es: 4 KiB page numbers (byte addresses >> 12) and
//! whether the access is a store, in trace order; [`PageReader::next_classed`] adds each
//! access's MLP class where the format carries one (native with flag bit 2, CSV with an
//! `mlp` column) and the default class (`app.mlp`) elsewhere. Readers stream their file (damo's JSON
//! excepted, see [`damo`]). Every error is a [`SimError::File`] naming the file and the
//! byte offset (binary formats) or line (text formats) and what was expected there.
//!
//! The `trace` workload replays a trace: an `oracleGeneral` file through
//! [`OracleGeneralTrace`] (which follows and checks `next_access_vtime`), any other
//! format through [`PageTrace`]. Its options are `path`, `limit`, `format` (to override
//! detection) and, for `oracleGeneral`, `next_access`. A trace is not generated from a
//! seed: `WorkloadSpec::seed`, `pages` and `accesses` are ignored.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::error::SimError;
use crate::model::MlpClass;
use crate::workload::{Workload, WorkloadSpec};

pub mod csv;
pub mod damo;
pub mod damon_turns;
pub(crate) mod id_cache;
pub mod info;
pub mod lackey;
pub mod llc;
pub mod native;
pub mod oracle_general;
pub mod perf_script;
pub mod pinatrace;
mod replay;
pub mod round_gaps;
mod text;
pub mod write_workload;

pub use damon_turns::{DamonRegion, SnapshotSamples, DAMON_TURNS};
pub use llc::{LlcFilter, LlcStats};
pub use native::NativeWriter;
pub use oracle_general::{write_oracle_general, NextAccess, OracleGeneralTrace, TraceInfo};
pub use replay::PageTrace;

/// Bytes per page: readers of byte addresses yield `address >> PAGE_SHIFT`.
pub const PAGE_SHIFT: u32 = 12;

/// One access of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PageAccess {
    /// 4 KiB page number (not a dense id).
    pub page: u64,
    /// A store (formats without this information always say false).
    pub write: bool,
    /// Instructions the program retired since the previous record (the first record:
    /// since the recording started); 0 where the format has no clock (see
    /// [`PageReader::clock`]).
    pub instructions: u64,
}

impl PageAccess {
    /// A load of `page`, without a clock.
    pub fn read(page: u64) -> Self {
        Self { page, write: false, instructions: 0 }
    }

    /// An access to `page` (a store if `write`), without a clock.
    pub fn new(page: u64, write: bool) -> Self {
        Self { page, write, instructions: 0 }
    }
}

/// A trace's own clock: the instructions the recorded program retired, of which each
/// record's [`PageAccess::instructions`] is the share since the previous record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceClock {
    /// Instructions retired over the whole trace: the sum of the records' gaps.
    pub instructions: u64,
    /// The trace holds one in `sample_every` of the memory-level accesses (1: all).
    pub sample_every: u64,
}

/// A streaming reader of a trace's accesses.
pub trait PageReader: Send {
    /// The next access; `None` at the end of the trace.
    fn next_access(&mut self) -> Result<Option<PageAccess>, SimError>;

    /// Whether the trace can hold stores (else every access is a load): native output
    /// of [`convert`] stores a flag per access only then.
    fn records_stores(&self) -> bool {
        true
    }

    /// The trace's clock, when its format has one (a native version 2 or 4 trace written
    /// with one); `None` otherwise, and every access's `instructions` is then 0.
    fn clock(&self) -> Option<TraceClock> {
        None
    }

    /// The next access and its MLP class: the class its record carries (see
    /// [`PageReader::carries_classes`]), else [`MlpClass::Default`].
    fn next_classed(&mut self) -> Result<Option<(PageAccess, MlpClass)>, SimError> {
        Ok(self.next_access()?.map(|a| (a, MlpClass::Default)))
    }

    /// Whether the trace's records carry an MLP class: a native trace with flag bit 2, a
    /// CSV trace with an `mlp` column (known once its header line is read, that is after
    /// the first access). Native output of [`convert`] keeps the classes only then.
    fn carries_classes(&self) -> bool {
        false
    }

    /// Tells the reader that a pass over the same file has already checked what the
    /// format's header says of the whole trace, so that a reader whose check keeps
    /// per-page state (a native trace's distinct-page count) may skip it. A replay
    /// calls it: opening the trace made that pass, or found the cache of one whose stamp
    /// names this file.
    fn skip_whole_trace_checks(&mut self) {}

    /// Appends up to `max` records to `out` as [`PageReader::next_classed`] reads them
    /// one at a time: fewer at the end of the trace; at an error, the records before it,
    /// then the error.
    fn next_classed_batch(&mut self, out: &mut Vec<(PageAccess, MlpClass)>, max: usize) -> Result<(), SimError> {
        for _ in 0..max {
            match self.next_classed()? {
                Some(r) => out.push(r),
                None => break,
            }
        }
        Ok(())
    }
}

/// The trace formats tierkit reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// tierkit's native compact format ([`native`]).
    Native,
    /// libCacheSim `oracleGeneral` ([`oracle_general`]).
    OracleGeneral,
    /// CSV ([`csv`]).
    Csv,
    /// Valgrind lackey ([`lackey`]).
    Lackey,
    /// `perf script` ([`perf_script`]).
    PerfScript,
    /// Pin pinatrace ([`pinatrace`]).
    Pinatrace,
    /// damo JSON records ([`damo`]).
    Damo,
}

impl Format {
    /// Every format, in the order detection tries the text ones.
    pub const ALL: [Format; 7] = [
        Format::Native,
        Format::OracleGeneral,
        Format::Damo,
        Format::Lackey,
        Format::Pinatrace,
        Format::PerfScript,
        Format::Csv,
    ];

    /// Name on the command line and in the `format` option.
    pub fn name(self) -> &'static str {
        match self {
            Format::Native => "native",
            Format::OracleGeneral => "oracle-general",
            Format::Csv => "csv",
            Format::Lackey => "lackey",
            Format::PerfScript => "perf-script",
            Format::Pinatrace => "pinatrace",
            Format::Damo => "damo",
        }
    }

    /// The format named `name`; an unknown name lists the valid ones.
    pub fn parse(name: &str) -> Result<Self, SimError> {
        Self::ALL
            .into_iter()
            .find(|f| f.name() == name)
            .ok_or_else(|| SimError::unknown("trace format", name, Self::ALL.iter().map(|f| f.name())))
    }
}

/// Bytes of the file's start that detection looks at.
const SNIFF_BYTES: usize = 64 * 1024;

/// Detects the format of the trace at `path` from its first bytes: the native magic;
/// else, if the start is text (UTF-8 without NUL bytes), the first format whose
/// recognizer accepts its first significant line (damo: a leading `[` or `{`; then
/// lackey, pinatrace, perf script; CSV otherwise); else `oracleGeneral`. An empty file
/// is an error.
pub fn detect(path: impl AsRef<Path>) -> Result<Format, SimError> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    File::open(path)
        .and_then(|f| f.take(SNIFF_BYTES as u64).read_to_end(&mut head))
        .map_err(|source| SimError::Io { file: name.clone(), source })?;
    if head.is_empty() {
        return Err(SimError::File { file: name, at: "offset 0".into(), message: "empty file: not a trace".into() });
    }
    if head.starts_with(&native::MAGIC) {
        return Ok(Format::Native);
    }
    // A cut in the middle of a UTF-8 sequence at the sniff limit is still text.
    let text = match std::str::from_utf8(&head) {
        Ok(t) => Some(t),
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&head[..e.valid_up_to()]).ok(),
        Err(_) => None,
    };
    let Some(text) = text.filter(|t| !t.contains('\0')) else { return Ok(Format::OracleGeneral) };
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') || trimmed.starts_with('{') {
        return Ok(Format::Damo);
    }
    let first = |skip: fn(&str) -> bool| text.lines().map(str::trim_end).find(|l| !l.trim().is_empty() && !skip(l));
    if first(lackey::is_noise).is_some_and(lackey::recognizes) {
        return Ok(Format::Lackey);
    }
    if first(pinatrace::is_noise).is_some_and(pinatrace::recognizes) {
        return Ok(Format::Pinatrace);
    }
    if first(perf_script::is_noise).is_some_and(perf_script::recognizes) {
        return Ok(Format::PerfScript);
    }
    Ok(Format::Csv)
}

/// Opens the trace at `path` in `format`, or in the detected format when `None`.
pub fn open(path: impl AsRef<Path>, format: Option<Format>) -> Result<Box<dyn PageReader>, SimError> {
    let path = path.as_ref();
    let format = match format {
        Some(f) => f,
        None => detect(path)?,
    };
    Ok(match format {
        Format::Native => Box::new(native::NativeReader::open(path)?),
        Format::OracleGeneral => Box::new(oracle_general::RecordReader::open(path)?),
        Format::Csv => Box::new(csv::CsvReader::open(path)?),
        Format::Lackey => Box::new(lackey::LackeyReader::open(path)?),
        Format::PerfScript => Box::new(perf_script::PerfScriptReader::open(path)?),
        Format::Pinatrace => Box::new(pinatrace::PinatraceReader::open(path)?),
        Format::Damo => Box::new(damo::DamoReader::open(path)?),
    })
}

/// Builds the `trace` workload from `spec`'s options: `path` (required), `format`
/// (default: detected), `limit`, and `next_access` (oracleGeneral only).
pub fn build(spec: &WorkloadSpec) -> Result<Box<dyn Workload>, SimError> {
    let path = match spec.options.get("path") {
        Some(p) if !p.is_empty() => p.clone(),
        given => {
            return Err(SimError::bad_option(
                format!("workload {}", spec.name),
                "path",
                given.map_or("", |s| s.as_str()),
                "the path of a trace file (required)",
            ))
        }
    };
    spec.check_options(&["path", "limit", "next_access", "format"])?;
    let limit = spec.u64_opt("limit", u64::MAX, 1..=u64::MAX)?;
    let owner = || format!("workload {}", spec.name);
    let next_access = spec.options.get("next_access");
    if let Some(v) = next_access.filter(|v| !matches!(v.as_str(), "check" | "ignore")) {
        return Err(SimError::bad_option(owner(), "next_access", v, "check or ignore"));
    }
    let format = match spec.options.get("format") {
        Some(f) => Format::parse(f).map_err(|_| {
            SimError::bad_option(owner(), "format", f, format!("one of {}", Format::ALL.map(Format::name).join(", ")))
        })?,
        None => detect(&path)?,
    };
    if format == Format::OracleGeneral {
        let mut og = spec.clone();
        og.options.remove("format");
        return oracle_general::build(&og);
    }
    if let Some(v) = next_access {
        return Err(SimError::bad_option(
            owner(),
            "next_access",
            v,
            format!("no next_access for a {} trace (it applies to oracle-general traces)", format.name()),
        ));
    }
    Ok(Box::new(PageTrace::open(Path::new(&path), format, limit)?))
}

/// Copies every access of `reader` into `native` or `oracleGeneral` output at `out`;
/// returns the number of accesses copied. Native output keeps the reader's clock (each
/// record's instruction gap and the sample rate) when it has one, and the records' MLP
/// classes when they carry them. `oracleGeneral` keeps page numbers as object ids and
/// drops the store flags and classes; writing it collects the pages first (about 16
/// bytes per access, for `next_access_vtime`), while native output streams.
pub fn convert(reader: &mut dyn PageReader, out: impl AsRef<Path>, to: Format) -> Result<u64, SimError> {
    let out = out.as_ref();
    match to {
        Format::Native => {
            // Read first: a CSV reader knows its columns after its header line.
            let mut next = reader.next_classed()?;
            let fields = native::Fields {
                writes: reader.records_stores(),
                sample_every: reader.clock().map(|c| c.sample_every),
                classes: reader.carries_classes(),
            };
            let mut w = NativeWriter::with_fields(out, fields)?;
            while let Some((a, class)) = next {
                w.push_classed(a, class)?;
                next = reader.next_classed()?;
            }
            Ok(w.finish()?.accesses)
        }
        Format::OracleGeneral => {
            let mut pages = Vec::new();
            while let Some(a) = reader.next_access()? {
                pages.push(a.page);
            }
            let n = pages.len() as u64;
            write_oracle_general(out, pages)?;
            Ok(n)
        }
        other => Err(SimError::bad_option(
            "trace convert",
            "to",
            other.name(),
            "native or oracle-general (the formats tierkit writes)",
        )),
    }
}
