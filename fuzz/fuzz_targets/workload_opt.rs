//! `--opt KEY=VALUE` workload options: the first byte picks a built-in workload (the
//! `trace` workload excepted: its `path` would read any file), each further line is one
//! `--opt`; the workload is built at a small size and its whole stream generated.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tierkit_sim::workload::{self, WorkloadSpec, REGISTRY};

/// Footprint and length of the stream: small, so the options are what varies.
const PAGES: u64 = 512;
const ACCESSES: u64 = 4096;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let names: Vec<&str> = REGISTRY.iter().map(|r| r.name).filter(|&n| n != "trace").collect();
    let name = names[usize::from(pick) % names.len()];
    let options: Vec<&str> = text.split('\n').take(8).collect();
    let Ok(spec) = WorkloadSpec::new(name, PAGES, ACCESSES, 1).resized(None, None, None, &options) else { return };
    let Ok(mut w) = workload::build(&spec) else { return };
    let mut out = Vec::new();
    while (out.len() as u64) < ACCESSES {
        match w.try_fill(&mut out, 1024) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
});
