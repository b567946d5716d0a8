//! The csv trace reader, its detection and its replay as the `trace` workload.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tierkit_sim::trace::Format;

fuzz_target!(|data: &[u8]| tierkit_fuzz::trace(data, Format::Csv));
