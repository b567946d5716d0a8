//! `--via damon`: DAMON snapshots of the running program as page samples.
//!
//! Each aggregation interval DAMON reports, per region of the program's address space,
//! in how many of its sampling checks the region was found accessed (`k`, at most
//! aggregation / 5 ms). DAMON cannot tell a region's pages apart, so each page of a
//! region stands for `k` accesses. Writing every page every interval would make a trace
//! of gigabytes for a large program; the pages take turns instead: snapshot `n` writes
//! the pages whose number is `n mod stride` (each `k` times), so every page is written
//! once every `stride` snapshots with its region's count then, and a page's share of the
//! trace follows its regions' counts. The accesses of a snapshot are written in a
//! random (seeded, reproducible) order: in address order they would read as sequential
//! sweeps to a policy that watches for them. Page numbers are virtual (address >> 12).
//! Regions are DAMON's (5 ms sampling, 10–1000 regions, adapted by the kernel), which
//! resolves hot areas of a few hundred KiB, not single pages.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use tierkit_linux::daemon::damon_record::{self, DamonRecordConfig};
use tierkit_linux::daemon::damon_samples::SampleRng;
use tierkit_linux::daemon::Ended;
use tierkit_linux::damon::Region;
use tierkit_linux::signals::Signals;
use tierkit_linux::target::{Target, TargetExit};
use tierkit_sim::trace::{NativeWriter, PageAccess};

/// Seed of the per-snapshot shuffles.
const SHUFFLE_SEED: u64 = 0x7469_6572_6b69_7464;

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

/// Appends to `out` the pages snapshot `n` writes for `regions`: each page `p` of a
/// region with `p mod stride == n mod stride`, repeated the region's count times.
fn snapshot_pages(regions: &[Region], stride: u64, n: u64, out: &mut Vec<u64>) {
    let turn = n % stride;
    for r in regions.iter().filter(|r| r.nr_accesses > 0) {
        let (first, end) = (r.start >> 12, r.end >> 12);
        let mut page = first + (turn + stride - first % stride) % stride;
        while page < end {
            out.extend(std::iter::repeat_n(page, r.nr_accesses as usize));
            page += stride;
        }
    }
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
        match self.ended {
            Ended::TargetExited(TargetExit::Code(c)) => Some(c),
            Ended::TargetExited(TargetExit::Signal { signal, .. }) => Some(128 + signal),
            _ => None,
        }
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
    damon_record::check(&cfg).context("cannot record with DAMON")?;
    let mut writer = NativeWriter::create(out, false)?;
    let signals = Signals::install()?;
    let mut target = match Target::spawn(cmd) {
        Ok(t) => t,
        Err(e) => {
            drop(writer);
            let _ = std::fs::remove_file(out);
            return Err(e.into());
        }
    };
    let (mut rng, mut pages, mut accesses) = (SampleRng::new(SHUFFLE_SEED), Vec::new(), 0u64);
    let mut sink = |n: u64, regions: &[Region]| -> Result<(), String> {
        pages.clear();
        snapshot_pages(regions, a.stride, n, &mut pages);
        rng.shuffle(&mut pages);
        for &page in &pages {
            writer.push(PageAccess::read(page)).map_err(|e| e.to_string())?;
        }
        accesses += pages.len() as u64;
        Ok(())
    };
    let outcome = damon_record::record(&cfg, &mut target, &signals, &mut sink);
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
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(first_page: u64, pages: u64, nr_accesses: u32) -> Region {
        Region { start: first_page << 12, end: (first_page + pages) << 12, nr_accesses }
    }

    #[test]
    fn every_page_takes_its_turn_once_per_stride_with_its_regions_count() {
        let regions = [region(1000, 37, 3), region(2000, 5, 0), region(3001, 64, 20)];
        let mut seen = std::collections::BTreeMap::<u64, u64>::new();
        for n in 0..8 {
            let mut out = Vec::new();
            snapshot_pages(&regions, 8, n, &mut out);
            assert!(out.iter().all(|p| p % 8 == n), "snapshot {n} writes only its turn's pages");
            for p in out {
                *seen.entry(p).or_default() += 1;
            }
        }
        let expect: Vec<(u64, u64)> = (1000..1037).map(|p| (p, 3)).chain((3001..3065).map(|p| (p, 20))).collect();
        assert_eq!(
            seen.into_iter().collect::<Vec<_>>(),
            expect,
            "each page once per cycle, k times; idle regions none"
        );
    }

    #[test]
    fn a_stride_of_one_writes_every_page_every_snapshot() {
        let mut out = Vec::new();
        snapshot_pages(&[region(10, 4, 2)], 1, 7, &mut out);
        assert_eq!(out, vec![10, 10, 11, 11, 12, 12, 13, 13]);
    }
}
