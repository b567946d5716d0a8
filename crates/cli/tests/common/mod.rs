//! What the CLI integration tests share.

use std::process::Command;

/// Runs `tierkit` with `args` (without backtraces: a panic's would add lines to stderr);
/// returns the exit status, stdout and stderr.
pub fn tierkit(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tierkit"))
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
