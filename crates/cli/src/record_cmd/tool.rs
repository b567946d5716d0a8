//! Builds tierkit's Valgrind tool (`crates/cli/valgrind/tk_record.c`, embedded in the
//! binary) the way Valgrind builds its own tools, and lays out the library directory
//! Valgrind runs it from.
//!
//! The tool is compiled with gcc against Valgrind's tool headers and linked statically
//! with Valgrind's core libraries (`libcoregrind`, `libvex`, `libgcc-sup`) at Valgrind's
//! load address [`LOAD_ADDRESS`], as `tk_record-amd64-linux`. It lives in
//! `$XDG_CACHE_HOME/tierkit` (default `~/.cache/tierkit`), in a directory named by a
//! hash of the source, the build command and `valgrind --version`, next to symbolic
//! links to every file of Valgrind's own library directory (the core preload library,
//! suppressions, the stock tools), so that `VALGRIND_LIB` pointing there runs both the
//! tool and the stock tools. A directory is built once, under a temporary name, then
//! renamed into place.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The tool's C source.
pub const SOURCE: &str = include_str!("../../valgrind/tk_record.c");

/// The tool's name (`valgrind --tool=`).
pub const NAME: &str = "tk_record";

/// Valgrind's load address for tools on amd64 Linux (`valt_load_address`).
const LOAD_ADDRESS: &str = "0x58000000";

/// The platform tools are built for.
const PLATFORM: &str = "amd64-linux";

/// Compiler flags: Valgrind's own for its tools on this platform.
const CFLAGS: &[&str] = &[
    "-O2",
    "-m64",
    "-fno-strict-aliasing",
    "-fno-builtin",
    "-fomit-frame-pointer",
    "-fno-stack-protector",
    "-fno-pie",
    "-DVGA_amd64=1",
    "-DVGO_linux=1",
    "-DVGP_amd64_linux=1",
    "-DVGPV_amd64_linux_vanilla=1",
];

/// Where Valgrind installs its tool headers.
const INCLUDE_DIRS: &[&str] = &["/usr/include/valgrind", "/usr/local/include/valgrind"];

/// Where Valgrind installs its stock tools and the static libraries tools link with.
const LIB_DIRS: &[&str] = &[
    "/usr/libexec/valgrind",
    "/usr/lib/x86_64-linux-gnu/valgrind",
    "/usr/lib/valgrind",
    "/usr/local/libexec/valgrind",
    "/usr/local/lib/valgrind",
];

/// The first of `dirs` holding `file`.
fn find(dirs: impl IntoIterator<Item = PathBuf>, file: &str) -> Option<PathBuf> {
    dirs.into_iter().find(|d| d.join(file).is_file())
}

/// FNV-1a, 64 bits: the cache key (stable across tierkit builds, unlike std's hasher).
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
        h = (h ^ 0xff).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// tierkit's cache directory.
fn cache_dir() -> Option<PathBuf> {
    match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(x) => Some(PathBuf::from(x).join("tierkit")),
        None => std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/tierkit")),
    }
}

/// Runs `cmd`; `Err` holds the first lines of what it printed.
fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = match cmd.output() {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("{} is not installed", cmd.get_program().to_string_lossy()))
        }
        Err(e) => return Err(format!("cannot run {what}: {e}")),
    };
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stderr);
    let first: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).take(3).collect();
    Err(format!("{what} failed ({}): {}", out.status, first.join(" / ")))
}

/// The library directory to run the tool from (`VALGRIND_LIB`), built when missing;
/// `Err` says why the tool cannot be had here.
pub fn prepare() -> Result<PathBuf, String> {
    if !(cfg!(target_arch = "x86_64") && cfg!(target_os = "linux")) {
        return Err("it is built for amd64 Linux only".into());
    }
    let version = Command::new("valgrind")
        .arg("--version")
        .output()
        .map_err(|e| format!("cannot run valgrind --version: {e}"))?
        .stdout;
    let user_lib = std::env::var_os("VALGRIND_LIB").map(PathBuf::from);
    let lib_dirs = || user_lib.iter().cloned().chain(LIB_DIRS.iter().map(PathBuf::from));
    let stock = find(lib_dirs(), &format!("vgpreload_core-{PLATFORM}.so"))
        .ok_or_else(|| format!("Valgrind's vgpreload_core-{PLATFORM}.so is in none of {}", LIB_DIRS.join(", ")))?;
    let static_libs = find(lib_dirs(), &format!("libcoregrind-{PLATFORM}.a")).ok_or_else(|| {
        format!("Valgrind's static libraries (libcoregrind-{PLATFORM}.a) are in none of {}", LIB_DIRS.join(", "))
    })?;
    let include = find(INCLUDE_DIRS.iter().map(PathBuf::from), "pub_tool_basics.h").ok_or_else(|| {
        format!("Valgrind's tool headers (pub_tool_basics.h) are in none of {}", INCLUDE_DIRS.join(", "))
    })?;
    let key = fnv1a(&[
        SOURCE.as_bytes(),
        &version,
        CFLAGS.join(" ").as_bytes(),
        stock.as_os_str().as_encoded_bytes(),
        static_libs.as_os_str().as_encoded_bytes(),
    ]);
    let cache = cache_dir().ok_or("neither XDG_CACHE_HOME nor HOME is set")?;
    let dir = cache.join(format!("valgrind-{key:016x}"));
    let tool = format!("{NAME}-{PLATFORM}");
    if dir.join(&tool).is_file() {
        return Ok(dir);
    }
    let tmp = cache.join(format!(".valgrind-{key:016x}.{}", std::process::id()));
    let built = build(&tmp, &tool, &include, &static_libs).and_then(|()| link_stock(&tmp, &stock, &tool));
    if let Err(e) = built {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    // Another tierkit may have finished the same directory first: then use it.
    if std::fs::rename(&tmp, &dir).is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
        if !dir.join(&tool).is_file() {
            return Err(format!("cannot move the tool into {}", dir.display()));
        }
    }
    Ok(dir)
}

/// Compiles and links the tool into `dir/tool`.
fn build(dir: &Path, tool: &str, include: &Path, libs: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let src = dir.join(format!("{NAME}.c"));
    std::fs::write(&src, SOURCE).map_err(|e| format!("cannot write {}: {e}", src.display()))?;
    let obj = dir.join(format!("{NAME}.o"));
    let mut cc = Command::new("gcc");
    cc.args(CFLAGS).arg("-I").arg(include).arg("-c").arg(&src).arg("-o").arg(&obj);
    run(&mut cc, "gcc (compiling the tool)")?;
    let lib = |name: &str| libs.join(format!("lib{name}-{PLATFORM}.a"));
    let mut ld = Command::new("gcc");
    ld.args(["-m64", "-static", "-nodefaultlibs", "-nostartfiles", "-no-pie", "-u", "_start"])
        .arg(format!("-Wl,-Ttext-segment={LOAD_ADDRESS}"))
        .arg("-o")
        .arg(dir.join(tool))
        .arg(&obj)
        .args([lib("coregrind"), lib("vex"), lib("gcc-sup")])
        .arg("-lgcc");
    run(&mut ld, "gcc (linking the tool)")?;
    let _ = std::fs::remove_file(&obj);
    Ok(())
}

/// Links every file of Valgrind's library directory `stock` into `dir`, but `tool`.
fn link_stock(dir: &Path, stock: &Path, tool: &str) -> Result<(), String> {
    let entries = std::fs::read_dir(stock).map_err(|e| format!("cannot list {}: {e}", stock.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", stock.display()))?;
        let name = entry.file_name();
        if name.to_str() == Some(tool) {
            continue;
        }
        std::os::unix::fs::symlink(entry.path(), dir.join(&name))
            .map_err(|e| format!("cannot link {} into {}: {e}", entry.path().display(), dir.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::fnv1a;

    #[test]
    fn the_key_changes_with_any_part_and_with_where_parts_split() {
        let k = fnv1a(&[b"src", b"valgrind-3.19.0\n"]);
        assert_eq!(k, fnv1a(&[b"src", b"valgrind-3.19.0\n"]));
        assert_ne!(k, fnv1a(&[b"src", b"valgrind-3.22.0\n"]));
        assert_ne!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"a", b"bc"]));
    }
}
