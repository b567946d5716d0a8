//! Dense page ids of a trace, cached beside it (`TRACE.tkids`), so a trace is decoded
//! once: the page id of every access (4 bytes each, little-endian) after a header naming
//! the trace. An `oracleGeneral` trace writes it on its first complete, validated replay
//! and later replays read the ids through one large buffer instead of scanning,
//! validating and hashing 24-byte records again; a trace of another format
//! ([`super::PageTrace`]) writes it while numbering its pages when opened, and later
//! openings skip that pass and every replay's id lookups.
//!
//! The header holds the trace's length, modification time and a fingerprint (xxh3 of
//! its first and last MiB and of 64 evenly spaced 4 KiB blocks), which reader wrote it
//! ([`Kind`]), the ids it holds, and what the reader's scan found (eight words whose
//! meaning is the kind's). A cache is used only when the stamp and the kind still match,
//! and is then read in full or not at all: a cache of another length than its header
//! says is ignored, and an id beyond the pages the scan counted ends the replay with an
//! error. A file rewritten in place with the same length, the same modification time to
//! the nanosecond and the same sampled blocks would go unnoticed; tools such as `make`
//! trust less. The cache is written to a temporary file renamed into place at the end,
//! so a replay that stops early, fails, or races another leaves no partial cache; a
//! directory that cannot be written to just gets no cache.

use std::fs::{self, File, Metadata};
use std::hash::Hasher;
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::UNIX_EPOCH;

use twox_hash::XxHash3_64;

use super::Format;

/// Version 2: the kind and the id count joined version 1's `oracleGeneral` header, whose
/// caches are rebuilt.
const MAGIC: &[u8; 8] = b"TKIDS\0\0\x02";
/// Words of what the scan found.
pub(crate) const FACTS: usize = 8;
const HEADER_BYTES: usize = 8 + 8 * (4 + 2 + FACTS);
/// Bytes hashed at each end of the trace, and per sampled block, and the blocks.
const END_BYTES: u64 = 1 << 20;
const BLOCK_BYTES: u64 = 4096;
const BLOCKS: u64 = 64;
/// Ids per read (1 MiB).
const READ_IDS: usize = 1 << 18;

/// The trace's identity as the cache records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Stamp {
    bytes: u64,
    mtime_s: u64,
    mtime_ns: u64,
    fingerprint: u64,
}

impl Stamp {
    /// The stamp of the open trace `file`.
    pub(crate) fn of(file: &File, meta: &Metadata) -> io::Result<Self> {
        let bytes = meta.len();
        let since = meta.modified()?.duration_since(UNIX_EPOCH).unwrap_or_default();
        let mut h = XxHash3_64::with_seed(0);
        let mut buf = vec![0u8; END_BYTES as usize];
        let mut hash_at = |at: u64, len: u64, h: &mut XxHash3_64| -> io::Result<()> {
            let len = len.min(bytes.saturating_sub(at)) as usize;
            file.read_exact_at(&mut buf[..len], at)?;
            h.write(&buf[..len]);
            Ok(())
        };
        hash_at(0, END_BYTES, &mut h)?;
        hash_at(bytes.saturating_sub(END_BYTES), END_BYTES, &mut h)?;
        for i in 0..BLOCKS {
            hash_at(bytes / BLOCKS * i, BLOCK_BYTES, &mut h)?;
        }
        Ok(Self { bytes, mtime_s: since.as_secs(), mtime_ns: u64::from(since.subsec_nanos()), fingerprint: h.finish() })
    }
}

/// Where the cache of `trace` lives.
pub(crate) fn path_of(trace: &Path) -> PathBuf {
    let mut name = trace.as_os_str().to_owned();
    name.push(".tkids");
    PathBuf::from(name)
}

/// Which reader wrote a cache: an `oracleGeneral` replay, or a [`super::PageTrace`] of
/// a format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    OracleGeneral,
    Pages(Format),
}

impl Kind {
    /// The kind's code in the header: fixed, so that caches outlive changes to the
    /// formats' order.
    fn code(self) -> u64 {
        match self {
            Kind::OracleGeneral => 1,
            Kind::Pages(Format::OracleGeneral) => 2,
            Kind::Pages(Format::Native) => 3,
            Kind::Pages(Format::Csv) => 4,
            Kind::Pages(Format::Lackey) => 5,
            Kind::Pages(Format::PerfScript) => 6,
            Kind::Pages(Format::Pinatrace) => 7,
            Kind::Pages(Format::Damo) => 8,
        }
    }
}

fn header(stamp: &Stamp, kind: Kind, ids: u64, facts: &[u64; FACTS]) -> Vec<u8> {
    let mut h = MAGIC.to_vec();
    for v in [stamp.bytes, stamp.mtime_s, stamp.mtime_ns, stamp.fingerprint, kind.code(), ids].iter().chain(facts) {
        h.extend_from_slice(&v.to_le_bytes());
    }
    debug_assert_eq!(h.len(), HEADER_BYTES);
    h
}

/// The ids of a cached trace, streamed.
pub(crate) struct CachedIds {
    file: File,
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

/// The cache `kind` wrote of `trace` with `stamp`, if there is a whole one: what the
/// scan found, and the ids positioned at the first access.
pub(crate) fn load(trace: &Path, stamp: &Stamp, kind: Kind) -> Option<([u64; FACTS], CachedIds)> {
    let mut file = File::open(path_of(trace)).ok()?;
    let mut head = vec![0u8; HEADER_BYTES];
    file.read_exact(&mut head).ok()?;
    if &head[..8] != MAGIC {
        return None;
    }
    let word = |k: usize| u64::from_le_bytes(head[8 + 8 * k..16 + 8 * k].try_into().expect("8 bytes"));
    let found = Stamp { bytes: word(0), mtime_s: word(1), mtime_ns: word(2), fingerprint: word(3) };
    let ids = word(5);
    let whole = ids.checked_mul(4).and_then(|b| b.checked_add(HEADER_BYTES as u64))?;
    if found != *stamp || word(4) != kind.code() || file.metadata().ok()?.len() != whole {
        return None;
    }
    let facts = std::array::from_fn(|k| word(6 + k));
    Some((facts, CachedIds { file, buf: vec![0; 4 * READ_IDS], start: 0, end: 0 }))
}

impl CachedIds {
    /// The next ids (at least one while any is left), little-endian u32 each.
    pub(crate) fn next_ids(&mut self) -> io::Result<&[u8]> {
        if self.end - self.start < 4 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            while self.end < self.buf.len() {
                match self.file.read(&mut self.buf[self.end..]) {
                    Ok(0) => break,
                    Ok(n) => self.end += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
        let n = (self.end - self.start) / 4 * 4;
        Ok(&self.buf[self.start..self.start + n])
    }

    /// Marks `ids` ids as used.
    pub(crate) fn consume(&mut self, ids: usize) {
        self.start += 4 * ids;
    }
}

/// A cache being written: its ids as they come, its header once the reader knows what
/// it found.
pub(crate) struct Writer {
    tmp: PathBuf,
    to: PathBuf,
    out: BufWriter<File>,
    stamp: Stamp,
    /// Ids written; `u64::MAX` once the cache is in place.
    written: u64,
}

impl Writer {
    /// A writer for `trace`'s cache, if its directory takes a file.
    pub(crate) fn create(trace: &Path, stamp: Stamp) -> Option<Self> {
        let to = path_of(trace);
        let mut tmp = to.as_os_str().to_owned();
        static NEXT: AtomicU64 = AtomicU64::new(0);
        tmp.push(format!(".{}-{}.tmp", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
        let tmp = PathBuf::from(tmp);
        let mut out = BufWriter::with_capacity(1 << 20, File::create(&tmp).ok()?);
        // Room for the header, written last.
        if out.write_all(&[0; HEADER_BYTES]).is_err() {
            let _ = fs::remove_file(&tmp);
            return None;
        }
        Some(Self { tmp, to, out, stamp, written: 0 })
    }

    /// Appends the next access's page.
    #[inline]
    pub(crate) fn push(&mut self, page: u32) -> io::Result<()> {
        self.written += 1;
        self.out.write_all(&page.to_le_bytes())
    }

    /// Writes the header — `kind` found `facts` over `ids` accesses — and puts the cache
    /// in place once exactly that many ids were written; says whether it did. A cache
    /// not put in place is removed.
    pub(crate) fn finish(mut self, kind: Kind, ids: u64, facts: &[u64; FACTS]) -> bool {
        let header = header(&self.stamp, kind, ids, facts);
        if self.written == ids
            && self.out.flush().is_ok()
            && self.out.get_ref().write_all_at(&header, 0).is_ok()
            && fs::rename(&self.tmp, &self.to).is_ok()
        {
            self.written = u64::MAX; // renamed: nothing to remove
        }
        self.written == u64::MAX
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if self.written != u64::MAX {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}
