//! `/proc/PID/maps`: a process's mappings and what backs each one.

use std::ops::Range;
use std::path::Path;

use serde::Serialize;
use tierkit_core::{Page, PageKind, PAGE_SIZE};

use super::{pid_dir, ProcError};

/// Access permissions of a mapping (`rw-p`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Perms {
    /// Readable.
    pub read: bool,
    /// Writable.
    pub write: bool,
    /// Executable.
    pub exec: bool,
    /// Shared (`s`) rather than private copy-on-write (`p`).
    pub shared: bool,
}

/// What backs a mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MappingKind {
    /// Private anonymous memory (including `[anon:name]` mappings).
    Anon,
    /// The `[heap]` (brk area).
    Heap,
    /// A thread's `[stack]`.
    Stack,
    /// A regular file (page cache).
    File,
    /// Shared memory: tmpfs, `/dev/shm`, memfd, SysV shm, shared anonymous memory.
    Shmem,
    /// `[vdso]`: kernel code, never movable.
    Vdso,
    /// `[vvar]`, `[vvar_vclock]`: kernel data, never movable.
    Vvar,
    /// `[vsyscall]`: the legacy fixed page, never movable.
    Vsyscall,
    /// Anything else the kernel or a driver provides (`[uprobes]`, `/dev/...` device
    /// memory, `anon_inode:...`): not movable.
    Special,
}

impl MappingKind {
    /// Classifies a mapping by its path (empty for plain anonymous memory) and sharing.
    pub fn classify(path: &str, shared: bool) -> Self {
        let deleted = path.strip_suffix(" (deleted)").unwrap_or(path);
        match deleted {
            "" if shared => Self::Shmem,
            "" => Self::Anon,
            "[heap]" => Self::Heap,
            "[vdso]" => Self::Vdso,
            "[vsyscall]" => Self::Vsyscall,
            p if p == "[stack]" || p.starts_with("[stack:") => Self::Stack,
            p if p.starts_with("[vvar") => Self::Vvar,
            p if p.starts_with("[anon_shmem:") => Self::Shmem,
            p if p.starts_with("[anon:") => Self::Anon,
            "/dev/zero" if shared => Self::Shmem,
            "/dev/zero" => Self::Anon,
            p if p.starts_with("/dev/shm/") || p.starts_with("/memfd:") || p.starts_with("/SYSV") => Self::Shmem,
            p if p.starts_with("/dev/") => Self::Special,
            p if p.starts_with('/') => Self::File,
            _ => Self::Special,
        }
    }

    /// Whether `move_pages(2)` can move its pages (false for kernel and device mappings).
    pub fn movable(self) -> bool {
        matches!(self, Self::Anon | Self::Heap | Self::Stack | Self::File | Self::Shmem)
    }
}

/// One line of `/proc/PID/maps`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Mapping {
    /// First byte address.
    pub start: u64,
    /// One past the last byte address.
    pub end: u64,
    /// Permissions.
    pub perms: Perms,
    /// File offset of `start`.
    pub offset: u64,
    /// Device (major, minor) of the backing file.
    pub dev: (u32, u32),
    /// Inode of the backing file (0 for anonymous memory).
    pub inode: u64,
    /// The path or pseudo-path (`[heap]`), empty for anonymous memory.
    pub path: String,
    /// What backs it.
    pub kind: MappingKind,
}

impl Mapping {
    /// Its base pages (`start >> 12 .. end >> 12`).
    pub fn pages(&self) -> Range<Page> {
        self.start / PAGE_SIZE..self.end.div_ceil(PAGE_SIZE)
    }

    /// Whether tierkit tiers its pages: a movable kind that the process can access
    /// (`---p` guard and reservation areas hold no pages worth tiering).
    pub fn tierable(&self) -> bool {
        self.kind.movable() && (self.perms.read || self.perms.write || self.perms.exec)
    }

    /// The page kind policies see (anonymous for heap and stack, tmpfs for shared memory).
    pub fn page_kind(&self) -> PageKind {
        match self.kind {
            MappingKind::File => PageKind::File,
            MappingKind::Shmem => PageKind::Tmpfs,
            _ => PageKind::Anon,
        }
    }
}

/// Parses the text of a `maps` file; errors name the 1-based line.
pub fn parse_maps(text: &str) -> Result<Vec<Mapping>, (usize, &'static str)> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| parse_line(l).map_err(|e| (i + 1, e)))
        .collect()
}

fn parse_line(line: &str) -> Result<Mapping, &'static str> {
    let mut rest = line;
    let mut field = || -> Result<&str, &'static str> {
        let t = rest.trim_start();
        let end = t.find(char::is_whitespace).unwrap_or(t.len());
        rest = &t[end..];
        if end == 0 {
            Err("too few fields (expected range, perms, offset, dev, inode)")
        } else {
            Ok(&t[..end])
        }
    };
    let (range, perms, offset, dev, inode) = (field()?, field()?, field()?, field()?, field()?);
    let hex = |s: &str, what| u64::from_str_radix(s, 16).map_err(|_| what);
    let (start, end) = range.split_once('-').ok_or("address range without '-'")?;
    let (start, end) = (hex(start, "bad start address")?, hex(end, "bad end address")?);
    if end < start {
        return Err("end address below start address");
    }
    let p = perms.as_bytes();
    if p.len() != 4 {
        return Err("permissions are not 4 characters like rw-p");
    }
    let perms = Perms { read: p[0] == b'r', write: p[1] == b'w', exec: p[2] == b'x', shared: p[3] == b's' };
    let (major, minor) = dev.split_once(':').ok_or("device without ':'")?;
    let dev_part = |s: &str| u32::from_str_radix(s, 16).map_err(|_| "bad device number");
    let path = rest.trim().to_owned();
    Ok(Mapping {
        start,
        end,
        perms,
        offset: hex(offset, "bad offset")?,
        dev: (dev_part(major)?, dev_part(minor)?),
        inode: inode.parse().map_err(|_| "bad inode")?,
        kind: MappingKind::classify(&path, perms.shared),
        path,
    })
}

/// Reads and parses `root/proc/PID/maps`.
pub fn read_maps(root: &Path, pid: u32) -> Result<Vec<Mapping>, ProcError> {
    let path = pid_dir(root, pid).join("maps");
    let text = std::fs::read_to_string(&path).map_err(|e| ProcError::from_io(pid, &path, e))?;
    parse_maps(&text).map_err(|(line, what)| {
        let text = text.lines().nth(line - 1).unwrap_or("").chars().take(200).collect();
        ProcError::Parse { path, line, text, what }
    })
}
