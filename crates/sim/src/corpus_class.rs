//! Which recorded program of the corpus a trace is shaped like, and whether that class of
//! program is one the corpus validated a built-in stand-in for.
//!
//! A trace's shape is the [`Profile`] `tierkit trace compare` prints: footprint, the
//! share of accesses the hottest pages take and LRU's miss-ratio curve. The corpus is a
//! directory of recorded programs (`corpus/NAME.tktrace`) and its `standins.toml`, the
//! pairs of a built-in stand-in and the program it stands for that
//! `crates/sim/tests/standins.rs` keeps ranking the policies as the program does
//! (Spearman's ρ ≥ 0.8). Both are read as they are, each time: the profiles are computed
//! from the traces and the validated programs are those `standins.toml` names, so
//! nothing here can drift from the corpus.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::profile::{profile, Profile};
use crate::profile_cache::profile_trace;
use crate::workload::WorkloadSpec;
use crate::SimError;

/// A footprint this many times another's weighs as much as a share or miss ratio that
/// differs by its whole range (0 to 1): the footprints of the corpus's programs span
/// 33k to 182k pages, well within it, while a trace of a toy program (a few hundred
/// pages) is set apart from all of them.
pub const FOOTPRINT_SCALE: f64 = 256.0;

/// One built-in stand-in and the recorded program it stands for, as `standins.toml`
/// lists it: the stand-in runs at `pages` and `accesses` with `options` (the LLC view).
#[derive(Clone, Debug, Deserialize)]
pub struct Standin {
    /// The corpus program (`corpus/PROGRAM.tktrace`).
    pub program: String,
    /// The built-in workload that stands for it.
    pub workload: String,
    /// Its footprint in pages.
    pub pages: u64,
    /// Its generated accesses.
    pub accesses: u64,
    /// Its options.
    pub options: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct StandinFile {
    #[serde(default)]
    standin: Vec<Standin>,
}

/// Reads the stand-in pairs of a corpus's `standins.toml`; errors name the file.
pub fn read_standins(path: &Path) -> Result<Vec<Standin>, SimError> {
    let file = |at: &str, message: String| SimError::File { file: path.display().to_string(), at: at.into(), message };
    let text = std::fs::read_to_string(path).map_err(|e| file("open", e.to_string()))?;
    Ok(toml::from_str::<StandinFile>(&text).map_err(|e| file("parse", e.message().to_string()))?.standin)
}

/// One recorded program of the corpus.
#[derive(Clone, Debug)]
pub struct Program {
    /// Its name, the trace's file stem.
    pub name: String,
    /// Its trace's shape.
    pub profile: Profile,
    /// The stand-ins `standins.toml` pairs with it (empty: none is validated for it).
    pub standins: Vec<String>,
}

/// The recorded programs of a corpus directory.
#[derive(Clone, Debug)]
pub struct Corpus {
    /// The directory.
    pub dir: PathBuf,
    /// Its programs, by name.
    pub programs: Vec<Program>,
}

impl Corpus {
    /// Profiles every `*.tktrace` of `dir` (whole, `threads` at a time) and reads
    /// `dir/standins.toml`. Refused when `dir` holds no trace or its `standins.toml` is
    /// missing or names a program it has no trace of.
    pub fn load(dir: &Path, threads: usize) -> Result<Corpus, SimError> {
        let bad = |message: String| SimError::File { file: dir.display().to_string(), at: "corpus".into(), message };
        let entries = std::fs::read_dir(dir).map_err(|e| bad(format!("cannot list it: {e}")))?;
        let mut traces: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "tktrace"))
            .collect();
        traces.sort();
        if traces.is_empty() {
            return Err(bad("no recorded program in it (no NAME.tktrace)".into()));
        }
        let standins = read_standins(&dir.join("standins.toml"))?;
        let name = |p: &Path| p.file_stem().map_or(String::new(), |s| s.to_string_lossy().into_owned());
        if let Some(s) = standins.iter().find(|s| !traces.iter().any(|t| name(t) == s.program)) {
            return Err(bad(format!(
                "standins.toml pairs {} with program {:?}, which has no trace here",
                s.workload, s.program
            )));
        }
        let profiles = profile_all(&traces, threads)?;
        let programs = traces
            .iter()
            .zip(profiles)
            .map(|(t, profile)| {
                let name = name(t);
                let standins = standins.iter().filter(|s| s.program == name).map(|s| s.workload.clone()).collect();
                Program { name, profile, standins }
            })
            .collect();
        Ok(Corpus { dir: dir.to_path_buf(), programs })
    }
}

/// The profile of each trace, `threads` traces at a time.
fn profile_all(traces: &[PathBuf], threads: usize) -> Result<Vec<Profile>, SimError> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let out: Vec<std::sync::Mutex<Option<Result<Profile, SimError>>>> =
        traces.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, traces.len()) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(path) = traces.get(i) else { break };
                *out[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(profile_trace(path));
            });
        }
    });
    out.into_iter().map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()).expect("every trace profiled")).collect()
}

/// How far apart two shapes are: the root mean square of the differences of their top
/// shares and LRU miss ratios (each in 0..1) and of their footprints (the log of their
/// ratio, in units of [`FOOTPRINT_SCALE`]). 0 for equal shapes.
pub fn distance(a: &Profile, b: &Profile) -> f64 {
    let mut terms: Vec<f64> = a.top_share.iter().zip(&b.top_share).map(|(x, y)| x.1 - y.1).collect();
    terms.extend(a.mrc.iter().zip(&b.mrc).map(|(x, y)| x.miss_ratio - y.miss_ratio));
    let ratio = a.pages.max(1) as f64 / b.pages.max(1) as f64;
    terms.push(ratio.ln() / FOOTPRINT_SCALE.ln());
    (terms.iter().map(|t| t * t).sum::<f64>() / terms.len() as f64).sqrt()
}

/// The class a trace falls in: the corpus program nearest its shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Class {
    /// The corpus directory read.
    pub corpus: String,
    /// The nearest program and its [`distance`] from the trace.
    pub nearest: String,
    pub distance: f64,
    /// The next nearest program and its distance.
    pub runner_up: Option<String>,
    pub runner_up_distance: Option<f64>,
    /// The median, over the corpus's programs, of each one's distance to its nearest
    /// other program: how far apart two programs of the corpus usually are.
    pub corpus_spacing: Option<f64>,
    /// Whether the trace lies within `corpus_spacing` of `nearest` (always, with fewer
    /// than two programs to measure the spacing by).
    pub fits: bool,
    /// The built-in stand-ins validated against `nearest` (`standins.toml`); empty when
    /// none is, and the class is not one the corpus validated.
    pub standins: Vec<String>,
    /// Whether `nearest` has a validated stand-in.
    pub validated: bool,
}

/// The class of the trace `workload` replays (profiled whole) among the programs of
/// the corpus `dir` (profiled `threads` at a time).
pub fn class_of(workload: &WorkloadSpec, dir: &Path, threads: usize) -> Result<Class, SimError> {
    let shape = profile(workload, u64::MAX)?;
    Ok(classify(&shape, &Corpus::load(dir, threads)?))
}

/// The class of a trace whose shape is `shape`.
pub fn classify(shape: &Profile, corpus: &Corpus) -> Class {
    let mut by_distance: Vec<(f64, &Program)> =
        corpus.programs.iter().map(|p| (distance(shape, &p.profile), p)).collect();
    by_distance.sort_by(|x, y| x.0.total_cmp(&y.0).then_with(|| x.1.name.cmp(&y.1.name)));
    let (d, nearest) = by_distance[0];
    let mut spacings: Vec<f64> = corpus
        .programs
        .iter()
        .filter_map(|p| {
            let others = corpus.programs.iter().filter(|q| q.name != p.name);
            others.map(|q| distance(&p.profile, &q.profile)).min_by(f64::total_cmp)
        })
        .collect();
    spacings.sort_by(f64::total_cmp);
    let spacing = (!spacings.is_empty()).then(|| spacings[spacings.len() / 2]);
    Class {
        corpus: corpus.dir.display().to_string(),
        nearest: nearest.name.clone(),
        distance: d,
        runner_up: by_distance.get(1).map(|x| x.1.name.clone()),
        runner_up_distance: by_distance.get(1).map(|x| x.0),
        corpus_spacing: spacing,
        fits: spacing.is_none_or(|s| d <= s),
        standins: nearest.standins.clone(),
        validated: !nearest.standins.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{MrcPoint, MRC_FRACTIONS, TOP_FRACTIONS};

    fn shape(pages: u64, share: f64, miss: f64) -> Profile {
        Profile {
            pages,
            accesses: 1000,
            top_share: TOP_FRACTIONS.iter().map(|&f| (f, share)).collect(),
            mrc: MRC_FRACTIONS.iter().map(|&f| MrcPoint { fraction: f, pages: 1, miss_ratio: miss }).collect(),
        }
    }

    fn program(name: &str, shape: Profile, standins: &[&str]) -> Program {
        Program { name: name.into(), profile: shape, standins: standins.iter().map(|s| s.to_string()).collect() }
    }

    #[test]
    fn distance_weighs_shares_curves_and_footprint() {
        let a = shape(1000, 0.2, 0.5);
        assert_eq!(distance(&a, &a), 0.0);
        // Every share and miss ratio off by its whole range, footprints equal: sqrt(9/10).
        assert!((distance(&shape(1000, 0.0, 0.0), &shape(1000, 1.0, 1.0)) - 0.9f64.sqrt()).abs() < 1e-12);
        // Only the footprint, FOOTPRINT_SCALE times larger: one term of ten at 1.
        let big = shape((1000.0 * FOOTPRINT_SCALE) as u64, 0.2, 0.5);
        assert!((distance(&a, &big) - 0.1f64.sqrt()).abs() < 1e-9);
        assert!((distance(&big, &a) - distance(&a, &big)).abs() < 1e-12, "symmetric");
    }

    #[test]
    fn the_nearest_program_names_the_class_and_its_validation() {
        let corpus = Corpus {
            dir: "c".into(),
            programs: vec![
                program("kv", shape(100_000, 0.15, 0.6), &["ycsb-b"]),
                program("compiler", shape(80_000, 0.5, 0.2), &[]),
                program("graph", shape(110_000, 0.1, 0.9), &["gap-pr", "gap-bfs"]),
            ],
        };
        let c = classify(&shape(120_000, 0.14, 0.62), &corpus);
        assert_eq!((c.nearest.as_str(), c.validated, c.fits), ("kv", true, true), "{c:?}");
        assert_eq!(c.standins, ["ycsb-b"]);
        assert_eq!(c.runner_up.as_deref(), Some("graph"));
        let c = classify(&shape(80_000, 0.48, 0.21), &corpus);
        assert_eq!((c.nearest.as_str(), c.validated), ("compiler", false), "{c:?}");
        assert!(c.standins.is_empty());
        // Far from every program: the nearest is named, and the class said not to fit.
        let c = classify(&shape(300, 1.0, 0.0), &corpus);
        assert!(!c.fits && c.distance > c.corpus_spacing.unwrap(), "{c:?}");
    }
}
