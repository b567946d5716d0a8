//! The machine TOML overlay (`--machine FILE`): parsed over a preset, then validated.
#![no_main]

use libfuzzer_sys::fuzz_target;
// Links the bounded allocator (and nothing else of the crate's library).
use tierkit_fuzz as _;
use tierkit_sim::model::MachineConfig;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let base = MachineConfig::preset("cxl").expect("a built-in preset");
    if let Ok(cfg) = base.merge_toml(text, "fuzz.toml") {
        cfg.validate().expect("a merged configuration is valid");
    }
});
