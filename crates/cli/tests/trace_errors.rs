//! `tierkit trace info` on damaged traces: for every format, a truncated and a corrupted
//! file end the command with a failure status and one error line naming the file and
//! the line or byte offset of the damage, never a panic.

mod common;

use std::path::{Path, PathBuf};

use common::tierkit;

/// A fresh directory for this test's files.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tierkit-trace-errors-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `trace info` on `path` (in `format`, or detected) and checks it fails with one
/// error line holding `file: at: ` (`at` being `line N` or `offset N`) and `what`.
fn refused(path: &Path, format: Option<&str>, at: &str, what: &str) {
    let file = path.display().to_string();
    let mut args = vec!["trace", "info", file.as_str()];
    if let Some(f) = format {
        args.extend(["--format", f]);
    }
    let (code, out, err) = tierkit(&args);
    let case = format!("{} ({})", path.display(), format.unwrap_or("detected"));
    assert_eq!(code, Some(1), "{case}: exit status {code:?}, stderr {err}");
    assert!(out.is_empty(), "{case}: printed {out}");
    assert!(!err.contains("panicked") && !err.contains("backtrace"), "{case}: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{case}: {err}");
    let where_ = format!("{file}: {at}: ");
    assert!(lines[0].contains(&where_), "{case}: expected {where_:?} in {err}");
    assert!(lines[0].contains(what), "{case}: expected {what:?} in {err}");
}

/// Writes `bytes` to `dir/name`.
fn put(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// `text` cut just after the first occurrence of `after`.
fn cut_after(text: &str, after: &str) -> String {
    let at = text.find(after).unwrap_or_else(|| panic!("{after:?} not in {text:?}")) + after.len();
    text[..at].to_string()
}

/// A text trace, and two damaged copies with the line and what the error says about each.
struct TextCase {
    format: &'static str,
    name: &'static str,
    intact: &'static str,
    truncated: (String, u32, &'static str),
    corrupted: (String, u32, &'static str),
}

#[test]
fn damaged_text_traces_name_the_line() {
    let dir = scratch("text");
    let lackey = "==7== Lackey\nI  04000000,3\n L 04016f58,8\n S 7ff000398,8\n M 0421e310,4\n";
    let perf = "# header\n a 1 [0] 1.5: 1 cpu/mem-loads/P: 7f12a4c01040\n a 1 [0] 1.6: cpu/mem-stores/P: 601040\n";
    let pin = "0x401000: R 0x7ffd12345678\n0x401004: W 0x601040\n0x401008: R 0x601048\n#eof\n";
    let csv = "page,op\n1,r\n2,w\n3,r\n";
    let cut_line = "truncated: the file ends inside this line";
    let cases = [
        TextCase {
            format: "lackey",
            name: "lackey.txt",
            intact: lackey,
            truncated: (cut_after(lackey, " S 7ff00039"), 4, cut_line),
            corrupted: (lackey.replace(" M 0421e310,4", " M 0421e31g,4"), 5, "` M addr,size`"),
        },
        TextCase {
            format: "perf-script",
            name: "perf.txt",
            intact: perf,
            truncated: (cut_after(perf, "cpu/mem-stores/P: 6010"), 3, cut_line),
            corrupted: (perf.replace("P: 601040", "P:"), 3, "no hexadecimal data address"),
        },
        TextCase {
            format: "pinatrace",
            name: "pin.out",
            intact: pin,
            // Cut between lines: only the missing `#eof` tells.
            truncated: (cut_after(pin, "0x601040\n"), 2, "truncated: the file ends without the `#eof` line"),
            corrupted: (pin.replace("0x401004: W", "0x401004: X"), 2, "expected `ip: R addr`"),
        },
        TextCase {
            format: "csv",
            name: "t.csv",
            intact: csv,
            truncated: (cut_after(csv, "3,"), 4, "field 2 = \"\": expected an operation"),
            corrupted: (csv.replace("2,w", "zz,w"), 3, "field 1 = \"zz\": expected a page number"),
        },
    ];
    for c in cases {
        let good = put(&dir, c.name, c.intact.as_bytes());
        let (code, out, err) = tierkit(&["trace", "info", &good.display().to_string(), "--format", c.format]);
        assert_eq!(code, Some(0), "{}: {err}", c.format);
        assert!(out.contains(&format!("({})", c.format)), "{out}");
        for (kind, (text, line, what)) in [("truncated", c.truncated), ("corrupted", c.corrupted)] {
            let path = put(&dir, &format!("{kind}-{}", c.name), text.as_bytes());
            refused(&path, Some(c.format), &format!("line {line}"), what);
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn damaged_damo_json_names_the_offset() {
    let dir = scratch("damo");
    // Pages 16..20: page 16 takes its turn in the first snapshot (see trace::damon_turns).
    let json = r#"[{"snapshots": [{"regions": [{"start": 65536, "end": 81920, "nr_accesses": 2}]}]}]"#;
    let (code, _, err) = tierkit(&["trace", "info", &put(&dir, "good.json", json.as_bytes()).display().to_string()]);
    assert_eq!(code, Some(0), "{err}");
    let cut = cut_after(json, r#""end": 81"#);
    let truncated = put(&dir, "truncated.json", cut.as_bytes());
    refused(&truncated, Some("damo"), &format!("offset {}", cut.len()), "truncated JSON");
    let corrupted = put(&dir, "corrupted.json", json.replace("81920", "8192").as_bytes());
    let region = json.find(r#"{"start""#).unwrap();
    refused(&corrupted, Some("damo"), &format!("offset {region}"), "region end 8192 is not after its start 65536");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn damaged_binary_traces_name_the_offset() {
    let dir = scratch("binary");
    let og = dir.join("t.og");
    let native = dir.join("t.tkt");
    let (og_s, native_s) = (og.display().to_string(), native.display().to_string());
    let write = ["trace", "write", "--workload", "zipf", "--pages", "300", "--accesses", "5000"];
    for (path, format) in [(&og_s, "oracle-general"), (&native_s, "native")] {
        let args: Vec<&str> = write.iter().copied().chain(["--format", format, "-o", path]).collect();
        let (code, _, err) = tierkit(&args);
        assert_eq!(code, Some(0), "{err}");
        let (code, _, err) = tierkit(&["trace", "info", path, "--format", format]);
        assert_eq!(code, Some(0), "{format}: {err}");
    }

    // oracleGeneral: 24-byte records, no header.
    let bytes = std::fs::read(&og).unwrap();
    assert_eq!(bytes.len(), 5000 * 24);
    let truncated = put(&dir, "truncated.og", &bytes[..bytes.len() - 10]);
    refused(&truncated, Some("oracle-general"), &format!("offset {}", 4999 * 24), "truncated: 14 trailing bytes");
    // Record 7's next_access_vtime pointing back to request 3.
    let mut b = bytes.clone();
    b[7 * 24 + 16..8 * 24].copy_from_slice(&3i64.to_le_bytes());
    let corrupted = put(&dir, "corrupted.og", &b);
    refused(&corrupted, Some("oracle-general"), &format!("offset {}", 7 * 24), "record 7: next_access_vtime 3");

    // Native (version 2): a 48-byte header, then zstd frames.
    let bytes = std::fs::read(&native).unwrap();
    let truncated = put(&dir, "truncated.tkt", &bytes[..bytes.len() - 10]);
    refused(&truncated, Some("native"), "offset 48", "zstd frame");
    let truncated = put(&dir, "header.tkt", &bytes[..20]);
    refused(&truncated, Some("native"), "offset 20", "truncated header: 20 of the 48 bytes of a version 2 header");
    let truncated = put(&dir, "header40.tkt", &bytes[..40]);
    refused(&truncated, Some("native"), "offset 40", "truncated header: 40 of the 48 bytes");
    // A byte flipped inside the frame, and header counts that disagree with the payload.
    let mut b = bytes.clone();
    let middle = 48 + (b.len() - 48) / 2;
    b[middle] ^= 0x10;
    refused(&put(&dir, "flipped.tkt", &b), Some("native"), "offset 48", "corrupt");
    let mut b = bytes.clone();
    b[24..32].copy_from_slice(&(u64::from_le_bytes(bytes[24..32].try_into().unwrap()) + 1).to_le_bytes());
    refused(&put(&dir, "pages.tkt", &b), Some("native"), &format!("offset {}", bytes.len()), "distinct pages");
    let mut b = bytes.clone();
    b[16..24].copy_from_slice(&5001u64.to_le_bytes());
    refused(&put(&dir, "accesses.tkt", &b), Some("native"), &format!("offset {}", bytes.len()), "announces 5001");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn unknown_formats_are_refused_with_a_location() {
    let dir = scratch("unknown");
    // Binary that is no native trace falls back to oracleGeneral: the partial record.
    let blob = put(&dir, "blob.bin", &[0u8; 50]);
    refused(&blob, None, "offset 48", "truncated: 2 trailing bytes");
    // Text in no known shape is read as CSV: its first line has no usable column.
    let prose = put(&dir, "notes.txt", b"Dear diary,\ntoday I traced nothing.\n");
    refused(&prose, None, "line 1", "no column `page`");
    // A native magic followed by nothing.
    let magic = put(&dir, "magic.tkt", b"TKTRACE\0");
    refused(&magic, None, "offset 8", "truncated header");
    let (code, _, err) = tierkit(&["trace", "info", &blob.display().to_string(), "--format", "vtune"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("vtune") && err.contains("native, oracle-general"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}
