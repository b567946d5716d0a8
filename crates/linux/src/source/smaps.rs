//! `/proc/PID/smaps` (resident and referenced bytes per mapping) and
//! `/proc/PID/clear_refs` (clearing the referenced bits), the access information that
//! needs neither DAMON nor perf: after `1` is written to `clear_refs`, an smaps
//! `Referenced:` line counts the mapping's pages accessed since.

use std::path::Path;

use crate::memory::procfs::{parse_maps, pid_dir, Mapping, ProcError};

/// One mapping of `smaps` with the sizes the heat report uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmapsEntry {
    /// The mapping (its `maps` line).
    pub mapping: Mapping,
    /// `Rss:` in bytes.
    pub rss: u64,
    /// `Referenced:` in bytes.
    pub referenced: u64,
}

/// The name a mapping is reported under: its path, `[heap]`, `[stack]`, `[anon:NAME]`,
/// or `[anon]` for unnamed anonymous memory.
pub fn mapping_name(m: &Mapping) -> String {
    if m.path.is_empty() {
        "[anon]".to_string()
    } else {
        m.path.clone()
    }
}

/// Parses the text of an `smaps` file; errors name the 1-based line. Mapping lines go
/// through [`parse_maps`] (procfs-core); the two size lines are read here because
/// procfs-core's smaps reader keeps every field of every mapping in a `HashMap` and
/// reports a bad value without its line.
pub fn parse_smaps(text: &str) -> Result<Vec<SmapsEntry>, (usize, String)> {
    let mut out: Vec<SmapsEntry> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some(first) = line.split_whitespace().next() else { continue };
        if let Some(field) = first.strip_suffix(':') {
            let Some(entry) = out.last_mut() else { return Err((i + 1, "a field line before any mapping".into())) };
            let slot = match field {
                "Rss" => &mut entry.rss,
                "Referenced" => &mut entry.referenced,
                _ => continue,
            };
            let mut words = line.split_whitespace().skip(1);
            let kib: u64 =
                words.next().and_then(|w| w.parse().ok()).ok_or_else(|| (i + 1, "a size without a number".into()))?;
            if words.next() != Some("kB") {
                return Err((i + 1, "a size not in kB".into()));
            }
            *slot = kib * 1024;
        } else {
            let mapping = parse_maps(line)
                .map_err(|(_, what)| (i + 1, what))?
                .pop()
                .ok_or_else(|| (i + 1, "an empty line".into()))?;
            out.push(SmapsEntry { mapping, rss: 0, referenced: 0 });
        }
    }
    Ok(out)
}

/// Reads and parses `root/proc/PID/smaps`.
pub fn read_smaps(root: &Path, pid: u32) -> Result<Vec<SmapsEntry>, ProcError> {
    let path = pid_dir(root, pid).join("smaps");
    let text = std::fs::read_to_string(&path).map_err(|e| ProcError::from_io(pid, &path, e))?;
    let entries = parse_smaps(&text).map_err(|(line, what)| {
        let text = text.lines().nth(line - 1).unwrap_or("").chars().take(200).collect();
        ProcError::Parse { path: path.clone(), line, text, what }
    })?;
    if entries.is_empty() {
        return Err(ProcError::Gone { pid, path }); // a zombie has no mappings
    }
    Ok(entries)
}

/// Writes `1` to `root/proc/PID/clear_refs`: clears the referenced and accessed bits of
/// every page of the process, so the next `smaps` shows only pages touched since.
pub fn clear_refs(root: &Path, pid: u32) -> Result<(), ProcError> {
    let path = pid_dir(root, pid).join("clear_refs");
    std::fs::write(&path, "1").map_err(|e| ProcError::from_io(pid, &path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
55d0a0000000-55d0a0002000 r--p 00000000 fe:00 247030                     /usr/bin/prog
Size:                  8 kB
Rss:                   8 kB
Referenced:            4 kB
VmFlags: rd mr mw me
55d0a1000000-55d0a1400000 rw-p 00000000 00:00 0                          [heap]
Rss:                4096 kB
Referenced:         1024 kB
7f0000000000-7f0000100000 rw-p 00000000 00:00 0
Rss:                   0 kB
Referenced:            0 kB
";

    #[test]
    fn sizes_per_mapping_and_names() {
        let e = parse_smaps(SMAPS).unwrap();
        assert_eq!(e.len(), 3);
        assert_eq!((e[0].rss, e[0].referenced), (8192, 4096));
        assert_eq!((e[1].rss, e[1].referenced), (4 << 20, 1 << 20));
        let names: Vec<String> = e.iter().map(|e| mapping_name(&e.mapping)).collect();
        assert_eq!(names, ["/usr/bin/prog", "[heap]", "[anon]"]);
    }

    #[test]
    fn malformed_lines_are_named() {
        assert_eq!(parse_smaps("Rss: 4 kB\n"), Err((1, "a field line before any mapping".into())));
        let bad = "1000-2000 rw-p 00000000 00:00 0\nRss: four kB\n";
        assert_eq!(parse_smaps(bad), Err((2, "a size without a number".into())));
        let pages = "1000-2000 rw-p 00000000 00:00 0\nReferenced: 4 pages\n";
        assert_eq!(parse_smaps(pages), Err((2, "a size not in kB".into())));
    }

    #[test]
    fn own_smaps_reads_and_clear_refs_of_a_child_works() {
        let me = read_smaps(Path::new("/"), std::process::id()).unwrap();
        assert!(me.iter().any(|e| e.rss > 0 && e.mapping.path == "[stack]"));
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        clear_refs(Path::new("/"), child.id()).unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
