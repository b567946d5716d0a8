//! `trace`: libCacheSim's `oracleGeneral` binary traces replayed as a workload.
//!
//! # Format
//!
//! A file is a sequence of packed 24-byte little-endian records with no header (the
//! record count is the file length / 24):
//!
//! | offset | type | field | meaning |
//! |---|---|---|---|
//! | 0 | `u32` | `clock_time` | request time (seconds in most traces; unused here) |
//! | 4 | `u64` | `obj_id` | the object requested |
//! | 12 | `u32` | `obj_size` | object size in bytes |
//! | 16 | `i64` | `next_access_vtime` | when the same object is requested next |
//!
//! As libCacheSim's `traceConv` writes it, `next_access_vtime` is the **1-based** index of
//! the next request to the same object ("reference count starts with 1"), or `-1` when
//! there is none; libCacheSim's reader also accepts `i64::MAX` for none (both become its
//! `MAX_REUSE_DISTANCE`). So in the requests `A B A`, the first `A` (record 0) stores 3.
//! Verified in libCacheSim (github.com/1a1a11a/libCacheSim, commit aa0fc40):
//!
//! - `libCacheSim/traceReader/customizedReader/oracle/oracleGeneralBin.h`: the field
//!   offsets (0, 4, 12, 16), `item_size = 24`, `-1 || INT64_MAX` meaning no next access,
//!   and `obj_size == 0` requests skipped when `ignore_size_zero_req` (the default);
//! - `libCacheSim/bin/traceUtils/traceConv.cpp` (`convert_to_oracleGeneral`): the packed
//!   struct, and the backward pass that stores `n_req` minus the number of requests
//!   after the next access, i.e. the next request's 1-based index, or -1;
//! - `data/cloudPhysicsIO.oracleGeneral.bin`: all 113,872 records satisfy exactly this
//!   (64,898 point at the next request's index + 1, 48,974 are -1).
//!
//! Some files count from 0 instead (the first `A` above stores 2). libCacheSim's reader
//! takes the value as it is, and adding 1 to every pointer changes no comparison between
//! next-access times (Belady's included), so libCacheSim simulates those files the same;
//! tierkit reads both conventions.
//!
//! # Convention of `next_access_vtime`
//!
//! The convention ([`Convention`]) is detected from the file: the first time the object
//! of a record with a next access is requested again, by record `k` (counting the first
//! record as 0), that record's `next_access_vtime` must be `k + 1` (1-based) or `k`
//! (0-based), which decides; any other value fits neither convention and the file is
//! refused, the error naming that record and both expectations. A file whose records
//! are all -1 (or `i64::MAX`) has none (`absent`); one whose pointed-at objects are never
//! requested again in what is read (all pointing past the end, say) stays
//! `undetermined`. The workload detects from the first 65,536 records (and at most up to
//! the `limit`-th request); `trace info` and `trace convert` from the whole file, and
//! `trace info` prints the result.
//!
//! # Mapping to pages
//!
//! One object is one page: each distinct `obj_id` gets a dense page id, in order of first
//! appearance, and each request is one read of word 0 of its page. Object sizes are
//! ignored (libCacheSim's `ignore_obj_size`, which counts every object as size 1), except
//! that records with `obj_size == 0` are skipped, as libCacheSim's reader does by default
//! (`ignore_size_zero_req`), so the two simulators replay the same requests.
//!
//! # Options and sizes
//!
//! - `path` (required): the trace file. Compressed (`.zst`) and `lcs` traces are
//!   recognised and rejected with a hint; decompress or convert them first.
//! - `limit` (optional, ≥ 1): replay at most this many requests (the first ones).
//! - `next_access` (optional): `check` (default) detects the convention of
//!   `next_access_vtime`, validates the records under it and follows the pointers (see
//!   Validation); `ignore` does none of this, for files whose pointers fit neither
//!   convention (tierkit replays them the same; only slower on large footprints).
//!
//! `pages()` is the number of distinct objects among the replayed requests and `len()`
//! the number of replayed requests (non-zero-size records, capped by `limit`).
//! `WorkloadSpec::pages`, `accesses` and `seed` are ignored.
//!
//! # Cost
//!
//! Building reads the replayed part of the file once, validating every record and
//! assigning page ids; only that id map is kept (a [`PageTable`], about 21–43 bytes per
//! distinct object, at most 2^32 objects). [`Workload::fill`] then streams the file again
//! from the handle opened at build time (1.5 MiB reads, parsed in place), so records are
//! never all held in memory. Engine runs with an oracle build the workload more than
//! once, so they read the file more than once. A complete replay of the whole file under
//! `next_access=check` also writes every request's page id beside the file
//! (`FILE.tkids`, 4 bytes per request, see `id_cache`); later builds of the same file
//! read those ids instead, with no scan and no id map.
//!
//! Both passes follow `next_access_vtime`: a request announces its object (its page,
//! while streaming) to the record it points at, in a ring of [`LOOKAHEAD`] slots, so a
//! request whose previous request to the object is at most that many records back needs
//! no id-map lookup, which on large footprints is a cache miss. The ring costs up to 33
//! MiB while building and 16 MiB while streaming (16 bytes per object, at least 16 KiB;
//! less for shorter files). Pointers are followed under the detected convention; files
//! whose convention is absent or undetermined are read correctly, only without this
//! shortcut. Detection keeps about 40 bytes per object whose last record names a next
//! access, until it decides (at the first request again of such an object).
//!
//! # Validation
//!
//! Every error names the file, and errors about contents name the byte offset: a missing
//! or unreadable file, an empty file, a length that is not a multiple of 24 (`truncated:
//! N trailing bytes at offset X`), a pointer that fits neither convention where detection
//! meets it (see above), a record whose `next_access_vtime` is neither none nor a later
//! request under the detected convention (under either while none is detected), and a
//! record that an earlier record's `next_access_vtime` points at under the detected
//! convention (within [`LOOKAHEAD`] records) but that requests another object. As the
//! record that decided the convention rules the other one out, every refused file fits
//! neither convention. The last check guarantees the pointers followed are right. These
//! errors suggest `next_access=ignore`, which replays any such file. A
//! `next_access_vtime` past the end of the file is accepted (traces cut with `head -c`
//! keep them). Only the replayed part of the file (up to `limit`) is checked, apart from
//! its length. A file cut or rewritten in place while it is replayed ends the stream with
//! an error naming the file and the byte offset ([`Workload::take_error`]).

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

use tierkit_core::sketches::PageTable;

use super::id_cache::{self, CachedIds, Kind, Stamp, FACTS};
use crate::error::SimError;
use crate::workload::{Access, Workload, WorkloadSpec};

/// Bytes per record.
pub const RECORD_BYTES: usize = 24;

/// `next_access_vtime` of a request whose object is never requested again (libCacheSim's
/// reader also accepts `i64::MAX`).
pub const NO_NEXT_ACCESS: i64 = -1;

/// `obj_size` [`write_oracle_general`] writes: one 4 KiB page per object.
pub const WRITER_OBJ_SIZE: u32 = 4096;

/// Records per read while streaming (1.5 MiB).
const CHUNK_RECORDS: usize = 1 << 16;

/// First bytes of a zstd frame (RFC 8878), little-endian.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// First 8 bytes of libCacheSim's `lcs` format (`LCS_TRACE_START_MAGIC`, little-endian).
const LCS_MAGIC: [u8; 8] = 0x1234_5678_9abc_def0u64.to_le_bytes();

/// One `oracleGeneral` record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Record {
    /// Request time (libCacheSim's `clock_time`).
    pub clock_time: u32,
    /// Object requested.
    pub obj_id: u64,
    /// Object size in bytes; 0-size requests are skipped.
    pub obj_size: u32,
    /// Index of the next request to `obj_id` (1-based, or 0-based in some files: see
    /// [`Convention`]), or [`NO_NEXT_ACCESS`] / `i64::MAX`.
    pub next_access_vtime: i64,
}

#[inline(always)]
fn field<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[at..at + N]);
    a
}

impl Record {
    /// Decodes one record.
    #[inline]
    pub fn from_bytes(b: &[u8; RECORD_BYTES]) -> Self {
        Self {
            clock_time: u32::from_le_bytes(field(b, 0)),
            obj_id: u64::from_le_bytes(field(b, 4)),
            obj_size: u32::from_le_bytes(field(b, 12)),
            next_access_vtime: i64::from_le_bytes(field(b, 16)),
        }
    }

    /// Encodes one record.
    pub fn to_bytes(&self) -> [u8; RECORD_BYTES] {
        let mut b = [0u8; RECORD_BYTES];
        b[0..4].copy_from_slice(&self.clock_time.to_le_bytes());
        b[4..12].copy_from_slice(&self.obj_id.to_le_bytes());
        b[12..16].copy_from_slice(&self.obj_size.to_le_bytes());
        b[16..24].copy_from_slice(&self.next_access_vtime.to_le_bytes());
        b
    }

    /// Whether the record names a next access (`next_access_vtime` is neither -1 nor
    /// `i64::MAX`).
    pub fn has_next_access(&self) -> bool {
        names_next(self.next_access_vtime)
    }
}

/// Whether a `next_access_vtime` names a next access (is neither -1 nor `i64::MAX`).
fn names_next(next: i64) -> bool {
    next != NO_NEXT_ACCESS && next != i64::MAX
}

/// How a file counts `next_access_vtime`, as detected from its records (see the module
/// documentation). Its `Display` is what `tierkit trace info` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Convention {
    /// The 1-based index of the next request to the object, as libCacheSim's `traceConv`
    /// writes (and [`write_oracle_general`]).
    OneBased,
    /// The 0-based index of the next request to the object (the first record is 0).
    ZeroBased,
    /// No record names a next access: all are -1 (or `i64::MAX`).
    Absent,
    /// Records name next accesses, but none of their objects is requested again in what
    /// was read, so nothing tells the conventions apart.
    Undetermined,
}

impl Convention {
    /// What a `next_access_vtime` exceeds the index (0-based) of the record it points at
    /// by: 1 for [`Convention::OneBased`], else 0 (which, when undecided, is the check
    /// both conventions pass: a pointer must exceed its own record's index).
    fn base(self) -> u64 {
        u64::from(self == Self::OneBased)
    }
}

impl std::fmt::Display for Convention {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::OneBased => "1-based (libCacheSim traceConv)",
            Self::ZeroBased => "0-based",
            Self::Absent => "absent (all -1)",
            Self::Undetermined => "undetermined (no object with a next_access_vtime is requested again)",
        })
    }
}

/// Why `next_access_vtime` `next` of record `index` (0-based) cannot be right under
/// `convention` (under either when it is not 1- or 0-based), if it cannot.
fn check_next_access(next: i64, index: u64, convention: Convention) -> Option<String> {
    // The record pointed at comes after this one.
    let earliest = index.saturating_add(1 + convention.base());
    if !names_next(next) || (next > 0 && next as u64 >= earliest) {
        return None;
    }
    let counted = match convention {
        Convention::OneBased | Convention::ZeroBased => format!("the {convention} index"),
        Convention::Absent | Convention::Undetermined => "the 1-based or 0-based index".into(),
    };
    Some(format!(
        "record {index}: next_access_vtime {next} does not point to a later request (expected -1 or {} for \
         none, or {counted} of the next request to the object, at least {earliest})",
        i64::MAX
    ))
}

/// Detects the [`Convention`] of `next_access_vtime` from records read in order: the
/// first time the object of a record with a next access is requested again, by record
/// `k`, that pointer must be `k + 1` (1-based) or `k` (0-based), which decides; anything
/// else fits neither. Pointers that do not point past their own record are left to
/// [`check_next_access`].
///
/// Memory: until decided, an entry (about 40 bytes) per object whose last record names a
/// next access; nothing after.
#[derive(Default)]
struct Detector {
    /// Object -> (index, `next_access_vtime`) of its last record, if that names a next
    /// access.
    pending: HashMap<u64, (u64, i64)>,
    /// Whether a record names a next access.
    pointers: bool,
    /// The convention and the record whose pointer showed it.
    decided: Option<(Convention, u64)>,
}

impl Detector {
    /// Takes record `index` of object `obj` (nothing once decided). An error names the
    /// record whose pointer fits neither convention, and why.
    fn record(&mut self, index: u64, obj: u64, next: i64) -> Result<(), (u64, String)> {
        if self.decided.is_some() {
            return Ok(());
        }
        if let Some((at, pointer)) = self.pending.remove(&obj) {
            let convention = match pointer as u64 {
                p if p == index + 1 => Convention::OneBased,
                p if p == index => Convention::ZeroBased,
                _ => {
                    return Err((
                        at,
                        format!(
                            "record {at}: next_access_vtime {pointer}, but the next request to object {obj} is \
                             record {index}: expected {} (1-based, as libCacheSim's traceConv writes) or {index} \
                             (0-based)",
                            index + 1
                        ),
                    ))
                }
            };
            self.decided = Some((convention, at));
            self.pending = HashMap::new();
            return Ok(());
        }
        if names_next(next) {
            self.pointers = true;
            if next > 0 && next as u64 > index {
                self.pending.insert(obj, (index, next));
            }
        }
        Ok(())
    }

    /// The convention of the records taken so far.
    fn convention(&self) -> Convention {
        match self.decided {
            Some((convention, _)) => convention,
            None if self.pointers => Convention::Undetermined,
            None => Convention::Absent,
        }
    }
}

/// The [`Detector`] after the records in `records` (the start of a file), up to the
/// `limit`-th request.
fn detect(records: &[u8], limit: u64) -> Result<Detector, (u64, String)> {
    let mut detector = Detector::default();
    let mut requests = 0;
    for (index, rec) in (0..).zip(records.chunks_exact(RECORD_BYTES)) {
        detector.record(index, u64::from_le_bytes(field(rec, 4)), i64::from_le_bytes(field(rec, 16)))?;
        requests += u64::from(u32::from_le_bytes(field(rec, 12)) != 0);
        if detector.decided.is_some() || requests == limit {
            break;
        }
    }
    Ok(detector)
}

/// `next_access_vtime` of each request in `ids`, as libCacheSim's `traceConv` computes
/// it: the 1-based index of the next request to the same object, or -1.
///
/// Memory: 8 bytes per request for the result plus a hash map of about 20–40 bytes per
/// distinct object.
pub fn next_access_vtimes(ids: &[u64]) -> Vec<i64> {
    let mut next = vec![NO_NEXT_ACCESS; ids.len()];
    let mut last: HashMap<u64, usize> = HashMap::new();
    for (i, &id) in ids.iter().enumerate() {
        if let Some(prev) = last.insert(id, i) {
            next[prev] = i as i64 + 1;
        }
    }
    next
}

/// Writes `requests` (object ids, in order) as an `oracleGeneral` trace at `path`:
/// `clock_time` = the request's 0-based index (saturating at `u32::MAX`), `obj_size` =
/// [`WRITER_OBJ_SIZE`], `next_access_vtime` from [`next_access_vtimes`]. No requests
/// write an empty file (which [`build`] rejects).
///
/// Memory: the requests are collected first (computing `next_access_vtime` needs the
/// future), about 16 bytes per request plus 20–40 per distinct object: fine for test and
/// comparison traces of up to some hundred million requests.
pub fn write_oracle_general(path: impl AsRef<Path>, requests: impl IntoIterator<Item = u64>) -> Result<(), SimError> {
    let path = path.as_ref();
    let io_err = |source| SimError::Io { file: path.display().to_string(), source };
    let ids: Vec<u64> = requests.into_iter().collect();
    let next = next_access_vtimes(&ids);
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path).map_err(io_err)?);
    for (i, (&obj_id, &next_access_vtime)) in ids.iter().zip(&next).enumerate() {
        let clock_time = u32::try_from(i).unwrap_or(u32::MAX);
        let record = Record { clock_time, obj_id, obj_size: WRITER_OBJ_SIZE, next_access_vtime };
        out.write_all(&record.to_bytes()).map_err(io_err)?;
    }
    out.flush().map_err(io_err)
}

/// A reader of whole records from `src` through one large buffer.
struct Chunks<R> {
    src: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// File offset of `buf[start]`.
    offset: u64,
}

impl<R: Read> Chunks<R> {
    fn new(src: R, bytes: usize) -> Self {
        Self { src, buf: vec![0; bytes.max(RECORD_BYTES)], start: 0, end: 0, offset: 0 }
    }

    /// Moves the unread bytes to the front and reads until the buffer is full or the
    /// source ends.
    fn refill(&mut self) -> io::Result<()> {
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        while self.end < self.buf.len() {
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => break,
                Ok(n) => self.end += n.min(self.buf.len() - self.end),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// The buffered whole records.
    #[inline]
    fn records(&self) -> &[u8] {
        let n = (self.end - self.start) / RECORD_BYTES * RECORD_BYTES;
        &self.buf[self.start..self.start + n]
    }

    /// Whole records buffered, refilling when none is; empty at the end of the source.
    fn next_records(&mut self) -> io::Result<&[u8]> {
        if self.end - self.start < RECORD_BYTES {
            self.refill()?;
        }
        Ok(self.records())
    }

    /// Bytes buffered that do not make a whole record.
    #[cfg(test)]
    fn partial(&self) -> usize {
        (self.end - self.start) % RECORD_BYTES
    }

    #[inline]
    fn consume(&mut self, records: usize) {
        self.start += records * RECORD_BYTES;
        self.offset += (records * RECORD_BYTES) as u64;
    }
}

impl<R> Chunks<R> {
    fn src(&self) -> &R {
        &self.src
    }
}

impl<R: Read + Seek> Chunks<R> {
    fn rewind(&mut self) -> io::Result<()> {
        self.src.seek(SeekFrom::Start(0))?;
        self.start = 0;
        self.end = 0;
        self.offset = 0;
        Ok(())
    }
}

/// What building a trace workload found in its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TraceInfo {
    /// File size in bytes.
    pub file_bytes: u64,
    /// Records in the file.
    pub file_records: u64,
    /// Records read: all of them, or up to the `limit`-th request.
    pub scanned_records: u64,
    /// Scanned records skipped for `obj_size == 0`.
    pub zero_size_skipped: u64,
    /// Requests replayed: [`Workload::len`].
    pub requests: u64,
    /// Distinct objects among them: [`Workload::pages`].
    pub objects: u64,
    /// Requests whose object was found by following an earlier request's
    /// `next_access_vtime` (within [`LOOKAHEAD`]) instead of a lookup in the id map.
    pub followed: u64,
    /// The convention of `next_access_vtime`, detected from the first records (up to
    /// 65,536 and the `limit`-th request); `None` with [`NextAccess::Ignore`].
    pub convention: Option<Convention>,
}

impl TraceInfo {
    /// The scan's findings as the id cache stores them.
    fn facts(&self) -> [u64; FACTS] {
        let convention = match self.convention {
            None => 0,
            Some(Convention::OneBased) => 1,
            Some(Convention::ZeroBased) => 2,
            Some(Convention::Absent) => 3,
            Some(Convention::Undetermined) => 4,
        };
        let i = self;
        [
            i.file_bytes,
            i.file_records,
            i.scanned_records,
            i.zero_size_skipped,
            i.requests,
            i.objects,
            i.followed,
            convention,
        ]
    }

    /// The findings an id cache stored, unless its convention is unknown.
    fn from_facts(w: &[u64; FACTS]) -> Option<Self> {
        let convention = match w[7] {
            0 => None,
            1 => Some(Convention::OneBased),
            2 => Some(Convention::ZeroBased),
            3 => Some(Convention::Absent),
            4 => Some(Convention::Undetermined),
            _ => return None,
        };
        Some(Self {
            file_bytes: w[0],
            file_records: w[1],
            scanned_records: w[2],
            zero_size_skipped: w[3],
            requests: w[4],
            objects: w[5],
            followed: w[6],
            convention,
        })
    }
}

/// How far ahead (in records) a `next_access_vtime` is followed: a request whose object
/// was requested at most this many records earlier, by a record pointing at it, needs
/// no id-map lookup. 2^22 records: a 32.5 MiB ring while building, and up to 16 MiB while
/// streaming (4 slots per object; smaller for files with fewer records).
pub const LOOKAHEAD: u64 = 1 << 22;

/// Smallest ring `fill` uses (16 KiB); it uses 4 slots per object up to [`LOOKAHEAD`].
const MIN_STREAM_WINDOW: u64 = 1 << 12;

/// Pages announced for upcoming records, by record index modulo the window.
struct Ahead {
    pages: Vec<u32>,
    mask: u64,
    /// [`Convention::base`] of the file.
    base: u64,
}

impl Ahead {
    const EMPTY: u32 = u32::MAX;

    fn new(window: u64, base: u64) -> Self {
        Self { pages: vec![Self::EMPTY; window as usize], mask: window - 1, base }
    }

    /// Takes what was announced for record `index`.
    #[inline(always)]
    fn take(&mut self, index: u64) -> Option<u32> {
        let slot = &mut self.pages[(index & self.mask) as usize];
        let page = std::mem::replace(slot, Self::EMPTY);
        (page != Self::EMPTY).then_some(page)
    }

    /// Announces `page` for the record `next` (a `next_access_vtime`) points at, if
    /// that record is after `index` and within the window.
    #[inline(always)]
    fn announce(&mut self, index: u64, next: i64, page: u32) {
        let target = (next as u64).wrapping_sub(self.base);
        if next > 0 && target > index && target - index <= self.mask && page != Self::EMPTY {
            self.pages[(target & self.mask) as usize] = page;
        }
    }
}

/// What pointer errors add.
const IGNORE_HINT: &str = "; to replay the file without its next_access_vtime, set the option next_access=ignore";

/// What to do with `next_access_vtime`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum NextAccess {
    /// Detect its [`Convention`], validate it under that convention (an error names the
    /// first record where it cannot be right) and follow it to skip id-map lookups. The
    /// default.
    #[default]
    Check,
    /// Ignore it: for files whose pointers are wrong under both conventions. Reading is
    /// slower on large footprints (every request is an id-map lookup).
    Ignore,
}

/// The build-time pass: validates records and assigns page ids.
struct Scan {
    /// Validate `next_access_vtime` (else it is ignored, and the window is 1).
    check: bool,
    /// The file's convention and the record whose pointer showed it, when detected (the
    /// window is 1 otherwise, and pointers are checked under either convention).
    detected: Option<(Convention, u64)>,
    ids: PageTable,
    /// Objects announced for upcoming records (by record index modulo the window) by
    /// their predecessors' `next_access_vtime`, with `set` marking the announced slots (a bitset, so it stays in cache).
    ahead: Vec<u64>,
    set: Vec<u64>,
    mask: u64,
    limit: u64,
    /// Records scanned.
    index: u64,
    requests: u64,
    zero_size: u64,
    followed: u64,
}

impl Scan {
    fn new(window: u64, limit: u64, check: bool, detected: Option<(Convention, u64)>) -> Self {
        Self {
            check,
            detected,
            ids: PageTable::new(),
            ahead: vec![0; window as usize],
            set: vec![0; (window as usize).div_ceil(64)],
            mask: window - 1,
            limit,
            index: 0,
            requests: 0,
            zero_size: 0,
            followed: 0,
        }
    }

    /// Scans whole `records` until the `limit`-th request; returns how many records it
    /// used, or the position in `records` of a bad one and what is wrong with it.
    fn chunk(&mut self, records: &[u8]) -> Result<usize, (usize, String)> {
        let (mut index, mut requests, mut zero_size, mut followed) =
            (self.index, self.requests, self.zero_size, self.followed);
        let mask = self.mask;
        let convention = self.detected.map_or(Convention::Undetermined, |(c, _)| c);
        let base = convention.base();
        let mut used = 0;
        let mut result = Ok(());
        for rec in records.chunks_exact(RECORD_BYTES) {
            let obj = u64::from_le_bytes(field(rec, 4));
            let next = i64::from_le_bytes(field(rec, 16));
            let target = (next as u64).wrapping_sub(base);
            // Fast path of check_next_access: none, or a later request.
            if self.check && names_next(next) && !(next > 0 && target > index) {
                result = Err(check_next_access(next, index, convention).unwrap_or_default() + IGNORE_HINT);
                break;
            }
            let slot = (index & mask) as usize;
            let (word, bit) = (slot / 64, 1u64 << (slot % 64));
            let announced = self.set[word] & bit != 0;
            self.set[word] &= !bit;
            if announced && self.ahead[slot] != obj {
                let (_, shown_by) = self.detected.expect("pointers are followed once a convention is detected");
                result = Err(format!(
                    "record {index}: an earlier record of object {} has next_access_vtime {}, pointing here under \
                     the {convention} convention that record {shown_by} shows, but this record requests object \
                     {obj}, so the file fits neither convention{IGNORE_HINT}",
                    self.ahead[slot],
                    index + base
                ));
                break;
            }
            used += 1;
            index += 1;
            if u32::from_le_bytes(field(rec, 12)) == 0 {
                zero_size += 1;
                continue;
            }
            if announced {
                followed += 1;
            } else {
                let fresh = self.ids.len() as u64;
                if fresh > u32::MAX as u64 && self.ids.get(obj).is_none() {
                    used -= 1;
                    index -= 1;
                    result = Err(format!("record {index}: more than 2^32 distinct objects"));
                    break;
                }
                self.ids.entry(obj, fresh as u32);
            }
            // Announced by non-0-size records only: an object seen only in 0-size
            // records has no page. `fill` announces exactly the same records.
            if self.check && next > 0 && target > index - 1 && target - (index - 1) <= mask {
                self.ahead[(target & mask) as usize] = obj;
                let slot = (target & mask) as usize;
                self.set[slot / 64] |= 1 << (slot % 64);
            }
            requests += 1;
            if requests == self.limit {
                break;
            }
        }
        (self.index, self.requests, self.zero_size, self.followed) = (index, requests, zero_size, followed);
        result.map(|()| used).map_err(|why| (used, why))
    }
}

/// An `oracleGeneral` trace opened as a [`Workload`] (see the module documentation).
pub struct OracleGeneralTrace {
    file: String,
    chunks: Chunks<File>,
    ids: PageTable,
    info: TraceInfo,
    window: u64,
    /// [`Convention::base`] of the file.
    base: u64,
    /// Allocated by the first `fill`.
    ahead: Option<Ahead>,
    /// Index of the next record to read.
    index: u64,
    left: u64,
    /// The error that ended the stream, until taken.
    error: Option<SimError>,
    /// The page ids of a trace decoded before ([`id_cache`]): read instead of the file.
    cached: Option<CachedIds>,
    /// The cache this replay writes, on the first complete replay of a validated trace.
    cache_writer: Option<id_cache::Writer>,
}

/// Builds the `trace` workload from `spec`'s options `path` and `limit`.
pub fn build(spec: &WorkloadSpec) -> Result<Box<dyn Workload>, SimError> {
    spec.check_options(&["path", "limit", "next_access"])?;
    let path = match spec.options.get("path") {
        Some(p) if !p.is_empty() => p,
        given => {
            return Err(SimError::bad_option(
                format!("workload {}", spec.name),
                "path",
                given.map_or("", |s| s.as_str()),
                "the path of a libCacheSim oracleGeneral trace file (required)",
            ))
        }
    };
    let limit = spec.u64_opt("limit", u64::MAX, 1..=u64::MAX)?;
    let next_access = match spec.options.get("next_access").map(String::as_str) {
        None | Some("check") => NextAccess::Check,
        Some("ignore") => NextAccess::Ignore,
        Some(other) => {
            return Err(SimError::bad_option(
                format!("workload {}", spec.name),
                "next_access",
                other,
                "check or ignore",
            ))
        }
    };
    Ok(Box::new(OracleGeneralTrace::open(path, limit, next_access)?))
}

impl OracleGeneralTrace {
    /// Opens and scans the trace at `path`, replaying at most `limit` requests (`u64::MAX`
    /// for all).
    pub fn open(path: impl AsRef<Path>, limit: u64, next_access: NextAccess) -> Result<Self, SimError> {
        let window = if next_access == NextAccess::Check { LOOKAHEAD } else { 1 };
        Self::open_with(path.as_ref(), limit, window, next_access == NextAccess::Check)
    }

    fn open_with(path: &Path, limit: u64, window: u64, check: bool) -> Result<Self, SimError> {
        debug_assert!(window.is_power_of_two());
        let name = path.display().to_string();
        let io_err = |source| SimError::Io { file: name.clone(), source };
        let at = |offset: u64, message: String| SimError::File {
            file: name.clone(),
            at: format!("offset {offset}"),
            message,
        };

        let file = File::open(path).map_err(io_err)?;
        let meta = file.metadata().map_err(io_err)?;
        if !meta.is_file() {
            let what = if meta.is_dir() { "a directory" } else { "not a regular file" };
            return Err(io_err(io::Error::other(format!("{what}, not an oracleGeneral trace"))));
        }
        let file_bytes = meta.len();
        if file_bytes == 0 {
            return Err(at(0, "empty file: an oracleGeneral trace holds at least one 24-byte record".into()));
        }
        let buffer = (CHUNK_RECORDS * RECORD_BYTES).min(usize::try_from(file_bytes).unwrap_or(usize::MAX));
        let mut chunks = Chunks::new(file, buffer);
        chunks.refill().map_err(|e| at(0, format!("read error: {e}")))?;
        let head = &chunks.buf[..chunks.end.min(8)];
        let hint = if head.starts_with(&ZSTD_MAGIC) {
            " (the file starts with the zstd magic number: decompress it first, e.g. `zstd -d`)"
        } else if head == LCS_MAGIC {
            " (the file starts with libCacheSim's lcs magic number: it is an lcs trace with a 1024-byte \
             header, not oracleGeneral)"
        } else {
            ""
        };

        let trailing = file_bytes % RECORD_BYTES as u64;
        if trailing != 0 {
            let offset = file_bytes - trailing;
            return Err(at(
                offset,
                format!(
                    "truncated: {trailing} trailing bytes at offset {offset} (the file is {file_bytes} bytes, \
                     not a multiple of the 24-byte record){hint}"
                ),
            ));
        }

        // A whole validated replay is decoded once: later ones read the cached ids.
        let stamp =
            if check && limit == u64::MAX && window == LOOKAHEAD { Stamp::of(chunks.src(), &meta).ok() } else { None };
        let cached = stamp.as_ref().and_then(|s| id_cache::load(path, s, Kind::OracleGeneral));
        if let Some((info, ids)) = cached.and_then(|(facts, ids)| Some((TraceInfo::from_facts(&facts)?, ids))) {
            return Ok(Self {
                file: name,
                chunks,
                ids: PageTable::new(),
                info,
                window: 1,
                base: 0,
                ahead: None,
                index: 0,
                left: info.requests,
                error: None,
                cached: Some(ids),
                cache_writer: None,
            });
        }
        let mut info = TraceInfo { file_bytes, file_records: file_bytes / RECORD_BYTES as u64, ..TraceInfo::default() };
        // The convention, from the first buffer of records.
        let detector = if check {
            let bad = |(i, why): (u64, String)| at(i * RECORD_BYTES as u64, format!("{why}{IGNORE_HINT}{hint}"));
            let detector = detect(chunks.records(), limit).map_err(bad)?;
            info.convention = Some(detector.convention());
            detector
        } else {
            Detector::default()
        };
        // Objects announced for upcoming records by their predecessors' next_access_vtime,
        // checked against what those records request. `fill` follows the same pointers
        // (to pages), so a pointer it follows is one checked here.
        let window = if detector.decided.is_some() { window.min(info.file_records.next_power_of_two()) } else { 1 };
        let base = detector.convention().base();
        let mut scan = Scan::new(window, limit, check, detector.decided);
        while scan.requests < limit {
            let base = chunks.offset;
            let records = chunks.next_records().map_err(|e| at(base, format!("read error: {e}")))?;
            if records.is_empty() {
                if scan.index != info.file_records {
                    return Err(at(
                        base,
                        format!(
                            "the file ended after {} of its {} records while it was being read",
                            scan.index, info.file_records
                        ),
                    ));
                }
                break;
            }
            match scan.chunk(records) {
                Ok(used) => chunks.consume(used),
                Err((i, why)) => return Err(at(base + (i * RECORD_BYTES) as u64, format!("{why}{hint}"))),
            }
        }
        let Scan { ids, index, requests, zero_size, followed, .. } = scan;
        info.scanned_records = index;
        info.requests = requests;
        info.zero_size_skipped = zero_size;
        info.followed = followed;
        if info.requests == 0 {
            return Err(at(
                0,
                format!(
                    "no requests: all {} records have obj_size 0, which are skipped (as libCacheSim does)",
                    info.scanned_records
                ),
            ));
        }
        info.objects = ids.len() as u64;
        chunks.rewind().map_err(|e| at(0, format!("cannot seek back to the start: {e}")))?;
        // Streaming may follow fewer pointers than the scan checked (never more): a ring
        // a few times the footprint catches most repeats and stays in cache.
        let window = info.objects.saturating_mul(4).next_power_of_two().max(MIN_STREAM_WINDOW).min(window);
        let whole = info.scanned_records == info.file_records;
        let cache_writer = stamp.filter(|_| whole).and_then(|s| id_cache::Writer::create(path, s));
        Ok(Self {
            file: name,
            chunks,
            ids,
            info,
            window,
            base,
            ahead: None,
            index: 0,
            left: info.requests,
            error: None,
            cached: None,
            cache_writer,
        })
    }

    /// What the scan found.
    pub fn info(&self) -> &TraceInfo {
        &self.info
    }

    /// Heap bytes of the object-id map (the only per-object state).
    pub fn id_map_bytes(&self) -> usize {
        self.ids.heap_bytes()
    }

    /// Whether this replay reads the ids a previous one cached (`trace/id_cache.rs`).
    pub fn reads_cached_ids(&self) -> bool {
        self.cached.is_some()
    }

    /// Writes what the file replay produced to the cache, and puts the cache in place
    /// once the replay is complete. A write error only costs the cache.
    fn tee(&mut self, produced: &[Access]) {
        let Some(w) = self.cache_writer.as_mut() else { return };
        if produced.iter().try_for_each(|a| w.push(a.page as u32)).is_err() || self.error.is_some() {
            self.cache_writer = None;
        } else if self.left == 0 {
            if let Some(w) = self.cache_writer.take() {
                w.finish(Kind::OracleGeneral, self.info.requests, &self.info.facts());
            }
        }
    }

    /// [`Workload::fill`] from the cached ids.
    fn fill_cached(&mut self, out: &mut Vec<Access>, want: usize) -> usize {
        let Some(cached) = self.cached.as_mut() else { return 0 };
        let objects = self.info.objects;
        let mut produced = 0;
        while produced < want {
            let ids = match cached.next_ids() {
                Ok(ids) if !ids.is_empty() => ids,
                outcome => {
                    let why = outcome.err().map_or_else(|| "it ended early".to_string(), |e| e.to_string());
                    self.error = Some(SimError::File {
                        file: id_cache::path_of(Path::new(&self.file)).display().to_string(),
                        at: format!("request {}", self.index),
                        message: format!("cannot read the cached page ids: {why}; delete the file to rebuild it"),
                    });
                    break;
                }
            };
            let k = (ids.len() / 4).min(want - produced);
            let before = out.len();
            out.extend(
                ids[..4 * k]
                    .chunks_exact(4)
                    .map(|b| Access::read(u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))),
            );
            if let Some(bad) = out[before..].iter().position(|a| a.page >= objects) {
                out.truncate(before + bad);
                self.error = Some(SimError::File {
                    file: id_cache::path_of(Path::new(&self.file)).display().to_string(),
                    at: format!("request {}", self.index + bad as u64),
                    message: format!(
                        "a cached page id beyond the trace's {objects} objects; delete the file to rebuild it"
                    ),
                });
                produced += bad;
                break;
            }
            cached.consume(k);
            self.index += k as u64;
            produced += k;
        }
        self.left = if self.error.is_some() { 0 } else { self.left - produced as u64 };
        produced
    }
}

impl Workload for OracleGeneralTrace {
    fn pages(&self) -> u64 {
        self.info.objects
    }

    fn len(&self) -> u64 {
        self.info.requests
    }

    /// If the file cannot be read again or no longer holds what the build-time scan
    /// validated (it was truncated or rewritten in place while in use), the stream ends
    /// after the requests before that point, keeping an error naming the file and the
    /// byte offset for [`Workload::take_error`]: a silently shorter stream would corrupt
    /// results. Replacing the file (a new inode) is harmless: the stream reads the handle
    /// opened at build time.
    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> usize {
        let want = (max as u64).min(self.left) as usize;
        if want == 0 {
            return 0;
        }
        out.reserve(want);
        if self.cached.is_some() {
            return self.fill_cached(out, want);
        }
        let first = out.len();
        let (window, base) = (self.window, self.base);
        let ahead = self.ahead.get_or_insert_with(|| Ahead::new(window, base));
        let changed = |file: &str, at: u64, message: String| SimError::File {
            file: file.to_string(),
            at: format!("offset {at}"),
            message: format!("{message} (the file changed while being replayed)"),
        };
        let mut produced = 0;
        while produced < want {
            let offset = self.chunks.offset;
            let records = match self.chunks.next_records() {
                Ok(r) if !r.is_empty() => r,
                Ok(_) => {
                    self.error = Some(changed(
                        &self.file,
                        offset,
                        format!(
                            "the trace got shorter: it ends here, but held {} bytes when opened",
                            self.info.file_bytes
                        ),
                    ));
                    break;
                }
                Err(e) => {
                    self.error = Some(SimError::File {
                        file: self.file.clone(),
                        at: format!("offset {offset}"),
                        message: format!("read error while replaying the trace: {e}"),
                    });
                    break;
                }
            };
            let mut used = 0;
            for rec in records.chunks_exact(RECORD_BYTES) {
                let index = self.index + used as u64;
                let announced = ahead.take(index);
                if u32::from_le_bytes(field(rec, 12)) == 0 {
                    used += 1;
                    continue;
                }
                let page = match announced {
                    Some(page) => page,
                    None => {
                        let obj = u64::from_le_bytes(field(rec, 4));
                        let Some(page) = self.ids.get(obj) else {
                            let at = offset + used as u64 * RECORD_BYTES as u64;
                            let message = format!("object {obj} was not in the trace when it was opened");
                            self.error = Some(changed(&self.file, at, message));
                            break;
                        };
                        page
                    }
                };
                used += 1;
                ahead.announce(index, i64::from_le_bytes(field(rec, 16)), page);
                out.push(Access::read(page as u64));
                produced += 1;
                if produced == want {
                    break;
                }
            }
            self.index += used as u64;
            self.chunks.consume(used);
            if self.error.is_some() {
                break;
            }
        }
        self.left = if self.error.is_some() { 0 } else { self.left - produced as u64 };
        self.tee(&out[first..]);
        produced
    }

    fn take_error(&mut self) -> Option<SimError> {
        self.error.take()
    }
}

/// A plain reader of `oracleGeneral` records as [`super::PageAccess`]es (object ids as
/// page numbers, all loads), for `tierkit trace info` and `convert`. It skips
/// `obj_size == 0` records like the workload. It does not follow `next_access_vtime`,
/// but detects its [`Convention`] as it reads ([`RecordReader::convention`]) and refuses
/// a pointer that fits neither convention where detection meets it, and a
/// `next_access_vtime` other than -1 or `i64::MAX` that points to the record itself or an
/// earlier one (under the detected convention; under either before one is). Errors name
/// the offset of the bad record, or of the partial record when the length is not a
/// multiple of 24.
pub struct RecordReader {
    file: String,
    chunks: Chunks<File>,
    file_bytes: u64,
    detector: Detector,
}

impl RecordReader {
    /// Opens the file at `path`.
    pub fn open(path: &Path) -> Result<Self, SimError> {
        let file = path.display().to_string();
        let io_err = |source| SimError::Io { file: file.clone(), source };
        let f = File::open(path).map_err(io_err)?;
        let file_bytes = f.metadata().map_err(io_err)?.len();
        let trailing = file_bytes % RECORD_BYTES as u64;
        if trailing != 0 {
            return Err(SimError::File {
                file,
                at: format!("offset {}", file_bytes - trailing),
                message: format!(
                    "truncated: {trailing} trailing bytes (the file is {file_bytes} bytes, not a multiple of the \
                     24-byte oracleGeneral record)"
                ),
            });
        }
        Ok(Self {
            file,
            chunks: Chunks::new(f, CHUNK_RECORDS * RECORD_BYTES),
            file_bytes,
            detector: Detector::default(),
        })
    }

    /// The convention of `next_access_vtime` in the records read so far: the file's once
    /// all are read.
    pub fn convention(&self) -> Convention {
        self.detector.convention()
    }
}

impl super::PageReader for RecordReader {
    fn next_access(&mut self) -> Result<Option<super::PageAccess>, SimError> {
        loop {
            let offset = self.chunks.offset;
            let records = self.chunks.next_records().map_err(|e| SimError::File {
                file: self.file.clone(),
                at: format!("offset {offset}"),
                message: format!("read error: {e}"),
            })?;
            let Some(rec) = records.get(..RECORD_BYTES) else {
                if offset != self.file_bytes {
                    return Err(SimError::File {
                        file: self.file.clone(),
                        at: format!("offset {offset}"),
                        message: format!("the file ended before its {} bytes were read", self.file_bytes),
                    });
                }
                return Ok(None);
            };
            let (obj, size) = (u64::from_le_bytes(field(rec, 4)), u32::from_le_bytes(field(rec, 12)));
            let next = i64::from_le_bytes(field(rec, 16));
            let index = offset / RECORD_BYTES as u64;
            let bad = |at: u64, why: String| SimError::File {
                file: self.file.clone(),
                at: format!("offset {}", at * RECORD_BYTES as u64),
                message: format!("{why}: not an oracleGeneral trace, or a corrupt one"),
            };
            if let Some(why) = check_next_access(next, index, self.detector.convention()) {
                return Err(bad(index, why));
            }
            self.detector.record(index, obj, next).map_err(|(at, why)| bad(at, why))?;
            self.chunks.consume(1);
            if size != 0 {
                return Ok(Some(super::PageAccess::read(obj)));
            }
        }
    }

    fn records_stores(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader returning at most `step` bytes per call, with interruptions.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
        calls: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.calls += 1;
            if self.calls.is_multiple_of(3) {
                return Err(io::Error::from(io::ErrorKind::Interrupted));
            }
            let n = self.step.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    #[test]
    fn record_layout_is_packed_little_endian() {
        let r = Record {
            clock_time: 0x0403_0201,
            obj_id: 0x0c0b_0a09_0807_0605,
            obj_size: 0x100f_0e0d,
            next_access_vtime: 0x1817_1615_1413_1211,
        };
        let b = r.to_bytes();
        assert_eq!(b.to_vec(), (1..=24).collect::<Vec<u8>>());
        assert_eq!(Record::from_bytes(&b), r);
        let none = Record { next_access_vtime: -1, ..r };
        assert_eq!(&none.to_bytes()[16..], &[0xff; 8]);
        assert!(!none.has_next_access());
        assert!(!Record { next_access_vtime: i64::MAX, ..r }.has_next_access());
        assert!(r.has_next_access());
    }

    #[test]
    fn next_access_vtimes_are_one_based() {
        // A B A C B A: A@1 -> 3, B@2 -> 5, A@3 -> 6, the rest never again.
        assert_eq!(next_access_vtimes(&[7, 8, 7, 9, 8, 7]), vec![3, 5, 6, -1, -1, -1]);
        assert_eq!(next_access_vtimes(&[5, 5, 5]), vec![2, 3, -1]);
        assert_eq!(next_access_vtimes(&[]), Vec::<i64>::new());
    }

    #[test]
    fn next_access_check_accepts_exactly_later_requests() {
        use Convention::*;
        let check = check_next_access;
        assert!(check(-1, 0, OneBased).is_none());
        assert!(check(i64::MAX, 5, ZeroBased).is_none());
        assert!(check(2, 0, OneBased).is_none(), "record 0 is request 1; request 2 follows");
        assert!(check(1, 0, OneBased).is_some(), "itself");
        assert!(check(1, 0, ZeroBased).is_none(), "record 1 follows record 0");
        assert!(check(0, 0, ZeroBased).is_some(), "itself");
        assert!(check(0, 0, OneBased).is_some());
        assert!(check(-2, 3, Undetermined).is_some());
        assert!(check(i64::MIN, 3, ZeroBased).is_some());
        assert!(check(5, 4, OneBased).is_some());
        assert!(check(5, 4, ZeroBased).is_none());
        assert!(check(5, 4, Undetermined).is_none(), "fits 0-based");
        assert!(check(4, 4, Absent).is_some(), "fits neither");
        assert!(check(6, 4, OneBased).is_none());
        assert!(check(1 << 40, 4, OneBased).is_none(), "past the end is allowed");
        let e = check(4, 4, ZeroBased).unwrap();
        assert!(e.contains("record 4") && e.contains("0-based index") && e.contains("at least 5"), "{e}");
    }

    /// Feeds (object, next_access_vtime) records to a detector.
    fn detect_records(records: &[(u64, i64)]) -> Result<Detector, (u64, String)> {
        let mut d = Detector::default();
        for (index, &(obj, next)) in (0..).zip(records) {
            d.record(index, obj, next)?;
        }
        Ok(d)
    }

    #[test]
    fn detection_decides_at_the_first_repeat_of_a_pointing_record() {
        // A B A, counted from 1 and from 0: record 0's pointer decides at record 2.
        let d = detect_records(&[(1, 3), (2, -1), (1, -1)]).unwrap();
        assert_eq!((d.convention(), d.decided), (Convention::OneBased, Some((Convention::OneBased, 0))));
        let d = detect_records(&[(1, 2), (2, -1), (1, -1)]).unwrap();
        assert_eq!(d.convention(), Convention::ZeroBased);
        // Once decided, later pointers are the other checks' business.
        assert_eq!(detect_records(&[(1, 2), (1, -1), (2, 9), (2, -1)]).unwrap().convention(), Convention::OneBased);
        // Record 1 (B) repeats without a pointer: nothing decided until A repeats.
        let d = detect_records(&[(1, 4), (2, -1), (2, -1), (1, -1)]).unwrap();
        assert_eq!(d.decided, Some((Convention::OneBased, 0)));
        assert_eq!(detect_records(&[(1, -1), (2, i64::MAX), (1, -1)]).unwrap().convention(), Convention::Absent);
        assert_eq!(detect_records(&[(1, 50), (2, 60)]).unwrap().convention(), Convention::Undetermined);
        assert_eq!(detect_records(&[]).unwrap().convention(), Convention::Absent);

        // A pointer to the request after the next one, or before it, fits neither.
        for pointer in [2, 5] {
            let (at, e) = detect_records(&[(7, -1), (1, pointer), (2, -1), (1, -1), (1, -1)]).err().unwrap();
            assert_eq!(at, 1);
            assert!(
                e.contains(&format!("record 1: next_access_vtime {pointer}"))
                    && e.contains("record 3")
                    && e.contains("expected 4 (1-based")
                    && e.contains("or 3 (0-based)"),
                "{e}"
            );
        }
    }

    #[test]
    fn chunks_reassemble_records_split_across_reads() {
        let data: Vec<u8> = (0..24 * 10).map(|i| i as u8).collect();
        for step in [1, 5, 23, 24, 25, 1000] {
            for buffer in [24, 48, 100, 1 << 12] {
                let mut c = Chunks::new(Trickle { data: &data, step, calls: 0 }, buffer);
                let mut got = Vec::new();
                loop {
                    let r = c.next_records().unwrap();
                    if r.is_empty() {
                        break;
                    }
                    let n = r.len() / RECORD_BYTES;
                    got.extend_from_slice(r);
                    c.consume(n);
                }
                assert_eq!(got, data, "step {step} buffer {buffer}");
                assert_eq!(c.offset, data.len() as u64);
                assert_eq!(c.partial(), 0);
            }
        }
    }

    fn drain(wl: &mut OracleGeneralTrace, chunk: usize) -> Vec<u64> {
        let (mut all, mut buf) = (Vec::new(), Vec::new());
        loop {
            buf.clear();
            if wl.fill(&mut buf, chunk) == 0 {
                return all;
            }
            all.extend(buf.iter().map(|a| a.page));
        }
    }

    fn temp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("tierkit-og-unit-{}-{name}.bin", std::process::id()))
    }

    #[test]
    fn following_next_access_matches_lookups_for_any_window() {
        let path = temp("window");
        let mut rng = tierkit_core::dist::Rng::new(5);
        for case in 0..40 {
            let n = 1 + rng.below(3000) as usize;
            let objects = 1 + rng.below(if case % 2 == 0 { 10 } else { 2000 });
            let ids: Vec<u64> = (0..n).map(|_| rng.below(objects) * 77).collect();
            // Some 0-size records, which are skipped but keep their place.
            let next = next_access_vtimes(&ids);
            let records: Vec<u8> = ids
                .iter()
                .zip(&next)
                .map(|(&obj_id, &next_access_vtime)| Record {
                    clock_time: 0,
                    obj_id,
                    obj_size: if rng.below(10) == 0 { 0 } else { 1 },
                    next_access_vtime,
                })
                .flat_map(|r| r.to_bytes())
                .collect();
            let all: Vec<Record> =
                records.chunks_exact(24).map(|c| Record::from_bytes(c.try_into().unwrap())).collect();
            let kept: Vec<u64> = all.iter().filter(|r| r.obj_size != 0).map(|r| r.obj_id).collect();
            // Followed: kept records whose previous record of the object is kept too.
            let mut prev_kept = HashMap::new();
            let followed = all
                .iter()
                .filter(|r| prev_kept.insert(r.obj_id, r.obj_size != 0) == Some(true) && r.obj_size != 0)
                .count() as u64;
            if kept.is_empty() {
                continue;
            }
            let mut map = HashMap::new();
            let want: Vec<u64> = kept
                .iter()
                .map(|id| {
                    let fresh = map.len() as u64;
                    *map.entry(*id).or_insert(fresh)
                })
                .collect();
            // The same pointers counted from 0.
            let zero_based: Vec<u8> = all
                .iter()
                .flat_map(|r| {
                    let shift = i64::from(r.has_next_access());
                    Record { next_access_vtime: r.next_access_vtime - shift, ..*r }.to_bytes()
                })
                .collect();
            let repeats = map.len() < n;
            for (bytes, convention) in [(&records, Convention::OneBased), (&zero_based, Convention::ZeroBased)] {
                std::fs::write(&path, bytes).unwrap();
                for window in [1u64, 2, 16, 1024, LOOKAHEAD] {
                    let mut wl = OracleGeneralTrace::open_with(&path, u64::MAX, window, true).unwrap();
                    assert_eq!(wl.info().objects, map.len() as u64);
                    let convention = if repeats { convention } else { Convention::Absent };
                    assert_eq!(wl.info().convention, Some(convention), "case {case}");
                    assert_eq!(drain(&mut wl, 1 + case), want, "case {case} window {window} {convention}");
                    if window >= n as u64 {
                        assert_eq!(wl.info().followed, followed, "case {case} window {window} {convention}");
                    }
                }
            }
        }
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn streaming_follows_a_smaller_window_than_the_scan() {
        let path = temp("small-window");
        let mut rng = tierkit_core::dist::Rng::new(8);
        // Every 1000th request is one of 7 objects, each repeated 7000 records later:
        // followed by the scan (2^16 slots), looked up while streaming (2^12).
        let ids: Vec<u64> =
            (0..50_000).map(|i| if i % 1000 == 0 { 1_000_000 + (i / 1000) % 7 } else { rng.below(10) }).collect();
        write_oracle_general(&path, ids.iter().copied()).unwrap();
        let mut wl = OracleGeneralTrace::open(&path, u64::MAX, NextAccess::Check).unwrap();
        assert_eq!(wl.window, MIN_STREAM_WINDOW, "{} objects", wl.info().objects);
        assert_eq!(wl.info().followed, wl.info().requests - wl.info().objects, "the scan followed everything");
        let mut map = HashMap::new();
        let want: Vec<u64> = ids
            .iter()
            .map(|id| {
                let fresh = map.len() as u64;
                *map.entry(*id).or_insert(fresh)
            })
            .collect();
        assert_eq!(drain(&mut wl, 777), want);
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn a_pointer_to_another_object_is_an_error() {
        let path = temp("mismatch");
        let r = |obj_id, next_access_vtime| Record { clock_time: 0, obj_id, obj_size: 1, next_access_vtime };
        // Records 0 and 1 (object 5) show 1-based pointers. Record 2 (object 7) says
        // object 7 is next requested by request 5 (record 4), which requests object 9: it
        // would fit 0-based (record 5 requests object 7), but record 0 does not.
        let records = [r(5, 2), r(5, -1), r(7, 5), r(8, -1), r(9, -1), r(7, -1)];
        let bytes: Vec<u8> = records.iter().flat_map(|r| r.to_bytes()).collect();
        std::fs::write(&path, bytes).unwrap();
        let e = OracleGeneralTrace::open(&path, u64::MAX, NextAccess::Check).err().unwrap().to_string();
        assert!(
            e.contains("offset 96") && e.contains("record 4") && e.contains("object 7") && e.contains("record 0 shows"),
            "{e}"
        );
        // Beyond the window the pointer is not followed, so not checked.
        assert_eq!(OracleGeneralTrace::open_with(&path, u64::MAX, 1, true).unwrap().info().objects, 4);
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn chunks_report_a_partial_tail() {
        let data = [1u8; 24 + 7];
        let mut c = Chunks::new(Trickle { data: &data, step: 4, calls: 0 }, 64);
        assert_eq!(c.next_records().unwrap().len(), 24);
        c.consume(1);
        assert!(c.next_records().unwrap().is_empty());
        assert_eq!(c.partial(), 7);
    }
}
