//! `--opt KEY=VALUE` workload options: the first byte picks a built-in workload (the
//! `trace` workload excepted: its `path` would read any file), each further line is one
//! `--opt`; the workload is built at a small size and its whole stream generated.
#![no_main]

use libfuzzer_sys::fuzz_target;
// Links the bounded allocator (and nothing else of the crate's library).
use tierkit_fuzz as _;
use tierkit_sim::budget;
use tierkit_sim::workload::{self, WorkloadSpec, REGISTRY};

/// Footprint and length of the stream: small, so the options are what varies.
const PAGES: u64 = 64;
const ACCESSES: u64 = 4096;
/// The memory budget the target stands for: options asking for more (a graph of
/// `scale=20`) are refused by name, as on a machine with this much available, instead
/// of spending the input's time limit on legitimate work.
const BUDGET: u64 = 64 << 20;

fuzz_target!(|data: &[u8]| {
    budget::cap(BUDGET);
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
