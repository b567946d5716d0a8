//! `/proc/PID/pagemap` (one 64-bit entry per virtual page) and `/proc/kpageflags` (one
//! 64-bit flag word per physical frame), read in large batches with `pread(2)`.
//!
//! The bits are the procfs crate's (`procfs-core`'s `PageInfo`, `MemoryPageFlags` and
//! `PhysicalPageFlags`); the reading is not: `procfs::process::PageMap` seeks and reads
//! every 8-byte entry through an 8 KiB `BufReader` into a new `Vec` per call, and
//! `procfs::KPageFlags` fills that 8 KiB buffer to look up one frame, where tierkit reads
//! a whole chunk of entries (or one frame's word) with a single `pread` into a reused
//! buffer.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use procfs_core::process::{MemoryPageFlags, PageInfo};
use procfs_core::PhysicalPageFlags;
use tierkit_core::Page;

use super::{pid_dir, ProcError};

/// One pagemap entry (see the kernel's `Documentation/admin-guide/mm/pagemap.rst`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PagemapEntry(pub u64);

impl PagemapEntry {
    /// The entry as procfs-core decodes it: a page in memory (or not mapped) or a swap
    /// entry, told apart by bit 62.
    pub fn info(self) -> PageInfo {
        PageInfo::parse_info(self.0)
    }

    fn flags(self) -> MemoryPageFlags {
        MemoryPageFlags::from_bits_retain(self.0)
    }

    /// Bit 63: the page is in RAM.
    pub fn present(self) -> bool {
        self.flags().contains(MemoryPageFlags::PRESENT)
    }

    /// Bit 62: the page is swapped out.
    pub fn swapped(self) -> bool {
        matches!(self.info(), PageInfo::SwapPage(_))
    }

    /// Bit 61: a file page or a shared anonymous page.
    pub fn file_shared(self) -> bool {
        self.flags().contains(MemoryPageFlags::FILE)
    }

    /// Bit 56: mapped by this process only.
    pub fn exclusive(self) -> bool {
        self.flags().contains(MemoryPageFlags::MMAP_EXCLUSIVE)
    }

    /// Bits 0–54 of a present page: its page frame number. The kernel shows 0 to
    /// readers without `CAP_SYS_ADMIN`, so this is `None` for them.
    pub fn pfn(self) -> Option<u64> {
        match self.info() {
            PageInfo::MemoryPage(flags) if flags.contains(MemoryPageFlags::PRESENT) => {
                Some(flags.get_page_frame_number().0).filter(|&pfn| pfn != 0)
            }
            _ => None,
        }
    }
}

/// An open `/proc/PID/pagemap`.
#[derive(Debug)]
pub struct Pagemap {
    file: File,
    path: PathBuf,
    pid: u32,
    buf: Vec<u8>,
}

impl Pagemap {
    /// Opens `root/proc/PID/pagemap` (needs ptrace read access to the process).
    pub fn open(root: &Path, pid: u32) -> Result<Self, ProcError> {
        let path = pid_dir(root, pid).join("pagemap");
        let file = File::open(&path).map_err(|e| ProcError::from_io(pid, &path, e))?;
        Ok(Self { file, path, pid, buf: Vec::new() })
    }

    /// Appends the entries of pages `first .. first + count` to `out`, with one `pread`.
    pub fn read(&mut self, first: Page, count: usize, out: &mut Vec<PagemapEntry>) -> Result<(), ProcError> {
        self.buf.resize(count * 8, 0);
        let offset = first.checked_mul(8).ok_or_else(|| {
            let err = std::io::Error::from_raw_os_error(libc::EINVAL);
            ProcError::Io { path: self.path.clone(), source: err }
        })?;
        self.file.read_exact_at(&mut self.buf, offset).map_err(|e| ProcError::from_io(self.pid, &self.path, e))?;
        out.extend(self.buf.chunks_exact(8).map(|b| PagemapEntry(u64::from_ne_bytes(b.try_into().unwrap_or([0; 8])))));
        Ok(())
    }
}

/// An open `/proc/kpageflags` (root only).
#[derive(Debug)]
pub struct KPageFlags {
    file: File,
}

impl KPageFlags {
    /// Opens `root/proc/kpageflags`, or `None` when it is absent or unreadable (not root):
    /// huge pages are then simply not detected.
    pub fn open(root: &Path) -> Option<Self> {
        File::open(root.join("proc/kpageflags")).ok().map(|file| Self { file })
    }

    /// The flag word of frame `pfn`, `None` when it cannot be read.
    pub fn flags(&self, pfn: u64) -> Option<u64> {
        let mut word = [0u8; 8];
        self.file.read_exact_at(&mut word, pfn.checked_mul(8)?).ok()?;
        Some(u64::from_ne_bytes(word))
    }

    /// Whether frame `pfn` is the head of a transparent huge page.
    pub fn thp_head(&self, pfn: u64) -> bool {
        let head = PhysicalPageFlags::THP | PhysicalPageFlags::COMPOUND_HEAD;
        self.flags(pfn).is_some_and(|f| PhysicalPageFlags::from_bits_retain(f).contains(head))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_bits() {
        let e = PagemapEntry(1 << 63 | 1 << 56 | 0x1234);
        assert!(e.present() && e.exclusive() && !e.swapped() && !e.file_shared());
        assert_eq!(e.pfn(), Some(0x1234));
        assert_eq!(PagemapEntry(1 << 63).pfn(), None, "PFN hidden from unprivileged readers");
        assert_eq!(PagemapEntry(1 << 62 | 0x55).pfn(), None, "swap entries carry no PFN");
        assert!(PagemapEntry(1 << 62).swapped() && PagemapEntry(1 << 61).file_shared());
    }
}
