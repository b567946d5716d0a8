//! tierkit's native trace format: page-number deltas as zigzag varints, zstd-compressed,
//! behind a versioned header.
//!
//! # Layout (version 1)
//!
//! A 32-byte little-endian header:
//!
//! | offset | type | field |
//! |---|---|---|
//! | 0 | `[u8; 8]` | magic `TKTRACE\0` |
//! | 8 | `u16` | format version (1) |
//! | 10 | `u16` | flags: bit 0 = each access carries a store flag; other bits must be 0 |
//! | 12 | `u32` | page size in bytes (4096) |
//! | 16 | `u64` | accesses |
//! | 24 | `u64` | distinct pages |
//!
//! The counts are consistent: distinct pages are at most accesses, and 0 only with 0
//! accesses.
//!
//! Then the payload: one or more zstd frames (RFC 8878) back to back, each holding up to
//! [`BLOCK_ACCESSES`] records and, as written, a content checksum. A record is the difference between its page number and
//! the previous record's (the first: from 0), as a wrapping `i64` zigzag-encoded into an
//! unsigned LEB128 varint (at most 10 bytes), followed, when flag bit 0 is set, by one
//! byte: 0 for a load, 1 for a store. Sequential and looping page streams thus cost
//! about a byte per access before compression.
//!
//! # Reading
//!
//! [`NativeReader`] decodes frame by frame through a fixed buffer, so memory does not
//! grow with the trace, except for the distinct-page check below. Errors name the byte
//! offset in the file: a wrong magic, an unknown version or flags, a page size other
//! than 4096, header counts that contradict each other (offset 24), a corrupt or
//! truncated zstd frame or one whose content checksum does not match (the offset where
//! that frame starts), a bad record (the offset of its frame and its offset in the
//! frame's decompressed bytes), or a payload holding other counts than the header says.
//!
//! Both header counts are verified against the payload. Accesses: always (a cut
//! payload ends early, extra records are refused where they start). Distinct pages:
//! when the header announces at most [`PAGES_CHECK_MAX`] of them, with a set of the pages
//! seen (about 16–32 bytes per page, so at most 128 MiB), refused as soon as the set
//! holds more pages than announced and at the end if it holds fewer; larger traces are
//! not checked for this count (the set would cost as much as the replay's own page map).

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

use ruzstd::decoding::StreamingDecoder;
use ruzstd::encoding::{compress_to_vec, CompressionLevel};
use tierkit_core::sketches::PageTable;

use super::{PageAccess, PageReader};
use crate::error::SimError;

/// First 8 bytes of a native trace.
pub const MAGIC: [u8; 8] = *b"TKTRACE\0";

/// The format version this module writes and reads.
pub const VERSION: u16 = 1;

/// Header bytes.
pub const HEADER_BYTES: usize = 32;

/// Flag bit: each record carries a store flag byte.
pub const FLAG_WRITES: u16 = 1;

/// Page size the header must name.
pub const PAGE_BYTES: u32 = 4096;

/// Largest distinct-page count [`NativeReader`] verifies (4 Mi pages, a 16 GiB
/// footprint).
pub const PAGES_CHECK_MAX: u64 = 1 << 22;

/// Records per zstd frame written.
pub const BLOCK_ACCESSES: usize = 1 << 20;

/// The counts a native trace's header holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Whether records carry store flags.
    pub writes: bool,
    /// Accesses in the trace.
    pub accesses: u64,
    /// Distinct pages among them.
    pub pages: u64,
}

impl Header {
    fn to_bytes(self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..10].copy_from_slice(&VERSION.to_le_bytes());
        b[10..12].copy_from_slice(&(if self.writes { FLAG_WRITES } else { 0 }).to_le_bytes());
        b[12..16].copy_from_slice(&PAGE_BYTES.to_le_bytes());
        b[16..24].copy_from_slice(&self.accesses.to_le_bytes());
        b[24..32].copy_from_slice(&self.pages.to_le_bytes());
        b
    }

    /// Decodes and checks a header; errors are `(offset, what is wrong)`.
    fn parse(b: &[u8]) -> Result<Self, (u64, String)> {
        if b.len() < 8 || b[0..8] != MAGIC {
            return Err((0, format!("not a tierkit native trace: expected the magic {MAGIC:?}")));
        }
        if b.len() < HEADER_BYTES {
            return Err((b.len() as u64, format!("truncated header: {} of {HEADER_BYTES} bytes", b.len())));
        }
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or_default());
        let version = u16_at(8);
        if version != VERSION {
            return Err((
                8,
                format!("unsupported native trace version {version} (this tierkit reads version {VERSION})"),
            ));
        }
        let flags = u16_at(10);
        if flags & !FLAG_WRITES != 0 {
            return Err((10, format!("unknown flags {flags:#06x} (version {VERSION} defines only bit 0)")));
        }
        let page = u32::from_le_bytes([b[12], b[13], b[14], b[15]]);
        if page != PAGE_BYTES {
            return Err((12, format!("page size {page}, expected {PAGE_BYTES}")));
        }
        let (accesses, pages) = (u64_at(16), u64_at(24));
        if pages > accesses || (pages == 0) != (accesses == 0) {
            return Err((24, format!("corrupt header: {pages} distinct pages cannot hold {accesses} accesses")));
        }
        Ok(Self { writes: flags & FLAG_WRITES != 0, accesses, pages })
    }
}

fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

fn unzigzag(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Writes a native trace, one frame per [`BLOCK_ACCESSES`] accesses; the header is
/// written last (by [`NativeWriter::finish`]).
pub struct NativeWriter {
    file: String,
    out: BufWriter<File>,
    writes: bool,
    block: Vec<u8>,
    in_block: usize,
    prev: u64,
    accesses: u64,
    seen: PageTable,
}

impl NativeWriter {
    /// Creates `path`; `writes` records store flags.
    pub fn create(path: impl AsRef<Path>, writes: bool) -> Result<Self, SimError> {
        let file = path.as_ref().display().to_string();
        let io_err = |source| SimError::Io { file: file.clone(), source };
        let mut out = BufWriter::with_capacity(1 << 20, File::create(path.as_ref()).map_err(io_err)?);
        out.write_all(&[0u8; HEADER_BYTES]).map_err(io_err)?;
        Ok(Self { file, out, writes, block: Vec::new(), in_block: 0, prev: 0, accesses: 0, seen: PageTable::new() })
    }

    fn io_err(&self, source: io::Error) -> SimError {
        SimError::Io { file: self.file.clone(), source }
    }

    /// Appends one access.
    pub fn push(&mut self, a: PageAccess) -> Result<(), SimError> {
        put_varint(&mut self.block, zigzag(a.page.wrapping_sub(self.prev) as i64));
        if self.writes {
            self.block.push(a.write as u8);
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

    fn flush_block(&mut self) -> Result<(), SimError> {
        if self.in_block > 0 {
            let frame = compress_to_vec(self.block.as_slice(), CompressionLevel::Fastest);
            self.out.write_all(&frame).map_err(|e| self.io_err(e))?;
            self.block.clear();
            self.in_block = 0;
        }
        Ok(())
    }

    /// Writes the last frame and the header; returns the header.
    pub fn finish(mut self) -> Result<Header, SimError> {
        self.flush_block()?;
        let header = Header { writes: self.writes, accesses: self.accesses, pages: self.seen.len() as u64 };
        let r = self
            .out
            .flush()
            .and_then(|()| self.out.get_mut().seek(SeekFrom::Start(0)))
            .and_then(|_| self.out.get_mut().write_all(&header.to_bytes()));
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

/// A streaming reader of native traces.
pub struct NativeReader {
    file: String,
    header: Header,
    /// The file between frames.
    src: Option<Counted>,
    frame: Option<StreamingDecoder<Counted, ruzstd::decoding::FrameDecoder>>,
    /// File offset where the current frame starts.
    frame_start: u64,
    /// Decompressed bytes of the current frame before `buf[0]`.
    frame_pos: u64,
    buf: Vec<u8>,
    at: usize,
    end: usize,
    prev: u64,
    read: u64,
    /// Decompressed byte of the current frame where the record being read starts.
    record_at: u64,
    /// The distinct pages read, when the header's count is checked.
    seen: Option<PageTable>,
}

impl NativeReader {
    /// Opens the file at `path` and checks its header.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, SimError> {
        let file = path.as_ref().display().to_string();
        let f = File::open(path.as_ref()).map_err(|source| SimError::Io { file: file.clone(), source })?;
        let mut src = Counted { src: BufReader::with_capacity(1 << 16, f), pos: 0 };
        let mut head = Vec::with_capacity(HEADER_BYTES);
        (&mut src)
            .take(HEADER_BYTES as u64)
            .read_to_end(&mut head)
            .map_err(|source| SimError::Io { file: file.clone(), source })?;
        let header = Header::parse(&head).map_err(|(at, message)| SimError::File {
            file: file.clone(),
            at: format!("offset {at}"),
            message,
        })?;
        Ok(Self {
            file,
            header,
            src: Some(src),
            frame: None,
            frame_start: HEADER_BYTES as u64,
            frame_pos: 0,
            buf: vec![0; 1 << 16],
            at: 0,
            end: 0,
            prev: 0,
            read: 0,
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
                        let (src, decoder) = frame.into_parts();
                        let stored = decoder.get_checksum_from_data();
                        if let (Some(stored), Some(computed)) = (stored, decoder.get_calculated_checksum()) {
                            if stored != computed {
                                return Err(self.error(
                                    self.frame_start,
                                    format!(
                                        "corrupt zstd frame starting here: content checksum {stored:#010x}, \
                                         the decompressed bytes give {computed:#010x}"
                                    ),
                                ));
                            }
                        }
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
            match StreamingDecoder::new(src) {
                Ok(d) => self.frame = Some(d),
                Err(e) => {
                    return Err(self.error(start, format!("expected a zstd frame of records: {e}")));
                }
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

    fn record_error(&self, what: &str) -> SimError {
        self.error(
            self.frame_start,
            format!("record {} (byte {} of the frame starting here, decompressed): {what}", self.read, self.record_at),
        )
    }
}

impl PageReader for NativeReader {
    fn next_access(&mut self) -> Result<Option<PageAccess>, SimError> {
        let Some(first) = self.byte()? else {
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
            return Ok(None);
        };
        self.record_at = self.frame_pos + self.at as u64 - 1;
        if self.read == self.header.accesses {
            return Err(
                self.record_error(&format!("more records than the {} the header announces", self.header.accesses))
            );
        }
        let mut v = (first & 0x7f) as u64;
        let mut b = first;
        let mut shift = 7;
        while b & 0x80 != 0 {
            b = match self.byte()? {
                Some(b) => b,
                None => return Err(self.record_error("the payload ends inside a varint")),
            };
            if shift == 63 && b > 1 {
                return Err(self.record_error("varint longer than 64 bits"));
            }
            v |= ((b & 0x7f) as u64) << shift;
            shift += 7;
        }
        let page = self.prev.wrapping_add(unzigzag(v) as u64);
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
        Ok(Some(PageAccess { page, write }))
    }

    fn records_stores(&self) -> bool {
        self.header.writes
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

    #[test]
    fn a_frame_whose_content_changed_fails_its_checksum() {
        let pages: Vec<u64> = (0..5000).map(|i| i % 700).collect();
        let (path, bytes) = written("checksum", &pages);
        // The stored checksum is the frame's last 4 bytes: change it alone.
        let mut b = bytes.clone();
        let last = b.len() - 1;
        b[last] ^= 0x40;
        let e = refusal(&path, &b);
        assert!(
            e.contains(&format!("offset {HEADER_BYTES}: corrupt zstd frame starting here: content checksum")),
            "{e}"
        );
        std::fs::remove_file(path).unwrap();
    }
}
