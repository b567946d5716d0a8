//! `tierkit bench --against libcachesim`: the same trace through libCacheSim's C
//! simulator, timed in the same run, through its Python package (PyPI `libcachesim`,
//! which `make deps` installs in `target/pyenv`). A child Python process runs
//! `process_trace` on the file and reports its requests per second and miss ratio.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

/// libCacheSim's algorithm for a tierkit cache policy.
pub fn counterpart(policy: &str) -> Option<&'static str> {
    match policy {
        "lru-cache" => Some("LRU"),
        "clock-cache" => Some("Clock"),
        _ => None,
    }
}

/// What libCacheSim measured.
pub struct Measured {
    pub requests_per_sec: f64,
    pub miss_ratio: f64,
}

const SCRIPT: &str = r#"
import json, sys, time
try:
    import libcachesim as lcs
except ImportError as e:
    sys.exit(f"cannot import libcachesim ({e}): install it (pip install libcachesim==0.3.5; `make deps` puts it in target/pyenv) or name another interpreter with --python")
path, algo, objects, requests = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
reader = lcs.TraceReader(path, lcs.TraceType.ORACLE_GENERAL_TRACE)
cache = getattr(lcs, algo)(cache_size=objects * 4096)
start = time.perf_counter()
miss_ratio, _ = cache.process_trace(reader)
print(json.dumps({"seconds": time.perf_counter() - start, "miss_ratio": miss_ratio}))
"#;

/// Runs libCacheSim's `algo` with a cache of `objects` objects over the oracleGeneral
/// trace at `path` (`requests` requests) with the interpreter `python`.
pub fn measure(python: &Path, path: &str, algo: &str, objects: u64, requests: u64) -> Result<Measured> {
    let out = Command::new(python)
        .args(["-c", SCRIPT, path, algo, &objects.to_string(), &requests.to_string()])
        .output()
        .with_context(|| format!("cannot run {} for libCacheSim", python.display()))?;
    if !out.status.success() {
        bail!("libCacheSim did not run: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    let row: serde_json::Value = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("libCacheSim printed {:?}", String::from_utf8_lossy(&out.stdout)))?;
    let field = |k: &str| row[k].as_f64().ok_or_else(|| anyhow!("libCacheSim's output lacks {k}: {row}"));
    let seconds = Duration::from_secs_f64(field("seconds")?.max(1e-9));
    Ok(Measured { requests_per_sec: requests as f64 / seconds.as_secs_f64(), miss_ratio: field("miss_ratio")? })
}
