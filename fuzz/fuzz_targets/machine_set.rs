//! `--set KEY=VALUE` overrides of the machine: each line of the input one `--set`,
//! applied in order as the command line does.
#![no_main]

use libfuzzer_sys::fuzz_target;
// Links the bounded allocator (and nothing else of the crate's library).
use tierkit_fuzz as _;
use tierkit_sim::model::MachineConfig;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut cfg = MachineConfig::preset("cxl").expect("a built-in preset");
    for assignment in text.split('\n').take(16) {
        match cfg.set(assignment) {
            Ok(next) => cfg = next,
            Err(_) => return,
        }
        cfg.validate().expect("a configuration after --set is valid");
    }
});
