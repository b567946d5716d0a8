//! damo's JSON records (`damo record --format json`, `damo report raw --format json`,
//! or any JSON holding DAMON snapshots).
//!
//! Every JSON object with a `regions` array is a snapshot (damo nests them as
//! `[{"kdamond_idx": .., "snapshots": [{"start_time": .., "regions": [..]}]}]`), read in
//! document order. A region is an object with `start` and `end` (byte addresses, end
//! exclusive) and `nr_accesses`: a number, or an object whose `samples` is one. Numbers
//! may be JSON numbers or strings of a decimal (commas allowed) or `0x` hexadecimal
//! number, as damo prints them with or without `--raw_number`.
//!
//! # Regions to page samples
//!
//! DAMON reports how many of its sampling checks found a region accessed, not which
//! pages. Each snapshot becomes page samples by the rule of [`super::damon_turns`]
//! (shared with `tierkit record --via damon`): every page of a region stands for its
//! `nr_accesses`, and the pages take turns over [`DAMON_TURNS`] snapshots (snapshot `n`
//! writes the pages whose number is `n mod 16`), in a shuffled order. Regions with no
//! accesses yield nothing.
//!
//! # Memory
//!
//! The JSON document is parsed whole (damo records hold snapshots of at most some
//! thousand regions each); only the regions are kept, and their samples are generated
//! while reading, one at a time. A snapshot that would stand for more than
//! [`MAX_SNAPSHOT_SAMPLES`] samples is refused. Errors name the byte offset.

use std::path::Path;

use super::damon_turns::{DamonRegion, SnapshotSamples, DAMON_TURNS};
use super::{PageAccess, PageReader, PAGE_SHIFT};
use crate::error::SimError;

/// Most page samples one snapshot may stand for. The bound admits 100 GiB of memory
/// found accessed in all 20 of DAMON's default sampling checks per aggregation interval;
/// a snapshot above it is refused (a region's end or count is then most likely wrong).
pub const MAX_SNAPSHOT_SAMPLES: u64 = 1 << 25;

/// A parsed JSON value with the byte offset where it starts.
struct Value {
    at: usize,
    kind: Kind,
}

enum Kind {
    Scalar,
    Number(String),
    Str(String),
    Array(Vec<Value>),
    Object(Vec<(String, Value)>),
}

/// A recursive-descent JSON parser over bytes.
struct Parser<'a> {
    b: &'a [u8],
    i: usize,
    depth: usize,
}

type Parsed<T> = Result<T, (usize, String)>;

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn fail<T>(&self, what: &str) -> Parsed<T> {
        match self.b.get(self.i) {
            None => Err((self.i, format!("truncated JSON: expected {what}, found the end of the file"))),
            Some(c) => Err((self.i, format!("expected {what}, found {:?}", *c as char))),
        }
    }

    fn value(&mut self) -> Parsed<Value> {
        self.ws();
        let at = self.i;
        let kind = match self.b.get(self.i) {
            Some(b'{') => {
                self.depth += 1;
                if self.depth > 256 {
                    return Err((at, "JSON nested more than 256 levels".into()));
                }
                self.i += 1;
                let mut fields = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b'}') {
                    self.i += 1;
                } else {
                    loop {
                        self.ws();
                        if self.b.get(self.i) != Some(&b'"') {
                            return self.fail("a string key");
                        }
                        let key = self.string()?;
                        self.ws();
                        if self.b.get(self.i) != Some(&b':') {
                            return self.fail("`:`");
                        }
                        self.i += 1;
                        fields.push((key, self.value()?));
                        self.ws();
                        match self.b.get(self.i) {
                            Some(b',') => self.i += 1,
                            Some(b'}') => {
                                self.i += 1;
                                break;
                            }
                            _ => return self.fail("`,` or `}`"),
                        }
                    }
                }
                self.depth -= 1;
                Kind::Object(fields)
            }
            Some(b'[') => {
                self.depth += 1;
                if self.depth > 256 {
                    return Err((at, "JSON nested more than 256 levels".into()));
                }
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b']') {
                    self.i += 1;
                } else {
                    loop {
                        items.push(self.value()?);
                        self.ws();
                        match self.b.get(self.i) {
                            Some(b',') => self.i += 1,
                            Some(b']') => {
                                self.i += 1;
                                break;
                            }
                            _ => return self.fail("`,` or `]`"),
                        }
                    }
                }
                self.depth -= 1;
                Kind::Array(items)
            }
            Some(b'"') => Kind::Str(self.string()?),
            Some(b'-' | b'0'..=b'9') => {
                let start = self.i;
                while self.i < self.b.len() && matches!(self.b[self.i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    self.i += 1;
                }
                Kind::Number(String::from_utf8_lossy(&self.b[start..self.i]).into_owned())
            }
            _ => {
                for word in ["true", "false", "null"] {
                    if self.b[self.i..].starts_with(word.as_bytes()) {
                        self.i += word.len();
                        return Ok(Value { at, kind: Kind::Scalar });
                    }
                }
                return self.fail("a JSON value");
            }
        };
        Ok(Value { at, kind })
    }

    /// A string at `self.i` (which is `"`); escapes other than `\"` and `\\` are kept
    /// as written (keys and numbers do not need them).
    fn string(&mut self) -> Parsed<String> {
        let start = self.i;
        self.i += 1;
        let mut out = Vec::new();
        loop {
            match self.b.get(self.i) {
                None => return Err((start, "truncated JSON: a string is not closed".into())),
                Some(b'"') => break,
                Some(b'\\') => {
                    match self.b.get(self.i + 1) {
                        Some(&c @ (b'"' | b'\\' | b'/')) => out.push(c),
                        Some(&c) => out.extend_from_slice(&[b'\\', c]),
                        None => return Err((start, "truncated JSON: a string is not closed".into())),
                    }
                    self.i += 2;
                }
                Some(&c) => {
                    out.push(c);
                    self.i += 1;
                }
            }
        }
        self.i += 1;
        String::from_utf8(out).map_err(|_| (start, "invalid UTF-8 in a string".into()))
    }
}

/// `v` as an unsigned integer: a JSON number or a string of one.
fn integer(v: &Value) -> Option<u64> {
    let text = match &v.kind {
        Kind::Number(n) => n.as_str(),
        Kind::Str(s) => s.as_str(),
        _ => return None,
    };
    let plain: String = text.trim().chars().filter(|&c| c != ',').collect();
    super::text::number(&plain)
}

fn get<'v>(fields: &'v [(String, Value)], key: &str) -> Option<&'v Value> {
    fields.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

fn region(v: &Value) -> Parsed<DamonRegion> {
    let Kind::Object(fields) = &v.kind else { return Err((v.at, "a region must be a JSON object".into())) };
    let num = |key: &str| -> Parsed<u64> {
        let f = get(fields, key).ok_or_else(|| (v.at, format!("region without `{key}`")))?;
        integer(f).ok_or_else(|| (f.at, format!("region `{key}`: expected an unsigned integer")))
    };
    let (start, end) = (num("start")?, num("end")?);
    if end <= start {
        return Err((v.at, format!("region end {end} is not after its start {start}")));
    }
    let (samples, at) = match get(fields, "nr_accesses") {
        Some(Value { kind: Kind::Object(inner), at }) => (
            get(inner, "samples").and_then(integer).ok_or_else(|| {
                (*at, "region `nr_accesses`: expected an object with an integer `samples`".to_string())
            })?,
            *at,
        ),
        Some(f) => (num("nr_accesses")?, f.at),
        None => return Err((v.at, "region without `nr_accesses`".into())),
    };
    let samples = u32::try_from(samples)
        .map_err(|_| (at, format!("region `nr_accesses` {samples} is above DAMON's limit {}", u32::MAX)))?;
    let first = start >> PAGE_SHIFT;
    Ok(DamonRegion { first, pages: ((end - 1) >> PAGE_SHIFT) - first + 1, nr_accesses: samples })
}

/// Collects the snapshots under `v` (each its accessed regions), in document order.
fn collect(v: &Value, out: &mut Vec<Vec<DamonRegion>>) -> Parsed<()> {
    match &v.kind {
        Kind::Object(fields) => {
            if let Some(regions) = get(fields, "regions") {
                let Kind::Array(items) = &regions.kind else {
                    return Err((regions.at, "`regions` must be an array".into()));
                };
                let mut snapshot = Vec::with_capacity(items.len());
                for r in items {
                    snapshot.push(region(r)?);
                }
                snapshot.retain(|r| r.nr_accesses > 0);
                let samples = snapshot
                    .iter()
                    .map(|r| r.pages.div_ceil(DAMON_TURNS).saturating_mul(r.nr_accesses.into()))
                    .fold(0, u64::saturating_add);
                if samples > MAX_SNAPSHOT_SAMPLES {
                    return Err((
                        regions.at,
                        format!(
                            "these regions stand for up to {samples} page samples in one snapshot (a region's \
                             pages / {DAMON_TURNS} x its nr_accesses), above the {MAX_SNAPSHOT_SAMPLES} a snapshot \
                             may make: is a region's `end` or `nr_accesses` wrong?"
                        ),
                    ));
                }
                out.push(snapshot);
                return Ok(());
            }
            fields.iter().try_for_each(|(_, f)| collect(f, out))
        }
        Kind::Array(items) => items.iter().try_for_each(|i| collect(i, out)),
        _ => Ok(()),
    }
}

/// A reader of damo JSON records (see the module documentation).
pub struct DamoReader {
    snapshots: std::vec::IntoIter<Vec<DamonRegion>>,
    /// Index of the next snapshot.
    next: u64,
    /// The current snapshot's samples still to come.
    samples: Option<SnapshotSamples>,
}

impl DamoReader {
    /// Reads and parses the file at `path`.
    pub fn open(path: &Path) -> Result<Self, SimError> {
        let file = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|source| SimError::Io { file: file.clone(), source })?;
        let at = |(offset, message): (usize, String)| SimError::File {
            file: file.clone(),
            at: format!("offset {offset}"),
            message,
        };
        let mut p = Parser { b: &bytes, i: 0, depth: 0 };
        let doc = p.value().map_err(at)?;
        p.ws();
        if p.i != bytes.len() {
            return Err(at((p.i, "trailing data after the JSON document".into())));
        }
        let mut snapshots = Vec::new();
        collect(&doc, &mut snapshots).map_err(at)?;
        if snapshots.is_empty() {
            return Err(at((0, "no DAMON snapshot: expected objects with a `regions` array".into())));
        }
        Ok(Self { snapshots: snapshots.into_iter(), next: 0, samples: None })
    }
}

impl PageReader for DamoReader {
    fn next_access(&mut self) -> Result<Option<PageAccess>, SimError> {
        loop {
            if let Some(page) = self.samples.as_mut().and_then(Iterator::next) {
                return Ok(Some(PageAccess::read(page)));
            }
            let Some(regions) = self.snapshots.next() else { return Ok(None) };
            self.samples = Some(SnapshotSamples::new(&regions, DAMON_TURNS, self.next));
            self.next += 1;
        }
    }

    fn records_stores(&self) -> bool {
        false
    }
}
