//! A trace's [`Profile`], cached beside it (`TRACE.tkprofile`, JSON), so that the corpus
//! `advise` places a program among is profiled once, not on every call. The cache names
//! its trace by the id cache's [`Stamp`] (length, modification time, fingerprint of
//! sampled blocks) and is used only while that still matches; it is written to a
//! temporary file renamed into place, and a directory that cannot be written to just gets
//! no cache.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::profile::{profile, Profile};
use crate::trace::id_cache::Stamp;
use crate::workload::WorkloadSpec;
use crate::SimError;

#[derive(Serialize, Deserialize)]
struct Cached {
    stamp: Stamp,
    profile: Profile,
}

/// Where the profile of `trace` is cached.
fn path_of(trace: &Path) -> PathBuf {
    let mut name = trace.as_os_str().to_owned();
    name.push(".tkprofile");
    PathBuf::from(name)
}

/// The profile of the whole trace at `trace`: the cached one while it is the trace's, else
/// profiled now (and cached).
pub(crate) fn profile_trace(trace: &Path) -> Result<Profile, SimError> {
    let stamp = File::open(trace).and_then(|f| Stamp::of(&f, &f.metadata()?)).ok();
    let cache = path_of(trace);
    let cached = || serde_json::from_slice::<Cached>(&fs::read(&cache).ok()?).ok();
    if let (Some(stamp), Some(c)) = (stamp, cached()) {
        if c.stamp == stamp {
            return Ok(c.profile);
        }
    }
    let profile = profile(&WorkloadSpec::new("trace", 0, 0, 1).with("path", trace.display()), u64::MAX)?;
    if let Some(stamp) = stamp {
        let tmp = PathBuf::from(format!("{}.{}.tmp", cache.display(), std::process::id()));
        let body = serde_json::to_vec(&Cached { stamp, profile: profile.clone() }).map_err(std::io::Error::other);
        if body.and_then(|b| fs::write(&tmp, b)).and_then(|()| fs::rename(&tmp, &cache)).is_err() {
            let _ = fs::remove_file(&tmp);
        }
    }
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{NativeWriter, PageAccess};

    #[test]
    fn a_profile_is_cached_beside_its_trace_and_redone_when_the_trace_changes() {
        let dir = std::env::temp_dir().join(format!("tk-profile-cache-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let trace = dir.join("t.tktrace");
        let write = |pages: u64| {
            let mut w = NativeWriter::create(&trace, false).unwrap();
            for i in 0..4000 {
                w.push(PageAccess { page: i % pages, write: false, instructions: 0 }).unwrap();
            }
            w.finish().unwrap();
        };
        write(100);
        let first = profile_trace(&trace).unwrap();
        assert_eq!(first.pages, 100);
        assert!(path_of(&trace).exists(), "the profile is cached beside the trace");
        // A cache that matches the trace is read, not recomputed: a doctored one shows.
        let mut c: Cached = serde_json::from_slice(&fs::read(path_of(&trace)).unwrap()).unwrap();
        c.profile.pages = 7;
        fs::write(path_of(&trace), serde_json::to_vec(&c).unwrap()).unwrap();
        assert_eq!(profile_trace(&trace).unwrap().pages, 7);
        // A rewritten trace no longer matches its cache.
        write(200);
        assert_eq!(profile_trace(&trace).unwrap().pages, 200);
        fs::write(path_of(&trace), b"not json").unwrap();
        assert_eq!(profile_trace(&trace).unwrap().pages, 200, "a broken cache is ignored");
        fs::remove_dir_all(&dir).unwrap();
    }
}
