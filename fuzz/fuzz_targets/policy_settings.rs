//! Policy specs with settings (`NAME:KEY=VALUE:...`, policies/tuning.rs): parsed and
//! the policy built for a small machine, as `--policies` does.
#![no_main]

use libfuzzer_sys::fuzz_target;
// Links the bounded allocator (and nothing else of the crate's library).
use tierkit_core::policies::{self, PolicySetup};
use tierkit_fuzz as _;

fuzz_target!(|data: &[u8]| {
    let Ok(spec) = std::str::from_utf8(data) else { return };
    let setup = PolicySetup { fast_pages: 256, pages: 4096 };
    if let Some(Ok(policy)) = policies::build(spec, &setup) {
        let _ = policy.metadata_bytes();
    }
});
