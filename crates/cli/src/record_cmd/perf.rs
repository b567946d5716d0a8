//! `--via perf`: `perf mem record` on a PMU with memory sampling.
//!
//! Whether the PMU samples memory accesses is decided by tierkit-linux's perf planning
//! (Intel PEBS load latency, AMD IBS op) before anything runs; without either, the
//! error says why. With one, `perf mem record` writes `perf.data` next to the output,
//! `perf script` turns its samples into lines tierkit's `perf-script` reader takes, and
//! those are converted to the native format.

use std::fs::File;
use std::io::ErrorKind;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use tierkit_linux::source::perf::{plan, PerfConfig, PerfKind};
use tierkit_sim::trace::{self, Format};

/// Why neither PEBS nor IBS is planned here, or `None` when one of them is.
fn unavailable_reason() -> Option<String> {
    let cfg = PerfConfig::default();
    let mut reasons = Vec::new();
    for kind in [PerfKind::Pebs, PerfKind::Ibs] {
        match plan(kind, &cfg) {
            Ok(_) => return None,
            Err(u) => reasons.push(format!("{kind}: {}", u.reason)),
        }
    }
    Some(reasons.join("; "))
}

fn run_tool(cmd: &mut Command, what: &str) -> Result<std::process::ExitStatus> {
    cmd.status().map_err(|e| {
        if e.kind() == ErrorKind::NotFound {
            anyhow::anyhow!("perf not found: install it (on Debian: apt-get install linux-perf)")
        } else {
            anyhow::Error::new(e).context(format!("cannot run {what}"))
        }
    })
}

/// Records `cmd` with `perf mem record` into a native trace at `out`; returns the
/// command's exit status as perf reports it.
pub fn record(cmd: &[String], out: &Path) -> Result<i32> {
    if let Some(why) = unavailable_reason() {
        bail!("perf mem not available here because the PMU has no memory sampling ({why}); use --via valgrind");
    }
    let data = out.with_extension("perf.data");
    let status =
        run_tool(Command::new("perf").args(["mem", "record", "-o"]).arg(&data).arg("--").args(cmd), "perf mem record")?;
    let script = out.with_extension("perf-script");
    let file = File::create(&script).with_context(|| format!("cannot create {}", script.display()))?;
    let ok = run_tool(
        Command::new("perf").args(["script", "-F", "time,event,addr", "-i"]).arg(&data).stdout(Stdio::from(file)),
        "perf script",
    )?;
    if !ok.success() {
        bail!("perf script -i {} failed ({ok})", data.display());
    }
    let mut reader = trace::open(&script, Some(Format::PerfScript))?;
    let n = trace::convert(reader.as_mut(), out, Format::Native)?;
    println!("kept {n} sampled accesses in {} (perf data: {})", out.display(), data.display());
    Ok(status.code().unwrap_or(1))
}
