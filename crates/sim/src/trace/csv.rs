//! CSV traces: one access per line.
//!
//! Fields are separated by commas (surrounding spaces are trimmed); blank lines and
//! lines starting with `#` are skipped. Numbers are decimal or `0x` hexadecimal.
//!
//! - Without a header (the first line's first field is a number): field 1 is a page
//!   number, and an optional field 2 the operation.
//! - With a header: a column `page` (page numbers) or `addr` / `address` (byte
//!   addresses, >> 12), optionally a column `op`, `rw`, `type` or `write`, and optionally
//!   a column `mlp` (each access's MLP class); other columns are ignored.
//!
//! Operations: `r`, `read`, `load`, `l`, `0`, `false` are loads; `w`, `write`, `store`,
//! `s`, `1`, `true` stores (case-insensitive). Without an operation column every access
//! is a load.
//!
//! MLP classes: `default`, `dependent` or `streaming` (case-insensitive; see
//! [`MlpClass`]), by name rather than number so that a column of them reads as what it
//! means and cannot be taken for a count. Without an `mlp` column every access is of the
//! default class (`app.mlp`).

use std::path::Path;

use super::text::{number, Lines};
use super::{PageAccess, PageReader, PAGE_SHIFT};
use crate::error::SimError;
use crate::model::MlpClass;

/// Which columns hold what.
#[derive(Clone, Copy, Debug)]
struct Columns {
    /// Column of the page number or address.
    key: usize,
    /// Whether `key` holds byte addresses.
    addresses: bool,
    /// Column of the operation.
    op: Option<usize>,
    /// Column of the MLP class.
    mlp: Option<usize>,
    /// Fields a line needs.
    needed: usize,
}

const POSITIONAL: Columns = Columns { key: 0, addresses: false, op: Some(1), mlp: None, needed: 1 };

fn header(fields: &[&str]) -> Result<Columns, String> {
    let find = |names: &[&str]| fields.iter().position(|f| names.iter().any(|n| f.eq_ignore_ascii_case(n)));
    let (key, addresses) = match (find(&["page"]), find(&["addr", "address"])) {
        (Some(k), _) => (k, false),
        (None, Some(k)) => (k, true),
        (None, None) => {
            return Err(format!(
                "header {:?} has no column `page`, `addr` or `address` (or the first field is not a number)",
                fields.join(",")
            ))
        }
    };
    let op = find(&["op", "rw", "type", "write"]);
    let mlp = find(&["mlp"]);
    Ok(Columns { key, addresses, op, mlp, needed: key.max(op.unwrap_or(0)).max(mlp.unwrap_or(0)) + 1 })
}

fn op(field: &str) -> Option<bool> {
    match field.to_ascii_lowercase().as_str() {
        "r" | "read" | "load" | "l" | "0" | "false" => Some(false),
        "w" | "write" | "store" | "s" | "1" | "true" => Some(true),
        _ => None,
    }
}

fn parse(fields: &[&str], c: Columns) -> Result<(PageAccess, MlpClass), String> {
    if fields.len() < c.needed {
        return Err(format!("{} fields, expected at least {}", fields.len(), c.needed));
    }
    let what = if c.addresses { "address" } else { "page number" };
    let key = number(fields[c.key])
        .ok_or_else(|| format!("field {} = {:?}: expected a {what} (decimal or 0x hex)", c.key + 1, fields[c.key]))?;
    let write = match c.op.and_then(|i| fields.get(i)) {
        None => false,
        Some(f) => op(f).ok_or_else(|| {
            format!("field {} = {f:?}: expected an operation (r/w, read/write, load/store, 0/1)", c.op.unwrap_or(0) + 1)
        })?,
    };
    let class = match c.mlp.map(|i| (i, fields[i])) {
        None => MlpClass::Default,
        Some((i, f)) => MlpClass::named(f).ok_or_else(|| {
            format!("field {} = {f:?}: expected an MLP class (default, dependent or streaming)", i + 1)
        })?,
    };
    Ok((PageAccess::new(if c.addresses { key >> PAGE_SHIFT } else { key }, write), class))
}

/// A streaming reader of CSV traces.
pub struct CsvReader {
    lines: Lines,
    columns: Option<Columns>,
}

impl CsvReader {
    /// Opens the file at `path`.
    pub fn open(path: &Path) -> Result<Self, SimError> {
        Ok(Self { lines: Lines::open(path, false)?, columns: None })
    }
}

impl PageReader for CsvReader {
    fn next_access(&mut self) -> Result<Option<PageAccess>, SimError> {
        Ok(self.next_classed()?.map(|(a, _)| a))
    }

    fn carries_classes(&self) -> bool {
        self.columns.is_some_and(|c| c.mlp.is_some())
    }

    fn next_classed(&mut self) -> Result<Option<(PageAccess, MlpClass)>, SimError> {
        loop {
            let Some(line) = self.lines.next_line()? else { return Ok(None) };
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            let columns = match self.columns {
                Some(c) => c,
                None if number(fields[0]).is_some() => *self.columns.insert(POSITIONAL),
                None => match header(&fields) {
                    Ok(c) => {
                        self.columns = Some(c);
                        continue;
                    }
                    Err(why) => return Err(self.lines.error(why)),
                },
            };
            return match parse(&fields, columns) {
                Ok(a) => Ok(Some(a)),
                Err(why) => Err(self.lines.error(why)),
            };
        }
    }
}
