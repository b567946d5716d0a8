//! Parsing perf ring-buffer records: samples, lost-record notices, throttling.
//!
//! The parser is a pure function over bytes so that it can be tested on synthetic
//! buffers: [`RecordParser::parse_ring`] takes a whole ring (a power-of-two byte slice)
//! and the kernel's `data_tail`/`data_head` counters, and
//! [`RecordParser::parse_split`] takes the readable region as the two slices either side
//! of the wrap point. A record that straddles the end of the ring is reassembled into a
//! scratch buffer. Records are in the kernel's native byte order.

use serde::Serialize;
use tierkit_core::Page;

/// `PERF_SAMPLE_*` bits this parser understands, in the order the kernel writes the
/// corresponding fields.
pub mod sample {
    /// `PERF_SAMPLE_IP`: instruction pointer (u64).
    pub const IP: u64 = 1 << 0;
    /// `PERF_SAMPLE_TID`: pid and tid (u32 each).
    pub const TID: u64 = 1 << 1;
    /// `PERF_SAMPLE_TIME`: timestamp (u64 ns).
    pub const TIME: u64 = 1 << 2;
    /// `PERF_SAMPLE_ADDR`: data address (u64).
    pub const ADDR: u64 = 1 << 3;
    /// `PERF_SAMPLE_WEIGHT`: access cost, e.g. load latency in cycles (u64).
    pub const WEIGHT: u64 = 1 << 14;
    /// `PERF_SAMPLE_DATA_SRC`: `perf_mem_data_src` (u64).
    pub const DATA_SRC: u64 = 1 << 15;
}

/// `PERF_RECORD_LOST`: the ring was full and `lost` records were dropped.
pub const PERF_RECORD_LOST: u32 = 2;
/// `PERF_RECORD_THROTTLE`: the kernel throttled the event (too many interrupts).
pub const PERF_RECORD_THROTTLE: u32 = 5;
/// `PERF_RECORD_UNTHROTTLE`: throttling ended.
pub const PERF_RECORD_UNTHROTTLE: u32 = 6;
/// `PERF_RECORD_SAMPLE`.
pub const PERF_RECORD_SAMPLE: u32 = 9;
/// `PERF_RECORD_LOST_SAMPLES`: samples dropped before reaching the ring (e.g. PEBS).
pub const PERF_RECORD_LOST_SAMPLES: u32 = 13;

/// Size of `struct perf_event_header`.
const HEADER: usize = 8;

/// `PERF_MEM_OP_LOAD` and `PERF_MEM_OP_STORE` in the low five bits of `data_src`.
const MEM_OP_LOAD: u64 = 0x02;
const MEM_OP_STORE: u64 = 0x04;

/// Which fields sample records carry: a validated set of [`sample`] bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleFormat(u64);

impl SampleFormat {
    /// Every field the parser can decode.
    pub const SUPPORTED: u64 =
        sample::IP | sample::TID | sample::TIME | sample::ADDR | sample::WEIGHT | sample::DATA_SRC;

    /// A format from `PERF_SAMPLE_*` bits; `None` if a bit outside [`Self::SUPPORTED`] is
    /// set (its field would shift every later one and could not be skipped safely).
    pub fn new(bits: u64) -> Option<Self> {
        (bits & !Self::SUPPORTED == 0).then_some(Self(bits))
    }

    /// The `PERF_SAMPLE_*` bits, for `perf_event_attr.sample_type`.
    pub fn bits(self) -> u64 {
        self.0
    }

    /// Bytes of a sample record in this format, header included.
    pub fn record_size(self) -> usize {
        HEADER + 8 * self.0.count_ones() as usize
    }

    fn has(self, bit: u64) -> bool {
        self.0 & bit != 0
    }
}

/// One sampled memory access as the kernel reported it. Fields the format did not ask
/// for are zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RawSample {
    /// Instruction pointer of the access.
    pub ip: u64,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Time in ns (`CLOCK_MONOTONIC` for events tierkit opens).
    pub time: u64,
    /// The data address accessed (the faulting address for page-fault events).
    pub addr: u64,
    /// Access cost (load latency in core cycles for PEBS; 0 when unknown).
    pub weight: u64,
    /// `perf_mem_data_src`: operation, memory level, snoop and TLB outcome.
    pub data_src: u64,
}

impl RawSample {
    /// `Some(true)` for a store, `Some(false)` for a load, `None` when `data_src` does
    /// not say (software events report "not available").
    pub fn write(&self) -> Option<bool> {
        let op = self.data_src & 0x1f;
        if op & MEM_OP_STORE != 0 {
            Some(true)
        } else if op & MEM_OP_LOAD != 0 {
            Some(false)
        } else {
            None
        }
    }

    /// The 4 KiB page of the address (`addr >> 12`).
    pub fn page(&self) -> Page {
        self.addr >> 12
    }

    /// The 64-byte word within the page (0..64).
    pub fn word(&self) -> u8 {
        ((self.addr & 4095) >> 6) as u8
    }
}

/// What the parser has seen: samples kept and the kernel's notices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PerfStats {
    /// Sample records delivered.
    pub samples: u64,
    /// Samples the kernel dropped (sum of `PERF_RECORD_LOST` and `_LOST_SAMPLES` counts).
    pub lost: u64,
    /// `PERF_RECORD_THROTTLE` records.
    pub throttled: u64,
    /// `PERF_RECORD_UNTHROTTLE` records.
    pub unthrottled: u64,
    /// Samples of other processes, dropped (per-CPU events only).
    pub foreign: u64,
    /// Records of other types, skipped by their header size.
    pub other: u64,
    /// Records that straddled the end of the ring and were reassembled.
    pub straddled: u64,
    /// Malformed records or counters; the rest of that ring read was skipped.
    pub corrupt: u64,
}

impl PerfStats {
    /// Adds `other`'s counts to `self`.
    pub fn add(&mut self, other: &PerfStats) {
        self.samples += other.samples;
        self.lost += other.lost;
        self.throttled += other.throttled;
        self.unthrottled += other.unthrottled;
        self.foreign += other.foreign;
        self.other += other.other;
        self.straddled += other.straddled;
        self.corrupt += other.corrupt;
    }
}

/// Decodes ring-buffer records into [`RawSample`]s and [`PerfStats`].
#[derive(Clone, Debug)]
pub struct RecordParser {
    format: SampleFormat,
    pid_filter: Option<u32>,
    scratch: Vec<u8>,
}

impl RecordParser {
    /// A parser for samples in `format`. With `pid_filter`, samples of other processes
    /// are counted as `foreign` and dropped (needs [`sample::TID`] in the format).
    pub fn new(format: SampleFormat, pid_filter: Option<u32>) -> Self {
        Self { format, pid_filter, scratch: Vec::new() }
    }

    /// Parses the records between the free-running counters `tail` and `head` of a
    /// ring whose data area is `ring` (its length a power of two). Everything in
    /// `tail..head` is consumed: afterwards the reader stores `head` as its new tail.
    /// Counters that cannot be right (head behind tail, more bytes than the ring holds,
    /// a length that is not a power of two) count one `corrupt` and parse nothing.
    pub fn parse_ring(&mut self, ring: &[u8], tail: u64, head: u64, out: &mut Vec<RawSample>, stats: &mut PerfStats) {
        let size = ring.len() as u64;
        let avail = head.wrapping_sub(tail);
        if !size.is_power_of_two() || head < tail || avail > size {
            stats.corrupt += 1;
            return;
        }
        let start = (tail & (size - 1)) as usize;
        let avail = avail as usize;
        let first_len = avail.min(ring.len() - start);
        let first = &ring[start..start + first_len];
        let second = &ring[..avail - first_len];
        self.parse_split(first, second, out, stats);
    }

    /// Parses the records in `first` followed by `second`: the readable region of a
    /// ring, split where it wraps (`second` is empty when it does not wrap). The region
    /// must start on a record boundary; it ends on one as the kernel publishes whole
    /// records. A record header that is too small or runs past the end counts one
    /// `corrupt` and ends the parse.
    pub fn parse_split(&mut self, first: &[u8], second: &[u8], out: &mut Vec<RawSample>, stats: &mut PerfStats) {
        let total = first.len() + second.len();
        let mut pos = 0;
        while pos < total {
            if total - pos < HEADER {
                stats.corrupt += 1;
                return;
            }
            let mut header = [0u8; HEADER];
            copy_out(first, second, pos, &mut header);
            let size = usize::from(u16::from_ne_bytes([header[6], header[7]]));
            if size < HEADER || size > total - pos {
                stats.corrupt += 1;
                return;
            }
            let record: &[u8] = if pos + size <= first.len() {
                &first[pos..pos + size]
            } else if pos >= first.len() {
                let at = pos - first.len();
                &second[at..at + size]
            } else {
                stats.straddled += 1;
                self.scratch.clear();
                self.scratch.extend_from_slice(&first[pos..]);
                self.scratch.extend_from_slice(&second[..pos + size - first.len()]);
                &self.scratch
            };
            dispatch(self.format, self.pid_filter, record, out, stats);
            pos += size;
        }
    }
}

/// Copies `dst.len()` bytes starting at `pos` of the concatenation `first ++ second`.
fn copy_out(first: &[u8], second: &[u8], pos: usize, dst: &mut [u8]) {
    for (i, byte) in dst.iter_mut().enumerate() {
        let p = pos + i;
        *byte = if p < first.len() { first[p] } else { second[p - first.len()] };
    }
}

/// Reads the native-endian u64 at `at`, if the record is long enough.
fn u64_at(record: &[u8], at: usize) -> Option<u64> {
    let bytes = record.get(at..at + 8)?;
    Some(u64::from_ne_bytes(bytes.try_into().ok()?))
}

fn dispatch(
    format: SampleFormat,
    pid_filter: Option<u32>,
    record: &[u8],
    out: &mut Vec<RawSample>,
    stats: &mut PerfStats,
) {
    let kind = u32::from_ne_bytes([record[0], record[1], record[2], record[3]]);
    match kind {
        PERF_RECORD_SAMPLE => match decode_sample(format, record) {
            Some(s) if pid_filter.is_some_and(|p| p != s.pid) => stats.foreign += 1,
            Some(s) => {
                stats.samples += 1;
                out.push(s);
            }
            None => stats.corrupt += 1,
        },
        // struct { header; u64 id; u64 lost; }
        PERF_RECORD_LOST => match u64_at(record, HEADER + 8) {
            Some(n) => stats.lost += n,
            None => stats.corrupt += 1,
        },
        // struct { header; u64 lost; }
        PERF_RECORD_LOST_SAMPLES => match u64_at(record, HEADER) {
            Some(n) => stats.lost += n,
            None => stats.corrupt += 1,
        },
        PERF_RECORD_THROTTLE => stats.throttled += 1,
        PERF_RECORD_UNTHROTTLE => stats.unthrottled += 1,
        _ => stats.other += 1,
    }
}

/// Decodes a `PERF_RECORD_SAMPLE`; fields appear in `PERF_SAMPLE_*` bit order.
fn decode_sample(format: SampleFormat, record: &[u8]) -> Option<RawSample> {
    if record.len() < format.record_size() {
        return None;
    }
    let mut s = RawSample::default();
    let mut at = HEADER;
    let mut next = || {
        let v = u64_at(record, at);
        at += 8;
        v
    };
    if format.has(sample::IP) {
        s.ip = next()?;
    }
    if format.has(sample::TID) {
        let v = next()?;
        // struct { u32 pid, tid; } read as one native u64.
        let bytes = v.to_ne_bytes();
        s.pid = u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        s.tid = u32::from_ne_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
    }
    if format.has(sample::TIME) {
        s.time = next()?;
    }
    if format.has(sample::ADDR) {
        s.addr = next()?;
    }
    if format.has(sample::WEIGHT) {
        s.weight = next()?;
    }
    if format.has(sample::DATA_SRC) {
        s.data_src = next()?;
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_outside_the_supported_set_are_refused() {
        assert!(SampleFormat::new(sample::IP | sample::ADDR).is_some());
        assert!(SampleFormat::new(sample::IP | (1 << 5)).is_none(), "CALLCHAIN is variable-length");
        let f = SampleFormat::new(SampleFormat::SUPPORTED).unwrap();
        assert_eq!(f.record_size(), 56);
    }

    #[test]
    fn write_comes_from_the_memory_operation() {
        let s = |data_src| RawSample { data_src, ..RawSample::default() };
        assert_eq!(s(MEM_OP_STORE).write(), Some(true));
        assert_eq!(s(MEM_OP_LOAD | (0x1 << 5)).write(), Some(false));
        assert_eq!(s(0x01).write(), None, "PERF_MEM_OP_NA");
        let a = RawSample { addr: 0x7f00_1234_5fc0, ..RawSample::default() };
        assert_eq!(a.page(), 0x7_f001_2345);
        assert_eq!(a.word(), 63);
    }
}
