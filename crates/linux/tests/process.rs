//! `LiveProcess` on real processes of this host: this test process and a child.
//!
//! Moves here are to the node a page is already on (this host has one NUMA node), so no
//! placement changes; the two-node behaviour is exercised in the QEMU guest. Topologies
//! read from fixture trees (with a `proc/zoneinfo` of their own) give the process view
//! nodes with little room.

use std::path::{Path, PathBuf};
use std::process::Command;

use tierkit_core::{Memory, MoveStatus, Mover, Plan, Resident, ScanCursor, TierId, HUGE_PAGE_PAGES, PAGE_SIZE};
use tierkit_linux::memory::process::{LiveProcess, ProcessError};
use tierkit_linux::memory::procfs::{read_maps, MappingKind};
use tierkit_linux::topology::Topology;

#[path = "common/region.rs"]
mod region;
use region::Region;

const MIB: usize = 1 << 20;

/// `AnonHugePages` in KiB of this process's mapping starting at `addr`.
fn anon_huge_kib(addr: u64) -> u64 {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let head = format!("{addr:x}-");
    let at = smaps.find(&head).expect("the mapping is in smaps");
    let line = smaps[at..].lines().find(|l| l.starts_with("AnonHugePages:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// `sleep 5` as a child, once `execve` has mapped it all (`spawn` returns as soon as the
/// child is in `execve`, when its new address space may hold only a stack; the vDSO is
/// mapped last).
fn spawn_sleep() -> std::process::Child {
    let child = Command::new("sleep").arg("5").spawn().unwrap();
    let maps = format!("/proc/{}/maps", child.id());
    while !std::fs::read_to_string(&maps).unwrap().contains("[vdso]") {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    child
}

fn scan_all(live: &LiveProcess, cursor: &mut ScanCursor, max: usize) -> Vec<Resident> {
    let mut out = Vec::new();
    assert_eq!(live.scan(cursor, max, &mut out), out.len());
    out
}

#[test]
fn own_pages_are_found_scanned_and_moved_in_place() {
    let topo = Topology::discover(Path::new("/")).unwrap();
    let one_node = topo.tiers.len() == 1 && topo.tier_nodes(TierId(0)).len() == 1;
    // 64 MiB on a 2 MiB boundary: the first half in base pages, the second half THP-eligible.
    let region = Region::new(66 * MIB);
    let base = (region.addr as usize).next_multiple_of(2 * MIB);
    let half = 32 * MIB;
    // SAFETY: both ranges lie inside `region`.
    unsafe {
        assert_eq!(libc::madvise(base as *mut libc::c_void, half, libc::MADV_NOHUGEPAGE), 0);
        assert_eq!(libc::madvise((base + half) as *mut libc::c_void, half, libc::MADV_HUGEPAGE), 0);
        for off in (0..2 * half).step_by(PAGE_SIZE as usize) {
            ((base + off) as *mut u8).write_volatile(1);
        }
    }
    let first = base as u64 / PAGE_SIZE;
    let pages = (2 * half) as u64 / PAGE_SIZE;
    let mut live = LiveProcess::open(std::process::id(), &topo).unwrap();
    assert!(!live.gone());
    assert!((first..first + pages).all(|p| live.tier_of(p).is_some()), "every touched page is resident");
    assert_eq!(live.tier_of(first), Some(TierId(0)));
    assert!(live.resident_by_tier().iter().sum::<u64>() >= pages);
    assert_eq!(live.page_kind(first), Some(tierkit_core::PageKind::Anon));
    assert!(live.tiers()[0].capacity_pages > 0 && live.free_pages(TierId(0)) > 0);
    assert_eq!(live.free_pages(TierId(9)), 0);

    // Huge pages: as many as the kernel reports for the THP half, none in the other half.
    let mut cursor = ScanCursor { next: first, passes: 0 };
    let ours: Vec<Resident> = scan_all(&live, &mut cursor, usize::MAX)
        .into_iter()
        .filter(|r| (first..first + pages).contains(&r.page))
        .collect();
    let huge: Vec<u64> = ours.iter().filter(|r| r.huge).map(|r| r.page).collect();
    let expected_huge_kib = if live.detects_huge_pages() { anon_huge_kib((base + half) as u64) } else { 0 };
    assert_eq!(huge.len() as u64 * HUGE_PAGE_PAGES * 4, expected_huge_kib);
    assert!(huge.iter().all(|&p| p >= first + pages / 2 && p % HUGE_PAGE_PAGES == 0));
    assert_eq!(ours.len() as u64, pages - huge.len() as u64 * (HUGE_PAGE_PAGES - 1), "one unit per huge page");
    if let Some(&h) = huge.first() {
        assert_eq!(live.tier_of(h + 7), Some(TierId(0)), "a base page inside a huge page has its tier");
    }

    // Scans: address order, one wrap per call, never a page twice, resumable.
    let mut cursor = ScanCursor::default();
    let all = scan_all(&live, &mut cursor, usize::MAX);
    assert!(all.windows(2).all(|w| w[0].page < w[1].page));
    // Everything fitted: the scan reached the end, counted the pass and restarts at 0 (as InMemory does).
    assert_eq!(cursor, ScanCursor { next: 0, passes: 1 });
    let mut cursor = ScanCursor { next: first + 100, passes: 0 };
    let wrapped = scan_all(&live, &mut cursor, all.len() + 10);
    assert_eq!(wrapped.len(), all.len());
    assert_eq!(wrapped[0].page, first + 100);
    assert_eq!(cursor.passes, 1);
    assert_eq!(wrapped.last().unwrap().page, first + 99);
    let mut sorted: Vec<u64> = wrapped.iter().map(|r| r.page).collect();
    sorted.sort_unstable();
    assert_eq!(sorted, all.iter().map(|r| r.page).collect::<Vec<_>>());
    let mut cursor = ScanCursor { next: u64::MAX - 1, passes: 3 };
    assert_eq!(scan_all(&live, &mut cursor, 3), all[..3]);
    assert_eq!(cursor, ScanCursor { next: all[2].page + 1, passes: 4 });
    let mut cursor = ScanCursor { next: first, passes: 7 };
    let ten: Vec<u64> = scan_all(&live, &mut cursor, 10).iter().map(|r| r.page).collect();
    assert_eq!(ten, (first..first + 10).collect::<Vec<_>>());
    assert_eq!(cursor, ScanCursor { next: first + 10, passes: 7 });
    assert_eq!(live.scan(&mut cursor, 0, &mut Vec::new()), 0);

    // Moves to the tier the pages are on leave them there.
    let hundred: Vec<u64> = (first..first + 100).collect();
    let mut out = Vec::new();
    live.migrate(&hundred, TierId(0), &mut out);
    assert_eq!(out.len(), 100);
    if one_node {
        assert!(out.iter().all(|&s| s == MoveStatus::AlreadyThere), "{out:?}");
    }
    if let Some(&h) = huge.first() {
        // One huge page named three times: moved once, reported once.
        out.clear();
        live.migrate(&[h + 1, h, h + 511], TierId(0), &mut out);
        assert_eq!(out[1..], [MoveStatus::AlreadyThere; 2], "{out:?}");
        assert!(!one_node || out[0] == MoveStatus::AlreadyThere, "{out:?}");
    }
    // Unmapped and never-touched pages are not resident; unknown tiers are refused.
    let untouched = Region::new(4 * PAGE_SIZE as usize);
    let gone = Region::new(PAGE_SIZE as usize).page(); // unmapped at once; `untouched` keeps its addresses
    out.clear();
    live.migrate(&[gone, untouched.page(), first], TierId(0), &mut out);
    assert_eq!(out[..2], [MoveStatus::NotResident, MoveStatus::NotResident]);
    assert!(!one_node || out[2] == MoveStatus::AlreadyThere);
    let errnos = &live.pacer().counts().by_errno;
    assert_eq!((errnos.get(&libc::EFAULT), errnos.get(&libc::ENOENT)), (Some(&1), Some(&1)), "{errnos:?}");
    // The unmapped page (EFAULT) cools down: refused again without a system call; the
    // page never touched (ENOENT) may be touched any time: located again (and, still
    // not resident, not sent to be moved).
    let calls = live.pacer().counts().calls;
    out.clear();
    live.migrate(&[gone], TierId(0), &mut out);
    assert_eq!((out[0], live.pacer().counts().calls), (MoveStatus::NotResident, calls));
    live.migrate(&[untouched.page()], TierId(0), &mut out);
    assert_eq!((out[1], live.pacer().counts().calls), (MoveStatus::NotResident, calls));
    let errnos = &live.pacer().counts().by_errno;
    assert_eq!((errnos.get(&libc::EFAULT), errnos.get(&libc::ENOENT)), (Some(&1), Some(&2)), "{errnos:?}");
    out.clear();
    live.migrate(&[first], TierId(9), &mut out);
    assert_eq!(out, [MoveStatus::NoSuchTier]);

    // The core Mover drives it like any Memory.
    let mut plan = Plan::default();
    for p in first + 200..first + 250 {
        plan.push(p, TierId(0));
    }
    let mut mover = Mover::new(16, usize::MAX);
    mover.execute(&mut plan, &mut live, &mut Vec::new());
    assert_eq!(mover.stats().calls, 4);
    if one_node {
        assert_eq!(mover.stats().by_cause.get("already-there"), Some(&50));
    }

    // A refresh sees the first half unmapped.
    // SAFETY: inside `region`; the region's own munmap later covers the hole harmlessly.
    unsafe { libc::munmap(base as *mut libc::c_void, half) };
    let stats = live.refresh().unwrap();
    assert!(stats.resident_pages > 0 && stats.mappings > 0);
    assert_eq!(live.tier_of(first), None);
    assert_eq!(live.tier_of(first + pages - 1), Some(TierId(0)));
    assert!(live.now() > 0);
}

#[test]
fn a_child_is_read_then_seen_gone() {
    let topo = Topology::discover(Path::new("/")).unwrap();
    let mut child = spawn_sleep();
    let pid = child.id();
    let maps = read_maps(Path::new("/"), pid).unwrap();
    assert!(maps.iter().any(|m| m.kind == MappingKind::File && m.path.ends_with("/sleep")), "{maps:#?}");
    assert!(maps.iter().any(|m| m.kind == MappingKind::Stack && m.tierable()));
    assert!(maps.iter().any(|m| m.kind == MappingKind::Vdso && !m.tierable()));
    let mut live = LiveProcess::open(pid, &topo).unwrap();
    assert!(live.resident_by_tier().iter().sum::<u64>() > 0);
    let stack = maps.iter().find(|m| m.kind == MappingKind::Stack).unwrap();
    let resident: Vec<u64> = stack.pages().filter(|&p| live.tier_of(p).is_some()).collect();
    assert!(!resident.is_empty(), "a running process has stack pages");
    let mut out = Vec::new();
    live.migrate(&resident, TierId(0), &mut out);
    if topo.tiers.len() == 1 && topo.tier_nodes(TierId(0)).len() == 1 {
        assert!(out.iter().all(|&s| s == MoveStatus::AlreadyThere), "{out:?}");
    }

    child.kill().unwrap();
    child.wait().unwrap();
    assert!(matches!(live.refresh(), Err(ProcessError::Gone { pid: p }) if p == pid));
    assert!(live.gone());
    out.clear();
    live.migrate(&resident[..1], TierId(0), &mut out);
    assert_eq!(out, [MoveStatus::NotResident]);
    assert!(matches!(live.refresh(), Err(ProcessError::Gone { .. })));
    assert!(matches!(LiveProcess::open(pid, &topo), Err(ProcessError::Gone { .. })));
}

#[test]
fn repeated_pages_are_moved_once_and_reported_once() {
    let topo = Topology::discover(Path::new("/")).unwrap();
    let region = Region::new(8 * PAGE_SIZE as usize);
    for i in 0..4 {
        // SAFETY: inside `region`.
        unsafe { region.addr.add(i * PAGE_SIZE as usize).write_volatile(1) };
    }
    let mut live = LiveProcess::open(std::process::id(), &topo).unwrap();
    let first = region.page();
    // Pages 0, 1 resident, 4, 5 never touched; each named two or three times.
    let input: Vec<u64> = [0, 1, 0, 4, 4, 5, 1, 0].iter().map(|&i| first + i).collect();
    let calls = live.pacer().counts().calls;
    let mut out = Vec::new();
    live.migrate(&input, TierId(0), &mut out);
    assert_eq!(out.len(), input.len());
    for page in [0, 1, 4, 5].map(|i| first + i) {
        let reported = input.iter().zip(&out).filter(|&(&p, &s)| p == page && s != MoveStatus::AlreadyThere).count();
        assert!(reported <= 1, "page {page}: {out:?}");
    }
    use MoveStatus::*;
    assert_eq!(out[3..6], [NotResident, AlreadyThere, NotResident], "the first occurrence carries the status");
    if topo.nodes.len() == 1 {
        assert_eq!(
            out,
            [
                AlreadyThere,
                AlreadyThere,
                AlreadyThere,
                NotResident,
                AlreadyThere,
                NotResident,
                AlreadyThere,
                AlreadyThere
            ]
        );
    }
    // No call to move: the view places 0 and 1 in the tier already, and 4 and 5, located
    // before they are sent, are not resident (each counted once).
    assert_eq!(live.pacer().counts().calls, calls);
    assert_eq!(live.pacer().counts().by_errno.get(&libc::ENOENT), Some(&2));
}

/// A copy of fixture `name` with `zoneinfo` as its `proc/zoneinfo`, removed on drop.
struct FixtureCopy(PathBuf);

impl FixtureCopy {
    fn new(name: &str, zoneinfo: &str) -> Self {
        fn copy(from: &Path, to: &Path) {
            std::fs::create_dir_all(to).unwrap();
            for entry in std::fs::read_dir(from).unwrap() {
                let entry = entry.unwrap();
                let target = to.join(entry.file_name());
                if entry.file_type().unwrap().is_dir() {
                    copy(&entry.path(), &target);
                } else {
                    std::fs::copy(entry.path(), target).unwrap();
                }
            }
        }
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/topology");
        // One directory per copy: tests run in parallel threads of one process.
        static COPIES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let copy_no = COPIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("tierkit-process-{name}-{}-{copy_no}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        copy(&fixtures.join(name), &dir);
        std::fs::create_dir_all(dir.join("proc")).unwrap();
        std::fs::write(dir.join("proc/zoneinfo"), zoneinfo).unwrap();
        Self(dir)
    }
}

impl Drop for FixtureCopy {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Node 0 with 100 pages of room: 700 free, high watermark 500, margin 1% of 10000.
const TIGHT_NODE0: &str =
    "Node 0, zone   Normal\n  pages free     700\n        min      300\n        low      400\n        \
                           high     500\n        managed  10000\n        protection: (0, 0, 0)\n";

#[test]
fn moves_stop_where_the_node_has_no_room_left() {
    let tree = FixtureCopy::new("one-node", TIGHT_NODE0);
    let topo = Topology::discover(&tree.0).unwrap();
    assert_eq!(topo.room_pages(TierId(0)), 100);
    // Mapped before the process view is built, touched after: the cache does not place
    // these pages, so each needs room on the destination.
    let region = Region::new(300 * PAGE_SIZE as usize);
    let mut live = LiveProcess::open(std::process::id(), &topo).unwrap();
    assert_eq!(live.free_pages(TierId(0)), 100);
    for i in 0..300 {
        // SAFETY: inside `region`.
        unsafe { region.addr.add(i * PAGE_SIZE as usize).write_volatile(1) };
    }
    let pages: Vec<u64> = (region.page()..region.page() + 300).collect();
    let calls = live.pacer().counts().calls;
    let mut out = Vec::new();
    live.migrate(&pages, TierId(0), &mut out);
    assert_eq!(out.len(), 300);
    assert!(out[100..].iter().all(|&s| s == MoveStatus::NoSpace), "{:?}", &out[100..]);
    assert!(out[..100].iter().all(|&s| s != MoveStatus::NoSpace), "{:?}", &out[..100]);
    // The 100 with room, located before they are sent, are on the one node already: no
    // call to move them, and the room reserved for them is given back.
    assert!(out[..100].iter().all(|&s| s == MoveStatus::AlreadyThere), "{:?}", &out[..100]);
    assert_eq!(live.pacer().counts().calls, calls);
    assert_eq!(live.free_pages(TierId(0)), 100);
    out.clear();
    live.migrate(&pages[200..201], TierId(0), &mut out);
    assert_eq!((out[0], live.pacer().counts().calls), (MoveStatus::AlreadyThere, calls));
    // The next read replaces the estimate.
    live.refresh_free().unwrap();
    assert_eq!(live.free_pages(TierId(0)), 100);
}

/// Node 0 with 450 free pages (50 above its low watermark) and 300 more on a CPU's list.
const LISTS_NODE0: &str =
    "Node 0, zone   Normal\n  pages free     450\n        min      300\n        low      400\n        \
                           high     500\n        managed  10000\n        protection: (0, 0, 0)\n  pagesets\n    \
                           cpu: 0\n              count: 300\n";

#[test]
fn moves_stop_where_the_free_pages_reach_the_low_watermark() {
    let tree = FixtureCopy::new("one-node", LISTS_NODE0);
    let topo = Topology::discover(&tree.0).unwrap();
    let region = Region::new(120 * PAGE_SIZE as usize);
    let mut live = LiveProcess::open(std::process::id(), &topo).unwrap();
    // The per-CPU list counts towards the high watermark: what a policy is told is free.
    assert_eq!(live.free_pages(TierId(0)), 450 + 300 - 500 - 100);
    for i in 0..120 {
        // SAFETY: inside `region`.
        unsafe { region.addr.add(i * PAGE_SIZE as usize).write_volatile(1) };
    }
    let pages: Vec<u64> = (region.page()..region.page() + 120).collect();
    let mut out = Vec::new();
    live.migrate(&pages, TierId(0), &mut out);
    // But only 50 pages may move in before the free pages reach the low watermark.
    assert!(out[50..].iter().all(|&s| s == MoveStatus::NoSpace), "{:?}", &out[50..]);
    assert!(out[..50].iter().all(|&s| s == MoveStatus::AlreadyThere), "{:?}", &out[..50]);
}

#[test]
fn a_zombie_target_is_gone_after_one_refused_call() {
    let topo = Topology::discover(Path::new("/")).unwrap();
    let mut child = spawn_sleep();
    let pid = child.id();
    let mut live = LiveProcess::open(pid, &topo).unwrap();
    let mut cursor = ScanCursor::default();
    let top = scan_all(&live, &mut cursor, 64).iter().map(|r| r.page).max().unwrap();
    // Pages the view does not place (far above its highest resident unit, which may be a
    // huge page), so the moves are asked of the kernel (the view's pages already sit in
    // the one tier of a one-node host).
    let pages: Vec<u64> = (top + (1 << 20)..top + (1 << 20) + 64).collect();
    // Killed, not reaped: a zombie has no address space, and move_pages says EINVAL.
    // SAFETY: signals the child this test spawned.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    let state = || std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap().split(' ').nth(2).map(str::to_owned);
    while state().as_deref() != Some("Z") {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let mut out = Vec::new();
    live.migrate(&pages, TierId(0), &mut out);
    assert!(out.iter().all(|&s| s == MoveStatus::NotResident), "{out:?}");
    assert!(live.gone());
    assert_eq!(live.pacer().counts().call_errors.get(&libc::EINVAL), Some(&1));
    out.clear();
    live.migrate(&pages, TierId(0), &mut out);
    assert_eq!(live.pacer().counts().call_errors.get(&libc::EINVAL), Some(&1), "no second call");
    assert!(matches!(live.refresh(), Err(ProcessError::Gone { .. })));
    child.wait().unwrap();
}
