//! The mmap'd ring buffer of one perf event.
//!
//! The mapping is one metadata page (`struct perf_event_mmap_page`) followed by a
//! power-of-two number of data pages. The kernel advances `data_head` after writing
//! whole records; the reader loads it with acquire ordering, parses `data_tail..head`,
//! and stores the new `data_tail` with release ordering, which hands the space back.
//! Because the mapping is writable, the kernel never overwrites unread data: when the
//! ring is full it drops samples and later writes a `PERF_RECORD_LOST` record.

use std::os::fd::{AsRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use super::error::Errno;
use super::record::{PerfStats, RawSample, RecordParser};

/// Offsets of the ring fields in `struct perf_event_mmap_page` (after 1 KiB of header).
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;
const DATA_OFFSET: usize = 1040;
const DATA_SIZE: usize = 1048;

/// One event's mapped ring buffer.
#[derive(Debug)]
pub struct Ring {
    base: NonNull<u8>,
    map_len: usize,
    data_offset: usize,
    data_size: usize,
    tail: u64,
}

// SAFETY: the mapping is owned by this value alone; the kernel is the only other party,
// and it synchronises through the head/tail atomics, not through thread identity.
unsafe impl Send for Ring {}

impl Ring {
    /// Maps the ring of event `fd` with `data_pages` data pages (a power of two).
    pub fn map(fd: &OwnedFd, data_pages: usize) -> Result<Ring, Errno> {
        // SAFETY: sysconf has no memory-safety preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let map_len = (data_pages + 1) * page;
        // SAFETY: a fresh shared mapping of the event's buffer; the kernel checks the
        // length and the descriptor. No existing memory is affected.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(Errno::last());
        }
        let base = NonNull::new(ptr.cast::<u8>()).ok_or(Errno(libc::EFAULT))?;
        // SAFETY: the metadata page is mapped and the kernel filled `data_offset` and
        // `data_size` before mmap returned (they stay zero on kernels older than 4.1).
        let (offset, size) = unsafe {
            (
                std::ptr::read_volatile(base.as_ptr().add(DATA_OFFSET).cast::<u64>()),
                std::ptr::read_volatile(base.as_ptr().add(DATA_SIZE).cast::<u64>()),
            )
        };
        let mut ring = Ring { base, map_len, data_offset: page, data_size: data_pages * page, tail: 0 };
        if offset != 0 && size != 0 {
            ring.data_offset = offset as usize;
            ring.data_size = size as usize;
        }
        ring.tail = ring.tail_atomic().load(Ordering::Relaxed);
        Ok(ring)
    }

    fn head_atomic(&self) -> &AtomicU64 {
        // SAFETY: `data_head` is an 8-aligned u64 inside the mapped metadata page, alive
        // as long as `self`; the kernel updates it atomically.
        unsafe { &*self.base.as_ptr().add(DATA_HEAD).cast::<AtomicU64>() }
    }

    fn tail_atomic(&self) -> &AtomicU64 {
        // SAFETY: as for `data_head`; only this reader writes `data_tail`.
        unsafe { &*self.base.as_ptr().add(DATA_TAIL).cast::<AtomicU64>() }
    }

    /// Parses every record the kernel has published since the last drain, appending
    /// samples to `out` and counts to `stats`, then releases the space to the kernel.
    pub fn drain(&mut self, parser: &mut RecordParser, out: &mut Vec<RawSample>, stats: &mut PerfStats) {
        let head = self.head_atomic().load(Ordering::Acquire);
        if head == self.tail {
            return;
        }
        let avail = head.wrapping_sub(self.tail);
        if head < self.tail || avail > self.data_size as u64 {
            stats.corrupt += 1;
        } else {
            let start = (self.tail % self.data_size as u64) as usize;
            let avail = avail as usize;
            let first_len = avail.min(self.data_size - start);
            // SAFETY: `tail..head` lies inside the data area (checked above) and the
            // kernel does not write it until `data_tail` moves past it: the acquire load
            // of `data_head` makes the records it covers visible. No other slice of the
            // data area exists while these live.
            let (first, second) = unsafe {
                let data = self.base.as_ptr().add(self.data_offset);
                (
                    std::slice::from_raw_parts(data.add(start), first_len),
                    std::slice::from_raw_parts(data, avail - first_len),
                )
            };
            parser.parse_split(first, second, out, stats);
        }
        self.tail = head;
        self.tail_atomic().store(head, Ordering::Release);
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: `base`/`map_len` are exactly the mapping made in `map`, unmapped once;
        // no slice into it outlives `drain`.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.map_len);
        }
    }
}
