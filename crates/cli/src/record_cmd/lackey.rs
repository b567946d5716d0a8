//! Records with `valgrind --tool=lackey --trace-mem=yes`: its access lines, logged to
//! the pipe, go through the LLC filter as they arrive (one text line per access: the
//! slow path, and the reference the tool is checked against).

use std::io::{BufRead, BufReader};
use std::path::Path;

use anyhow::{Context, Result};
use tierkit_sim::trace::LlcFilter;

use super::filter::Filter;
use super::summary::Summary;
use super::valgrind::{spawn, OUT_FD};

/// Records `cmd` into a native trace at `out`, skipping the first `skip` instructions,
/// keeping one in `sample_every` memory-level accesses and at most `max_records`;
/// Valgrind runs from `lib_dir` when given. Returns the summary and the command's exit
/// status (`None` when tierkit stopped it at `max_records`).
pub fn record(
    cmd: &[String],
    llc: &mut LlcFilter,
    out: &Path,
    lib_dir: Option<&Path>,
    (skip, sample_every, max_records): (u64, u64, Option<u64>),
) -> Result<(Summary, Option<i32>)> {
    let options = ["--tool=lackey".to_string(), "--trace-mem=yes".into(), format!("--log-fd={OUT_FD}")];
    let (running, read) = spawn(&options, cmd, lib_dir, max_records.is_some())?;
    let mut filter = Filter::new(llc, out, "valgrind's log".to_string(), skip, sample_every, max_records)?;
    let mut r = BufReader::with_capacity(1 << 20, read);
    let mut buf = Vec::new();
    let streamed = (|| -> Result<()> {
        while !filter.full() {
            buf.clear();
            if r.read_until(b'\n', &mut buf).context("cannot read valgrind's log")? == 0 {
                return Ok(());
            }
            filter.line(&buf)?;
        }
        Ok(())
    })();
    drop(r);
    if let Err(e) = streamed {
        running.abandon();
        return Err(e);
    }
    let full = filter.full();
    let code = if full {
        running.stop()?;
        None
    } else {
        Some(running.wait()?)
    };
    Ok((filter.finish(full)?, code))
}
