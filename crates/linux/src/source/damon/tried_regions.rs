//! Reading a scheme's `tried_regions` directory: one small file per field per region,
//! read every aggregation interval. Each file is opened relative to the directory (a
//! two-component lookup instead of the eleven of an absolute sysfs path) and read into a
//! stack buffer; regions are numbered from 0 without gaps, so no directory listing is
//! needed.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

use super::{DamonError, Region};
use crate::sysfs_io::SysfsError;

/// Opens `name` relative to `dir` read-only; `None` when it does not exist.
fn open_at(dir: &File, name: &str) -> io::Result<Option<OwnedFd>> {
    let c_name = CString::new(name).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: a valid directory descriptor and a NUL-terminated name; the result is checked.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), c_name.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        let err = io::Error::last_os_error();
        return if err.raw_os_error() == Some(libc::ENOENT) { Ok(None) } else { Err(err) };
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    Ok(Some(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// Reads the number in `index/name` under `dir` (`None`: the file does not exist).
fn read_number(dir: &File, path: &Path, index: usize, name: &str) -> Result<Option<u64>, SysfsError> {
    let rel = format!("{index}/{name}");
    let failed = |source| SysfsError::Read { path: path.join(&rel), source };
    let Some(fd) = open_at(dir, &rel).map_err(failed)? else { return Ok(None) };
    let mut buf = [0u8; 32];
    // SAFETY: reads at most `buf.len()` bytes into `buf`.
    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(failed(io::Error::last_os_error()));
    }
    let text = String::from_utf8_lossy(&buf[..n as usize]).trim().to_owned();
    match text.parse() {
        Ok(v) => Ok(Some(v)),
        Err(_) => Err(SysfsError::Parse { path: path.join(&rel), text, expected: "a number" }),
    }
}

/// Appends the regions listed under `dir` (a `tried_regions` directory) to `out`, in
/// their numbering (the kernel lists them in address order).
pub(super) fn read_tried_regions(dir: &Path, out: &mut Vec<Region>) -> Result<(), DamonError> {
    let handle = File::open(dir).map_err(|source| SysfsError::Read { path: dir.to_path_buf(), source })?;
    for index in 0.. {
        let Some(start) = read_number(&handle, dir, index, "start")? else { break };
        let field = |name| {
            read_number(&handle, dir, index, name)?.ok_or_else(|| SysfsError::Read {
                path: dir.join(format!("{index}/{name}")),
                source: io::Error::from_raw_os_error(libc::ENOENT),
            })
        };
        let end = field("end")?;
        let nr_accesses = field("nr_accesses")?;
        if end < start {
            return Err(DamonError::BadRegion { path: dir.join(index.to_string()), start, end });
        }
        let nr_accesses = u32::try_from(nr_accesses).map_err(|_| SysfsError::Parse {
            path: dir.join(format!("{index}/nr_accesses")),
            text: nr_accesses.to_string(),
            expected: "a 32-bit count",
        })?;
        out.push(Region { start, end, nr_accesses });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn tree(name: &str, regions: &[(&str, &str, &str)]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("tierkit-tried-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("total_bytes"), "0\n").unwrap();
        for (i, (start, end, n)) in regions.iter().enumerate() {
            let r = dir.join(i.to_string());
            fs::create_dir(&r).unwrap();
            for (file, value) in [("start", start), ("end", end), ("nr_accesses", n), ("age", &"3")] {
                fs::write(r.join(file), format!("{value}\n")).unwrap();
            }
        }
        dir
    }

    #[test]
    fn reads_every_region_in_order_until_the_numbering_ends() {
        let dir = tree("ok", &[("4096", "12288", "5"), ("16384", "20480", "0"), ("1048576", "3145728", "20")]);
        let mut out = vec![Region { start: 1, end: 2, nr_accesses: 3 }];
        read_tried_regions(&dir, &mut out).unwrap();
        assert_eq!(out.len(), 4, "appended");
        assert_eq!(out[1], Region { start: 4096, end: 12288, nr_accesses: 5 });
        assert_eq!(out[3], Region { start: 1 << 20, end: 3 << 20, nr_accesses: 20 });
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn bad_files_name_the_region_and_field() {
        let dir = tree("bad", &[("4096", "8192", "1"), ("8192", "x", "1")]);
        let err = read_tried_regions(&dir, &mut Vec::new()).unwrap_err().to_string();
        assert!(err.contains("1/end") && err.contains("\"x\""), "{err}");
        fs::write(dir.join("1/end"), "4096").unwrap();
        let err = read_tried_regions(&dir, &mut Vec::new()).unwrap_err();
        assert!(matches!(err, DamonError::BadRegion { start: 8192, end: 4096, .. }), "{err}");
        fs::remove_file(dir.join("1/nr_accesses")).unwrap();
        fs::write(dir.join("1/end"), "9000").unwrap();
        let err = read_tried_regions(&dir, &mut Vec::new()).unwrap_err().to_string();
        assert!(err.contains("1/nr_accesses"), "{err}");
        fs::write(dir.join("1/nr_accesses"), "4294967296").unwrap();
        let err = read_tried_regions(&dir, &mut Vec::new()).unwrap_err().to_string();
        assert!(err.contains("32-bit"), "{err}");
        fs::remove_dir_all(dir).unwrap();
        assert!(read_tried_regions(Path::new("/nonexistent/tried"), &mut Vec::new()).is_err());
    }
}
