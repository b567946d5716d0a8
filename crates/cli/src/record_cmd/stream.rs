//! Records with tierkit's Valgrind tool: runs it and turns its binary stream into a
//! native trace with a clock.
//!
//! The stream (little-endian `u64` words, see `valgrind/tk_record.c`): the header
//! `TKRECORD` and the stream version [`STREAM_VERSION`]; records of two words,
//! `(page << 1) | write` and the instruction gap; a trailer, `u64::MAX`, the number of
//! summary words, and the summary (instructions, loads, stores, modifies, LLC hits,
//! misses and write-backs, records, the instruction where records could begin or
//! `u64::MAX`).

use std::io::{BufRead, BufReader};
use std::path::Path;

use anyhow::{bail, Context, Result};
use tierkit_sim::trace::{LlcStats, NativeWriter, PageAccess};

use super::summary::{Counts, Summary};
use super::tool::NAME;
use super::valgrind::{spawn, OUT_FD};

/// The stream version this tierkit reads.
const STREAM_VERSION: u64 = 1;

/// Words in the trailer's summary.
const SUMMARY_WORDS: u64 = 9;

/// What the tool is asked to do.
pub struct ToolOptions<'a> {
    /// Simulated LLC bytes.
    pub llc: u64,
    /// Its ways per set.
    pub ways: usize,
    /// Keep one in this many memory-level accesses.
    pub sample_every: u64,
    /// Write nothing until the program writes this.
    pub start_marker: Option<&'a str>,
    /// Then write nothing for this many instructions.
    pub skip: u64,
    /// Stop the program after this many records.
    pub max_records: Option<u64>,
}

/// The next word of the stream; `None` at its end (an error inside a word).
fn word(r: &mut impl BufRead) -> Result<Option<u64>> {
    if r.fill_buf().context("cannot read the tool's stream")?.is_empty() {
        return Ok(None);
    }
    let mut b = [0u8; 8];
    r.read_exact(&mut b).context("the tool's stream ends inside a word")?;
    Ok(Some(u64::from_le_bytes(b)))
}

/// Runs `cmd` under the tool from `lib_dir` into a native trace at `out`; returns the
/// summary and the command's exit status (`None` when tierkit stopped it at
/// `--max-records`).
pub fn record(cmd: &[String], lib_dir: &Path, o: &ToolOptions, out: &Path) -> Result<(Summary, Option<i32>)> {
    let mut options = vec![
        "-q".to_string(),
        format!("--tool={NAME}"),
        format!("--out-fd={OUT_FD}"),
        format!("--llc-bytes={}", o.llc),
        format!("--llc-ways={}", o.ways),
        format!("--sample-every={}", o.sample_every),
        format!("--skip-instructions={}", o.skip),
    ];
    if let Some(m) = o.start_marker {
        options.push(format!("--start-marker={m}"));
    }
    let (running, read) = spawn(&options, cmd, Some(lib_dir), o.max_records.is_some())?;
    let mut writer = NativeWriter::with_clock(out, true, o.sample_every)?;
    let mut r = BufReader::with_capacity(1 << 20, read);
    let streamed = stream(&mut r, &mut writer, o.max_records);
    drop(r);
    let (counts, kept) = match streamed {
        Ok(s) => s,
        Err(e) => {
            running.abandon();
            return Err(e);
        }
    };
    let code = match counts {
        Some(_) => Some(running.wait()?),
        None => {
            running.stop()?;
            None
        }
    };
    let header = writer.finish()?;
    let summary = Summary {
        recorder: NAME,
        counts,
        kept,
        pages: header.pages,
        sample_every: o.sample_every,
        stopped_at_max: code.is_none(),
    };
    Ok((summary, code))
}

/// Copies the stream's records into `writer`, at most `max` of them; returns the
/// tool's counts (`None` when stopped at `max`) and the records copied.
fn stream(r: &mut impl BufRead, writer: &mut NativeWriter, max: Option<u64>) -> Result<(Option<Counts>, u64)> {
    let magic = word(r)?;
    let version = word(r)?;
    match (magic, version) {
        (None, _) => bail!("valgrind ended before tierkit's tool started (its message, if any, is above)"),
        (Some(m), Some(STREAM_VERSION)) if m.to_le_bytes() == *b"TKRECORD" => {}
        (m, v) => bail!(
            "the tool's stream starts with {:?} version {v:?}, expected \"TKRECORD\" version {STREAM_VERSION}",
            m.map(|m| String::from_utf8_lossy(&m.to_le_bytes()).into_owned())
        ),
    }
    let mut kept = 0u64;
    loop {
        if max.is_some_and(|m| kept >= m) {
            return Ok((None, kept));
        }
        let Some(first) = word(r)? else {
            bail!("the tool's stream ended without its summary after {kept} records (valgrind or the program died)")
        };
        let Some(second) = word(r)? else { bail!("the tool's stream ends inside record {kept}") };
        if first == u64::MAX {
            return Ok((Some(trailer(r, second, kept)?), kept));
        }
        writer.push(PageAccess { page: first >> 1, write: first & 1 == 1, instructions: second })?;
        kept += 1;
    }
}

/// The trailer's summary, `n` words, checked against the `kept` records read.
fn trailer(r: &mut impl BufRead, n: u64, kept: u64) -> Result<Counts> {
    if n != SUMMARY_WORDS {
        bail!("the tool's summary has {n} words, expected {SUMMARY_WORDS}");
    }
    let mut w = [0u64; SUMMARY_WORDS as usize];
    for x in &mut w {
        *x = word(r)?.context("the tool's stream ends inside its summary")?;
    }
    if word(r)?.is_some() {
        bail!("the tool's stream goes on after its summary");
    }
    if w[7] != kept {
        bail!("the tool reports {} records, its stream held {kept}", w[7]);
    }
    Ok(Counts {
        instructions: w[0],
        loads: w[1],
        stores: w[2],
        modifies: w[3],
        llc: LlcStats { hits: w[4], misses: w[5], writebacks: w[6] },
        first_instruction: (w[8] != u64::MAX).then_some(w[8]),
    })
}
