//! `/proc/PID/maps`: a process's mappings and what backs each one, parsed by the procfs
//! crate's parsers (`procfs-core`); which mappings tierkit tiers is decided here.

use std::ops::Range;
use std::path::Path;

use procfs_core::process::{MMPermissions, MMapPath, MemoryMap, MemoryMaps};
use procfs_core::FromBufRead;
use serde::Serialize;
use tierkit_core::{Page, PageKind, PAGE_SIZE};

use super::{crate_message, pid_dir, ProcError};

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
    /// Classifies a mapping by its path as procfs-core parsed it and by its sharing.
    pub fn classify(path: &MMapPath, shared: bool) -> Self {
        match path {
            MMapPath::Anonymous if shared => Self::Shmem,
            MMapPath::Anonymous => Self::Anon,
            MMapPath::Heap => Self::Heap,
            MMapPath::Stack | MMapPath::TStack(_) => Self::Stack,
            MMapPath::Vdso => Self::Vdso,
            MMapPath::Vvar => Self::Vvar,
            MMapPath::Vsyscall => Self::Vsyscall,
            MMapPath::Vsys(_) => Self::Shmem,
            MMapPath::Rollup => Self::Special,
            // `[NAME]` pseudo-paths procfs-core has no variant for.
            MMapPath::Other(name) if name.starts_with("vvar") => Self::Vvar,
            MMapPath::Other(name) if name.starts_with("anon_shmem:") => Self::Shmem,
            MMapPath::Other(name) if name.starts_with("anon:") => Self::Anon,
            MMapPath::Other(_) => Self::Special,
            MMapPath::Path(path) => {
                let path = path.to_string_lossy();
                match path.strip_suffix(" (deleted)").unwrap_or(&path) {
                    "/dev/zero" if shared => Self::Shmem,
                    "/dev/zero" => Self::Anon,
                    p if p.starts_with("/dev/shm/") || p.starts_with("/memfd:") || p.starts_with("/SYSV") => {
                        Self::Shmem
                    }
                    p if p.starts_with("/dev/") => Self::Special,
                    p if p.starts_with('/') => Self::File,
                    // `anon_inode:[io_uring]` and the like.
                    _ => Self::Special,
                }
            }
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

/// Parses the text of a `maps` file with procfs-core, one line at a time so that errors
/// name the 1-based line.
pub fn parse_maps(text: &str) -> Result<Vec<Mapping>, (usize, String)> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| parse_line(l).map_err(|e| (i + 1, e)))
        .collect()
}

/// The fields procfs-core expects, for error messages.
const SHAPE: &str = "expected `start-end perms offset major:minor inode [path]`";

fn parse_line(line: &str) -> Result<Mapping, String> {
    // The kernel prints a space after the inode even without a path; procfs-core needs
    // it, and hand-written fixtures often leave it out.
    let padded = format!("{line} ");
    let fields: Vec<&str> = padded.splitn(6, ' ').collect();
    let (Some(perms), Some(path)) = (fields.get(1), fields.get(5)) else {
        return Err(format!("too few fields ({SHAPE})"));
    };
    // procfs-core accepts any permission string, taking the letters it knows.
    if perms.len() != 4 {
        return Err("permissions are not 4 characters like rw-p".to_string());
    }
    let path = path.trim();
    // procfs-core 0.18 reads a `/SYSV` path's key as `path[5..13]` unchecked, which
    // panics on a file named, say, `/SYSVx`: such a line is parsed without its path.
    let odd_sysv =
        path.starts_with("/SYSV") && !path.get(5..13).is_some_and(|k| k.bytes().all(|b| b.is_ascii_hexdigit()));
    let header = if odd_sysv { &padded[..padded.len() - fields[5].len()] } else { &padded };
    let map = MemoryMaps::from_buf_read(header.as_bytes())
        .map_err(|e| format!("{} ({SHAPE})", crate_message(&e)))?
        .into_iter()
        .next()
        .ok_or_else(|| format!("not a mapping ({SHAPE})"))?;
    let MemoryMap { address: (start, end), perms, offset, dev: (major, minor), inode, pathname, .. } = map;
    let pathname = if odd_sysv { MMapPath::Path(path.into()) } else { pathname };
    if end < start {
        return Err("end address below start address".to_string());
    }
    let perms = Perms {
        read: perms.contains(MMPermissions::READ),
        write: perms.contains(MMPermissions::WRITE),
        exec: perms.contains(MMPermissions::EXECUTE),
        shared: perms.contains(MMPermissions::SHARED),
    };
    let (Ok(major), Ok(minor)) = (u32::try_from(major), u32::try_from(minor)) else {
        return Err("negative device number".to_string());
    };
    Ok(Mapping {
        start,
        end,
        perms,
        offset,
        dev: (major, minor),
        inode,
        kind: MappingKind::classify(&pathname, perms.shared),
        path: path_text(&pathname),
    })
}

/// The path as the kernel printed it (`[heap]`, empty for anonymous memory).
fn path_text(path: &MMapPath) -> String {
    match path {
        MMapPath::Path(p) => p.to_string_lossy().into_owned(),
        MMapPath::Heap => "[heap]".to_string(),
        MMapPath::Stack => "[stack]".to_string(),
        MMapPath::TStack(tid) => format!("[stack:{tid}]"),
        MMapPath::Vdso => "[vdso]".to_string(),
        MMapPath::Vvar => "[vvar]".to_string(),
        MMapPath::Vsyscall => "[vsyscall]".to_string(),
        MMapPath::Rollup => "[rollup]".to_string(),
        MMapPath::Anonymous => String::new(),
        // A SysV segment's file is always unlinked, so the kernel always adds ` (deleted)`.
        MMapPath::Vsys(key) => format!("/SYSV{:08x} (deleted)", *key as u32),
        MMapPath::Other(name) => format!("[{name}]"),
    }
}

/// Reads `root/proc/PID/maps` and parses it with [`parse_maps`]. The file is read here,
/// not by the `procfs` crate, to tell a vanished process from a denied read by the
/// kernel's errno (the crate's maps reader reports any read error as incomplete data).
pub fn read_maps(root: &Path, pid: u32) -> Result<Vec<Mapping>, ProcError> {
    let path = pid_dir(root, pid).join("maps");
    let bytes = std::fs::read(&path).map_err(|e| ProcError::from_io(pid, &path, e))?;
    // Paths are bytes: a file name that is not UTF-8 must not hide the other mappings.
    let text = String::from_utf8_lossy(&bytes);
    parse_maps(&text).map_err(|(line, what)| {
        let text = text.lines().nth(line - 1).unwrap_or("").chars().take(200).collect();
        ProcError::Parse { path, line, text, what }
    })
}
