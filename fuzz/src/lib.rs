//! What the fuzz targets share: a scratch file per process for the readers that take a
//! path, the checks every trace format gets, and the allocator that bounds allocations.
//!
//! Properties checked on every input: no panic (libFuzzer reports it as a crash); no
//! single allocation above [`MAX_ALLOCATION`] and never more than [`MAX_LIVE`] allocated
//! at once (the allocator below aborts on the allocation that asks for it, which
//! libFuzzer reports with that input; its `-malloc_limit_mb` needs a sanitizer's
//! allocator, and the targets run without one; its `-rss_limit_mb` reads the process's
//! peak, and so blames whichever input runs when it next looks); an error names the
//! file it is about; a replay yields no more accesses than it says it has.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use tierkit_sim::trace::{self, Format};
use tierkit_sim::workload::{self, WorkloadSpec};
use tierkit_sim::SimError;

/// Accesses taken from one reader or replay: formats whose records expand (damo's
/// regions) may yield more, and a bounded prefix is enough to exercise the reading.
pub const MAX_ACCESSES: usize = 1 << 16;

/// Largest single allocation an input may cause: far above what the small inputs the
/// targets read need, far below what would take a machine down.
pub const MAX_ALLOCATION: usize = 256 << 20;

/// Most bytes allocated at once (libFuzzer's own tables included): half the
/// `-rss_limit_mb` the Makefile gives.
pub const MAX_LIVE: usize = 512 << 20;

/// Bytes allocated and not yet freed.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, aborting on an allocation above [`MAX_ALLOCATION`] or one that
/// takes the bytes allocated above [`MAX_LIVE`].
struct Bounded;

// SAFETY: every call is passed on to `System` unchanged once the size checks pass.
unsafe impl GlobalAlloc for Bounded {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        check(layout.size(), 0);
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        check(layout.size(), 0);
        System.alloc_zeroed(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        check(new_size, layout.size());
        System.realloc(ptr, layout, new_size)
    }
}

/// Counts an allocation of `size` bytes replacing one of `old` bytes, aborting when it
/// breaks a bound. (Counted before the system allocator answers: a failed allocation is
/// an abort anyway.)
fn check(size: usize, old: usize) {
    let live = LIVE.fetch_add(size, Ordering::Relaxed) + size - old;
    LIVE.fetch_sub(old, Ordering::Relaxed);
    let msg: &[u8] = if size > MAX_ALLOCATION {
        b"tierkit-fuzz: an allocation above MAX_ALLOCATION (256 MiB)\n"
    } else if live > MAX_LIVE {
        b"tierkit-fuzz: more than MAX_LIVE (512 MiB) allocated at once\n"
    } else {
        return;
    };
    // No allocation here: print through a fixed buffer, then abort (libFuzzer saves the
    // input as a crash).
    // SAFETY: writes a static buffer to stderr.
    unsafe { libc_write(2, msg.as_ptr(), msg.len()) };
    std::process::abort();
}

extern "C" {
    #[link_name = "write"]
    fn libc_write(fd: i32, buf: *const u8, count: usize) -> isize;
}

#[global_allocator]
static ALLOCATOR: Bounded = Bounded;

/// Writes `data` to this process's scratch file for `name` and returns its path: in
/// `/dev/shm` where there is one (a file on disk makes every run wait for the disk).
pub fn scratch(name: &str, data: &[u8]) -> PathBuf {
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
    let path = dir.join(format!("tierkit-fuzz-{}-{name}", std::process::id()));
    std::fs::write(&path, data).expect("the scratch file in the temporary directory is writable");
    path
}

/// `err` names `path`, as every trace error must.
fn names_file(err: &SimError, path: &Path) {
    let text = err.to_string();
    assert!(text.contains(&path.display().to_string()), "an error that does not name its file: {text}");
}

/// Reads `data` as a trace in `format`: through the format's reader, through detection,
/// and replayed as the `trace` workload; each either yields accesses or an error naming
/// the file.
pub fn trace(data: &[u8], format: Format) {
    let path = scratch(format.name(), data);
    match trace::open(&path, Some(format)) {
        Ok(mut reader) => {
            for _ in 0..MAX_ACCESSES {
                match reader.next_access() {
                    Ok(Some(_)) => {}
                    Ok(None) => break,
                    Err(e) => {
                        names_file(&e, &path);
                        break;
                    }
                }
            }
        }
        Err(e) => names_file(&e, &path),
    }
    if let Err(e) = trace::detect(&path) {
        names_file(&e, &path);
    }
    let spec = WorkloadSpec::new("trace", 1, 1, 0)
        .with("path", path.display())
        .with("format", format.name())
        .with("limit", MAX_ACCESSES);
    match workload::build(&spec) {
        Ok(mut w) => {
            let mut out = Vec::new();
            while out.len() < MAX_ACCESSES {
                match w.try_fill(&mut out, 4096) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) => {
                        names_file(&e, &path);
                        break;
                    }
                }
            }
            assert!(out.len() as u64 <= w.len(), "the replay yielded {} of {} accesses", out.len(), w.len());
        }
        Err(e) => names_file(&e, &path),
    }
}
