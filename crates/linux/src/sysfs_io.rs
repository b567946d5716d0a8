//! Small reads and writes of sysfs, procfs and debugfs files, with errors that name the
//! path (and the value written) so every failure tells the operator where to look.
//!
//! Writes open an existing file only (never create it: a missing kernel file must stay
//! an error, also in fixture trees) and hand the whole value to one `write(2)`, which is
//! how the kernel's `store` handlers expect it.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// A failed read, write or parse of one kernel file.
#[derive(Debug, thiserror::Error)]
pub enum SysfsError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What the kernel said.
        #[source]
        source: io::Error,
    },
    /// The kernel refused the value (or the file could not be opened for writing).
    #[error("cannot write {value:?} to {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The value written.
        value: String,
        /// What the kernel said.
        #[source]
        source: io::Error,
    },
    /// The file held something other than what was expected.
    #[error("{path} holds {text:?}, expected {expected}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Its (trimmed) contents.
        text: String,
        /// What it should have held.
        expected: &'static str,
    },
}

impl SysfsError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            SysfsError::Read { path, .. } | SysfsError::Write { path, .. } | SysfsError::Parse { path, .. } => path,
        }
    }

    /// The `errno` of a failed read or write (`None` for a parse error).
    pub fn errno(&self) -> Option<i32> {
        match self {
            SysfsError::Read { source, .. } | SysfsError::Write { source, .. } => source.raw_os_error(),
            SysfsError::Parse { .. } => None,
        }
    }

    /// The file does not exist.
    pub fn is_not_found(&self) -> bool {
        self.errno() == Some(libc::ENOENT)
    }

    /// The caller lacks the permission (`EACCES` or `EPERM`).
    pub fn is_permission_denied(&self) -> bool {
        matches!(self.errno(), Some(libc::EACCES) | Some(libc::EPERM))
    }
}

/// The whole contents of `path`, unchanged (trailing newline included).
pub fn read_raw(path: &Path) -> Result<String, SysfsError> {
    fs::read_to_string(path).map_err(|source| SysfsError::Read { path: path.to_path_buf(), source })
}

/// The contents of `path` without surrounding whitespace.
pub fn read_trimmed(path: &Path) -> Result<String, SysfsError> {
    read_raw(path).map(|text| text.trim().to_owned())
}

/// The contents of `path` parsed as a `T` (a number, usually); `expected` names what
/// it should hold, for the error.
pub fn read_parsed<T: FromStr>(path: &Path, expected: &'static str) -> Result<T, SysfsError> {
    let text = read_trimmed(path)?;
    text.parse().map_err(|_| SysfsError::Parse { path: path.to_path_buf(), text, expected })
}

/// Writes `value` to the existing file `path` in one `write(2)`.
pub fn write_value(path: &Path, value: &str) -> Result<(), SysfsError> {
    let wrap = |source| SysfsError::Write { path: path.to_path_buf(), value: value.to_owned(), source };
    let mut file = OpenOptions::new().write(true).truncate(true).open(path).map_err(wrap)?;
    file.write_all(value.as_bytes()).map_err(wrap)
}

/// Opens the existing file `path` for writing without writing anything: checks that the
/// caller may write it (sysfs and procfs check permissions at open).
pub fn check_writable(path: &Path) -> Result<(), SysfsError> {
    OpenOptions::new().write(true).open(path).map(drop).map_err(|source| SysfsError::Write {
        path: path.to_path_buf(),
        value: String::new(),
        source,
    })
}

/// Creates the small file `path` holding `contents`, atomically (a reader, or a restart
/// after a crash, sees all of it or none) and exclusively (`AlreadyExists` when `path`
/// exists). Creates missing parent directories. Used for tierkit's own crash-recovery
/// state files, never for kernel files.
pub fn create_exclusive(path: &Path, contents: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir)?;
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.tmp", std::process::id()));
    let tmp = dir.join(name);
    let written = (|| {
        let mut file = OpenOptions::new().write(true).create(true).truncate(true).open(&tmp)?;
        file.write_all(contents)?;
        file.sync_all()
    })();
    // A hard link fails when `path` exists, where a rename would replace it.
    let linked = written.and_then(|()| fs::hard_link(&tmp, path));
    let removed = fs::remove_file(&tmp);
    linked?;
    removed?;
    fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tierkit-sysfs-io-{}-{name}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn writes_replace_the_contents_and_reads_trim() {
        let dir = scratch("rw");
        let file = dir.join("knob");
        fs::write(&file, "1000\n").unwrap();
        write_value(&file, "7").unwrap();
        assert_eq!(read_raw(&file).unwrap(), "7");
        assert_eq!(read_parsed::<u32>(&file, "a number").unwrap(), 7);
        fs::write(&file, "  on \n").unwrap();
        assert_eq!(read_trimmed(&file).unwrap(), "on");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn missing_files_are_never_created_and_errors_name_the_path() {
        let dir = scratch("missing");
        let file = dir.join("absent");
        let err = write_value(&file, "2").unwrap_err();
        assert!(err.is_not_found());
        assert!(!file.exists());
        let text = err.to_string();
        assert!(text.contains("absent") && text.contains("\"2\""), "{text}");
        assert!(read_raw(&file).unwrap_err().is_not_found());
        assert!(check_writable(&file).unwrap_err().is_not_found());
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn exclusive_files_are_created_once_with_their_parents() {
        let dir = scratch("exclusive");
        let file = dir.join("run/tierkit/state.json");
        create_exclusive(&file, b"{\"a\":1}").unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"{\"a\":1}");
        let err = create_exclusive(&file, b"other").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&file).unwrap(), b"{\"a\":1}");
        let names: Vec<_> = fs::read_dir(file.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["state.json"], "no temporary file is left behind");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn parse_errors_say_what_was_expected() {
        let dir = scratch("parse");
        let file = dir.join("nr");
        fs::write(&file, "many\n").unwrap();
        let err = read_parsed::<u32>(&file, "a count").unwrap_err();
        assert_eq!(err.errno(), None);
        assert!(err.to_string().contains("\"many\", expected a count"), "{err}");
        fs::remove_dir_all(dir).unwrap();
    }
}
