//! The report's inputs: the JSON rows of `tierkit compare --json` and a `--timeline`
//! CSV, read by the CLI's own module (compiled here from its source: the CLI is a
//! binary crate). The first byte picks which.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/cli/src/result_csv.rs"]
#[allow(dead_code)]
mod result_csv;

#[path = "../../crates/cli/src/report_cmd/input.rs"]
#[allow(dead_code)]
mod input;

use input::{read_results, read_timeline};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let path = tierkit_fuzz::scratch("report", rest);
    let name = path.display().to_string();
    let err = if pick % 2 == 0 { read_results(&path).err() } else { read_timeline(&path).err() };
    if let Some(e) = err {
        let text = format!("{e:#}");
        assert!(text.contains(&name), "an error that does not name its file: {text}");
    }
});
