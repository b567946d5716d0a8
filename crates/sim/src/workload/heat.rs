//! Page hotness over time, counted from a workload's generated access stream (no
//! simulation): the page-hotness heat maps of `tierkit report` and
//! `tierkit.plot.page_heatmap`.

use super::{build, WorkloadSpec};
use crate::error::SimError;

/// Accesses of `spec`'s stream per (time bin, page bin): `time_bins` rows of `page_bins`
/// counts, time bins splitting the stream into equal numbers of accesses and page bins
/// the footprint into equal ranges of page ids. Fails on zero bins or a workload that
/// cannot be built or read.
pub fn page_heat(spec: &WorkloadSpec, page_bins: usize, time_bins: usize) -> Result<Vec<Vec<u64>>, SimError> {
    let owner = format!("page heat of workload {}", spec.name);
    if page_bins == 0 {
        return Err(SimError::bad_option(owner, "page_bins", 0, "at least 1 bin"));
    }
    if time_bins == 0 {
        return Err(SimError::bad_option(owner, "time_bins", 0, "at least 1 bin"));
    }
    let mut wl = build(spec)?;
    let (pages, total) = (wl.pages().max(1) as u128, wl.len().max(1) as u128);
    let (pb, tb) = (page_bins as u128, time_bins as u128);
    let mut counts = vec![vec![0u64; page_bins]; time_bins];
    let mut buf = Vec::with_capacity(4096);
    let mut done = 0u128;
    loop {
        buf.clear();
        if wl.try_fill(&mut buf, 4096)? == 0 {
            break;
        }
        for a in &buf {
            let t = (done * tb / total).min(tb - 1) as usize;
            let p = (a.page as u128 * pb / pages).min(pb - 1) as usize;
            counts[t][p] += 1;
            done += 1;
        }
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hottest_bin(counts: &[Vec<u64>]) -> u64 {
        let bins = counts[0].len();
        (0..bins).map(|p| counts.iter().map(|row| row[p]).sum::<u64>()).max().unwrap()
    }

    #[test]
    fn counts_cover_every_access_in_equal_time_bins() {
        let spec = WorkloadSpec::new("zipf", 5000, 100_000, 7);
        let counts = page_heat(&spec, 64, 50).unwrap();
        assert_eq!((counts.len(), counts[0].len()), (50, 64));
        assert_eq!(counts.iter().flatten().sum::<u64>(), 100_000);
        for row in &counts {
            assert_eq!(row.iter().sum::<u64>(), 2000, "each time bin holds 1/50 of the stream");
        }
    }

    #[test]
    fn a_skewed_stream_has_a_hotter_page_bin_than_a_near_uniform_one() {
        let zipf = page_heat(&WorkloadSpec::new("zipf", 5000, 100_000, 7), 64, 10).unwrap();
        let flat = page_heat(&WorkloadSpec::new("zipf", 5000, 100_000, 7).with("alpha", 0.01), 64, 10).unwrap();
        // Near-uniform: about 100k / 64 = 1563 per bin; Zipf 0.99's hottest page alone
        // takes about 10% of the accesses.
        assert!(hottest_bin(&flat) < 1800, "{}", hottest_bin(&flat));
        assert!(hottest_bin(&zipf) > 2 * hottest_bin(&flat), "{} vs {}", hottest_bin(&zipf), hottest_bin(&flat));
    }

    #[test]
    fn a_hot_set_shift_moves_accesses_between_page_bins_over_time() {
        let counts = page_heat(&WorkloadSpec::new("hotset-shift", 4096, 200_000, 1), 32, 2).unwrap();
        let moved: u64 = counts[0].iter().zip(&counts[1]).map(|(a, b)| a.abs_diff(*b)).sum();
        let same = page_heat(&WorkloadSpec::new("zipf", 4096, 200_000, 1), 32, 2).unwrap();
        let still: u64 = same[0].iter().zip(&same[1]).map(|(a, b)| a.abs_diff(*b)).sum();
        assert!(moved > 3 * still, "hot-set shift {moved} vs stationary zipf {still}");
    }

    #[test]
    fn zero_bins_and_unknown_workloads_are_refused() {
        let spec = WorkloadSpec::new("zipf", 100, 100, 1);
        assert!(page_heat(&spec, 0, 5).unwrap_err().to_string().contains("page_bins"));
        assert!(page_heat(&spec, 5, 0).unwrap_err().to_string().contains("time_bins"));
        assert!(page_heat(&WorkloadSpec::new("nope", 100, 100, 1), 5, 5).is_err());
    }
}
