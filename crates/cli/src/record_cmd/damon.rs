//! `--via damon`: DAMON snapshots of the running program as page samples.
//!
//! Each aggregation interval's accessed regions become page samples by the rule the
//! damo reader uses ([`tierkit_sim::trace::damon_turns`]): every page of a region stands
//! for DAMON's count of it, and the pages take turns over `--stride` snapshots, in a
//! shuffled order. Page numbers are virtual (address >> 12). Regions are DAMON's own
//! (5 ms sampling, 10–1000 regions, adapted by the kernel), which resolve hot areas of a
//! few hundred KiB, not single pages.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use tierkit_linux::record::{self, DamonRecordConfig};
use tierkit_linux::run::Ended;
use tierkit_linux::signals::Signals;
use tierkit_linux::source::damon::Region;
use tierkit_linux::target::Target;
use tierkit_sim::trace::{DamonRegion, NativeWriter, PageAccess, SnapshotSamples};

/// How to record with DAMON.
pub struct DamonArgs {
    /// DAMON's aggregation interval: one snapshot each.
    pub aggregation: Duration,
    /// Pages take turns: one in `stride` per snapshot.
    pub stride: u64,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Directory of tierkit's lock and state files.
    pub state_dir: std::path::PathBuf,
}

/// The page range and count of a DAMON region.
fn in_pages(r: &Region) -> DamonRegion {
    let first = r.start >> 12;
    DamonRegion { first, pages: (r.end >> 12).saturating_sub(first), nr_accesses: r.nr_accesses }
}

/// What a DAMON recording saw.
pub struct Recorded {
    /// Why it ended.
    pub ended: Ended,
    /// Snapshots taken.
    pub snapshots: u64,
    /// Accessed regions over all snapshots.
    pub regions: u64,
    /// Accesses written.
    pub accesses: u64,
    /// Distinct pages written.
    pub pages: u64,
    /// The program, when it runs on after the recording stopped (`--duration`, a signal).
    pub running: Option<Target>,
}

impl Recorded {
    /// The summary printed after a recording.
    pub fn text(&self, out: &Path, a: &DamonArgs) -> String {
        format!(
            "DAMON: {} snapshots of {} ms, {} accessed regions; pages in turns of {}\n\
             wrote {} accesses on {} pages in {}\nended: {}\n",
            self.snapshots,
            a.aggregation.as_millis(),
            self.regions,
            a.stride,
            self.accesses,
            self.pages,
            out.display(),
            self.ended.name()
        )
    }

    /// The command's exit status: its code, 128 + the signal that ended it, or `None`
    /// when the recording stopped first.
    pub fn exit_code(&self) -> Option<i32> {
        self.ended.exit_code()
    }
}

/// Starts `cmd` and records it with DAMON into a native trace at `out`.
pub fn record(cmd: &[String], a: &DamonArgs, out: &Path) -> Result<Recorded> {
    let cfg = DamonRecordConfig {
        aggregation: a.aggregation,
        duration: a.duration,
        root: "/".into(),
        state_dir: a.state_dir.clone(),
    };
    record::check(&cfg).context("cannot record with DAMON")?;
    let signals = Signals::install()?;
    let mut writer = NativeWriter::create(out, false)?;
    let mut target = match Target::spawn(cmd) {
        Ok(t) => t,
        Err(e) => {
            drop(writer);
            let _ = std::fs::remove_file(out);
            return Err(e.into());
        }
    };
    let (mut in_turn, mut accesses) = (Vec::new(), 0u64);
    let mut sink = |n: u64, regions: &[Region]| -> Result<(), String> {
        in_turn.clear();
        in_turn.extend(regions.iter().map(in_pages));
        for page in SnapshotSamples::new(&in_turn, a.stride, n) {
            writer.push(PageAccess::read(page)).map_err(|e| e.to_string())?;
            accesses += 1;
        }
        Ok(())
    };
    let outcome = record::record(&cfg, &mut target, &signals, &mut sink);
    let header = writer.finish()?;
    let outcome = outcome.with_context(|| {
        if header.accesses == 0 {
            let _ = std::fs::remove_file(out);
            format!("recording pid {} with DAMON", target.pid())
        } else {
            format!(
                "recording pid {} with DAMON ({} accesses kept in {})",
                target.pid(),
                header.accesses,
                out.display()
            )
        }
    })?;
    Ok(Recorded {
        ended: outcome.ended,
        snapshots: outcome.snapshots,
        regions: outcome.regions,
        accesses,
        pages: header.pages,
        running: target.is_alive().then_some(target),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_become_whole_pages() {
        let r = Region { start: 0x7f00_0000_1000, end: 0x7f00_0000_5000, nr_accesses: 7 };
        assert_eq!(in_pages(&r), DamonRegion { first: 0x0007_f000_0001, pages: 4, nr_accesses: 7 });
        let tiny = Region { start: 0x1000, end: 0x1800, nr_accesses: 1 };
        assert_eq!(in_pages(&tiny).pages, 0, "less than a page: nothing");
    }
}
