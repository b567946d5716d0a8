//! tierkit's native trace format: page-number deltas as zigzag varints, zstd-compressed,
//! behind a versioned header; version 2 adds the trace's own clock, version 4 an MLP class
//! per record.
//!
//! # Layout (versions 2 and 4, written)
//!
//! A 48-byte little-endian header:
//!
//! | offset | type | field |
//! |---|---|---|
//! | 0 | `[u8; 8]` | magic `TKTRACE\0` |
//! | 8 | `u16` | format version: 4 when flag bit 2 is set, else 2 |
//! | 10 | `u16` | flags: bit 0 = each record carries a store flag; bit 1 = each record carries an instruction gap; bit 2 (version 4) = each record carries an MLP class; other bits must be 0 |
//! | 12 | `u32` | page size in bytes (4096) |
//! | 16 | `u64` | accesses |
//! | 24 | `u64` | distinct pages |
//! | 32 | `u64` | instructions: the sum of the records' gaps (0 without flag bit 1) |
//! | 40 | `u64` | `sample_every`: the trace holds one in this many memory-level accesses (at least 1) |
//!
//! The counts are consistent: distinct pages are at most accesses, and 0 only with 0
//! accesses.
//!
//! Then the payload: one or more zstd frames (RFC 8878) back to back, each holding up to
//! [`BLOCK_ACCESSES`] records and, as written, a content checksum. A record is the
//! difference between its page number and the previous record's (the first: from 0), as
//! a wrapping `i64` zigzag-encoded into an unsigned LEB128 varint (at most 10 bytes);
//! then, when flag bit 1 is set, the instructions retired since the previous record (the
//! first: since recording started) as an unsigned LEB128 varint; then, when flag bit 0 is
//! set, one byte: 0 for a load, 1 for a store; then, when flag bit 2 is set, one byte:
//! the access's [`MlpClass`], 0 default (the application's `app.mlp`), 1 dependent, 2
//! streaming. Sequential and looping page streams thus cost about a byte per access
//! before compression.
//!
//! The class is a byte of its own, last, rather than folded into the store flag's byte:
//! a record without it is byte for byte what it was, each byte keeps one meaning and one
//! check (0 or 1; 0 to 2), and a class is there with or without store flags. Its cost
//! after compression is small, as classes come in the same runs as the page deltas
//! (docs/TRACES.md measures it).
//!
//! # Versions
//!
//! Version 1: the first 32 bytes of the version 2 header, with version 1 and only flag
//! bit 0 defined: no clock, every memory-level access kept. Still read.
//!
//! Version 4 is version 2 with flag bit 2 defined; it is written only for a trace that
//! carries classes, so every other trace stays version 2 and readable by older readers,
//! which refuse a version 4 file by its version instead of misreading it. Version 3 is
//! not used: a reverted change wrote it, with bit 2 meaning a wall clock, and it stays
//! refused so that such a file is never read as classes.
//!
//! # Reading
//!
//! [`NativeReader`] decodes frame by frame through a fixed buffer, so memory does not
//! grow with the trace, except for the distinct-page check below. Errors name the byte
//! offset in the file: a wrong magic, an unknown version or flags, a page size other
//! than 4096, header counts that contradict each other (offset 24), an instruction total
//! without flag bit 1 (offset 32), a sample rate of 0 (offset 40), a corrupt or truncated
//! zstd frame or one whose content checksum does not match (the offset where that frame
//! starts), a bad record (a store flag other than 0 or 1, a class other than 0 to 2, a
//! cut or overlong varint: the offset of its frame and its offset in the frame's
//! decompressed bytes), or a payload holding other counts than the header says.
//!
//! Whoever reads a whole trace keeps a map of its distinct pages (the replay numbers
//! them; `trace info` and conversion count them), so opening refuses a header whose page
//! count needs a map larger than the memory available (at offset 24), before reading the
//! payload.
//!
//! The header counts are verified against the payload. Accesses: always (a cut payload
//! ends early, extra records are refused where they start). Instructions: always (gaps
//! summing past the total are refused at the record that passes it, a smaller sum at the
//! end). Distinct pages: when the header announces at most [`PAGES_CHECK_MAX`] of them,
//! with a set of the pages seen (about 16–32 bytes per page, so at most 128 MiB), refused
//! as soon as the set holds more pages than announced and at the end if it holds fewer;
//! larger traces are not checked for this count (the set would cost as much as the
//! replay's own page map), nor is a trace whose reader was told that a pass over the
//! whole file already checked it ([`PageReader::skip_whole_trace_checks`]).
//!
//! Records are parsed straight from the decoded buffer while it holds the longest
//! record a trace can have, and byte by byte otherwise; a record the fast path finds
//! wrong is read again byte by byte, which words the error.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::mpsc::{sync_channel, SyncSender};
use std::thread::JoinHandle;

use tierkit_core::sketches::PageTable;
use zstd::zstd_safe::CParameter;

use super::{PageAccess, PageReader, TraceClock};
use crate::budget;
use crate::error::SimError;
use crate::model::MlpClass;

/// First 8 bytes of a native trace.
pub const MAGIC: [u8; 8] = *b"TKTRACE\0";

/// The newest format version this module reads; it writes it only for traces whose
/// records carry classes ([`FLAG_CLASSES`]), and [`VERSION_WRITTEN`] otherwise.
pub const VERSION: u16 = 4;

/// The version written for traces without classes.
pub const VERSION_WRITTEN: u16 = 2;

/// Header bytes of versions 2 and 4.
pub const HEADER_BYTES: usize = 48;

/// Header bytes of a version 1 file.
pub const HEADER_BYTES_V1: usize = 32;

/// Flag bit: each record carries a store flag byte.
pub const FLAG_WRITES: u16 = 1;

/// Flag bit (version 2): each record carries an instruction gap.
pub const FLAG_CLOCK: u16 = 2;

/// Flag bit (version 4): each record carries an MLP class byte.
pub const FLAG_CLASSES: u16 = 4;

/// Page size the header must name.
pub const PAGE_BYTES: u32 = 4096;

/// Largest distinct-page count [`NativeReader`] verifies (4 Mi pages, a 16 GiB
/// footprint).
pub const PAGES_CHECK_MAX: u64 = 1 << 22;

/// Records per zstd frame written.
pub const BLOCK_ACCESSES: usize = 1 << 20;

/// The zstd level frames are written at (libzstd's; see docs/TRACES.md for what it
/// gains over faster levels).
pub const ZSTD_LEVEL: i32 = 19;

/// What a native trace's header holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Format version of the file.
    pub version: u16,
    /// Whether records carry store flags.
    pub writes: bool,
    /// Whether records carry MLP classes (version 4).
    pub classes: bool,
    /// Accesses in the trace.
    pub accesses: u64,
    /// Distinct pages among them.
    pub pages: u64,
    /// Instructions retired over the trace, when records carry instruction gaps.
    pub instructions: Option<u64>,
    /// One in this many memory-level accesses is in the trace (1 in version 1).
    pub sample_every: u64,
}

impl Header {
    /// The trace's clock, when its records carry instruction gaps.
    pub fn clock(&self) -> Option<TraceClock> {
        self.instructions.map(|instructions| TraceClock { instructions, sample_every: self.sample_every })
    }

    /// Bytes of the header of a file of `version`.
    fn bytes_of(version: u16) -> usize {
        if version == 1 {
            HEADER_BYTES_V1
        } else {
            HEADER_BYTES
        }
    }

    /// The header as written (versions 2 and 4).
    fn to_bytes(self) -> [u8; HEADER_BYTES] {
        let flags = if self.writes { FLAG_WRITES } else { 0 }
            | if self.instructions.is_some() { FLAG_CLOCK } else { 0 }
            | if self.classes { FLAG_CLASSES } else { 0 };
        let mut b = [0u8; HEADER_BYTES];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..10].copy_from_slice(&self.version.to_le_bytes());
        b[10..12].copy_from_slice(&flags.to_le_bytes());
        b[12..16].copy_from_slice(&PAGE_BYTES.to_le_bytes());
        b[16..24].copy_from_slice(&self.accesses.to_le_bytes());
        b[24..32].copy_from_slice(&self.pages.to_le_bytes());
        b[32..40].copy_from_slice(&self.instructions.unwrap_or(0).to_le_bytes());
        b[40..48].copy_from_slice(&self.sample_every.to_le_bytes());
        b
    }

    /// Decodes and checks a header of version 1, 2 or 4 (`b` holds at least the header's
    /// bytes when the file does); errors are `(offset, what is wrong)`.
    fn parse(b: &[u8]) -> Result<Self, (u64, String)> {
        if b.len() < 8 || b[0..8] != MAGIC {
            return Err((0, format!("not a tierkit native trace: expected the magic {MAGIC:?}")));
        }
        if b.len() < 10 {
            return Err((b.len() as u64, format!("truncated header: {} bytes, the version is not there", b.len())));
        }
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or_default());
        let version = u16_at(8);
        if !matches!(version, 1 | 2 | VERSION) {
            return Err((
                8,
                format!("unsupported native trace version {version} (this tierkit reads versions 1, 2 and {VERSION})"),
            ));
        }
        let need = Self::bytes_of(version);
        if b.len() < need {
            return Err((
                b.len() as u64,
                format!("truncated header: {} of the {need} bytes of a version {version} header", b.len()),
            ));
        }
        let flags = u16_at(10);
        let known = match version {
            1 => FLAG_WRITES,
            2 => FLAG_WRITES | FLAG_CLOCK,
            _ => FLAG_WRITES | FLAG_CLOCK | FLAG_CLASSES,
        };
        if flags & !known != 0 {
            return Err((10, format!("unknown flags {flags:#06x} (version {version} defines only bits {known:#b})")));
        }
        let page = u32::from_le_bytes([b[12], b[13], b[14], b[15]]);
        if page != PAGE_BYTES {
            return Err((12, format!("page size {page}, expected {PAGE_BYTES}")));
        }
        let (accesses, pages) = (u64_at(16), u64_at(24));
        if pages > accesses || (pages == 0) != (accesses == 0) {
            return Err((24, format!("corrupt header: {pages} distinct pages cannot hold {accesses} accesses")));
        }
        let (mut instructions, mut sample_every) = (None, 1);
        if version >= 2 {
            let total = u64_at(32);
            if flags & FLAG_CLOCK != 0 {
                instructions = Some(total);
            } else if total != 0 {
                return Err((32, format!("corrupt header: {total} instructions but no instruction gaps (flag bit 1)")));
            }
            sample_every = u64_at(40);
            if sample_every == 0 {
                return Err((40, "corrupt header: sample rate 0 (one in sample_every accesses; at least 1)".into()));
            }
        }
        Ok(Self {
            version,
            writes: flags & FLAG_WRITES != 0,
            classes: flags & FLAG_CLASSES != 0,
            accesses,
            pages,
            instructions,
            sample_every,
        })
    }
}

fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

fn unzigzag(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

/// Bytes a record takes at most: two 10-byte varints (page delta, instruction gap), a
/// store flag and a class.
const MAX_RECORD: usize = 22;

/// The varint at the start of `b` and its length; `None` for one longer than 64 bits or
/// not ended within `b`.
#[inline(always)]
fn varint_in(b: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &x) in b.iter().take(10).enumerate() {
        if i == 9 && x > 1 {
            return None;
        }
        v |= u64::from(x & 0x7f) << (7 * i);
        if x & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// What each record of a native trace carries besides its page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fields {
    /// A store flag (flag bit 0).
    pub writes: bool,
    /// An instruction gap (flag bit 1), the trace holding one in this many memory-level
    /// accesses (at least 1); `None`: no clock.
    pub sample_every: Option<u64>,
    /// An MLP class (flag bit 2, version 4).
    pub classes: bool,
}

/// Writes a native trace (version 4 with classes, else 2), one frame per [`BLOCK_ACCESSES`]
/// accesses, compressed at [`ZSTD_LEVEL`] by a thread of its own while the next block
/// fills; the header is written last (by [`NativeWriter::finish`]).
pub struct NativeWriter {
    file: String,
    /// Full blocks to the compressing thread, which owns the file until `finish`.
    blocks: Option<SyncSender<Vec<u8>>>,
    compressor: Option<JoinHandle<io::Result<BufWriter<File>>>>,
    writes: bool,
    /// Whether records carry instruction gaps.
    clock: bool,
    sample_every: u64,
    /// Whether records carry MLP classes.
    classes: bool,
    block: Vec<u8>,
    in_block: usize,
    prev: u64,
    accesses: u64,
    instructions: u64,
    seen: PageTable,
}

/// Compresses each block received into a checksummed zstd frame appended to `out`.
fn compress_blocks(
    blocks: std::sync::mpsc::Receiver<Vec<u8>>,
    mut out: BufWriter<File>,
) -> io::Result<BufWriter<File>> {
    let mut z = zstd::bulk::Compressor::new(ZSTD_LEVEL)?;
    z.set_parameter(CParameter::ChecksumFlag(true))?;
    for block in blocks {
        out.write_all(&z.compress(&block)?)?;
    }
    Ok(out)
}

impl NativeWriter {
    /// Creates `path` without a clock; `writes` records store flags.
    pub fn create(path: impl AsRef<Path>, writes: bool) -> Result<Self, SimError> {
        Self::with_fields(path, Fields { writes, ..Fields::default() })
    }

    /// Creates `path` with a clock: each record keeps its
    /// [`PageAccess::instructions`], and the header the total and `sample_every` (the
    /// trace holds one in `sample_every` memory-level accesses; at least 1).
    pub fn with_clock(path: impl AsRef<Path>, writes: bool, sample_every: u64) -> Result<Self, SimError> {
        Self::with_fields(path, Fields { writes, sample_every: Some(sample_every), classes: false })
    }

    /// Creates `path` for records carrying `fields`: with a class, each record keeps the
    /// class given to [`NativeWriter::push_classed`].
    pub fn with_fields(path: impl AsRef<Path>, fields: Fields) -> Result<Self, SimError> {
        let path = path.as_ref();
        if fields.sample_every == Some(0) {
            return Err(SimError::bad_option(
                format!("native trace {}", path.display()),
                "sample_every",
                "0",
                "at least 1 (1 keeps every access)",
            ));
        }
        let file = path.display().to_string();
        let io_err = |source| SimError::Io { file: file.clone(), source };
        let mut out = BufWriter::with_capacity(1 << 20, File::create(path).map_err(io_err)?);
        out.write_all(&[0u8; HEADER_BYTES]).map_err(io_err)?;
        let (tx, rx) = sync_channel(1);
        let compressor = std::thread::Builder::new()
            .name("tkt-zstd".into())
            .spawn(move || compress_blocks(rx, out))
            .map_err(io_err)?;
        Ok(Self {
            file,
            blocks: Some(tx),
            compressor: Some(compressor),
            writes: fields.writes,
            clock: fields.sample_every.is_some(),
            sample_every: fields.sample_every.unwrap_or(1),
            classes: fields.classes,
            block: Vec::new(),
            in_block: 0,
            prev: 0,
            accesses: 0,
            instructions: 0,
            seen: PageTable::new(),
        })
    }

    fn io_err(&self, source: io::Error) -> SimError {
        SimError::Io { file: self.file.clone(), source }
    }

    /// Appends one access (its `instructions` kept when the trace has a clock, and
    /// ignored otherwise), of the default class when records carry classes.
    pub fn push(&mut self, a: PageAccess) -> Result<(), SimError> {
        self.push_classed(a, MlpClass::Default)
    }

    /// Appends one access of MLP class `class` (kept when records carry classes, and
    /// ignored otherwise).
    pub fn push_classed(&mut self, a: PageAccess, class: MlpClass) -> Result<(), SimError> {
        put_varint(&mut self.block, zigzag(a.page.wrapping_sub(self.prev) as i64));
        if self.clock {
            self.instructions = self.instructions.checked_add(a.instructions).ok_or_else(|| SimError::File {
                file: self.file.clone(),
                at: format!("access {}", self.accesses),
                message: "the instruction total passes 2^64".into(),
            })?;
            put_varint(&mut self.block, a.instructions);
        }
        if self.writes {
            self.block.push(a.write as u8);
        }
        if self.classes {
            self.block.push(class as u8);
        }
        self.prev = a.page;
        self.accesses += 1;
        self.seen.entry(a.page, 0);
        self.in_block += 1;
        if self.in_block == BLOCK_ACCESSES {
            self.flush_block()?;
        }
        Ok(())
    }

    /// Hands the block to the compressing thread; if that thread has stopped, its
    /// error.
    fn flush_block(&mut self) -> Result<(), SimError> {
        if self.in_block > 0 {
            let block = std::mem::take(&mut self.block);
            self.in_block = 0;
            let sent = self.blocks.as_ref().is_some_and(|tx| tx.send(block).is_ok());
            if !sent {
                return Err(self.join().err().unwrap_or_else(|| self.io_err(io::Error::other("compressor stopped"))));
            }
        }
        Ok(())
    }

    /// Ends the compressing thread; returns the file.
    fn join(&mut self) -> Result<BufWriter<File>, SimError> {
        self.blocks = None;
        let handle = self.compressor.take().ok_or_else(|| self.io_err(io::Error::other("compressor stopped")))?;
        match handle.join() {
            Ok(r) => r.map_err(|e| self.io_err(e)),
            Err(_) => Err(self.io_err(io::Error::other("the compressing thread panicked"))),
        }
    }

    /// Writes the last frame and the header; returns the header.
    pub fn finish(mut self) -> Result<Header, SimError> {
        self.flush_block()?;
        let mut out = self.join()?;
        let header = Header {
            version: if self.classes { VERSION } else { VERSION_WRITTEN },
            writes: self.writes,
            classes: self.classes,
            accesses: self.accesses,
            pages: self.seen.len() as u64,
            instructions: self.clock.then_some(self.instructions),
            sample_every: self.sample_every,
        };
        let r = out
            .flush()
            .and_then(|()| out.get_mut().seek(SeekFrom::Start(0)))
            .and_then(|_| out.get_mut().write_all(&header.to_bytes()));
        r.map_err(|e| self.io_err(e))?;
        Ok(header)
    }
}

/// Counts the bytes read from the file, so errors name offsets.
struct Counted {
    src: BufReader<File>,
    pos: u64,
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.src.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl BufRead for Counted {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.src.fill_buf()
    }

    fn consume(&mut self, n: usize) {
        self.src.consume(n);
        self.pos += n as u64;
    }
}

/// One zstd frame being decoded (libzstd, which checks the frame's content checksum).
type Frame = zstd::stream::read::Decoder<'static, Counted>;

/// A streaming reader of native traces (versions 1, 2 and 4).
pub struct NativeReader {
    file: String,
    header: Header,
    /// The file between frames.
    src: Option<Counted>,
    frame: Option<Frame>,
    /// File offset where the current frame starts.
    frame_start: u64,
    /// Decompressed bytes of the current frame before `buf[0]`.
    frame_pos: u64,
    buf: Vec<u8>,
    at: usize,
    end: usize,
    prev: u64,
    read: u64,
    /// Sum of the instruction gaps read.
    instructions: u64,
    /// Decompressed byte of the current frame where the record being read starts.
    record_at: u64,
    /// The distinct pages read, when the header's count is checked.
    seen: Option<PageTable>,
}

impl NativeReader {
    /// Opens the file at `path` and checks its header.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, SimError> {
        let file = path.as_ref().display().to_string();
        let io_err = |source| SimError::Io { file: file.clone(), source };
        let f = File::open(path.as_ref()).map_err(io_err)?;
        let mut src = Counted { src: BufReader::with_capacity(1 << 16, f), pos: 0 };
        let mut head = Vec::with_capacity(HEADER_BYTES);
        (&mut src).take(HEADER_BYTES_V1 as u64).read_to_end(&mut head).map_err(io_err)?;
        if head.len() == HEADER_BYTES_V1 && u16::from_le_bytes([head[8], head[9]]) != 1 {
            (&mut src).take((HEADER_BYTES - HEADER_BYTES_V1) as u64).read_to_end(&mut head).map_err(io_err)?;
        }
        let header = Header::parse(&head).map_err(|(at, message)| SimError::File {
            file: file.clone(),
            at: format!("offset {at}"),
            message,
        })?;
        // Counts past 2^58 are sized as 2^58 (an 8 EiB map), which no machine holds either.
        let map = PageTable::heap_bytes_for(header.pages.min(1 << 58) as usize);
        let input = || format!("{file}: offset 24: header of {} distinct pages", header.pages);
        budget::check(map as u128, input, "the map of them that reading keeps")?;
        Ok(Self {
            file,
            header,
            src: Some(src),
            frame: None,
            frame_start: Header::bytes_of(header.version) as u64,
            frame_pos: 0,
            buf: vec![0; 1 << 16],
            at: 0,
            end: 0,
            prev: 0,
            read: 0,
            instructions: 0,
            record_at: 0,
            seen: (header.pages <= PAGES_CHECK_MAX).then(PageTable::new),
        })
    }

    /// The header.
    pub fn header(&self) -> Header {
        self.header
    }

    fn error(&self, at: u64, message: String) -> SimError {
        SimError::File { file: self.file.clone(), at: format!("offset {at}"), message }
    }

    /// Refills the buffer from the payload, moving to the next frame as one ends;
    /// false at the end of the payload.
    fn refill(&mut self) -> Result<bool, SimError> {
        self.frame_pos += self.at as u64;
        self.at = 0;
        self.end = 0;
        loop {
            if let Some(frame) = self.frame.as_mut() {
                match frame.read(&mut self.buf) {
                    Ok(0) => {
                        let Some(frame) = self.frame.take() else { unreachable!() };
                        let src = frame.finish();
                        self.frame_start = src.pos;
                        self.src = Some(src);
                        self.frame_pos = 0;
                    }
                    Ok(n) => {
                        self.end = n;
                        return Ok(true);
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        let start = self.frame_start;
                        return Err(self.error(start, format!("corrupt or truncated zstd frame starting here: {e}")));
                    }
                }
            }
            let Some(mut src) = self.src.take() else { return Ok(false) };
            let more = src.src.fill_buf().map_err(|e| self.error(src.pos, format!("read error: {e}")))?;
            if more.is_empty() {
                self.src = Some(src);
                return Ok(false);
            }
            let start = src.pos;
            self.frame_start = start;
            match Frame::with_buffer(src) {
                Ok(d) => self.frame = Some(d.single_frame()),
                Err(e) => return Err(self.error(start, format!("cannot start a zstd decoder: {e}"))),
            }
        }
    }

    /// The next payload byte, if any.
    #[inline]
    fn byte(&mut self) -> Result<Option<u8>, SimError> {
        if self.at == self.end && !self.refill()? {
            return Ok(None);
        }
        let b = self.buf[self.at];
        self.at += 1;
        Ok(Some(b))
    }

    /// The rest of the varint whose first byte is `first`; `what` names it in errors.
    fn varint(&mut self, first: u8, what: &str) -> Result<u64, SimError> {
        let mut v = (first & 0x7f) as u64;
        let mut b = first;
        let mut shift = 7;
        while b & 0x80 != 0 {
            b = match self.byte()? {
                Some(b) => b,
                None => return Err(self.record_error(&format!("the payload ends inside the {what} varint"))),
            };
            if shift == 63 && b > 1 {
                return Err(self.record_error(&format!("{what} varint longer than 64 bits")));
            }
            v |= ((b & 0x7f) as u64) << shift;
            shift += 7;
        }
        Ok(v)
    }

    /// The next record read straight from the buffer, when the buffer holds the
    /// longest record a trace can have and the record is well formed; otherwise `None`,
    /// with nothing consumed, and [`NativeReader::next_checked`] reads it byte by byte
    /// (which also words whatever is wrong with it).
    #[inline(always)]
    fn next_in_buffer(&mut self) -> Option<(PageAccess, MlpClass)> {
        let bytes = self.buf.get(self.at..self.end).filter(|b| b.len() >= MAX_RECORD)?;
        if self.read == self.header.accesses {
            return None;
        }
        let (delta, mut n) = varint_in(bytes)?;
        let (instructions, sum) = match self.header.instructions {
            Some(total) => {
                let (gap, k) = varint_in(&bytes[n..])?;
                n += k;
                (gap, self.instructions.checked_add(gap).filter(|&s| s <= total)?)
            }
            None => (0, self.instructions),
        };
        let write = self.header.writes && {
            n += 1;
            match bytes[n - 1] {
                0 => false,
                1 => true,
                _ => return None,
            }
        };
        let class = if self.header.classes {
            n += 1;
            MlpClass::from_code(bytes[n - 1])?
        } else {
            MlpClass::Default
        };
        let page = self.prev.wrapping_add(unzigzag(delta) as u64);
        if let Some(seen) = &mut self.seen {
            seen.entry(page, 0); // a repeated insert is harmless if the checked path rereads it
            if seen.len() as u64 > self.header.pages {
                return None;
            }
        }
        self.record_at = self.frame_pos + self.at as u64;
        self.at += n;
        self.instructions = sum;
        self.prev = page;
        self.read += 1;
        Some((PageAccess { page, write, instructions }, class))
    }

    /// The next record read byte by byte, checking each field and wording what is wrong
    /// (the path for a record that does not lie whole in the buffer, or that
    /// [`NativeReader::next_in_buffer`] refused).
    fn next_checked(&mut self) -> Result<Option<(PageAccess, MlpClass)>, SimError> {
        let Some(first) = self.byte()? else {
            self.at_end()?;
            return Ok(None);
        };
        self.record_at = self.frame_pos + self.at as u64 - 1;
        if self.read == self.header.accesses {
            return Err(
                self.record_error(&format!("more records than the {} the header announces", self.header.accesses))
            );
        }
        let page = self.prev.wrapping_add(unzigzag(self.varint(first, "page delta")?) as u64);
        let instructions = match self.header.instructions {
            Some(total) => {
                let Some(b) = self.byte()? else {
                    return Err(self.record_error("the payload ends before the record's instruction gap"));
                };
                let gap = self.varint(b, "instruction gap")?;
                match self.instructions.checked_add(gap).filter(|&s| s <= total) {
                    Some(s) => self.instructions = s,
                    None => {
                        return Err(self.record_error(&format!(
                            "corrupt: instruction gap {gap} takes the sum past the {total} instructions \
                             the header announces"
                        )))
                    }
                }
                gap
            }
            None => 0,
        };
        let write = if self.header.writes {
            match self.byte()? {
                Some(0) => false,
                Some(1) => true,
                Some(x) => return Err(self.record_error(&format!("store flag {x}, expected 0 or 1"))),
                None => return Err(self.record_error("the payload ends before the record's store flag")),
            }
        } else {
            false
        };
        let class = if self.header.classes {
            match self.byte()? {
                Some(x) => MlpClass::from_code(x).ok_or_else(|| {
                    self.record_error(&format!("MLP class {x}, expected 0 (default), 1 (dependent) or 2 (streaming)"))
                })?,
                None => return Err(self.record_error("the payload ends before the record's MLP class")),
            }
        } else {
            MlpClass::Default
        };
        if let Some(seen) = &mut self.seen {
            seen.entry(page, 0);
            if seen.len() as u64 > self.header.pages {
                return Err(self.record_error(&format!(
                    "corrupt: page {page} is one more distinct page than the {} the header announces",
                    self.header.pages
                )));
            }
        }
        self.prev = page;
        self.read += 1;
        Ok(Some((PageAccess { page, write, instructions }, class)))
    }

    fn record_error(&self, what: &str) -> SimError {
        self.error(
            self.frame_start,
            format!("record {} (byte {} of the frame starting here, decompressed): {what}", self.read, self.record_at),
        )
    }

    /// The checks at the end of the payload.
    fn at_end(&self) -> Result<(), SimError> {
        let at = self.src.as_ref().map_or(self.frame_start, |s| s.pos);
        if self.read != self.header.accesses {
            return Err(self.error(
                at,
                format!(
                    "truncated: the header announces {} accesses, the payload ends after {}",
                    self.header.accesses, self.read
                ),
            ));
        }
        if let Some(total) = self.header.instructions.filter(|&t| t != self.instructions) {
            return Err(self.error(
                at,
                format!(
                    "corrupt: the header announces {total} instructions, the {} records' gaps sum to {}",
                    self.read, self.instructions
                ),
            ));
        }
        if let Some(seen) = self.seen.as_ref().filter(|s| s.len() as u64 != self.header.pages) {
            return Err(self.error(
                at,
                format!(
                    "corrupt: the header announces {} distinct pages, the payload's {} accesses touch {}",
                    self.header.pages,
                    self.read,
                    seen.len()
                ),
            ));
        }
        Ok(())
    }
}

impl PageReader for NativeReader {
    fn next_access(&mut self) -> Result<Option<PageAccess>, SimError> {
        Ok(self.next_classed()?.map(|(a, _)| a))
    }

    fn next_classed(&mut self) -> Result<Option<(PageAccess, MlpClass)>, SimError> {
        match self.next_in_buffer() {
            Some(record) => Ok(Some(record)),
            None => self.next_checked(),
        }
    }

    fn records_stores(&self) -> bool {
        self.header.writes
    }

    fn skip_whole_trace_checks(&mut self) {
        self.seen = None;
    }

    fn next_classed_batch(&mut self, out: &mut Vec<(PageAccess, MlpClass)>, max: usize) -> Result<(), SimError> {
        for _ in 0..max {
            let record = match self.next_in_buffer() {
                Some(r) => r,
                None => match self.next_checked()? {
                    Some(r) => r,
                    None => break,
                },
            };
            out.push(record);
        }
        Ok(())
    }

    fn carries_classes(&self) -> bool {
        self.header.classes
    }

    fn clock(&self) -> Option<TraceClock> {
        self.header.clock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_round_trips_extremes() {
        for d in [0i64, 1, -1, 63, -64, i64::MAX, i64::MIN, 12345, -98765] {
            assert_eq!(unzigzag(zigzag(d)), d);
        }
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
        let mut v = Vec::new();
        put_varint(&mut v, u64::MAX);
        assert_eq!(v.len(), 10);
        assert_eq!(v[9], 1);
    }

    /// Writes `pages` as a native trace at a fresh path, then returns the file's bytes.
    fn written(name: &str, pages: &[u64]) -> (std::path::PathBuf, Vec<u8>) {
        let path = std::env::temp_dir().join(format!("tierkit-native-{}-{name}.tkt", std::process::id()));
        let mut w = NativeWriter::create(&path, false).unwrap();
        for &p in pages {
            w.push(PageAccess::read(p)).unwrap();
        }
        w.finish().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        (path, bytes)
    }

    /// The error reading the whole of `bytes` (written to `path`) gives.
    fn refusal(path: &Path, bytes: &[u8]) -> String {
        std::fs::write(path, bytes).unwrap();
        let read = NativeReader::open(path).and_then(|mut r| {
            let mut n = 0u64;
            while r.next_access()?.is_some() {
                n += 1;
            }
            Ok(n)
        });
        match read {
            Ok(n) => panic!("read {n} accesses"),
            Err(e) => e.to_string(),
        }
    }

    fn with_counts(bytes: &[u8], accesses: u64, pages: u64) -> Vec<u8> {
        let mut b = bytes.to_vec();
        b[16..24].copy_from_slice(&accesses.to_le_bytes());
        b[24..32].copy_from_slice(&pages.to_le_bytes());
        b
    }

    #[test]
    fn a_header_lying_about_either_count_is_refused() {
        // 9 accesses to the pages 1..=4.
        let (path, bytes) = written("lies", &[1, 2, 3, 4, 4, 3, 2, 1, 1]);
        let name = path.display().to_string();
        let end = bytes.len();
        assert_eq!((u64::from_le_bytes(bytes[16..24].try_into().unwrap())), 9);
        assert_eq!((u64::from_le_bytes(bytes[24..32].try_into().unwrap())), 4);
        let cases: [(u64, u64, String); 6] = [
            (10, 4, format!("offset {end}: truncated: the header announces 10 accesses, the payload ends after 9")),
            (8, 4, "record 8 (byte 8 of the frame starting here, decompressed): more records than the 8".into()),
            (9, 5, format!("offset {end}: corrupt: the header announces 5 distinct pages, the payload's 9 accesses touch 4")),
            (9, 3, "record 3 (byte 3 of the frame starting here, decompressed): corrupt: page 4 is one more distinct page than the 3".into()),
            (3, 4, "offset 24: corrupt header: 4 distinct pages cannot hold 3 accesses".into()),
            (9, 0, "offset 24: corrupt header: 0 distinct pages cannot hold 9 accesses".into()),
        ];
        for (accesses, pages, want) in cases {
            let e = refusal(&path, &with_counts(&bytes, accesses, pages));
            assert!(e.starts_with(&format!("{name}: ")) && e.contains(&want), "{accesses}, {pages}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
        // The truth reads.
        std::fs::write(&path, &bytes).unwrap();
        let mut r = NativeReader::open(&path).unwrap();
        let mut pages = Vec::new();
        while let Some(a) = r.next_access().unwrap() {
            pages.push(a.page);
        }
        assert_eq!(pages, [1, 2, 3, 4, 4, 3, 2, 1, 1]);
        std::fs::remove_file(path).unwrap();
    }

    /// A version 4 trace (stores, clock, classes) of `records`' raw bytes in one frame,
    /// its header announcing `accesses`, `pages` and `instructions`.
    fn raw_trace(records: &[Vec<u8>], accesses: u64, pages: u64, instructions: u64) -> Vec<u8> {
        let header = Header {
            version: VERSION,
            writes: true,
            classes: true,
            accesses,
            pages,
            instructions: Some(instructions),
            sample_every: 1,
        };
        let mut b = header.to_bytes().to_vec();
        b.extend(zstd::bulk::compress(&records.concat(), 1).unwrap());
        b
    }

    /// A record: page delta (zigzag varint), instruction gap (varint), store flag, class.
    fn record(delta: i64, gap: u64, write: u8, class: u8) -> Vec<u8> {
        let mut r = Vec::new();
        put_varint(&mut r, zigzag(delta));
        put_varint(&mut r, gap);
        r.extend([write, class]);
        r
    }

    #[test]
    fn a_bad_record_amid_many_is_refused_as_when_it_stands_alone() {
        // 600 records of every varint length, then one bad record, then 600 more: the
        // records around it are read straight from the buffer, the bad one must be
        // refused in the same words, at the same place, as a record read byte by byte.
        let (path, _) = written("amid", &[1]);
        let good: Vec<Vec<u8>> = (0..1200u64)
            .map(|i| {
                record(
                    if i % 2 == 0 { 1 << (i % 63) } else { -(1 << (i % 63)) },
                    i << (i % 40),
                    (i % 2) as u8,
                    (i % 3) as u8,
                )
            })
            .collect();
        let pages = {
            let mut page = 0u64;
            let mut seen = std::collections::BTreeSet::new();
            for i in 0..1200u64 {
                page = page.wrapping_add((if i % 2 == 0 { 1i64 << (i % 63) } else { -(1i64 << (i % 63)) }) as u64);
                seen.insert(page);
            }
            seen.len() as u64
        };
        let total: u64 = (0..1200u64).map(|i| i << (i % 40)).sum();
        // The whole good trace reads back exactly.
        std::fs::write(&path, raw_trace(&good, 1200, pages, total)).unwrap();
        let mut r = NativeReader::open(&path).unwrap();
        let mut read = Vec::new();
        while let Some((a, class)) = r.next_classed().unwrap() {
            read.push((a.instructions, a.write, class as u8));
        }
        let want: Vec<_> = (0..1200u64).map(|i| (i << (i % 40), i % 2 == 1, (i % 3) as u8)).collect();
        assert_eq!(read, want);
        let offset: usize = good[..600].iter().map(Vec::len).sum();
        let at = format!("record 600 (byte {offset} of the frame starting here, decompressed): ");
        let mut overlong = vec![0xff; 9];
        overlong.push(0x02);
        let bad: [(Vec<u8>, &str); 4] = [
            (record(1, 0, 2, 0), "store flag 2, expected 0 or 1"),
            (record(1, 0, 0, 3), "MLP class 3, expected 0 (default)"),
            ([overlong, vec![0, 0, 0]].concat(), "page delta varint longer than 64 bits"),
            (record(1, u64::MAX, 0, 0), "corrupt: instruction gap 18446744073709551615 takes the sum past"),
        ];
        for (b, why) in bad {
            let records = [&good[..600], &[b], &good[600..]].concat();
            let e = refusal(&path, &raw_trace(&records, 1201, pages + 1, total));
            assert!(e.contains(&format!("{at}{why}")), "{why}: {e}");
        }
        // More distinct pages than announced, found at the record that passes the count.
        let e = refusal(&path, &raw_trace(&good, 1200, pages - 1, total));
        let want = format!("one more distinct page than the {} the header announces", pages - 1);
        assert!(e.contains("corrupt: page") && e.contains(&want), "{e}");
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_frame_whose_content_changed_fails_its_checksum() {
        let pages: Vec<u64> = (0..5000).map(|i| i % 700).collect();
        let (path, bytes) = written("checksum", &pages);
        // The stored checksum is the frame's last 4 bytes: change it alone.
        let mut b = bytes.clone();
        let last = b.len() - 1;
        b[last] ^= 0x40;
        let e = refusal(&path, &b);
        // libzstd's own words follow the offset of the frame.
        let frame = format!("offset {HEADER_BYTES}: corrupt or truncated zstd frame starting here: ");
        assert!(e.contains(&frame) && e.contains("checksum"), "{e}");
        std::fs::remove_file(path).unwrap();
    }
}
